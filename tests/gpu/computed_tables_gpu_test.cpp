// GPU execution tests for gather and shift of computed arrays (issue 25;
// codegen/src/passes/computed_tables.cpp): a gather of a map of inputs and a map shifted
// backwards or forwards fused into their consumer, a scan's and a sort's result gathered and shifted (computed into an
// intermediate by stage 1), a histogram's bins and a segmented_reduce's results gathered (stage 1 writes
// them into an intermediate of their own length, which the gather checks its indices against). Fresh random inputs, outputs poisoned (the shared Runtime's
// RuntimeOptions::poison), each result compared with the CPU reference: integers exactly,
// floats by relative error (expf on the device may differ from the host's in the last bit).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::rng;
using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({1, 33, 1025, 4097, 70001});

std::vector<int> indices(std::int64_t n, int table) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(0, table - 1);
  for (auto& x : v) x = d(rng());
  return v;
}

template <class T>
void check(const ff::Expr& out, const ff::Bindings& dev, const ff::HostBindings& host, double tolerance,
           const std::string& what) {
  INFO(what << ": " << ff::to_string(out));
  ff::Result got = runtime().run(out, dev);
  const ff::HostResult want = ff::evaluate(ff::Program(out), host).at(0);
  auto close = [&](T g, T w) {
    if constexpr (std::is_floating_point_v<T>)
      return g == w || std::fabs(static_cast<double>(g) - static_cast<double>(w)) <= tolerance * (1.0 + std::fabs(static_cast<double>(w)));
    else
      return g == w;
  };
  if (want.is_scalar) {
    INFO("got " << got.as<T>() << ", want " << want.scalar.as<T>());
    CHECK(close(got.as<T>(), want.scalar.as<T>()));
    return;
  }
  const std::vector<T> g = got.download<T>();
  const std::vector<T> w = want.array.to_vector<T>();
  REQUIRE(g.size() == w.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!close(g[i], w[i]) && wrong++ == 0) first = i;
  INFO(wrong << " wrong of " << g.size() << "; first at " << first << ": got " << (wrong ? g[first] : T{}) << ", want "
             << (wrong ? w[first] : T{}));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a gather of a map of inputs (fused) in a map, a reduction and a scan") {
  auto t = ff::input<float>("t");
  auto u = ff::input<float>("u");
  auto idx = ff::input<int>("idx");
  auto y = ff::input<float>("y");
  const ff::Expr g = ff::gather(ff::exp(t) - u * ff::cast<float>(ff::index()), idx);
  for (std::int64_t n : kSizes) {
    const int m = static_cast<int>(n % 977 + 3);
    auto th = ff::test::random_values<float>(m, -1, 1);
    auto uh = ff::test::random_values<float>(m, -1, 1);
    auto ih = indices(n, m);
    auto yh = ff::test::random_values<float>(n, 0, 1);
    auto td = runtime().upload(th);
    auto ud = runtime().upload(uh);
    auto id = runtime().upload(ih);
    auto yd = runtime().upload(yh);
    ff::Bindings dev{{t, td}, {u, ud}, {idx, id}, {y, yd}};
    ff::HostBindings host;
    host.bind(t, ff::HostArray::from(th)).bind(u, ff::HostArray::from(uh));
    host.bind(idx, ff::HostArray::from(ih)).bind(y, ff::HostArray::from(yh));
    const std::string at = "n = " + std::to_string(n) + ", table of " + std::to_string(m);
    check<float>(g * y, dev, host, 1e-6, "map, " + at);
    check<float>(ff::reduce(ff::gather(t * t, idx), ff::max), {{t, td}, {idx, id}}, host, 0, "reduce, " + at);
    check<float>(ff::scan(g, ff::max), {{t, td}, {u, ud}, {idx, id}}, host, 1e-6, "scan, " + at);
  }
}

