// The CPU reference evaluator's arithmetic and expressions: wrapping, rounding, maps,
// parameters, tuples, short-circuits, parallel evaluation and the built-in monoids. Each
// expected value was worked out by hand, not by running the evaluator.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "frontend/reference_test_support.hpp"

using namespace reference_test;

TEST_CASE("an f32 sum rounds each step in float") {
  // 1e8 + 1 rounds back to 1e8 in float (its spacing there is 8), eight times over; a
  // double sum would reach 100000008, which float represents exactly.
  auto x = ff::input<float>("x");
  std::vector<float> xs{1e8f, 1, 1, 1, 1, 1, 1, 1, 1};
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(xs));
  float sum = run_scalar(ff::reduce(x, ff::plus), b).as<float>();
  CHECK(sum == 1e8f);
  double wide = 0;
  for (float v : xs) wide += v;
  CHECK(static_cast<float>(wide) == 100000008.0f);
}

TEST_CASE("a u8 plus reduction wraps modulo 256") {
  auto x = ff::input<std::uint8_t>("x");
  ff::HostBindings b;
  b.bind(x, array<std::uint8_t>({200, 100, 1}));
  CHECK(run_scalar(ff::reduce(x, ff::plus), b) == ff::Value(std::uint8_t{45}));
  CHECK(run_array<std::uint8_t>(ff::scan(x, ff::plus), b) == std::vector<std::uint8_t>{200, 44, 45});
}

TEST_CASE("an i8 plus reduction wraps in two's complement") {
  auto x = ff::input<std::int8_t>("x");
  ff::HostBindings b;
  b.bind(x, array<std::int8_t>({100, 100}));
  CHECK(run_scalar(ff::reduce(x, ff::plus), b) == ff::Value(std::int8_t{-56}));
}

TEST_CASE("a map can use a scan's elements and the element index") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({5, 5, 5}));
  CHECK(run_array<long>(ff::scan(x, ff::plus) - ff::index(), b) == std::vector<long>{5, 9, 13});
}

TEST_CASE("several outputs over one input are computed together, a shared op once") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({4, -2, 9, 1}));
  auto sum = ff::reduce(x, ff::plus);
  auto results = ff::evaluate(ff::outputs(sum, ff::reduce(x, ff::max), x - sum), b);
  REQUIRE(results.size() == 3);
  CHECK(results[0].scalar == ff::Value(12));
  CHECK(results[1].scalar == ff::Value(9));
  CHECK(results[2].array.to_vector<int>() == std::vector<int>{-8, -14, -3, -11});
}

TEST_CASE("a parameter is read from the bindings") {
  auto x = ff::input<float>("x");
  auto scale = ff::param<float>("scale");
  ff::HostBindings b;
  b.bind(x, array<float>({1.0f, 2.0f}));
  b.bind(scale, ff::Value(0.5f));
  CHECK(run_array<float>(x * scale, b) == std::vector<float>{0.5f, 1.0f});
  b.bind(scale, ff::Value(3.0f));
  CHECK(run_array<float>(x * scale, b) == std::vector<float>{3.0f, 6.0f});
}

TEST_CASE("tuple inputs are read field by field") {
  using P = ff::Tuple<int, double>;
  auto p = ff::input<P>("p");
  ff::HostBindings b;
  b.bind(p, array<P>({P(1, 0.5), P(2, 0.25)}));
  CHECK(run_array<double>(ff::get<1>(p) * ff::get<0>(p), b) == std::vector<double>{0.5, 0.5});
}

TEST_CASE("select and && evaluate only what C++ would, so guarded divisions do not throw") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({0, 5, 20}));
  CHECK(run_array<int>(ff::select(x != 0, 10 / x, ff::constant(-1)), b) == std::vector<int>{-1, 2, 0});
  CHECK(bool_array(x != 0 && 10 / x > 1, b) == std::vector<int>{0, 1, 0});
  CHECK(bool_array(x == 0 || 10 / x > 1, b) == std::vector<int>{1, 1, 0});
}

TEST_CASE("a subexpression shared by two selects is computed in each branch that needs it") {
  // d runs only where a branch using it is taken: for x = 2 the first select skips it and
  // the second must compute it; for x = 0 neither divides.
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({2, 0, 10}));
  auto d = 10 / x;
  CHECK(run_array<int>(ff::select(x > 5, d, ff::constant(0)) + ff::select(x != 0, d, ff::constant(1)), b) ==
        std::vector<int>{5, 1, 2});
  auto twice = x * 2;
  CHECK(run_array<int>(twice + ff::select(x > 5, twice, ff::constant(0)), b) == std::vector<int>{4, 0, 40});
}

