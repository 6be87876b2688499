// Every sharded op against the CPU reference over the whole input, for world sizes 1..8
// (in process on the CPU emulator) or every GPU count (NCCL), at sizes that leave shards
// empty (n < world), uneven, and large. Fresh random inputs each run; outputs poisoned
// (RuntimeOptions::poison). Integers and tuples compare exactly; floats by relative error
// against an f64 sum.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "multi_test_support.hpp"

namespace ff = fuseflow;
using namespace fuseflow::multi_test;

namespace {

using Affine = ff::Tuple<unsigned, unsigned>;  // x -> a * x + b, composed left to right

// Composition of affine maps over u32 (wrapping): associative, not commutative.
ff::Monoid affine() {
  return ff::monoid<Affine>(
      [](auto f, auto g) { return ff::tuple(f[0] * g[0], f[1] * g[0] + g[1]); },
      ff::tuple(1u, 0u), ff::non_commutative, "affine");
}

double f64_sum(const std::vector<float>& v, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  double s = 0;
  for (std::size_t i = from; i < std::min(to, v.size()); ++i) s += v[i];
  return s;
}
double abs_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += std::fabs(x);
  return s;
}

}  // namespace

TEST_CASE("sharded reduce: f32 sum, i32 sum, max, argmin with the global index, same bits run to run") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto program = ff::outputs(ff::reduce(x, ff::plus), ff::reduce(k, ff::plus), ff::reduce(k, ff::max),
                             ff::reduce(ff::zip(x, ff::index()), ff::argmin));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<float> xs = random_floats(n);
      std::vector<int> ks = random_ints(n, -1000, 1000);
      auto dx = srt.scatter(xs);
      auto dk = srt.scatter(ks);
      CHECK(dx.size() == n);
      auto [sum, isum, imax, amin] = srt.run(program, {{x, dx}, {k, dk}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xs)).bind(k, ff::HostArray::from(ks));
      auto want = reference(program, hb);
      CHECK(std::fabs(sum.as<float>() - f64_sum(xs)) <= 1e-5 * abs_sum(xs) + 1e-6);
      CHECK(isum.value() == want[1].scalar);
      CHECK(imax.value() == want[2].scalar);
      CHECK(amin.value() == want[3].scalar);
      auto [sum2, isum2, imax2, amin2] = srt.run(program, {{x, dx}, {k, dk}});
      float a = sum.as<float>(), b = sum2.as<float>();
      CHECK(std::memcmp(&a, &b, sizeof a) == 0);  // the same bits every run
    }
}

TEST_CASE("sharded reduce and scan with a non-commutative tuple monoid fold in rank order") {
  auto a = ff::input<unsigned>("a");
  auto b = ff::input<unsigned>("b");
  auto f = ff::zip(a, b);
  auto program = ff::outputs(ff::reduce(f, affine()), ff::scan(f, affine(), ff::inclusive),
                             ff::scan(f, affine(), ff::exclusive));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<unsigned> as(n), bs(n);
      for (std::size_t i = 0; i < n; ++i) {
        as[i] = static_cast<unsigned>(rng()()) | 1u;
        bs[i] = static_cast<unsigned>(rng()());
      }
      auto da = srt.scatter(as);
      auto db = srt.scatter(bs);
      auto [red, inc, exc] = srt.run(program, {{a, da}, {b, db}});
      ff::HostBindings hb;
      hb.bind(a, ff::HostArray::from(as)).bind(b, ff::HostArray::from(bs));
      auto want = reference(program, hb);
      CHECK(red.value() == want[0].scalar);
      CHECK(inc.size() == n);
      CHECK(inc.layout() == ff::ShardLayout::even(n, w));
      CHECK(inc.download<Affine>() == want[1].array.to_vector<Affine>());
      CHECK(exc.download<Affine>() == want[2].array.to_vector<Affine>());
    }
}

TEST_CASE("sharded reduce with a non-commutative scalar monoid folds the partials in rank order") {
  // "the last element that is not -1": associative, not commutative; over shards only a
  // fold of the ranks' partials in rank order finds the right one (a scalar monoid, so
  // folded on the device unless FUSEFLOW_SHARDED_FOLD=host).
  const ff::Monoid last = ff::monoid<int>([](auto a, auto b) { return ff::select(b < 0, a, b); }, -1,
                                          ff::non_commutative, "last_set");
  auto k = ff::input<int>("k");
  auto program = ff::outputs(ff::reduce(k, last), ff::reduce(k, ff::plus));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<int> ks = random_ints(n, -1, 1000);
      for (std::size_t i = 0; i < n; ++i)
        if (rng()() % 4 != 0) ks[i] = -1;  // mostly unset: several ranks' partials are -1
      auto dk = srt.scatter(ks);
      int want = -1;
      for (int v : ks) want = v < 0 ? want : v;
      long long sum = 0;
      for (int v : ks) sum += v;
      for (int rep = 0; rep < 2; ++rep) {
        auto [got, isum] = srt.run(program, {{k, dk}});
        CHECK(got.as<int>() == want);
        CHECK(isum.as<int>() == static_cast<int>(sum));
      }
    }
}

