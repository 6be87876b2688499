// GPU execution tests for gather (random access into a table) and shift (neighbours),
// fused into every consumer: maps, reductions (chunked and staged), scans, compaction,
// segmented reduction (CSR SpMV). Fresh random inputs, outputs poisoned (the shared
// Runtime's RuntimeOptions::poison), each result compared with the CPU reference:
// integers and element-wise floats exactly, float sums by relative error. Sizes cross the
// tile boundaries of every strategy (a tile is at most 256 x 16 elements here).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::rng;
using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({1, 2, 31, 33, 1000, 1025, 4095, 4097, 70001, (1 << 20) + 7});

std::vector<int> indices(std::int64_t n, int table) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(0, table - 1);
  for (auto& x : v) x = d(rng());
  return v;
}

// Output `out` of a run with `dev` against the CPU reference with `host`: integers and
// element-wise floats exactly (tolerance 0), float sums within `tolerance` relative to
// `ref64`, the same sum computed in f64 by the reference (the f32 reference's own sequential
// rounding would be the larger error).
template <class T>
void check(const ff::Expr& out, const ff::Bindings& dev, const ff::HostBindings& host, double tolerance,
           const std::string& what, const ff::Expr& ref64 = ff::Expr()) {
  INFO(what << ": " << ff::to_string(out));
  ff::Result got = runtime().run(out, dev);
  const ff::HostResult want = ff::evaluate(ff::Program(ref64.valid() ? ref64 : out), host).at(0);
  auto close = [&](T g, auto w) {
    if constexpr (std::is_floating_point_v<T>)
      return std::fabs(static_cast<double>(g) - static_cast<double>(w)) <= tolerance * (1.0 + std::fabs(static_cast<double>(w)));
    else
      return g == w;
  };
  auto compare = [&](const auto& w) {
    const std::vector<T> g = got.download<T>();
    REQUIRE(g.size() == w.size());
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (!close(g[i], w[i]) && wrong++ == 0) first = i;
    INFO(wrong << " wrong of " << g.size() << "; first at " << first << ": got " << (wrong ? g[first] : T{})
                << ", want " << (wrong ? w[first] : 0));
    CHECK(wrong == 0);
  };
  if (want.is_scalar) {
    const T g = got.as<T>();
    const double w = ref64.valid() ? want.scalar.as<double>() : static_cast<double>(want.scalar.as<T>());
    INFO("got " << g << ", want " << w);
    if constexpr (std::is_floating_point_v<T>) CHECK(close(g, w));
    else CHECK(g == want.scalar.as<T>());
    return;
  }
  if (ref64.valid()) compare(want.array.to_vector<double>());
  else compare(want.array.to_vector<T>());
}

}  // namespace

TEST_CASE("gather reads a table of another length in maps, reductions, scans and filters") {
  auto t = ff::input<float>("t");
  auto idx = ff::input<int>("idx");
  auto y = ff::input<float>("y");
  const ff::Expr g = ff::gather(t, idx);
  for (std::int64_t n : kSizes) {
    const int m = static_cast<int>(n % 977 + 3);
    auto th = ff::test::random_values<float>(m, -1, 1);
    auto ih = indices(n, m);
    auto yh = ff::test::random_values<float>(n, 0, 1);
    auto td = runtime().upload(th);
    auto id = runtime().upload(ih);
    auto yd = runtime().upload(yh);
    ff::Bindings dev{{t, td}, {idx, id}, {y, yd}};
    ff::HostBindings host;
    host.bind(t, ff::HostArray::from(th)).bind(idx, ff::HostArray::from(ih)).bind(y, ff::HostArray::from(yh));
    const std::string at = "n = " + std::to_string(n) + ", table of " + std::to_string(m);
    check<float>(g * y, {{t, td}, {idx, id}, {y, yd}}, host, 0, "map, " + at);
    check<float>(ff::reduce(g * y, ff::plus), dev, host, 1e-5, "reduce automatic, " + at,
                 ff::reduce(ff::cast<double>(g * y), ff::plus));
    check<float>(ff::reduce(g, ff::max, ff::Strategy::Chunked), {{t, td}, {idx, id}}, host, 0, "reduce chunked, " + at);
    check<float>(ff::reduce(g, ff::max, ff::Strategy::Staged), {{t, td}, {idx, id}}, host, 0, "reduce staged, " + at);
    check<float>(ff::scan(g + y, ff::max), dev, host, 0, "scan, " + at);
    check<float>(ff::filter(y, g > 0.0f), dev, host, 0, "filter, " + at);
  }
}

