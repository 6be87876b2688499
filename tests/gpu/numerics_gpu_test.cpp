// The numerics README "Numerics" promises, on the GPU: NaN propagates through min, max,
// argmin and argmax whatever the strategy, the size and where the NaN is (the result is
// the CPU reference's, bit for bit up to NaN payloads: the first NaN's index for arg*);
// infinities are ordinary extremes; signed and unsigned integer sums wrap; f32 sums stay
// within the documented 2e-5 * sum|x| of the f64 sum.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::rng;
using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({1, 2, 33, 1025, (1 << 20) + 7, 1 << 24});
// The NaN sweep checks every element against the CPU reference: up to 70001 under the label
// gpu (with 2^20 + 7 it took 8.1 s on an H100), 2^20 + 7 and 2^24 (two minutes on an H100
// host) in the suite "long" (gpu_test_support.hpp).
const std::vector<std::int64_t> kNanSizes = ff::test::capped({1, 2, 33, 1025, 70001});
const std::vector<std::int64_t> kNanLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});

struct Op {
  std::string name;
  std::function<ff::Expr(const ff::Expr& x)> build;
};

const std::vector<Op>& ops() {
  static const std::vector<Op> all = {
      {"max", [](const ff::Expr& x) { return ff::reduce(x, ff::max); }},
      {"min", [](const ff::Expr& x) { return ff::reduce(x, ff::min); }},
      {"max staged", [](const ff::Expr& x) { return ff::reduce(x, ff::max, ff::strategy::staged); }},
      {"min tree", [](const ff::Expr& x) { return ff::reduce(x, ff::min, ff::strategy::tree); }},
      {"argmax", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmax); }},
      {"argmin", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmin); }},
      {"argmax staged", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmax, ff::strategy::staged); }},
      {"argmin tree", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmin, ff::strategy::tree); }},
      {"max of a map", [](const ff::Expr& x) { return ff::reduce(ff::max(x * 2.0f, ff::cast<float>(x) - 1.0f), ff::max); }},
      {"max scan", [](const ff::Expr& x) { return ff::scan(x, ff::max); }},
      {"min scan, exclusive, reduce_then_scan",
       [](const ff::Expr& x) { return ff::scan(x, ff::min, ff::exclusive, ff::strategy::reduce_then_scan); }},
      {"argmax scan", [](const ff::Expr& x) { return ff::scan(ff::zip(x, ff::index()), ff::argmax); }},
  };
  return all;
}

// n values in [-1e3, 1e3] with ties, some infinities, and NaNs at `nan_at`.
std::vector<float> values_with(std::int64_t n, const std::vector<std::int64_t>& nan_at) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(-1000, 1000);
  for (auto& x : v) x = static_cast<float>(d(rng())) / 4;
  const float inf = std::numeric_limits<float>::infinity();
  if (n > 8) {
    v[static_cast<std::size_t>(n / 3)] = inf;
    v[static_cast<std::size_t>(n / 5)] = -inf;
  }
  for (std::int64_t i : nan_at) v[static_cast<std::size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

// Result and reference element by element: equal values (NaN == NaN, indices exactly).
void check_against_reference(const ff::Expr& prog, const ff::Expr& x, const std::vector<float>& xs, const std::string& what) {
  ff::Runtime& rt = runtime();
  auto dx = rt.upload(xs);
  ff::Result got = rt.run(prog, {{x, dx}});
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(xs));
  const ff::HostResult want = ff::evaluate(ff::Program(prog), b)[0];
  if (want.is_scalar) {
    INFO(what << ": got " << got.value() << ", reference " << want.scalar);
    CHECK(got.value() == want.scalar);
    return;
  }
  const ff::Type& t = want.array.type();
  std::vector<std::byte> bytes(want.array.size() * t.size());
  if (t == ff::type_of<float>()) {
    std::vector<float> g = got.download<float>();
    std::memcpy(bytes.data(), g.data(), bytes.size());
  } else {
    auto g = got.download<ff::Tuple<float, long long>>();
    std::memcpy(bytes.data(), g.data(), bytes.size());
  }
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < want.array.size(); ++i)
    if (ff::Value::from_bytes(t, bytes.data() + i * t.size()) != want.array.at(i) && wrong++ == 0) first = i;
  INFO(what << ": " << wrong << " elements differ, the first at " << first);
  CHECK(wrong == 0);
}

// Every op of ops() over arrays of each size with NaNs at the ends, at a random place, at
// three random places, and nowhere.
void check_nan_propagation(const std::vector<std::int64_t>& sizes) {
  const auto x = ff::input<float>("x");
  for (std::int64_t n : sizes) {
    std::uniform_int_distribution<std::int64_t> at(0, n - 1);
    const std::vector<std::vector<std::int64_t>> placements = {
        {}, {0}, {n - 1}, {at(rng())}, {at(rng()), at(rng()), at(rng())}};
    for (const auto& nan_at : placements) {
      const std::vector<float> xs = values_with(n, nan_at);
      for (const Op& op : ops())
        check_against_reference(op.build(x), x, xs,
                                op.name + ", n = " + std::to_string(n) + ", " + std::to_string(nan_at.size()) + " NaN");
    }
  }
}

}  // namespace

