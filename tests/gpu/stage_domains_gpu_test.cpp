// GPU execution tests of segment offsets the program computes (passes/stage_domains.cpp):
// CSR offsets as an exclusive scan of row lengths, a sort's keys as offsets, broadcasts over
// offsets that are an expression beside other ops. Stage 1 computes the offsets over their
// own length, stage 2 reads them. Fresh random inputs, every output compared exactly
// (integers) with the CPU reference; outputs are fresh arrays of the run, poisoned by the
// runtime's allocator in the emulator.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// Row counts (the lengths' domain); the elements are their lengths' sum, 0..9 per row.
const std::vector<std::int64_t> kRows = ff::test::capped({0, 1, 2, 33, 1000, (1 << 14) + 3, (1 << 17) + 5});

std::vector<int> random_ints(std::int64_t n, int lo, int hi) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& x : v) x = d(ff::test::rng());
  return v;
}

std::int64_t total(const std::vector<int>& lengths) { return std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0}); }

// Runs `prog` over i32 inputs on the GPU and the CPU reference; every output must match
// exactly (arrays in length too).
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

TEST_CASE("CSR from row lengths: segmented ops by an exclusive scan of the lengths, in one program") {
  auto vals = ff::input<int>("vals");
  auto lengths = ff::input<int>("lengths");
  const ff::Expr offs = ff::scan(lengths, ff::plus, ff::exclusive);
  const ff::Program prog = ff::outputs(ff::segmented_reduce(vals, offs, ff::plus), ff::segmented_scan(vals, offs, ff::max),
                                       ff::reduce(vals, ff::plus));
  for (std::int64_t m : kRows) {
    // m lengths give m offsets (m - 1 segments; the last row's elements lie outside them) ...
    std::vector<int> len = random_ints(m, 0, 9);
    if (m > 0)  // no offsets at all: a GraphError (s segments need s + 1 offsets)
      check_program("lengths of " + std::to_string(m) + " rows", prog, {vals, lengths},
                  {random_ints(total(len), -1000, 1000), len});
    // ... and with a 0 after them, m + 1 offsets ending at n: every row a segment.
    len.push_back(0);
    check_program("lengths of " + std::to_string(m) + " rows and a 0", prog, {vals, lengths},
                  {random_ints(total(len), -1000, 1000), len});
  }
}

TEST_CASE("CSR row sums gathered at each element's row: the offsets staged, the sums an intermediate of the rows") {
  // The row sums are a table of m entries (offsets - 1; its own length, passes/computed_tables.cpp)
  // gathered at a row per element: an index outside the rows is the run's checked error.
  auto vals = ff::input<int>("vals");
  auto lengths = ff::input<int>("lengths");
  auto row = ff::input<int>("row");
  const ff::Expr sums = ff::segmented_reduce(vals, ff::scan(lengths, ff::plus, ff::exclusive), ff::plus);
  const ff::Program prog = ff::outputs(ff::gather(sums, row) - vals);
  for (std::int64_t m : kRows) {
    if (m == 0) continue;  // no offsets: a GraphError (s segments need s + 1 offsets)
    std::vector<int> len = random_ints(m, 0, 9);
    len.push_back(0);  // m + 1 offsets ending at n: m rows
    const std::int64_t n = total(len);
    std::vector<int> rows = random_ints(n, 0, static_cast<int>(m) - 1);
    const std::vector<int> v = random_ints(n, -1000, 1000);
    check_program("row sums of " + std::to_string(m) + " rows gathered", prog, {vals, lengths, row}, {v, len, rows});
    if (n == 0) continue;
    rows[static_cast<std::size_t>(n / 2)] = static_cast<int>(m);  // one past the last row
    ff::Runtime& rt = ff::test::runtime();
    auto vd = rt.upload(v);
    auto ld = rt.upload(len);
    auto rd = rt.upload(rows);
    try {
      (void)rt.run(prog, {{vals, vd}, {lengths, ld}, {row, rd}});
      FAIL("no error for a row outside the table, " << m << " rows");
    } catch (const ff::GraphError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("position " + std::to_string(n / 2) + " is " + std::to_string(m)) !=
            std::string::npos);
    }
  }
}