TEST_CASE("sharded scan: i32 inclusive and exclusive exact, f32 inclusive by relative error") {
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  auto program = ff::outputs(ff::scan(k, ff::plus, ff::inclusive), ff::scan(k, ff::plus, ff::exclusive),
                             ff::scan(x, ff::plus, ff::inclusive));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<int> ks = random_ints(n, -50, 50);
      std::vector<float> xs = random_floats(n);
      auto dk = srt.scatter(ks);
      auto dx = srt.scatter(xs);
      auto [inc, exc, fin] = srt.run(program, {{k, dk}, {x, dx}});
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(ks)).bind(x, ff::HostArray::from(xs));
      auto want = reference(program, hb);
      CHECK(inc.download<int>() == want[0].array.to_vector<int>());
      CHECK(exc.download<int>() == want[1].array.to_vector<int>());
      std::vector<float> got = fin.download<float>();
      REQUIRE(got.size() == n);
      double running = 0, scale = 0;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        running += xs[i];
        scale += std::fabs(xs[i]);
        if (!(std::fabs(got[i] - running) <= 1e-5 * scale + 1e-6)) ++bad;
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("sharded map: element-wise outputs stay sharded, ff::index() is the global index") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  auto program = ff::outputs(x * t + 1.0f, ff::index() * 3LL + ff::cast<long long>(x > 0.0f), ff::reduce(x * x, ff::plus));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<float> xs = random_floats(n);
      auto dx = srt.scatter(xs);
      auto [y, idx, sq] = srt.run(program, {{x, dx}, {t, 2.5f}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xs)).bind(t, ff::Value(2.5f));
      auto want = reference(program, hb);
      CHECK(y.kind() == ff::ShardedResult::Kind::Sharded);
      // x * t + 1: the device may contract it into one fma, so compare by relative error.
      const std::vector<float> got_y = y.download<float>();
      const std::vector<float> want_y = want[0].array.to_vector<float>();
      REQUIRE(got_y.size() == want_y.size());
      std::size_t bad_y = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (!(std::fabs(static_cast<double>(got_y[i]) - want_y[i]) <= 1e-6 * std::fabs(static_cast<double>(want_y[i])) + 1e-6)) ++bad_y;
      CHECK(bad_y == 0);
      CHECK(idx.download<long long>() == want[1].array.to_vector<long long>());
      double want_sq = 0;
      for (float v : xs) want_sq += static_cast<double>(v) * v;
      CHECK(std::fabs(sq.as<float>() - want_sq) <= 1e-5 * want_sq + 1e-6);
      // A sharded result binds to the next sharded run.
      ff::ShardedArray<float> ys = y.array<float>();
      float back = srt.run(ff::reduce(x, ff::max), {{x, ys}});
      float want_max = -INFINITY;  // the max of the very values the device wrote: exact
      for (float v : got_y) want_max = std::fmax(want_max, v);
      CHECK(back == want_max);
    }
}

TEST_CASE("sharded histogram: per-rank counts all-reduced, the whole histogram on every rank") {
  auto k = ff::input<int>("k");
  const std::int64_t bins = 37;
  auto program = ff::histogram(k, [](auto v) { return v % 40; }, bins);
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<int> ks = random_ints(n, 0, 1 << 20);
      auto dk = srt.scatter(ks);
      ff::ShardedResult h = srt.run(program, {{k, dk}});
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(ks));
      auto want = reference(program, hb);
      CHECK(h.kind() == ff::ShardedResult::Kind::Replicated);
      CHECK(h.size() == static_cast<std::size_t>(bins));
      CHECK(h.download<unsigned>() == want[0].array.to_vector<unsigned>());
    }
}

