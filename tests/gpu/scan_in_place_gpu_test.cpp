// GPU execution tests for in-place scans: the scan's result bound to its input's memory
// ({s, xs}); the reference is computed from a host copy of the input (helpers in
// scan_gpu_support.hpp).
#include <doctest/doctest.h>

#include <cmath>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/scan_gpu_support.hpp"

namespace ff = fuseflow;
using namespace ff::test::scan_support;

namespace {

void check_in_place_sums(const std::vector<std::int64_t>& sizes) {
  for (ff::Strategy s : kStrategies)
    for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
      for (std::int64_t n : sizes) {
        run_sum<std::int32_t>(n, kind, s, true);
        run_sum<float>(n, kind, s, true);
      }
}

void check_in_place_prologue_epilogue(const std::vector<std::int64_t>& sizes) {
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes)
      run_against_reference<int, int>(describe("in-place prologue + epilogue", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(x * 3 - 1, ff::plus, ff::exclusive, s) * 2 + x);
      }, n, -1000, 1000, 0, true);
}

void check_in_place_linear_recurrences(const std::vector<std::int64_t>& sizes) {
  using P = ff::Tuple<float, float>;
  ff::Runtime& rt = runtime();
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes) {
      auto ha = random_values<float>(n, -1, 1), hb = random_values<float>(n, -1, 1);
      std::vector<P> pairs(ha.size());
      for (std::size_t i = 0; i < pairs.size(); ++i) pairs[i] = P{ha[i], hb[i]};
      auto p = ff::input<P>("p");
      auto dev = rt.upload(pairs);
      ff::Expr scanned = ff::scan(p, ff::catalog::linear_recurrence(), ff::inclusive, s);
      rt.run(scanned, {{p, dev}, {scanned, dev}});
      std::vector<P> got = dev.download();
      std::vector<double> want(ha.size()), magnitude(ha.size()), got64(ha.size());
      double x = 0, m = 0;
      for (std::size_t i = 0; i < ha.size(); ++i) {
        x = ha[i] * x + hb[i];
        m = std::fabs(ha[i]) * m + std::fabs(hb[i]);
        want[i] = x;
        magnitude[i] = 10 * m;
        got64[i] = ff::get<1>(got[i]);
      }
      check_close(got64, want, magnitude, describe("in-place linear recurrence", n, s));
    }
}

}  // namespace

TEST_CASE("an in-place scan (result bound to its input's memory) overwrites the input with the scan") {
  check_in_place_sums(kSizes);
}

TEST_CASE("an in-place scan with a map before (prologue) and after it (epilogue) reads each element before it is written") {
  check_in_place_prologue_epilogue(kSizes);
}

TEST_CASE("an in-place linear recurrence over (a, b) pairs keeps the order of its non-commutative monoid") {
  check_in_place_linear_recurrences(kSizes);
}

TEST_CASE("in-place sums, maps and linear recurrences at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_in_place_sums(kLongSizes);
  check_in_place_prologue_epilogue(kLongSizes);
  check_in_place_linear_recurrences(kLongSizes);
}
