// GPU execution tests for scans (helpers in scan_gpu_support.hpp): sums of every type,
// max, the non-commutative linear recurrence and maximum segment sum, maps before and
// after the scan, masked scans, several outputs, reductions folded into the scan's pass,
// 64-bit indexing, and the same bits on every run. The in-place scans are in
// scan_in_place_gpu_test.cpp, the second kernel of large scans (staged tile, pipelined
// scan) and the look-back state in scan_second_kernel_gpu_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/scan_gpu_support.hpp"

namespace ff = fuseflow;
using namespace ff::test::scan_support;

namespace {

void check_sums(const std::vector<std::int64_t>& sizes) {
  for (ff::Strategy s : kStrategies)
    for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
      for (std::int64_t n : sizes) {
        run_sum<std::int32_t>(n, kind, s);
        run_sum<std::int64_t>(n, kind, s);
        run_sum<float>(n, kind, s);
        run_sum<double>(n, kind, s);
      }
}

void check_max_scans(const std::vector<std::int64_t>& sizes) {
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes)
      run_against_reference<float, float>(describe("max-scan", n, s),
                                          [&](const ff::Expr& x) { return ff::Program(ff::scan(x, ff::max, ff::inclusive, s)); },
                                          n, -1e6, 1e6);
}

void check_linear_recurrences(const std::vector<std::int64_t>& sizes) {
  ff::Runtime& rt = runtime();
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes) {
      auto ha = random_values<float>(n, -1, 1), hb = random_values<float>(n, -1, 1);
      auto a = ff::input<float>("a"), b = ff::input<float>("b");
      auto da = rt.upload(ha), db = rt.upload(hb);
      ff::Expr prog = ff::get<1>(ff::scan(ff::zip(a, b), ff::catalog::linear_recurrence(), ff::inclusive, s));
      std::vector<float> got = rt.run(prog, {{a, da}, {b, db}}).download<float>();
      std::vector<double> want(ha.size()), magnitude(ha.size()), got64(got.begin(), got.end());
      double x = 0, m = 0;
      for (std::size_t i = 0; i < ha.size(); ++i) {
        x = ha[i] * x + hb[i];
        m = std::fabs(ha[i]) * m + std::fabs(hb[i]);  // bounds |x| and the rounding it went through
        want[i] = x;
        magnitude[i] = 10 * m;
      }
      check_close(got64, want, magnitude, describe("linear recurrence", n, s));
    }
}

void check_mssp_prefixes(const std::vector<std::int64_t>& sizes) {
  using M = ff::Tuple<int, int, int, int>;
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes)
      run_against_reference<int, M>(describe("MSSP prefix", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(ff::catalog::mssp_parts(x), ff::catalog::mssp(), ff::inclusive, s));
      }, n, -100, 100);
}

void check_prologue_epilogue(const std::vector<std::int64_t>& sizes) {
  auto build = [](ff::Strategy s) {
    return [s](const ff::Expr& x) {
      return ff::Program(ff::scan(x * 3 - 1, ff::plus, ff::exclusive, s) * 2 + x);
    };
  };
  // One scan kernel (and on sm_90 the pipelined scan for large n), no map kernel.
  const ff::codegen::Plan plan =
      ff::codegen::plan(build(ff::strategy::automatic)(ff::input<int>("x")), ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_i32_plus_exclusive");
  CHECK(plan.kernels[1].name == "ff_scan_pipelined_i32_plus_exclusive");
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes) run_against_reference<int, int>(describe("prologue + epilogue", n, s), build(s), n, -1000, 1000);
}

void check_masked_scans(const std::vector<std::int64_t>& sizes) {
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : sizes)
      run_against_reference<int, int>(describe("masked scan", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(ff::select(x > 0, x, 0), ff::plus, ff::inclusive, s));
      }, n, -1000, 1000);
}

void check_folded_reductions(const std::vector<std::int64_t>& sizes) {
  const ff::codegen::Target sm90 = ff::codegen::Target::preset("sm_90");
  // Integers: plus and max (commutative) and the maximum segment sum (non-commutative,
  // folded in tile order) beside an exclusive scan; all exact.
  auto ints = [](const ff::Expr& x) {
    ff::Expr s = ff::scan(x, ff::plus, ff::exclusive);
    return ff::Program(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(x * x, ff::max),
                                   ff::reduce(ff::catalog::mssp_parts(x), ff::catalog::mssp()),
                                   ff::reduce(ff::filter(x, x > 0), ff::plus)));
  };
  CHECK(ff::codegen::plan(ints(ff::input<int>("x")), sm90).kernels.size() == 1);
  for (std::int64_t n : sizes) run_against_reference<int, int>("scan + 4 reductions of i32", ints, n, -1000, 1000);
  // In place too: the reductions read the elements before the scan overwrites them.
  for (std::int64_t n : sizes) run_against_reference<int, int>("in-place scan + 4 reductions of i32", ints, n, -1000, 1000, 0, true);

  // Floats: the sum within the Numerics bound of the f64 sum, the max exactly.
  ff::Runtime& rt = runtime();
  for (std::int64_t n : sizes) {
    auto host = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x");
    ff::Expr s = ff::scan(x, ff::plus);
    ff::Program prog(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(x, ff::max)));
    CHECK(ff::codegen::plan(prog, sm90).kernels.size() == 1);
    auto dev = rt.upload(host);
    std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
    double sum = 0, abs_sum = 0;
    float max = -INFINITY;
    for (float v : host) sum += v, abs_sum += std::fabs(v), max = std::max(max, v);
    INFO("f32 scan + sum + max, n = " << n);
    CHECK(std::fabs(got[1].as<float>() - sum) <= 2e-5 * abs_sum + 1e-6);
    CHECK(got[2].as<float>() == max);
  }
}

}  // namespace