TEST_CASE("NaN propagates through min, max, argmin and argmax wherever it is, as in the reference") {
  check_nan_propagation(kNanSizes);
}

TEST_CASE("NaN propagates through min, max, argmin and argmax at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_nan_propagation(kNanLongSizes);
}

TEST_CASE("an all-NaN array gives NaN, and the first index for argmax and argmin") {
  ff::Runtime& rt = runtime();
  const auto x = ff::input<float>("x");
  for (std::int64_t n : ff::test::capped({1, 1000, (1 << 20) + 7})) {
    auto dx = rt.upload(std::vector<float>(static_cast<std::size_t>(n), std::numeric_limits<float>::quiet_NaN()));
    CHECK(std::isnan(rt.run(ff::reduce(x, ff::max), {{x, dx}}).value().as_float()));
    CHECK(std::isnan(rt.run(ff::reduce(x, ff::min), {{x, dx}}).value().as_float()));
    for (const ff::Monoid& m : {ff::argmax, ff::argmin}) {
      const ff::Value r = rt.run(ff::reduce(ff::zip(x, ff::index()), m), {{x, dx}}).value();
      CHECK(std::isnan(r[0].as_float()));
      CHECK(r[1] == ff::Value(0LL));
    }
  }
}

TEST_CASE("i32 and i64 sums and scans wrap in two's complement, u32 sums modulo 2^32") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({1, 1025, (1 << 20) + 7})) {
    std::uniform_int_distribution<std::int32_t> big(1 << 30, std::numeric_limits<std::int32_t>::max());
    std::vector<std::int32_t> xs(static_cast<std::size_t>(n));
    std::vector<std::int64_t> ys(static_cast<std::size_t>(n));
    std::vector<std::uint32_t> us(static_cast<std::size_t>(n));
    std::uint32_t want32 = 0, wantu = 0;
    std::uint64_t want64 = 0;
    std::vector<std::int32_t> prefix(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      xs[i] = big(rng());
      ys[i] = static_cast<std::int64_t>(xs[i]) << 32;
      us[i] = static_cast<std::uint32_t>(xs[i]) * 2u + 1u;
      want32 += static_cast<std::uint32_t>(xs[i]);  // wraps, as the device must
      want64 += static_cast<std::uint64_t>(ys[i]);
      wantu += us[i];
      prefix[i] = static_cast<std::int32_t>(want32);
    }
    const auto x = ff::input<std::int32_t>("x");
    const auto y = ff::input<std::int64_t>("y");
    const auto u = ff::input<std::uint32_t>("u");
    auto dx = rt.upload(xs);
    auto dy = rt.upload(ys);
    auto du = rt.upload(us);
    INFO("n = " << n);
    CHECK(rt.run(ff::reduce(x, ff::plus), {{x, dx}}).value() == ff::Value(static_cast<std::int32_t>(want32)));
    CHECK(rt.run(ff::reduce(y, ff::plus), {{y, dy}}).value() == ff::Value(static_cast<std::int64_t>(want64)));
    CHECK(rt.run(ff::reduce(u, ff::plus), {{u, du}}).value() == ff::Value(wantu));
    CHECK(rt.run(ff::scan(x, ff::plus), {{x, dx}}).download<std::int32_t>() == prefix);
  }
}

TEST_CASE("f32 sums stay within 2e-5 * sum|x| of the f64 sum, for every strategy") {
  ff::Runtime& rt = runtime();
  const auto x = ff::input<float>("x");
  for (std::int64_t n : kSizes) {
    // Positive terms and cancelling ones: the bound is relative to sum|x|, not to the sum.
    for (double lo : {0.0, -1.0}) {
      const std::vector<float> xs = ff::test::random_values<float>(n, lo, 1.0);
      double want = 0, magnitude = 0;
      for (float v : xs) {
        want += v;
        magnitude += std::fabs(v);
      }
      auto dx = rt.upload(xs);
      for (ff::Strategy s : {ff::strategy::chunked, ff::strategy::staged, ff::strategy::tree}) {
        const double got = rt.run(ff::reduce(x, ff::plus, s), {{x, dx}}).value().as_double();
        INFO("n = " << n << ", " << ff::strategy_name(s) << ", terms from " << lo << ": got " << got << ", f64 " << want);
        CHECK(std::fabs(got - want) <= 2e-5 * magnitude);
      }
      const std::vector<float> prefix = rt.run(ff::scan(x, ff::plus), {{x, dx}}).download<float>();
      INFO("n = " << n << ", scan's last element: got " << prefix.back() << ", f64 " << want);
      CHECK(std::fabs(prefix.back() - want) <= 2e-5 * magnitude);
    }
  }
}