TEST_CASE("gather of a tuple table with u64 indices keeps every field") {
  auto t = ff::input<ff::Tuple<int, float>>("t");
  auto idx = ff::input<std::uint64_t>("idx");
  for (std::int64_t n : ff::test::capped({1, 1000, 70001})) {
    const int m = 501;
    std::vector<ff::Tuple<int, float>> th(static_cast<std::size_t>(m));
    for (int j = 0; j < m; ++j) th[static_cast<std::size_t>(j)] = ff::Tuple<int, float>{j * 7 - 100, 0.5f * static_cast<float>(j)};
    std::vector<std::uint64_t> ih;
    for (int v : indices(n, m)) ih.push_back(static_cast<std::uint64_t>(v));
    auto td = runtime().upload(th);
    auto id = runtime().upload(ih);
    ff::HostBindings host;
    host.bind(t, ff::HostArray::from(th)).bind(idx, ff::HostArray::from(ih));
    const ff::Expr g = ff::gather(t, idx);
    check<int>(g[0] + ff::cast<int>(g[1]), {{t, td}, {idx, id}}, host, 0, "fields, n = " + std::to_string(n));
    check<long long>(ff::reduce(ff::cast<long long>(g[0]), ff::plus), {{t, td}, {idx, id}}, host, 0,
                     "sum of field 0, n = " + std::to_string(n));
  }
}

TEST_CASE("CSR SpMV is a segmented reduce of vals * gather(x, cols)") {
  auto vals = ff::input<float>("vals");
  auto cols = ff::input<int>("cols");
  auto offs = ff::input<long long>("offs");
  auto x = ff::input<float>("x");
  const ff::Expr spmv = ff::segmented_reduce(vals * ff::gather(x, cols), offs, ff::plus);
  for (std::int64_t rows : ff::test::capped({1, 7, 1000, 20000})) {
    std::vector<long long> oh{0};
    std::uniform_int_distribution<int> len(0, 60);
    for (std::int64_t r = 0; r < rows; ++r) oh.push_back(oh.back() + (r % 5 == 0 ? len(rng()) * 3 : r % 4));
    const std::int64_t nnz = oh.back();
    const int m = 4096;
    auto vh = ff::test::random_values<float>(nnz, 0, 1);
    auto ch = indices(nnz, m);
    auto xh = ff::test::random_values<float>(m, 0, 1);
    auto vd = runtime().upload(vh);
    auto cd = runtime().upload(ch);
    auto od = runtime().upload(oh);
    auto xd = runtime().upload(xh);
    ff::HostBindings host;
    host.bind(vals, ff::HostArray::from(vh)).bind(cols, ff::HostArray::from(ch));
    host.bind(offs, ff::HostArray::from(oh)).bind(x, ff::HostArray::from(xh));
    check<float>(spmv, {{vals, vd}, {cols, cd}, {offs, od}, {x, xd}}, host, 1e-5,
                 "rows = " + std::to_string(rows) + ", nnz = " + std::to_string(nnz),
                 ff::segmented_reduce(ff::cast<double>(vals * ff::gather(x, cols)), offs, ff::plus));
  }
}

TEST_CASE("an index outside the table is reported with its position; gather_unchecked has no check") {
  auto t = ff::input<float>("t");
  auto idx = ff::input<int>("idx");
  for (std::int64_t n : ff::test::capped({1, 4097, 70001})) {
    auto ih = indices(n, 100);
    const auto bad = static_cast<std::size_t>(n / 2);
    ih[bad] = (n % 2) ? -5 : 100;
    auto td = runtime().upload(ff::test::random_values<float>(100, 0, 1));
    auto id = runtime().upload(ih);
    const std::string want = "position " + std::to_string(bad) + " is " + std::to_string(ih[bad]);
    for (const ff::Expr& e : {ff::Expr(ff::gather(t, idx) * 2.0f), ff::reduce(ff::gather(t, idx), ff::plus),
                              ff::scan(ff::gather(t, idx), ff::plus)}) {
      INFO(ff::to_string(e) << ", n = " << n);
      try {
        (void)runtime().run(e, {{t, td}, {idx, id}});
        FAIL("no error for an index outside the table");
      } catch (const ff::GraphError& err) {
        INFO(err.what());
        CHECK(std::string(err.what()).find(want) != std::string::npos);
      }
    }
  }
  const std::string source = ff::codegen::cuda_source(ff::Program(ff::reduce(ff::gather_unchecked(t, idx), ff::plus)));
  CHECK(source.find("gather_invalid") == std::string::npos);
  CHECK(source.find("tab_t[") != std::string::npos);
}

