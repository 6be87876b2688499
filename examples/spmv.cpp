// spmv: a sparse matrix times a vector, y = A x, with A in CSR form (row r's non-zeros are
// vals[row_offsets[r] .. row_offsets[r+1]) in columns cols[...]), and the adjacent
// difference of the result.
//   - segmented_reduce(vals * gather(x, cols), row_offsets, plus): each non-zero reads its
//     column's x (a gather, fused into the segmented reduction's loads) and the products
//     are summed per row: one kernel, no product array. A column outside x is an error
//     the run reports with its position (gather_unchecked skips that check).
//   - y - shift(y, -1, 0): y[r] - y[r-1], the neighbour read from y itself.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto vals = ff::input<float>("vals");
  auto cols = ff::input<int>("cols");
  auto row_offsets = ff::input<long long>("row_offsets");
  auto x = ff::input<float>("x");
  auto y_in = ff::input<float>("y");
  const ff::Expr spmv = ff::segmented_reduce(vals * ff::gather(x, cols), row_offsets, ff::plus);
  const ff::Expr diff = y_in - ff::shift(y_in, -1, 0.0f);
  if (!ff::gpu_available()) {  // shown and compiled, each program
    example::no_gpu(spmv);
    example::no_gpu(diff);
    return 0;
  }

  // 2^18 rows of 0..60 non-zeros over a vector of 2^16; small whole-number values, so
  // every row sum is exact in f32 and the checks below can use ==.
  const std::size_t rows = 1 << 18, columns = 1 << 16;
  unsigned state = 7;
  auto next = [&state](unsigned range) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % range;
  };
  std::vector<long long> offsets = {0};
  for (std::size_t r = 0; r < rows; ++r) offsets.push_back(offsets.back() + next(61));
  const auto nnz = static_cast<std::size_t>(offsets.back());
  std::vector<float> values(nnz), vector(columns);
  std::vector<int> column(nnz);
  for (std::size_t k = 0; k < nnz; ++k) {
    values[k] = static_cast<float>(next(8));
    column[k] = static_cast<int>(next(columns));
  }
  for (auto& v : vector) v = static_cast<float>(next(16));

  ff::Runtime rt;
  auto dv = rt.upload(values);
  auto dc = rt.upload(column);
  auto doff = rt.upload(offsets);
  auto dx = rt.upload(vector);
  ff::DeviceArray<float> y = rt.run(spmv, {{vals, dv}, {cols, dc}, {row_offsets, doff}, {x, dx}});
  const std::vector<float> got = y.download();
  const std::vector<float> got_diff = rt.run(diff, {{y_in, y}}).download<float>();

  bool ok = got.size() == rows && got_diff.size() == rows;
  for (std::size_t r = 0; ok && r < rows; ++r) {
    float sum = 0;
    for (auto k = static_cast<std::size_t>(offsets[r]); k < static_cast<std::size_t>(offsets[r + 1]); ++k)
      sum += values[k] * vector[static_cast<std::size_t>(column[k])];
    ok = got[r] == sum && got_diff[r] == sum - (r ? got[r - 1] : 0.0f);
  }
  std::printf("spmv of %zu rows, %zu non-zeros (y[0] = %.0f), and its adjacent difference: %s\n", rows, nnz,
              got.empty() ? 0.0 : got[0], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