TEST_CASE("sharded filter: survivors per shard with global positions, counts gathered into the layout") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Expr kept = ff::filter(ff::zip(x, ff::index()), x > t);
  auto program = ff::outputs(ff::get<0>(kept), ff::get<1>(kept), ff::reduce(x, ff::max));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<float> xs = random_floats(n);
      auto dx = srt.scatter(xs);
      auto [values, positions, mx] = srt.run(program, {{x, dx}, {t, 0.25f}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xs)).bind(t, ff::Value(0.25f));
      auto want = reference(program, hb);
      CHECK(values.size() == want[0].array.size());
      CHECK(values.layout().world() == w);
      CHECK(values.download<float>() == want[0].array.to_vector<float>());
      CHECK(positions.download<long long>() == want[1].array.to_vector<long long>());
      CHECK(mx.value() == want[2].scalar);
      // The filter's result binds to the next run, sharded as it came out.
      ff::ShardedArray<float> survivors = values.array<float>();
      CHECK(survivors.layout() == values.layout());
      ff::ShardedResult again = srt.run(ff::reduce(ff::zip(x, ff::index()), ff::argmax), {{x, survivors}});
      ff::HostBindings hs;
      hs.bind(x, want[0].array);
      CHECK(again.value() == reference(ff::reduce(ff::zip(x, ff::index()), ff::argmax), hs)[0].scalar);
    }
}

TEST_CASE("sharded reduce: built-in integer monoids (all-reduced where NCCL has the type) exact, the rest gathered") {
  auto k = ff::input<long long>("k");
  auto u = ff::input<unsigned>("u");
  auto c = ff::input<std::uint8_t>("c");
  auto h = ff::input<std::int16_t>("h");
  auto program = ff::outputs(ff::reduce(k, ff::min), ff::reduce(k, ff::plus), ff::reduce(u, ff::times),
                             ff::reduce(c, ff::max), ff::reduce(h, ff::plus), ff::reduce(u, ff::bit_xor));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<long long> ks(n);
      std::vector<unsigned> us(n);
      std::vector<std::uint8_t> cs(n);
      std::vector<std::int16_t> hs(n);
      for (std::size_t i = 0; i < n; ++i) {
        ks[i] = static_cast<long long>(rng()() >> 4) - (1LL << 58);
        us[i] = static_cast<unsigned>(rng()()) | 1u;  // odd: the product never becomes 0
        cs[i] = static_cast<std::uint8_t>(rng()());
        hs[i] = static_cast<std::int16_t>(rng()() % 200) - 100;
      }
      auto dk = srt.scatter(ks);
      auto du = srt.scatter(us);
      auto dc = srt.scatter(cs);
      auto dh = srt.scatter(hs);
      auto got = srt.run(program, {{k, dk}, {u, du}, {c, dc}, {h, dh}});
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(ks)).bind(u, ff::HostArray::from(us));
      hb.bind(c, ff::HostArray::from(cs)).bind(h, ff::HostArray::from(hs));
      auto want = reference(program, hb);
      for (std::size_t o = 0; o < got.size(); ++o) {
        CAPTURE(o);
        CHECK(got[o].value() == want[o].scalar);
      }
    }
}

TEST_CASE("sharded scan with a non-commutative scalar monoid: the carry folded on the device in rank order") {
  // "the last element that is not -1", scanned: the carry into a shard is the last set
  // element of the ranks before it, which only a fold of their totals in rank order gets
  // (on the device: the totals gathered and scanned there, each rank reading its entry;
  // on the host with FUSEFLOW_SHARDED_FOLD=host). Mostly unset elements, so that whole
  // shards pass the carry on. The f32 sum's scan gives the same bits run to run.
  const ff::Monoid last = ff::monoid<int>([](auto a, auto b) { return ff::select(b < 0, a, b); }, -1,
                                          ff::non_commutative, "last_set");
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  auto program = ff::outputs(ff::scan(k, last, ff::inclusive), ff::scan(k, last, ff::exclusive),
                             ff::scan(x, ff::plus, ff::inclusive));
  for (int w : worlds())
    for (std::size_t n : sizes()) {
      CAPTURE(w);
      CAPTURE(n);
      auto& srt = world(w);
      std::vector<int> ks = random_ints(n, -1, 1000);
      for (std::size_t i = 0; i < n; ++i)
        if (rng()() % 8 != 0) ks[i] = -1;
      std::vector<float> xs = random_floats(n);
      auto dk = srt.scatter(ks);
      auto dx = srt.scatter(xs);
      ff::HostBindings hb;
      hb.bind(k, ff::HostArray::from(ks)).bind(x, ff::HostArray::from(xs));
      auto want = reference(program, hb);
      std::vector<float> first;
      for (int rep = 0; rep < 2; ++rep) {
        auto [inc, exc, fin] = srt.run(program, {{k, dk}, {x, dx}});
        CHECK(inc.download<int>() == want[0].array.to_vector<int>());
        CHECK(exc.download<int>() == want[1].array.to_vector<int>());
        std::vector<float> got = fin.download<float>();
        REQUIRE(got.size() == n);
        if (rep == 0) first = got;
        CHECK(std::memcmp(got.data(), first.data(), n * sizeof(float)) == 0);
      }
    }
}