TEST_CASE("shift reads neighbours with the fill outside, across the tiles of every consumer") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto offs = ff::input<long long>("offs");
  for (std::int64_t n : kSizes) {
    auto xh = ff::test::random_values<float>(n, -1, 1);
    std::vector<int> kh(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < kh.size(); ++i) kh[i] = static_cast<int>(i * 2654435761u % 1000);
    std::vector<long long> oh{0};
    while (oh.back() < n) oh.push_back(std::min<long long>(n, oh.back() + 1 + static_cast<long long>(oh.size() * 7 % 40)));
    auto xd = runtime().upload(xh);
    auto kd = runtime().upload(kh);
    auto od = runtime().upload(oh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh)).bind(k, ff::HostArray::from(kh)).bind(offs, ff::HostArray::from(oh));
    const std::string at = "n = " + std::to_string(n);
    const ff::Expr diff = x - ff::shift(x, -1, 0.0f);
    const ff::Expr stencil = ff::shift(x, -1, 0.0f) + 2.0f * x + ff::shift(x, 1, 0.0f) + ff::shift(x, 300, 1.0f);
    check<float>(diff, {{x, xd}}, host, 0, "adjacent difference, " + at);
    // The forward difference: one input, one output, one shift by +1, the fill after the
    // last element.
    check<float>(ff::shift(x, 1, 3.0f) - x, {{x, xd}}, host, 0, "forward difference, " + at);
    check<float>(stencil, {{x, xd}}, host, 1e-6, "stencil, " + at);
    check<int>(k - ff::shift(k, 5, -1), {{k, kd}}, host, 0, "i32 shift by 5, " + at);
    check<float>(ff::reduce(diff * diff, ff::plus, ff::Strategy::Chunked), {{x, xd}}, host, 1e-5, "reduce chunked, " + at,
                 ff::reduce(ff::cast<double>(diff * diff), ff::plus));
    check<float>(ff::reduce(ff::shift(x, 1, -2.0f), ff::min, ff::Strategy::Staged), {{x, xd}}, host, 0,
                 "reduce staged, " + at);
    check<int>(ff::scan(k - ff::shift(k, -1, 0), ff::plus), {{k, kd}}, host, 0, "scan of differences, " + at);
    check<float>(ff::filter(x, x > ff::shift(x, -1, 0.0f)), {{x, xd}}, host, 0, "filter of rises, " + at);
    check<float>(ff::segmented_reduce(ff::shift(x, 2, 0.0f), offs, ff::max), {{x, xd}, {offs, od}}, host, 0,
                 "segmented max, " + at);
  }
}

TEST_CASE("a scan and a reduction folded into it read the same input through gather and shift") {
  auto x = ff::input<int>("x");
  const ff::Expr scan = ff::scan(ff::gather(x, ff::index() / 2) + ff::shift(x, -1, -5), ff::plus, ff::exclusive);
  const ff::Expr sum = ff::reduce(ff::shift(x, 1, 3) & 3, ff::plus);
  const ff::Program p({scan, sum});
  for (std::int64_t n : ff::test::capped({1, 33, 4097, 70001})) {
    std::vector<int> xh(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < xh.size(); ++i) xh[i] = static_cast<int>(i * 2654435761u % 2001) - 1000;
    auto xd = runtime().upload(xh);
    std::vector<ff::Result> got = runtime().run(p, {{x, xd}});
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    std::vector<ff::HostResult> want = ff::evaluate(p, host);
    INFO("n = " << n);
    CHECK(got[0].download<int>() == want[0].array.to_vector<int>());
    CHECK(got[1].as<int>() == want[1].scalar.as<int>());
  }
}

