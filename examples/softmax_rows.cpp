// softmax_rows: per-row softmax of a matrix stored row after row, y[r][j] =
// exp(x[r][j] - max_r) / sum_j exp(x[r][j] - max_r), as users write it:
//   - ff::rows(x, c): the offsets of x's rows of c elements (uniform rows)
//   - rowmax = segmented_reduce(x, offs, max); ff::broadcast(rowmax, offs) gives every
//     element its row's maximum, so e = exp(x - broadcast(rowmax, offs)) is an array as long
//     as x; rowsum = segmented_reduce(e, offs, plus); y = e / broadcast(rowsum, offs).
// A row fits a block, so the whole program is one kernel: a block holds its row in
// registers, reduces it twice and writes y, reading x once (strategy "rows").
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  const std::int64_t columns = 1000;
  auto x = ff::input<float>("x");
  const auto offs = ff::rows(x, columns);
  const auto rowmax = ff::segmented_reduce(x, offs, ff::max);
  const auto e = ff::exp(x - ff::broadcast(rowmax, offs));
  const auto rowsum = ff::segmented_reduce(e, offs, ff::plus);
  const ff::Expr softmax = e / ff::broadcast(rowsum, offs);
  if (!ff::gpu_available()) {  // shown and compiled
    example::no_gpu(softmax);
    return 0;
  }

  const std::size_t rows = 4096, n = rows * static_cast<std::size_t>(columns);
  std::vector<float> host(n);
  unsigned state = 11;
  for (auto& v : host) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>((state >> 8) % 2000) / 100.0f - 10.0f;
  }
  ff::Runtime rt;
  auto dx = rt.upload(host);
  ff::DeviceArray<float> dy = rt.run(softmax, {{x, dx}});
  const std::vector<float> y = dy.download();

  // Each row against softmax in double, and each row's sum is 1.
  bool ok = y.size() == n;
  for (std::size_t r = 0; ok && r < rows; ++r) {
    const float* row = host.data() + r * static_cast<std::size_t>(columns);
    double m = -INFINITY, s = 0, total = 0;
    for (std::int64_t j = 0; j < columns; ++j) m = std::fmax(m, row[j]);
    for (std::int64_t j = 0; j < columns; ++j) s += std::exp(static_cast<double>(row[j]) - m);
    for (std::int64_t j = 0; j < columns; ++j) {
      const double want = std::exp(static_cast<double>(row[j]) - m) / s;
      const float got = y[r * static_cast<std::size_t>(columns) + static_cast<std::size_t>(j)];
      ok = ok && std::fabs(got - want) <= 1e-5 * want;
      total += got;
    }
    ok = ok && std::fabs(total - 1.0) < 1e-4;
  }
  std::printf("softmax of %zu rows of %lld floats (y[0] = %.6g): %s\n", rows, static_cast<long long>(columns),
              y.empty() ? 0.0 : y[0], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