TEST_CASE("a sort's keys as segment offsets: unsorted cut positions sorted, then the segments' totals") {
  auto x = ff::input<int>("x");
  auto cuts = ff::input<int>("cuts");
  const ff::Program radix = ff::outputs(ff::segmented_reduce(x, ff::sort(cuts), ff::plus));
  const ff::Program counting = ff::outputs(ff::segmented_scan(x, ff::counting_sort(cuts, 64) + 0, ff::plus),
                                           ff::reduce(x, ff::max));
  for (std::int64_t m : kRows) {
    if (m == 0) continue;  // no offsets: a GraphError (s segments need s + 1 offsets)
    const std::int64_t n = 3 * m + 1;
    check_program("sort(cuts), " + std::to_string(m) + " cuts", radix, {x, cuts},
                  {random_ints(n, -1000, 1000), random_ints(m, 0, static_cast<int>(n))});
    check_program("counting_sort(cuts, 64), " + std::to_string(m) + " cuts", counting, {x, cuts},
                  {random_ints(n, -1000, 1000), random_ints(m, 0, static_cast<int>(std::min<std::int64_t>(n, 63)))});
  }
}

TEST_CASE("a broadcast over offsets that are an expression beside other ops: the offsets staged, then the broadcast") {
  auto x = ff::input<int>("x");
  auto lengths = ff::input<int>("lengths");
  auto offs = ff::input<int>("offs");
  // Offsets by a scan of lengths (a 0 after them: m + 1 offsets covering every element).
  const ff::Expr starts = ff::scan(lengths, ff::plus, ff::exclusive);
  const ff::Expr centred = x - ff::broadcast(ff::segmented_reduce(x, starts, ff::max), starts);
  const ff::Program by_scan = ff::outputs(centred, ff::reduce(centred, ff::plus), ff::scan(centred, ff::min));
  // Offsets that are a map of an offsets input.
  const ff::Expr o = offs * 1;
  const ff::Expr spread = x * 2 - ff::broadcast(ff::segmented_reduce(x, o, ff::plus), o);
  const ff::Program by_map = ff::outputs(ff::reduce(spread, ff::max), spread);
  for (std::int64_t m : kRows) {
    if (m == 0) continue;  // a broadcast needs its offsets to cover the elements: one row at least
    std::vector<int> len = random_ints(m, 0, 9);
    len.push_back(0);
    const std::int64_t n = total(len);
    check_program("broadcast over scan(lengths), " + std::to_string(m) + " rows", by_scan, {x, lengths},
                  {random_ints(n, -1000, 1000), len});
    std::vector<int> starts_host(len.size());
    std::exclusive_scan(len.begin(), len.end(), starts_host.begin(), 0);
    check_program("broadcast over offs * 1, " + std::to_string(m) + " rows", by_map, {x, offs},
                  {random_ints(n, -1000, 1000), starts_host});
  }
}

TEST_CASE("computed offsets that decrease (a negative row length): the run's GraphError names the bad offset") {
  auto vals = ff::input<int>("vals");
  auto lengths = ff::input<int>("lengths");
  ff::Runtime& rt = ff::test::runtime();
  const ff::Program prog(ff::segmented_reduce(vals, ff::scan(lengths, ff::plus, ff::exclusive), ff::plus));
  const std::vector<int> len = {3, 2, -4, 5, 1};
  ff::DeviceArray<int> v = rt.upload(random_ints(10, -5, 5));
  ff::DeviceArray<int> l = rt.upload(len);
  std::string what;
  try {
    (void)rt.run(prog, {{vals, v}, {lengths, l}});
  } catch (const ff::GraphError& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("segmented_reduce") != std::string::npos);
  CHECK(what.find("offset") != std::string::npos);
}
