// GPU execution tests of programs in stages (passes/stages.cpp): a sort's or reduce_by_key's
// result read by a later map, reduction or scan of the same program. Fresh random inputs,
// outputs poisoned, every output compared exactly (integers) with the CPU reference; the
// arrays of reduce_by_key's runs, and maps of them, come back with exactly the runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 33, 1000, (1 << 16) + 3, (1 << 20) + 7});

std::vector<int> random_ints(std::int64_t n, int lo, int hi) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& x : v) x = d(ff::test::rng());
  return v;
}

// Keys in runs of 1..8 equal values (reduce_by_key's segments).
std::vector<int> runs_of_keys(std::int64_t n) {
  std::vector<int> k(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> len(1, 8), key(0, 1000);
  for (std::size_t i = 0; i < k.size();) {
    const int v = key(ff::test::rng());
    for (int j = len(ff::test::rng()); j > 0 && i < k.size(); --j) k[i++] = v;
  }
  return k;
}

// Runs `prog` over inputs `ins` (i32 arrays) on the GPU and the CPU reference; every
// output must match exactly (arrays in length too).
void check_program(const std::string& what, const ff::Program& prog, const std::vector<ff::Expr>& ins,
                   const std::vector<std::vector<int>>& host) {
  ff::Runtime& rt = ff::test::runtime();
  std::vector<ff::DeviceArray<int>> dev;
  ff::Bindings bindings;
  ff::HostBindings b;
  for (std::size_t i = 0; i < ins.size(); ++i) dev.push_back(rt.upload(host[i]));
  for (std::size_t i = 0; i < ins.size(); ++i) {
    bindings.push_back({ins[i], dev[i]});
    b.bind(ins[i], ff::HostArray::from(host[i]));
  }
  std::vector<ff::Result> got = rt.run(prog, bindings);
  const auto want = ff::evaluate(prog, b);
  REQUIRE(got.size() == want.size());
  for (std::size_t o = 0; o < got.size(); ++o) {
    INFO(what << ", output " << o);
    if (want[o].is_scalar) {
      CHECK(got[o].value().as<int>() == want[o].scalar.as<int>());
      continue;
    }
    const std::vector<int> w = want[o].array.to_vector<int>();
    REQUIRE(got[o].size() == w.size());
    const std::vector<int> g = got[o].download<int>();
    REQUIRE(g.size() == w.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < g.size(); ++i) bad += g[i] != w[i];
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("a sort's keys and values read by a scan, a reduction and a map in the same program") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  auto [sk, sv] = ff::sort_by_key(k, v, 16);
  const ff::Program prog = ff::outputs(ff::scan(sv, ff::plus), ff::reduce(sk * 2, ff::plus), sk, sv * sk,
                                       ff::reduce_by_key(sk, sv, ff::plus).values);  // one total per key
  for (std::int64_t n : kSizes)
    check_program("sort_by_key, n = " + std::to_string(n), prog, {k, v},
                  {random_ints(n, -2, 17), random_ints(n, -1000, 1000)});
}

TEST_CASE("a radix sort's keys in a map, and a counting sort of a counting sort's keys") {
  auto k = ff::input<int>("k");
  const ff::Expr sorted = ff::sort(k);
  const ff::Program maps = ff::outputs(sorted + 1, ff::reduce(ff::max(sorted, 0), ff::max));
  const ff::Expr twice = ff::counting_sort(ff::counting_sort(k, 8) + 1, 16);
  const ff::Program chain = ff::outputs(ff::reduce(twice * 3, ff::plus), twice);
  for (std::int64_t n : kSizes) {
    check_program("sort(k) + 1, n = " + std::to_string(n), maps, {k}, {random_ints(n, -100000, 100000)});
    check_program("counting_sort(counting_sort(k, 8) + 1, 16), n = " + std::to_string(n), chain, {k},
                  {random_ints(n, -1, 9)});
  }
}

TEST_CASE("reduce_by_key's keys and totals in a later map and reduction: exactly the runs, counted on the device") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::Program prog =
      ff::outputs(totals * 2, ff::reduce(totals, ff::max), keys, ff::reduce(keys + totals, ff::plus), totals);
  for (std::int64_t n : kSizes)
    check_program("reduce_by_key, n = " + std::to_string(n), prog, {k, x}, {runs_of_keys(n), random_ints(n, -50, 50)});
}

TEST_CASE("a scan over reduce_by_key's runs: the survivors' scan of the runs, as long as the device's count") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::Program inclusive = ff::outputs(ff::scan(totals, ff::plus), keys);
  const ff::Program exclusive = ff::outputs(ff::scan(totals * 3, ff::max, ff::exclusive));
  for (std::int64_t n : kSizes) {
    check_program("inclusive scan of the runs, n = " + std::to_string(n), inclusive, {k, x},
                  {runs_of_keys(n), random_ints(n, -50, 50)});
    check_program("exclusive max-scan of the runs, n = " + std::to_string(n), exclusive, {k, x},
                  {runs_of_keys(n), random_ints(n, -50, 50)});
  }
}

