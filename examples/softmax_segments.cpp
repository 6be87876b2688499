// softmax_segments: softmax over rows of any lengths (a ragged batch: sentences of different
// lengths, a CSR matrix's rows), given by an offsets array: row r is the elements
// [offsets[r], offsets[r + 1]), rows may be empty or longer than a block:
//   rowmax = segmented_reduce(x, offs, max); e = exp(x - broadcast(rowmax, offs));
//   y = e / broadcast(segmented_reduce(e, offs, plus), offs)
// The rows are not uniform, so this is not one per-row kernel (softmax_rows.cpp): the
// segmented reductions write their per-row results on the device, and a map gives each
// element its row's (strategy "broadcast segments"), with no round trip through the host.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto offs = ff::input<long long>("row_offsets");
  const auto rowmax = ff::segmented_reduce(x, offs, ff::max);
  const auto e = ff::exp(x - ff::broadcast(rowmax, offs));
  const ff::Expr softmax = e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs);
  if (example::no_gpu(softmax)) return 0;

  // Rows of 0 to 5000 elements, some empty.
  std::vector<long long> offsets = {0};
  unsigned state = 7;
  for (int r = 0; r < 20000; ++r) {
    state = state * 1664525u + 1013904223u;
    offsets.push_back(offsets.back() + (state >> 8) % 5001 * ((state >> 4) % 4 != 0));
  }
  const std::size_t n = static_cast<std::size_t>(offsets.back());
  std::vector<float> host(n);
  for (auto& v : host) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>((state >> 8) % 2000) / 100.0f - 10.0f;
  }
  ff::Runtime rt;
  auto dx = rt.upload(host);
  auto doffs = rt.upload(offsets);
  const std::vector<float> y = rt.run(ff::Program(softmax), {{x, dx}, {offs, doffs}}).at(0).download<float>();

  // Each row against softmax in double.
  bool ok = y.size() == n;
  for (std::size_t r = 0; ok && r + 1 < offsets.size(); ++r) {
    const auto b = static_cast<std::size_t>(offsets[r]), end = static_cast<std::size_t>(offsets[r + 1]);
    double m = -INFINITY, s = 0;
    for (std::size_t i = b; i < end; ++i) m = std::fmax(m, host[i]);
    for (std::size_t i = b; i < end; ++i) s += std::exp(static_cast<double>(host[i]) - m);
    for (std::size_t i = b; i < end; ++i) ok = ok && std::fabs(y[i] - std::exp(host[i] - m) / s) <= 1e-5 * std::exp(host[i] - m) / s + 1e-30;
  }
  std::printf("softmax of %zu rows of 0..5000 floats (%zu elements): %s\n", offsets.size() - 1, n, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
