// GPU execution tests for a scan of a filter's result (the survivors' scan, compacted):
// one look-back kernel scans (value, survivor count) pairs and stores each survivor's scan
// at its position among the survivors. Fresh random inputs, outputs and their counts
// poisoned (FUSEFLOW_POISON=1), every result compared exactly with the CPU reference
// evaluator (integers and integer tuples), its length with the reference's too.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// The edges, and 70001 (tens of tiles, so tiles look back over several predecessors).
const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, 70001});
const std::vector<std::int64_t> kLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});

using ff::test::random_values;
using ff::test::runtime;

template <class T>
void check_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  INFO(what << ": " << got.size() << " elements, the reference has " << want.size());
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements differ, the first at " << first);
  CHECK(bad == 0);
}

// Runs `prog` over input x (values from [lo, hi)) on the GPU and the CPU reference; every
// output, of element type R, must match exactly.
template <class R>
void run_against_reference(const std::string& what, const ff::Program& prog, const ff::Expr& x, std::int64_t n,
                           int lo, int hi) {
  ff::Runtime& rt = runtime();
  const auto host = random_values<std::int32_t>(n, lo, hi);
  auto dev = rt.upload(host);
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
  auto want = ff::evaluate(prog, b);
  for (std::size_t o = 0; o < got.size(); ++o) {
    INFO(what << ", output " << o);
    if (want[o].is_scalar) CHECK(got[o].value() == want[o].scalar);
    else check_exact(got[o].download<R>(), want[o].array.to_vector<R>(), what + ", output " + std::to_string(o));
  }
}

std::string describe(const std::string& what, std::int64_t n) { return what + ", n = " + std::to_string(n); }

void check_sums(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<std::int32_t>("x");
  for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
    for (std::int64_t n : sizes) {
      const std::string k = kind == ff::inclusive ? "inclusive" : "exclusive";
      // About half kept, all kept (x > -2000), none kept (x > 2000).
      for (int t : {0, -2000, 2000})
        run_against_reference<std::int32_t>(describe(k + " sum of x > " + std::to_string(t), n),
                                            ff::Program(ff::scan(ff::filter(x, x > t), ff::plus, kind)), x, n, -1000,
                                            1000);
      run_against_reference<std::int64_t>(
          describe(k + " max of i64(x * 3) where x is odd", n),
          ff::Program(ff::scan(ff::filter(ff::cast<std::int64_t>(x * 3), (x & 1) == 1), ff::max, kind)), x, n, -1000,
          1000);
    }
}

// MSSP is not commutative: the survivors' scan must combine them in input order.
void check_mssp(const std::vector<std::int64_t>& sizes) {
  using M = ff::Tuple<int, int, int, int>;
  auto x = ff::input<std::int32_t>("x");
  for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
    for (std::int64_t n : sizes)
      run_against_reference<M>(describe("MSSP prefixes of the survivors x % 3 != 0", n),
                               ff::Program(ff::scan(ff::filter(ff::catalog::mssp_parts(x), x % 3 != 0),
                                                    ff::catalog::mssp(), kind)),
                               x, n, -100, 100);
}

// Maps of the scan (epilogues), index() among the survivors beside it, the filter's own
// result and a reduction folded into the same pass.
void check_compositions(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<std::int32_t>("x");
  for (std::int64_t n : sizes) {
    ff::Expr kept = ff::filter(x, x > 0);
    ff::Expr s = ff::scan(kept, ff::plus, ff::exclusive);
    run_against_reference<std::int64_t>(
        describe("the survivors' scan minus their position (index() among the survivors)", n),
        ff::Program(ff::cast<std::int64_t>(s) * 2 - ff::index()), x, n, -1000, 1000);
    // The filter's own outputs, index() among them too, are written by the scan's kernel.
    run_against_reference<std::int64_t>(
        describe("outputs(i64(filter) * index(), i64(scan of the filter)) in one kernel", n),
        ff::outputs(ff::cast<std::int64_t>(kept) * ff::index(), ff::cast<std::int64_t>(s)), x, n, -1000, 1000);
    run_against_reference<std::int32_t>(describe("outputs(filter, scan of the filter, scan + 1)", n),
                                        ff::outputs(kept, ff::scan(kept, ff::plus), ff::scan(kept, ff::plus) + 1), x,
                                        n, -1000, 1000);
  }
}

// Reductions reading index() beside a filter's result: the position among the survivors.
void check_positions(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<std::int32_t>("x");
  for (std::int64_t n : sizes) {
    ff::Expr kept = ff::filter(x, x > 0);
    run_against_reference<std::int64_t>(describe("sum of survivor * its position", n),
                                        ff::Program(ff::reduce(ff::cast<std::int64_t>(kept) * ff::index(), ff::plus)),
                                        x, n, -1000, 1000);
    // Ties (values from [-20, 20)) take the first position: the order of the survivors counts.
    // A plain reduction of the input folds into the same pass.
    ff::Program arg(ff::outputs(ff::reduce(ff::zip(kept, ff::index()), ff::argmax),
                                ff::reduce(ff::cast<std::int64_t>(kept) - ff::index(), ff::min), ff::reduce(x, ff::max)));
    ff::Runtime& rt = runtime();
    const auto host = random_values<std::int32_t>(n, -20, 20);
    auto dev = rt.upload(host);
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    std::vector<ff::Result> got = rt.run(arg, {{x, dev}});
    auto want = ff::evaluate(arg, b);
    INFO(describe("argmax (value, position among survivors) and min of value - position", n));
    CHECK(got[0].value() == want[0].scalar);
    CHECK(got[1].value() == want[1].scalar);
    CHECK(got[2].value() == want[2].scalar);
  }
}

}  // namespace

TEST_CASE("reductions over index() beside a filter's result use the position among the survivors") {
  check_positions(kSizes);
}

TEST_CASE("a scan of a filter's result is the survivors' scan, inclusive and exclusive, keep all, none, half") {
  check_sums(kSizes);
}

TEST_CASE("a non-commutative scan (MSSP) of a filter's result keeps the survivors' order") {
  check_mssp(kSizes);
}

TEST_CASE("a scan of a filter's result with maps after it, index() among the survivors and the filter itself") {
  check_compositions(kSizes);
}

TEST_CASE("a scan of a filter's result and a reduction of the input: one pass, the count written for n = 0") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<std::int32_t>("x");
  ff::Program prog = ff::outputs(ff::scan(ff::filter(x, x > 0), ff::plus), ff::reduce(x, ff::max));
  CHECK(ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90")).kernels.size() == 1);
  for (std::int64_t n : ff::test::capped({0, 5, 70001})) {
    const auto host = random_values<std::int32_t>(n, -1000, 1000);
    auto dev = rt.upload(host);
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
    auto want = ff::evaluate(prog, b);
    check_exact(got[0].download<std::int32_t>(), want[0].array.to_vector<std::int32_t>(), describe("scan", n));
    CHECK(got[1].value() == want[1].scalar);
  }
}

TEST_CASE("a scan of a filter's result at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_sums(kLongSizes);
  check_mssp(kLongSizes);
  check_compositions(kLongSizes);
  check_positions(kLongSizes);
}