// A map reading a shift and a checked gather: the stencil map evaluates the tail vector's
// elements past n as well, so it must not take a checked gather (fuzz seed 176: n = 1,
// gather(x, index / 2) flagged index 1 that no element reads).
TEST_CASE("a map of a shift and a checked gather flags nothing past the end") {
  auto x = ff::input<float>("x");
  const ff::Expr out = ff::shift(x, 1, -3.0f) + ff::gather(x, ff::index() / 2) + x;
  for (std::int64_t n : ff::test::capped({1, 2, 3, 5, 4097})) {
    std::vector<float> xh(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < xh.size(); ++i) xh[i] = static_cast<float>(i % 97) * 0.5f - 7.0f;
    auto xd = runtime().upload(xh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    check<float>(out, {{x, xd}}, host, 1e-6, "n = " + std::to_string(n));
  }
}

// The stencil map (strategies/map_stencil.cpp): a warp holds 32 vectors of consecutive
// elements, neighbours come from registers, shuffles, or memory at the warp's edges and
// beyond 32 lanes; misaligned inputs take the element-wise loop.
TEST_CASE("stencil maps: shifts within a thread, a warp and beyond, several inputs and outputs, any element size") {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  auto d = ff::input<double>("d");
  auto b = ff::input<std::uint8_t>("b");
  for (std::int64_t n : kSizes) {
    auto xh = ff::test::random_values<float>(n, -1, 1);
    auto yh = ff::test::random_values<float>(n, -1, 1);
    auto dh = ff::test::random_values<double>(n, -1, 1);
    std::vector<std::uint8_t> bh(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < bh.size(); ++i) bh[i] = static_cast<std::uint8_t>(i * 2654435761u >> 7);
    auto xd = runtime().upload(xh);
    auto yd = runtime().upload(yh);
    auto dd = runtime().upload(dh);
    auto bd = runtime().upload(bh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh)).bind(y, ff::HostArray::from(yh)).bind(d, ff::HostArray::from(dh));
    host.bind(b, ff::HostArray::from(bh));
    const std::string at = "n = " + std::to_string(n);
    // -100: 25 lanes back (a shuffle); -127, -128, 129: 32 lanes or more (memory); 4, 7: the next lane.
    for (int k : {-128, -127, -100, -5, -4, -3, 1, 4, 7, 129}) {
      check<float>(ff::shift(y, k, 2.5f) - x, {{x, xd}, {y, yd}}, host, 0, "y shifted by " + std::to_string(k) + ", " + at);
      check<double>(d - ff::shift(d, k, -1.0), {{d, dd}}, host, 0, "f64 shift by " + std::to_string(k) + ", " + at);
    }
    check<std::uint8_t>(ff::shift(b, -17, std::uint8_t{7}), {{b, bd}}, host, 0, "u8 shift by -17 (the plain map: no shuffle of bytes), " + at);
    // Two outputs, each with its own shifts of x: one kernel computes both.
    const ff::Program two = ff::outputs(x - ff::shift(x, -1, 0.0f), ff::shift(x, 2, 0.0f) * ff::shift(x, -2, 1.0f));
    auto got = runtime().run(two, {{x, xd}});
    const auto want = ff::evaluate(two, host);
    for (std::size_t o = 0; o < 2; ++o) {
      INFO("two outputs, output " << o << ", " << at);
      CHECK(got[o].download<float>() == want[o].array.to_vector<float>());
    }
    // Misaligned by one element (user memory): the element-wise loop.
    if (n > 1) {
      const auto m = static_cast<std::size_t>(n - 1);
      const ff::device_span<float> x1(xd.data() + sizeof(float), m);
      const std::vector<float> xh1(xh.begin() + 1, xh.end());
      const ff::Program diff(x - ff::shift(x, -1, 0.0f));
      const std::vector<float> g = runtime().run(diff, {{x, x1}}).at(0).download<float>();
      REQUIRE(g.size() == m);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < m; ++i) wrong += g[i] != xh1[i] - (i ? xh1[i - 1] : 0.0f);
      INFO("misaligned difference, " << at);
      CHECK(wrong == 0);
    }
  }
}