TEST_CASE("large arrays evaluate in parallel and keep the sequential answer") {
  const int n = 300001;
  std::vector<int> xs(n);
  for (int i = 0; i < n; ++i) xs[static_cast<std::size_t>(i)] = static_cast<int>((i * 7919LL) % 1000) - 500;
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(xs));

  std::vector<int> kept;
  long long sum = 0;
  for (int v : xs) {
    if (v % 3 == 0) kept.push_back(v * 2);
    sum += v + 1;
  }
  CHECK(run_array<int>(ff::filter(x * 2, x % 3 == 0), b) == kept);
  CHECK(run_scalar(ff::reduce(ff::cast<long>(x) + 1L, ff::plus), b) == ff::Value(static_cast<long>(sum)));
  auto scanned = run_array<int>(ff::scan(x + 0, ff::max), b);
  int running = std::numeric_limits<int>::lowest();
  bool same = true;
  for (int i = 0; i < n; ++i) {
    running = std::max(running, xs[static_cast<std::size_t>(i)]);
    same = same && scanned[static_cast<std::size_t>(i)] == running;
  }
  CHECK(same);
}

TEST_CASE("every built-in monoid reduces and scans exactly as folding its combine expression, on every type") {
  // The reduce and scan take the typed loop of the monoid's host function; evaluate_combine
  // runs the compiled combine expression.
  std::mt19937_64 rng(7);
  for (const ff::ScalarInfo& info : ff::all_scalar_types()) {
    const ff::Type t = info.type;
    std::vector<ff::Value> values;
    for (int i = 0; i < 40; ++i) {
      std::uint64_t bits = rng();
      values.push_back(t.is_floating() ? ff::Value::from_double(t.scalar(), static_cast<double>(bits % 2001) / 8.0 - 125.0)
                                       : ff::Value::from_uint(t.scalar(), bits % 3 == 0 ? 0 : bits));
    }
    if (t.is_floating()) values[3] = ff::Value::from_double(t.scalar(), std::nan(""));
    auto x = ff::input("x", t);
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from_values(t, values));
    for (const ff::BuiltinMonoidInfo& row : ff::all_builtin_monoids()) {
      const ff::Monoid m = ff::Monoid::builtin(row.kind);
      ff::Monoid typed;
      try {
        typed = m.instantiate(t, "test");
      } catch (const ff::GraphError&) {
        continue;  // the monoid does not apply to t (monoid_test checks which do)
      }
      ff::Value acc = typed.identity();
      std::vector<ff::Value> prefixes;
      for (const auto& v : values) prefixes.push_back(acc = ff::evaluate_combine(typed, acc, v));
      CAPTURE(t.name());
      CAPTURE(m.name());
      CHECK(run_scalar(ff::reduce(x, m), b) == acc);
      ff::HostArray scanned = run1(ff::Program(ff::scan(x, m)), b).array;
      REQUIRE(scanned.size() == prefixes.size());
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < prefixes.size(); ++i) mismatches += scanned.at(i) == prefixes[i] ? 0 : 1;
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("evaluate_constant folds an expression of constants") {
  CHECK(ff::evaluate_constant(ff::Expr(2) * 3 + 1) == ff::Value(7));
  CHECK(ff::evaluate_constant(ff::tuple(1, 2.5f)) == ff::Value(ff::Tuple<int, float>(1, 2.5f)));
  CHECK(ff::evaluate_constant(ff::get<1>(ff::Expr(ff::Value(ff::Tuple<int, float>(1, 2.5f))))) == ff::Value(2.5f));
}

TEST_CASE("evaluate_combine applies a monoid to two values") {
  CHECK(ff::evaluate_combine(ff::Monoid(ff::max).instantiate(ff::ScalarType::I32, "test"), ff::Value(3), ff::Value(9)) ==
        ff::Value(9));
  CHECK(ff::evaluate_combine(mssp_monoid(), ff::Value(I4(2, 2, 2, 2)), ff::Value(I4(0, 0, 0, -3))) ==
        ff::Value(I4(2, 2, 0, -1)));
}