TEST_CASE("sorts of a filter's result: the survivors compacted on the device, then sorted, exactly the survivors back") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  const ff::Expr kept = ff::filter(k, v > 0);
  auto [sk, sv] = ff::sort_by_key(kept, ff::filter(v, v > 0), 16);
  auto [rk, rv] = ff::sort_by_key(ff::filter(k, v < 100), ff::filter(v * 2, v < 100));  // radix, all 32 bits
  const ff::Program counting = ff::outputs(ff::counting_sort(kept, 16), sk, sv, ff::reduce(sv * sk, ff::plus));
  const ff::Program radix = ff::outputs(ff::sort(kept), rk, rv + 1, ff::scan(rv, ff::plus), kept);
  for (std::int64_t n : kSizes) {
    // Keys out of [0, 16) too: they sort after every bin, the padding after them.
    check_program("counting sorts of filter(k, v > 0), n = " + std::to_string(n), counting, {k, v},
                  {random_ints(n, -2, 17), random_ints(n, -1000, 1000)});
    // Keys up to INT_MAX: the padding past the survivors ties with them and stays behind.
    check_program("radix sorts of filters, n = " + std::to_string(n), radix, {k, v},
                  {random_ints(n, 2147483600, 2147483647), random_ints(n, -1000, 1000)});
  }
}

TEST_CASE("reduce_by_key and scan_by_key of a filter's result: the runs of the survivors, counted on the device") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(ff::filter(k, x != 0), ff::filter(x, x != 0), ff::plus);
  const ff::Expr scanned = ff::scan_by_key(ff::filter(k, x > 0), ff::filter(x * 3, x > 0), ff::plus);
  const ff::Program reduce = ff::outputs(keys, totals, ff::reduce(totals, ff::max), totals * 2);
  // Values beside the filtered keys are read at the survivors' positions, as in the reference.
  const ff::Program scan = ff::outputs(scanned, ff::scan_by_key(ff::filter(k, x > 0), x, ff::max), ff::reduce(scanned, ff::plus));
  for (std::int64_t n : kSizes) {
    // Zeros dropped inside a run join its survivors; a run dropped whole joins its
    // neighbours' survivors when their keys are equal.
    check_program("reduce_by_key of filters, n = " + std::to_string(n), reduce, {k, x},
                  {runs_of_keys(n), random_ints(n, -3, 3)});
    check_program("scan_by_key of filters, n = " + std::to_string(n), scan, {k, x},
                  {runs_of_keys(n), random_ints(n, -50, 50)});
  }
}

TEST_CASE("index() beside reduce_by_key's runs and a sorted filter's result: the position among them") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::Expr at = ff::cast<int>(ff::index());
  const ff::Program runs = ff::outputs(totals * at, ff::reduce(keys * at - totals, ff::plus),
                                       ff::scan(totals + at, ff::plus), ff::reduce(at + totals * 0, ff::max));
  const ff::Expr sorted = ff::counting_sort(ff::filter(k % 16, x > 0), 16);
  const ff::Program sort = ff::outputs(sorted * 1000 + at, ff::reduce(sorted * at, ff::plus));
  for (std::int64_t n : kSizes) {
    check_program("index() beside the runs, n = " + std::to_string(n), runs, {k, x},
                  {runs_of_keys(n), random_ints(n, -50, 50)});
    check_program("index() beside a sorted filter, n = " + std::to_string(n), sort, {k, x},
                  {random_ints(n, 0, 1000), random_ints(n, -50, 50)});
  }
}

TEST_CASE("a sort and a scan_by_key of reduce_by_key's runs, and a sort of a filter of a sort's keys") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::Program runs = ff::outputs(ff::counting_sort(totals, 40), ff::scan_by_key(keys % 3, totals, ff::plus),
                                       ff::sort_by_key(totals, keys).values);
  const ff::Expr sorted = ff::counting_sort(k % 16, 16);
  const ff::Program chain = ff::outputs(ff::counting_sort(ff::filter(sorted, sorted > 3) * 2, 40));
  for (std::int64_t n : kSizes) {
    check_program("sorts and scan_by_key of the runs, n = " + std::to_string(n), runs, {k, x},
                  {runs_of_keys(n), random_ints(n, -5, 10)});
    check_program("sort of a filter of a sort, n = " + std::to_string(n), chain, {k}, {random_ints(n, 0, 1000)});
  }
}