TEST_CASE("inclusive and exclusive sums of i32, i64, f32 and f64 at every size up to 70001, both strategies") {
  check_sums(kSizes);
}

TEST_CASE("a max-scan of f32 is exact") {
  check_max_scans(kSizes);
}

TEST_CASE("a linear recurrence x[i] = a[i] * x[i-1] + b[i] keeps the order of its non-commutative monoid") {
  check_linear_recurrences(kSizes);
}

TEST_CASE("maximum segment sum of every prefix (4 x i32, non-commutative) is exact") {
  check_mssp_prefixes(kSizes);
}

TEST_CASE("a map before the scan (prologue) and after it (epilogue) are fused into the scan kernel") {
  check_prologue_epilogue(kSizes);
}

// A masked scan over all n elements is written scan(select(p, x, identity)): dropped
// elements contribute the identity. scan(filter(x, p)) means the scan of the compacted
// survivors (the CPU reference's definition): filter_scan_gpu_test.cpp.
TEST_CASE("a masked scan via select keeps n outputs") {
  check_masked_scans(kSizes);
}

TEST_CASE("several outputs of one scan, beside a reduction of the same input") {
  for (std::int64_t n : ff::test::capped({0LL, 1LL, 1025LL, (1LL << 20) + 7})) {
    auto build = [](const ff::Expr& x) {
      ff::Expr s = ff::scan(x, ff::plus);
      return ff::Program(ff::outputs(s, ff::reduce(x, ff::plus), s - x));
    };
    run_against_reference<int, int>("scan output", build, n, -1000, 1000, 0);
    run_against_reference<int, int>("scan epilogue output", build, n, -1000, 1000, 2);
  }
}

TEST_CASE("reductions beside a scan of the same input are folded into the scan's one pass") {
  check_folded_reductions(kSizes);
}

TEST_CASE("sums, max, recurrences, MSSP, maps and folded reductions at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_sums(kLongSizes);
  check_max_scans(kLongSizes);
  check_linear_recurrences(kLongSizes);
  check_mssp_prefixes(kLongSizes);
  check_prologue_epilogue(kLongSizes);
  check_masked_scans(kLongSizes);
  check_folded_reductions(kLongSizes);
}

TEST_CASE("a scan over more than 2^31 elements uses 64-bit indexing" * doctest::test_suite("long")) {
  ff::Runtime& rt = runtime();
  const std::int64_t n = (1LL << 31) + 17;
  FF_TEST_NEEDS_ELEMENTS(n);
  const std::vector<std::uint8_t> host = ff::test::random_bytes(n);
  auto dev = rt.upload(host);
  auto x = ff::input<std::uint8_t>("x");
  // Checked by a plain loop: the reference evaluator would take minutes here.
  std::vector<std::uint32_t> got = rt.run(ff::scan(ff::cast<std::uint32_t>(x), ff::plus), {{x, dev}}).download<std::uint32_t>();
  REQUIRE(got.size() == host.size());
  std::uint32_t sum = 0;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    sum += host[i];
    if (got[i] != sum && bad++ == 0) first = i;
  }
  INFO(bad << " elements differ, the first at " << first);
  CHECK(bad == 0);
}

// DESIGN.md: the same bits on every run. The look-back's prefixes are chained left folds
// of the tile aggregates whatever the timing (scan.cuh, look_back), so the default
// strategy's float results never change; 2^24 f32 are 4096 tiles, far more than are
// resident at once, so the look-back finds its prefix at different distances from run
// to run. The linear recurrence takes the separate (fenced) status arrays.
TEST_CASE("a look-back (default) float scan is the same bits on every run") {
  ff::Runtime& rt = runtime();
  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto host = random_values<float>(1 << 24, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  ff::Expr prog = ff::scan(x, ff::plus, ff::inclusive);
  std::vector<float> first = rt.run(prog, {{x, dev}}).download<float>();
  for (int i = 1; i < 20; ++i) {
    std::vector<float> again = rt.run(prog, {{x, dev}}).download<float>();
    REQUIRE(again.size() == first.size());
    INFO("run " << i);
    CHECK(std::memcmp(again.data(), first.data(), first.size() * sizeof(float)) == 0);
  }

  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto ha = random_values<float>(1 << 24, -1, 1), hb = random_values<float>(1 << 24, -1, 1);
  auto a = ff::input<float>("a"), b = ff::input<float>("b");
  auto da = rt.upload(ha), db = rt.upload(hb);
  ff::Expr recurrence = ff::get<1>(ff::scan(ff::zip(a, b), ff::catalog::linear_recurrence()));
  std::vector<float> first_x = rt.run(recurrence, {{a, da}, {b, db}}).download<float>();
  for (int i = 1; i < 5; ++i) {
    std::vector<float> again = rt.run(recurrence, {{a, da}, {b, db}}).download<float>();
    REQUIRE(again.size() == first_x.size());
    INFO("linear recurrence, run " << i);
    CHECK(std::memcmp(again.data(), first_x.data(), first_x.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a reduce_then_scan float scan is the same bits on every run") {
  ff::Runtime& rt = runtime();
  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto host = random_values<float>(1 << 24, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  ff::Expr prog = ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan);
  std::vector<float> first = rt.run(prog, {{x, dev}}).download<float>();
  for (int i = 0; i < 5; ++i) check_exact(rt.run(prog, {{x, dev}}).download<float>(), first, "run " + std::to_string(i));
}