TEST_CASE("a shifted map, and a scan's result gathered and shifted (staged)") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto idx = ff::input<int>("idx");
  for (std::int64_t n : kSizes) {
    auto xh = ff::test::random_values<float>(n, -1, 1);
    std::vector<int> kh(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(-50, 50);
    for (auto& v : kh) v = d(rng());
    auto ih = indices(n, static_cast<int>(n));
    auto xd = runtime().upload(xh);
    auto kd = runtime().upload(kh);
    auto id = runtime().upload(ih);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh)).bind(k, ff::HostArray::from(kh)).bind(idx, ff::HostArray::from(ih));
    const std::string at = "n = " + std::to_string(n);
    const ff::Expr y = x * 2.0f + 1.0f;
    check<float>(x - ff::shift(y, -1, 0.0f), {{x, xd}}, host, 0, "map shifted backwards (fused), " + at);
    check<float>(x - ff::shift(y, 1, 0.0f), {{x, xd}}, host, 0, "map shifted forwards (fused), " + at);
    check<float>(ff::shift(y * ff::cast<float>(ff::index()), -3, 2.0f), {{x, xd}}, host, 0, "index() in a shifted map, " + at);
    check<float>(ff::reduce(ff::shift(x * x, -1, 0.5f), ff::max), {{x, xd}}, host, 0, "reduction of a shifted map, " + at);
    check<float>(ff::shift(x * x, 3, -1.0f) + ff::shift(x * x, -2, 5.0f), {{x, xd}}, host, 0, "stencil of a map, " + at);
    const ff::Expr s = ff::scan(k, ff::plus);
    check<int>(ff::gather(s, idx) - k, {{k, kd}, {idx, id}}, host, 0, "gathered scan, " + at);
    check<int>(s - ff::shift(s, -1, 0), {{k, kd}}, host, 0, "shifted scan (the adjacent difference), " + at);
    check<long long>(ff::reduce(ff::cast<long long>(ff::shift(s, 1, 7) * k), ff::plus), {{k, kd}}, host, 0,
                     "reduction of a shifted scan, " + at);
  }
}

TEST_CASE("a map shifted backwards beside a filter's result is read at each survivor's own position") {
  // The fused shift tests the element's position (index() >= 2); beside a filter's result
  // that must be the position in the filter's input, not among the survivors (fuzz seed 1481
  // got the fill for survivors near the start).
  auto x = ff::input<float>("x");
  for (std::int64_t n : kSizes) {
    auto xh = ff::test::random_values<float>(n, -1, 1);
    auto xd = runtime().upload(xh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    const std::string at = "n = " + std::to_string(n);
    const ff::Expr kept = ff::filter(x, x > 0.0f);
    check<float>(kept + ff::shift(x * 2.0f, -2, 5.0f), {{x, xd}}, host, 0, "survivors plus a shifted map, " + at);
    check<float>(kept - ff::shift(x * 2.0f, 3, -5.0f), {{x, xd}}, host, 0, "survivors minus a map shifted forwards, " + at);
    check<float>(ff::reduce(kept * ff::shift(x + x, -1, 0.5f), ff::max), {{x, xd}}, host, 0,
                 "a reduction of survivors times a shifted map, " + at);
  }
}

TEST_CASE("a map shifted forwards (fused): n below k, n equal to k, k = 1, in a map, a reduction and a scan") {
  auto x = ff::input<float>("x");
  auto w = ff::input<int>("w");
  auto t = ff::input<float>("t");
  const auto sizes = ff::test::capped({1, 2, 3, 4, 5, 7, 33, 1025, 4099});
  for (std::int64_t n : sizes) {
    auto xh = ff::test::random_values<float>(n, -1, 1);
    std::vector<int> wh(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(0, 9);
    for (auto& v : wh) v = d(rng());
    auto th = ff::test::random_values<float>(10, -1, 1);
    auto xd = runtime().upload(xh);
    auto wd = runtime().upload(wh);
    auto td = runtime().upload(th);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh)).bind(w, ff::HostArray::from(wh)).bind(t, ff::HostArray::from(th));
    for (int k : {1, 3, 4}) {  // sizes 1..5: n < k, n = k and n > k
      const std::string at = "n = " + std::to_string(n) + ", k = " + std::to_string(k);
      // y may be one fused multiply-add on the device (one rounding where the host has two).
      const ff::Expr y = x * ff::cast<float>(w) + ff::cast<float>(ff::index());
      check<float>(ff::shift(y, k, -2.0f) - x, {{x, xd}, {w, wd}}, host, 1e-6, "stencil map, " + at);
      check<float>(ff::shift(x * x, k, 3.0f) + ff::shift(x * x, -k, 5.0f), {{x, xd}}, host, 0,
                   "both directions, " + at);
      check<float>(ff::reduce(ff::shift(y, k, 100.0f), ff::max), {{x, xd}, {w, wd}}, host, 1e-6, "reduction, " + at);
      check<float>(ff::scan(ff::shift(x * 2.0f, k, 1.0f), ff::max), {{x, xd}}, host, 0, "scan, " + at);
      // A checked gather inside (the plain map, not the stencil): only positions inside are read.
      check<float>(ff::shift(ff::gather(t, w) * x, k, 0.5f), {{x, xd}, {w, wd}, {t, td}}, host, 0,
                   "gather inside, " + at);
    }
  }
}