namespace {

// Offsets into k survivors: 0, then sorted draws in [0, k], the last k when `cover`.
std::vector<int> survivor_offsets(std::size_t k, std::size_t segments, bool cover) {
  std::vector<int> o(segments + 1, 0);
  std::uniform_int_distribution<std::size_t> at(0, k);
  for (std::size_t s = 1; s <= segments; ++s) o[s] = static_cast<int>(at(ff::test::rng()));
  std::sort(o.begin() + 1, o.end());
  if (cover) o.back() = static_cast<int>(k);
  return o;
}

}  // namespace

TEST_CASE("segmented reduce and scan by offsets of a filter's result: the offsets index the survivors") {
  auto x = ff::input<int>("x");
  auto offs = ff::input<int>("offs");
  const ff::Expr kept = ff::filter(x, x > 0);
  const ff::Program prog = ff::outputs(ff::segmented_reduce(kept, offs, ff::plus),
                                       ff::segmented_scan(ff::filter(x * 3, x > 0), offs, ff::max),
                                       ff::segmented_reduce(ff::filter(x, x < 20), offs, ff::max));
  for (std::int64_t n : ff::test::capped({0, 1, 33, 1000, (1 << 16) + 3})) {
    const std::vector<int> xs = random_ints(n, -50, 50);
    std::size_t positive = 0, small = 0;
    for (int v : xs) {
      positive += v > 0;
      small += v < 20;
    }
    // Offsets must fit the fewer survivors of the two predicates; segments short and long.
    const std::size_t k = std::min(positive, small);
    for (const std::size_t segments : {std::size_t{1}, k / 3 + 1, k + 2})
      for (const bool cover : {true, false})
        check_program("segmented ops of filters, n = " + std::to_string(n) + ", " + std::to_string(segments) +
                          " segments", prog, {x, offs}, {xs, survivor_offsets(k, segments, cover)});
  }
}

TEST_CASE("offsets past a filter's survivors: the run names the bad offset, as the CPU reference does") {
  auto x = ff::input<int>("x");
  auto offs = ff::input<int>("offs");
  ff::Runtime& rt = ff::test::runtime();
  const std::int64_t n = 1000;
  const std::vector<int> xs = random_ints(n, -50, 50);
  int k = 0;
  for (int v : xs) k += v > 0;
  auto dx = rt.upload(xs);
  for (const bool scan : {false, true}) {
    const ff::Expr e = scan ? ff::segmented_scan(ff::filter(x, x > 0), offs, ff::plus)
                            : ff::segmented_reduce(ff::filter(x, x > 0), offs, ff::plus);
    // Past the survivors but inside n: the kernel alone would read the padding.
    for (const std::vector<int>& bad : {std::vector<int>{0, k / 2, k + 1}, std::vector<int>{0, k + 7, static_cast<int>(n)}}) {
      auto doffs = rt.upload(bad);
      std::string got = "(no GraphError thrown)";
      try {
        (void)rt.run(ff::Program(e), {{x, dx}, {offs, doffs}});
      } catch (const ff::GraphError& err) {
        got = err.what();
      }
      const std::string op = scan ? "segmented_scan" : "segmented_reduce";
      const std::size_t which = bad[1] > k ? 1 : 2;
      CHECK(got == "fuseflow: " + op + ": offset " + std::to_string(which) + " is " + std::to_string(bad[which]) +
                       ", beyond the end of the " + std::to_string(k) + " values");
    }
    // Decreasing offsets inside the survivors: flagged and named too.
    auto doffs = rt.upload(std::vector<int>{0, 3, 1, k});
    std::string got;
    try {
      (void)rt.run(ff::Program(e), {{x, dx}, {offs, doffs}});
    } catch (const ff::GraphError& err) {
      got = err.what();
    }
    CHECK(got.find("offset 2 is 1, less than offset 1 (3); offsets must be non-decreasing") != std::string::npos);
  }
}

TEST_CASE("a reduction over index() among a filter's survivors, read by a later reduction and a scan") {
  auto x = ff::input<int>("x");
  const ff::Expr at = ff::cast<int>(ff::index());
  const ff::Expr ranked = ff::reduce(ff::filter(x, x > 0) * (at % 7), ff::plus);   // the position among the survivors
  const ff::Expr best = ff::reduce(ff::zip(ff::filter(x, x < 0), ff::index()), ff::argmax);
  const ff::Program prog = ff::outputs(ff::reduce(x + ranked, ff::plus), ranked,
                                       ff::scan(x - ff::cast<int>(ff::get<1>(best)), ff::plus),
                                       ff::reduce(x * ff::cast<int>(ff::get<1>(best)), ff::max));
  for (std::int64_t n : kSizes)
    check_program("reductions over positions among survivors, read later, n = " + std::to_string(n), prog, {x},
                  {random_ints(n, -100, 100)});
}