TEST_CASE("a sort's result gathered and shifted (staged)") {
  auto k = ff::input<int>("k");
  auto idx = ff::input<int>("idx");
  for (std::int64_t n : kSizes) {
    std::vector<int> kh(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(0, 15);
    for (auto& v : kh) v = d(rng());
    auto ih = indices(n, static_cast<int>(n));
    auto kd = runtime().upload(kh);
    auto id = runtime().upload(ih);
    ff::HostBindings host;
    host.bind(k, ff::HostArray::from(kh)).bind(idx, ff::HostArray::from(ih));
    const ff::Expr s = ff::counting_sort(k, 16);
    const std::string at = "n = " + std::to_string(n);
    check<int>(ff::gather_unchecked(s, idx) * 100 + k, {{k, kd}, {idx, id}}, host, 0, "gathered sort, " + at);
    check<int>(ff::shift(s, 1, 16) - s, {{k, kd}}, host, 0, "shifted sort, " + at);
  }
}

TEST_CASE("an index outside a computed table is reported with its position, fused or staged") {
  auto t = ff::input<float>("t");
  auto x = ff::input<float>("x");
  auto idx = ff::input<int>("idx");
  for (std::int64_t n : ff::test::capped({1, 4097, 70001})) {
    auto ih = indices(n, 100);
    const auto bad = static_cast<std::size_t>(n / 2);
    ih[bad] = (n % 2) ? -5 : 100;
    auto td = runtime().upload(ff::test::random_values<float>(100, 0, 1));
    auto xd = runtime().upload(ff::test::random_values<float>(n, 0, 1));
    auto id = runtime().upload(ih);
    const std::string want = "position " + std::to_string(bad) + " is " + std::to_string(ih[bad]);
    {
      INFO("fused, n = " << n);
      try {
        (void)runtime().run(ff::reduce(ff::gather(t * 2.0f, idx), ff::plus), {{t, td}, {idx, id}});
        FAIL("no error for an index outside the table");
      } catch (const ff::GraphError& err) {
        INFO(err.what());
        CHECK(std::string(err.what()).find(want) != std::string::npos);
        CHECK(std::string(err.what()).find("outside the table t * 2.0f of 100 elements") != std::string::npos);
      }
    }
    if (n < 100) continue;  // the staged table has n elements
    INFO("staged, n = " << n);
    try {
      (void)runtime().run(ff::gather(ff::scan(x, ff::plus), idx), {{x, xd}, {idx, id}});
      if (ih[bad] >= n || ih[bad] < 0) FAIL("no error for an index outside the table");
    } catch (const ff::GraphError& err) {
      INFO(err.what());
      CHECK(std::string(err.what()).find(want) != std::string::npos);
    }
  }
}

TEST_CASE("the inputs of a gathered map must have one length") {
  auto t = ff::input<float>("t");
  auto u = ff::input<float>("u");
  auto idx = ff::input<int>("idx");
  auto td = runtime().upload(ff::test::random_values<float>(10, 0, 1));
  auto ud = runtime().upload(ff::test::random_values<float>(7, 0, 1));
  auto id = runtime().upload(std::vector<int>{0, 3, 6});
  try {
    (void)runtime().run(ff::gather(t + u, idx), {{t, td}, {u, ud}, {idx, id}});
    FAIL("no error for a map over arrays of different lengths");
  } catch (const ff::GraphError& err) {
    INFO(err.what());
    CHECK(std::string(err.what()).find("arrays of different lengths") != std::string::npos);
  }
}

namespace {

// CSR offsets 0 = o[0] <= ... <= o[m] = n, m segments (some empty), and a segment per element.
std::vector<long long> offsets_of(std::int64_t n, int m) {
  std::vector<long long> o(static_cast<std::size_t>(m) + 1);
  std::uniform_int_distribution<long long> d(0, n);
  for (auto& v : o) v = d(rng());
  std::sort(o.begin(), o.end());
  o.front() = 0;
  o.back() = n;
  return o;
}

template <class F>
void expect_outside(F&& run, const std::string& want, const std::string& what) {
  INFO(what);
  try {
    run();
    FAIL("no error for an index outside the table");
  } catch (const ff::GraphError& err) {
    INFO(err.what());
    CHECK(std::string(err.what()).find(want) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a histogram's bins and a segmented_reduce's results gathered (tables of their own length, staged)") {
  auto b = ff::input<int>("b");
  auto w = ff::input<float>("w");
  auto x = ff::input<float>("x");
  auto offs = ff::input<long long>("offs");
  auto seg = ff::input<int>("seg");
  const ff::Expr counts = ff::histogram(b, 16);
  const ff::Expr sums = ff::histogram(b, w, 16);
  for (std::int64_t n : ff::test::capped({0, 1, 33, 255, 257, 1025, 4097, 70001})) {
    const int m = static_cast<int>(n % 97 + 1);  // segments; offsets of m + 1
    auto bh = indices(n, 16);
    auto wh = ff::test::random_values<float>(n, 0, 1);
    // Small integers: every segment's sum exact in f32, in any order of additions.
    auto xh = ff::test::random_values<float>(n, -8, 8);
    for (auto& v : xh) v = std::round(v);
    auto oh = offsets_of(n, m);
    auto sh = indices(n, m);
    auto bd = runtime().upload(bh);
    auto wd = runtime().upload(wh);
    auto xd = runtime().upload(xh);
    auto od = runtime().upload(oh);
    auto sd = runtime().upload(sh);
    ff::HostBindings host;
    host.bind(b, ff::HostArray::from(bh)).bind(w, ff::HostArray::from(wh)).bind(x, ff::HostArray::from(xh));
    host.bind(offs, ff::HostArray::from(oh)).bind(seg, ff::HostArray::from(sh));
    const std::string at = "n = " + std::to_string(n) + ", " + std::to_string(m) + " segments";
    check<float>(ff::cast<float>(ff::gather(counts, b)), {{b, bd}}, host, 0, "frequency encoding, " + at);
    // A weighted bin's sum: the device adds in another order than the host.
    check<float>(ff::gather(sums, b) * w, {{b, bd}, {w, wd}}, host, 1e-4, "weighted bins gathered, " + at);
    check<unsigned>(ff::reduce(ff::gather(counts, b), ff::max), {{b, bd}}, host, 0, "a reduction of them, " + at);
    const ff::Expr per_segment = ff::segmented_reduce(x, offs, ff::plus);
    check<float>(ff::gather(per_segment, seg) - x, {{x, xd}, {offs, od}, {seg, sd}}, host, 0,
                 "segment sums gathered, " + at);
    check<float>(ff::gather(ff::segmented_reduce(x, offs, ff::max) * 2.0f, seg),
                 {{x, xd}, {offs, od}, {seg, sd}}, host, 0, "a map of segment maxima gathered, " + at);
  }
}

TEST_CASE("an index outside a histogram's bins or the segments is reported with its position") {
  auto b = ff::input<int>("b");
  auto x = ff::input<float>("x");
  auto offs = ff::input<long long>("offs");
  auto seg = ff::input<int>("seg");
  for (std::int64_t n : ff::test::capped({1, 4097, 70001})) {
    const auto bad = static_cast<std::size_t>(n / 2);
    auto bh = indices(n, 16);
    bh[bad] = (n % 2) ? -1 : 16;  // outside the 16 bins (the histogram drops it)
    auto bd = runtime().upload(bh);
    expect_outside([&] { (void)runtime().run(ff::gather(ff::histogram(b, 16), b), {{b, bd}}); },
                   "position " + std::to_string(bad) + " is " + std::to_string(bh[bad]), "bins, n = " + std::to_string(n));
    const int m = 5;
    auto sh = indices(n, m);
    sh[bad] = m;  // one past the last segment: inside the offsets, outside the results
    auto xd = runtime().upload(ff::test::random_values<float>(n, -1, 1));
    auto od = runtime().upload(offsets_of(n, m));
    auto sd = runtime().upload(sh);
    expect_outside(
        [&] {
          (void)runtime().run(ff::gather(ff::segmented_reduce(x, offs, ff::plus), seg), {{x, xd}, {offs, od}, {seg, sd}});
        },
        "position " + std::to_string(bad) + " is " + std::to_string(m), "segments, n = " + std::to_string(n));
  }
}

TEST_CASE("bins and segments gathered beside other ops: a scan, a filter's histogram, a broadcast of the same segments") {
  auto b = ff::input<int>("b");
  auto x = ff::input<float>("x");
  auto offs = ff::input<long long>("offs");
  auto seg = ff::input<int>("seg");
  for (std::int64_t n : ff::test::capped({0, 1, 255, 4097, 70001})) {
    const int m = static_cast<int>(n % 31 + 1);
    auto bh = indices(n, 8);
    auto xh = ff::test::random_values<float>(n, -1, 1);
    auto oh = offsets_of(n, m);
    auto sh = indices(n, m);
    auto bd = runtime().upload(bh);
    auto xd = runtime().upload(xh);
    auto od = runtime().upload(oh);
    auto sd = runtime().upload(sh);
    ff::HostBindings host;
    host.bind(b, ff::HostArray::from(bh)).bind(x, ff::HostArray::from(xh));
    host.bind(offs, ff::HostArray::from(oh)).bind(seg, ff::HostArray::from(sh));
    const std::string at = "n = " + std::to_string(n) + ", " + std::to_string(m) + " segments";
    const ff::Expr counts = ff::histogram(b, 8);
    check<unsigned>(ff::scan(ff::gather(counts, 7 - b), ff::plus), {{b, bd}}, host, 0, "a scan of gathered bins, " + at);
    const ff::Expr kept = ff::histogram(ff::filter(b, x > 0.0f), 8);
    check<unsigned>(ff::gather(kept, b) + ff::gather(kept, 7 - b), {{b, bd}, {x, xd}}, host, 0,
                    "a filter's histogram gathered twice, " + at);
    const ff::Expr top = ff::segmented_reduce(x, offs, ff::max);
    check<float>(ff::gather(top, seg) - ff::broadcast(top, offs), {{x, xd}, {offs, od}, {seg, sd}}, host, 0,
                 "segment maxima gathered and broadcast, " + at);
  }
}
