// The CPU reference evaluator on hand-worked examples: it is the oracle of every GPU test,
// so each expected value here was worked out by hand, not by running it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fuseflow/frontend/reference.hpp"

namespace ff = fuseflow;

namespace {

template <class T>
ff::HostArray array(std::vector<T> values) {
  return ff::HostArray::from(values);
}

// The single result of a one-output program.
ff::HostResult run1(const ff::Program& p, const ff::HostBindings& b) {
  auto results = ff::evaluate(p, b);
  REQUIRE(results.size() == 1);
  return results[0];
}

template <class T>
std::vector<T> run_array(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  REQUIRE_FALSE(r.is_scalar);
  return r.array.to_vector<T>();
}

// A bool array as 0/1 ints (std::vector<bool> has no contiguous storage to copy into).
std::vector<int> bool_array(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  std::vector<int> out;
  for (std::size_t i = 0; i < r.array.size(); ++i) out.push_back(r.array.at(i).as_bool() ? 1 : 0);
  return out;
}

ff::Value run_scalar(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  REQUIRE(r.is_scalar);
  return r.scalar;
}

// The message of the GraphError f throws, or a note that it threw none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "(no GraphError thrown)";
}

using I4 = ff::Tuple<int, int, int, int>;

// Maximum segment sum as (best, best prefix, best suffix, total); not commutative.
ff::Monoid mssp_monoid() {
  return ff::monoid<I4>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]), ff::max(a[1], a[3] + b[1]),
                         ff::max(b[2], a[2] + b[3]), a[3] + b[3]);
      },
      ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");
}

ff::Expr mssp_parts(const ff::Expr& x) {
  return ff::map(x, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
}

}  // namespace

TEST_CASE("inclusive scan of the course example adds every prefix") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({3, 1, 7, 0, 4, 1, 6, 3}));
  CHECK(run_array<int>(ff::scan(x, ff::plus), b) == std::vector<int>{3, 4, 11, 11, 15, 16, 22, 25});
}

TEST_CASE("exclusive scan of the course example starts at the identity") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({3, 1, 7, 0, 4, 1, 6, 3}));
  CHECK(run_array<int>(ff::scan(x, ff::plus, ff::exclusive), b) == std::vector<int>{0, 3, 4, 11, 11, 15, 16, 22});
}

TEST_CASE("filter keeps the positive elements in their input order") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, -1, 3, 4, -6, 5, -8, 10}));
  CHECK(run_array<int>(ff::filter(x, x > 0), b) == std::vector<int>{1, 3, 4, 5, 10});
}

TEST_CASE("filter applies a map to the survivors") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, -1, 3, 4, -6}));
  CHECK(run_array<int>(ff::filter(x * 10, x > 0), b) == std::vector<int>{10, 30, 40});
}

TEST_CASE("a map of a filter's result applies to the survivors; index() there is the position among them") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, -1, 3, 4, -6}));
  ff::Expr kept = ff::filter(x, x > 0);
  CHECK(run_array<int>(kept * 2 + 1, b) == std::vector<int>{3, 7, 9});
  CHECK(run_array<std::int64_t>(ff::cast<std::int64_t>(kept) * 100 + ff::index(), b) ==
        std::vector<std::int64_t>{100, 301, 402});
}

TEST_CASE("counting sort of the course example orders keys over bins 0..8") {
  auto k = ff::input<int>("k");
  ff::HostBindings b;
  b.bind(k, array<int>({8, 5, 1, 3, 7, 8, 6, 5, 3, 8}));
  CHECK(run_array<int>(ff::counting_sort(k, 9), b) == std::vector<int>{1, 3, 3, 5, 5, 6, 7, 8, 8, 8});
}

TEST_CASE("sort_by_key keeps the values of equal keys in input order") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({8, 5, 1, 3, 7, 8, 6, 5, 3, 8}));
  b.bind(v, array<int>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  auto sorted = ff::sort_by_key(k, v, 9);
  auto results = ff::evaluate(ff::outputs(sorted.keys, sorted.values), b);
  REQUIRE(results.size() == 2);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{1, 3, 3, 5, 5, 6, 7, 8, 8, 8});
  // key 3 came from indices 3 and 8, key 5 from 1 and 7, key 8 from 0, 5 and 9
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{2, 3, 8, 1, 7, 6, 4, 0, 5, 9});
}

TEST_CASE("maximum segment sum of a small array is its best contiguous run") {
  // [2, -3, 4, -1, 2, -5, 3]: the best run is 4 - 1 + 2 = 5; the best prefix 2-3+4-1+2 = 4,
  // the best suffix 3, the total 2.
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({2, -3, 4, -1, 2, -5, 3}));
  ff::Value r = run_scalar(ff::reduce(mssp_parts(x), mssp_monoid()), b);
  CHECK(r == ff::Value(I4(5, 4, 3, 2)));
}

TEST_CASE("maximum segment sum of an all-negative array is the empty run") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({-4, -1, -7}));
  ff::Value r = run_scalar(ff::reduce(mssp_parts(x), mssp_monoid()), b);
  CHECK(r == ff::Value(I4(0, 0, 0, -12)));
}

TEST_CASE("reduce with a non-commutative monoid keeps element order") {
  // Decimal concatenation: (value, 10^digits); digits 1, 2, 3 read as 123, not 321.
  using P = ff::Tuple<long, long>;
  auto concat = ff::monoid<P>([](auto a, auto b) { return ff::tuple(a[0] * b[1] + b[0], a[1] * b[1]); },
                              ff::tuple(0L, 1L), ff::non_commutative, "concat");
  auto d = ff::input<long>("d");
  ff::HostBindings b;
  b.bind(d, array<long>({1, 2, 3}));
  CHECK(run_scalar(ff::reduce(ff::tuple(d, ff::constant(10L)), concat), b) == ff::Value(P(123L, 1000L)));
  CHECK(run_array<P>(ff::scan(ff::tuple(d, ff::constant(10L)), concat), b) ==
        std::vector<P>{P(1L, 10L), P(12L, 100L), P(123L, 1000L)});
  CHECK(run_array<P>(ff::scan(ff::tuple(d, ff::constant(10L)), concat, ff::exclusive), b) ==
        std::vector<P>{P(0L, 1L), P(1L, 10L), P(12L, 100L)});
  auto off = ff::input<int>("off");
  b.bind(off, array<int>({0, 2, 3}));
  CHECK(run_array<P>(ff::segmented_reduce(ff::tuple(d, ff::constant(10L)), off, concat), b) ==
        std::vector<P>{P(12L, 100L), P(3L, 10L)});
}

TEST_CASE("argmax ties resolve to the lowest index") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({3, 7, 1, 7, 7, 2}));
  ff::Value r = run_scalar(ff::reduce(ff::zip(x, ff::index()), ff::argmax), b);
  CHECK(r == ff::Value(ff::Tuple<int, long>(7, 1L)));
}

TEST_CASE("argmin ties resolve to the lowest index") {
  auto x = ff::input<float>("x");
  ff::HostBindings b;
  b.bind(x, array<float>({5.0f, 2.0f, 9.0f, 2.0f}));
  ff::Value r = run_scalar(ff::reduce(ff::zip(x, ff::index()), ff::argmin), b);
  CHECK(r == ff::Value(ff::Tuple<float, long>(2.0f, 1L)));
}

TEST_CASE("empty inputs reduce to the identity and scan or filter to empty arrays") {
  auto x = ff::input<float>("x");
  ff::HostBindings b;
  b.bind(x, array<float>({}));
  CHECK(run_scalar(ff::reduce(x, ff::plus), b) == ff::Value(0.0f));
  CHECK(run_scalar(ff::reduce(x, ff::max), b) == ff::Value(-std::numeric_limits<float>::infinity()));
  CHECK(run_scalar(ff::reduce(mssp_parts(ff::cast<int>(x)), mssp_monoid()), b) == ff::Value(I4(0, 0, 0, 0)));
  CHECK(run_array<float>(ff::scan(x, ff::plus), b).empty());
  CHECK(run_array<float>(ff::scan(x, ff::plus, ff::exclusive), b).empty());
  CHECK(run_array<float>(ff::filter(x, x > 0.0f), b).empty());
  CHECK(run_array<float>(x * 2.0f, b).empty());
}

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

TEST_CASE("histogram counts bins in range and drops the others") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({0, 1, 1, 3, 4, -1, 2, 3, 3, 9}));
  CHECK(run_array<std::uint32_t>(ff::histogram(x, 4), b) == std::vector<std::uint32_t>{1, 2, 1, 3});
  CHECK(run_array<std::uint64_t>(ff::histogram(x, 2, ff::ScalarType::U64), b) ==
        std::vector<std::uint64_t>{1, 2});
}

TEST_CASE("histogram of a bin expression counts what the expression gives") {
  auto x = ff::input<float>("x");
  ff::HostBindings b;
  b.bind(x, array<float>({0.1f, 0.5f, 0.9f, 0.45f, 1.0f}));
  auto h = ff::histogram(x, [](auto v) { return ff::cast<int>(v * 2.0f); }, 2);
  CHECK(run_array<std::uint32_t>(h, b) == std::vector<std::uint32_t>{2, 2});  // 1.0 -> bin 2, dropped
}

TEST_CASE("segmented reduce gives the identity for empty segments") {
  auto x = ff::input<int>("x");
  auto off = ff::input<int>("off");
  ff::HostBindings b;
  b.bind(x, array<int>({1, 2, 3, 4, 5}));
  b.bind(off, array<int>({0, 2, 2, 5, 5}));
  CHECK(run_array<int>(ff::segmented_reduce(x, off, ff::plus), b) == std::vector<int>{3, 0, 12, 0});
  const int lowest = std::numeric_limits<int>::lowest();
  CHECK(run_array<int>(ff::segmented_reduce(x, off, ff::max), b) == std::vector<int>{2, lowest, 5, lowest});
}

TEST_CASE("segmented reduce of no segments is an empty array") {
  auto x = ff::input<int>("x");
  auto off = ff::input<int>("off");
  ff::HostBindings b;
  b.bind(x, array<int>({1, 2}));
  b.bind(off, array<int>({1}));
  CHECK(run_array<int>(ff::segmented_reduce(x, off, ff::plus), b).empty());
}

TEST_CASE("segmented scan restarts at each segment and leaves uncovered elements at the identity") {
  auto x = ff::input<int>("x");
  auto off = ff::input<long>("off");
  ff::HostBindings b;
  b.bind(x, array<int>({1, 2, 3, 4, 5, 6}));
  b.bind(off, array<long>({1, 3, 3, 5}));  // element 0 is before the first segment, 5 after the last
  CHECK(run_array<int>(ff::segmented_scan(x, off, ff::plus), b) == std::vector<int>{0, 2, 5, 4, 9, 0});
  CHECK(run_array<int>(ff::segmented_scan(x, off, ff::plus, ff::exclusive), b) ==
        std::vector<int>{0, 0, 2, 0, 4, 0});
}

TEST_CASE("reduce_by_key reduces each run of equal consecutive keys") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({1, 1, 2, 2, 2, 1, 3}));
  b.bind(v, array<int>({1, 2, 3, 4, 5, 6, 7}));
  auto r = ff::reduce_by_key(k, v, ff::plus);
  auto results = ff::evaluate(ff::outputs(r.keys, r.values), b);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{1, 2, 1, 3});
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{3, 12, 6, 7});
}

TEST_CASE("reduce_by_key compares float keys with ==, so each NaN starts a run") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto k = ff::input<float>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<float>({-0.0f, 0.0f, nan, nan}));
  b.bind(v, array<int>({1, 2, 3, 4}));
  auto r = ff::reduce_by_key(k, v, ff::plus);
  auto results = ff::evaluate(ff::outputs(r.keys, r.values), b);
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{3, 3, 4});
  CHECK(std::signbit(results[0].array.to_vector<float>()[0]));  // a run's key is its first
}

TEST_CASE("scan_by_key restarts the scan at each new run") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({1, 1, 2, 2, 2, 1, 3}));
  b.bind(v, array<int>({1, 2, 3, 4, 5, 6, 7}));
  CHECK(run_array<int>(ff::scan_by_key(k, v, ff::plus), b) == std::vector<int>{1, 3, 3, 7, 12, 6, 7});
  CHECK(run_array<int>(ff::scan_by_key(k, v, ff::plus, ff::exclusive), b) ==
        std::vector<int>{0, 1, 0, 3, 7, 0, 0});
}

TEST_CASE("reduce_by_key of the issue's example gives one key and sum per run, a key recurring after a run") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({1, 1, 2, 2, 2, 1}));
  b.bind(v, array<int>({1, 2, 3, 4, 5, 6}));
  auto r = ff::reduce_by_key(k, v, ff::plus);
  auto results = ff::evaluate(ff::outputs(r.keys, r.values), b);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{1, 2, 1});
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{3, 12, 6});  // 1+2, 3+4+5, 6
}

TEST_CASE("segmented and keyed scans with a non-commutative monoid keep element order inside each segment") {
  // Decimal concatenation as above: digits 1 2 | 3 4 5 read 1, 12 | 3, 34, 345.
  using P = ff::Tuple<long, long>;
  auto concat = ff::monoid<P>([](auto a, auto b) { return ff::tuple(a[0] * b[1] + b[0], a[1] * b[1]); },
                              ff::tuple(0L, 1L), ff::non_commutative, "concat");
  auto d = ff::input<long>("d");
  auto off = ff::input<int>("off");
  auto key = ff::input<int>("key");
  ff::HostBindings b;
  b.bind(d, array<long>({1, 2, 3, 4, 5}));
  b.bind(off, array<int>({0, 2, 2, 5}));  // segments [0, 2), [2, 2) (empty), [2, 5)
  b.bind(key, array<int>({7, 7, 9, 9, 9}));
  const ff::Expr digits = ff::tuple(d, ff::constant(10L));
  const std::vector<P> inclusive = {P(1L, 10L), P(12L, 100L), P(3L, 10L), P(34L, 100L), P(345L, 1000L)};
  const std::vector<P> exclusive = {P(0L, 1L), P(1L, 10L), P(0L, 1L), P(3L, 10L), P(34L, 100L)};
  CHECK(run_array<P>(ff::segmented_scan(digits, off, concat), b) == inclusive);
  CHECK(run_array<P>(ff::segmented_scan(digits, off, concat, ff::exclusive), b) == exclusive);
  CHECK(run_array<P>(ff::scan_by_key(key, digits, concat), b) == inclusive);
  CHECK(run_array<P>(ff::scan_by_key(key, digits, concat, ff::exclusive), b) == exclusive);
  auto r = ff::reduce_by_key(key, digits, concat);
  CHECK(run_array<P>(r.values, b) == std::vector<P>{P(12L, 100L), P(345L, 1000L)});
}

TEST_CASE("a segmented scan with one offset covers nothing: every element is the identity") {
  auto x = ff::input<int>("x");
  auto off = ff::input<int>("off");
  ff::HostBindings b;
  b.bind(x, array<int>({4, 5, 6}));
  b.bind(off, array<int>({1}));
  const int lowest = std::numeric_limits<int>::lowest();
  CHECK(run_array<int>(ff::segmented_scan(x, off, ff::max), b) == std::vector<int>{lowest, lowest, lowest});
  CHECK(run_array<int>(ff::segmented_scan(x, off, ff::plus, ff::exclusive), b) == std::vector<int>{0, 0, 0});
  b.bind(off, array<int>({1, 3}));  // one segment [1, 3): element 0 before it
  CHECK(run_array<int>(ff::segmented_scan(x, off, ff::max), b) == std::vector<int>{lowest, 5, 6});
}

TEST_CASE("keyed ops of empty arrays are empty, and tuple keys compare field by field") {
  auto k = ff::input<int>("k");
  auto c = ff::input<int>("c");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({}));
  b.bind(c, array<int>({}));
  b.bind(v, array<int>({}));
  CHECK(run_array<int>(ff::scan_by_key(k, v, ff::plus), b).empty());
  CHECK(run_array<int>(ff::reduce_by_key(k, v, ff::plus).values, b).empty());
  b.bind(k, array<int>({1, 1, 1, 2}));
  b.bind(c, array<int>({0, 0, 5, 5}));
  b.bind(v, array<int>({1, 2, 3, 4}));
  // Runs of equal (k, c): (1,0) (1,0) | (1,5) | (2,5).
  auto r = ff::reduce_by_key(ff::zip(k, c), v, ff::plus);
  auto results = ff::evaluate(ff::outputs(r.keys, r.values), b);
  using K = ff::Tuple<int, int>;
  CHECK(results[0].array.to_vector<K>() == std::vector<K>{K(1, 0), K(1, 5), K(2, 5)});
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{3, 3, 4});
  CHECK(run_array<int>(ff::scan_by_key(ff::zip(k, c), v, ff::plus), b) == std::vector<int>{1, 3, 3, 4});
}

TEST_CASE("a map can divide by a reduction's scalar") {
  auto x = ff::input<double>("x");
  ff::HostBindings b;
  b.bind(x, array<double>({1, 3, 4}));
  CHECK(run_array<double>(x / ff::reduce(x, ff::plus), b) == std::vector<double>{0.125, 0.375, 0.5});
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

TEST_CASE("built-in monoids reduce and scan exactly as folding their combine expression") {
  std::mt19937_64 rng(7);
  const std::vector<ff::Monoid> monoids{ff::plus, ff::times, ff::min, ff::max, ff::bit_and, ff::bit_or, ff::bit_xor};
  const std::vector<ff::Type> types{ff::ScalarType::I8,  ff::ScalarType::U8,  ff::ScalarType::I16,
                                    ff::ScalarType::U16, ff::ScalarType::I32, ff::ScalarType::U32,
                                    ff::ScalarType::I64, ff::ScalarType::U64, ff::ScalarType::F32,
                                    ff::ScalarType::F64};
  for (const ff::Type& t : types) {
    std::vector<ff::Value> values;
    for (int i = 0; i < 40; ++i) {
      std::uint64_t bits = rng();
      values.push_back(t.is_floating() ? ff::Value::from_double(t.scalar(), static_cast<double>(bits % 2001) / 8.0 - 125.0)
                                       : ff::Value::from_uint(t.scalar(), bits));
    }
    if (t.is_floating()) values[3] = ff::Value::from_double(t.scalar(), std::nan(""));
    auto x = ff::input("x", t);
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from_values(t, values));
    for (const ff::Monoid& m : monoids) {
      if (t.is_floating() && m.kind() >= ff::MonoidKind::BitAnd) continue;
      ff::Monoid typed = m.instantiate(t, "test");
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

// ---- errors ---------------------------------------------------------------------------

TEST_CASE("an unbound input is an error naming it") {
  auto x = ff::input<int>("x");
  auto y = ff::input<int>("y");
  ff::HostBindings b;
  b.bind(x, array<int>({1}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(x + y), b); }) == "fuseflow: input 'y' is not bound");
}

TEST_CASE("an unbound parameter is an error naming it") {
  auto x = ff::input<int>("x");
  auto t = ff::param<int>("threshold");
  ff::HostBindings b;
  b.bind(x, array<int>({1}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::filter(x, x > t)), b); }) ==
        "fuseflow: parameter 'threshold' is not bound");
}

TEST_CASE("a map over arrays of different lengths is an error naming both") {
  auto x = ff::input<int>("x");
  auto y = ff::input<int>("y");
  ff::HostBindings b;
  b.bind(x, ff::HostArray(ff::ScalarType::I32, 10));
  b.bind(y, ff::HostArray(ff::ScalarType::I32, 12));
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::reduce(x * y, ff::plus)), b); }) ==
        "fuseflow: reduce: map over arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
  CHECK(error_of([&] { ff::evaluate(ff::Program(x * y), b); }) ==
        "fuseflow: output 0: map over arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
}

TEST_CASE("a map mixing an input and a filter's result of another length names the op") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, -2, 3}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(x + ff::filter(x, x > 0)), b); }) ==
        "fuseflow: output 0: map over arrays of different lengths: input 'x' has 3 elements, the result of "
        "filter has 2");
}

TEST_CASE("bad segment offsets are errors naming the offset") {
  auto x = ff::input<int>("x");
  auto off = ff::input<int>("off");
  auto seg = ff::segmented_reduce(x, off, ff::plus);
  auto check = [&](std::vector<int> offsets) {
    ff::HostBindings b;
    b.bind(x, array<int>({1, 2, 3, 4, 5}));
    b.bind(off, ff::HostArray::from(offsets));
    return error_of([&] { ff::evaluate(ff::Program(seg), b); });
  };
  CHECK(check({-1, 2}) == "fuseflow: segmented_reduce: offset 0 is -1; offsets must be >= 0");
  CHECK(check({0, 4, 3}) ==
        "fuseflow: segmented_reduce: offset 2 is 3, less than offset 1 (4); offsets must be non-decreasing");
  CHECK(check({0, 6}) == "fuseflow: segmented_reduce: offset 1 is 6, beyond the end of the 5 values");
  CHECK(check({}) == "fuseflow: segmented_reduce: the offsets are empty; s segments need s + 1 offsets");
  CHECK(check({0, 5}) == "(no GraphError thrown)");
}

TEST_CASE("counting sort puts keys outside the bins last, in input order") {
  // bins [0, 4): 1 0 3 2 3 are in range; 9 (index 3), -1 (index 5) and 4 (index 7) are
  // not, and follow every key in range in their input order: nothing is dropped.
  auto k = ff::input<int>("k");
  ff::HostBindings b;
  b.bind(k, array<int>({1, 0, 3, 9, 2, -1, 3, 4}));
  auto sorted = ff::sort_by_key(k, ff::cast<int>(ff::index()), 4);
  auto results = ff::evaluate(ff::outputs(sorted.keys, sorted.values, ff::counting_sort(k, 4)), b);
  REQUIRE(results.size() == 3);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 3, 9, -1, 4});
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{1, 0, 4, 2, 6, 3, 5, 7});
  CHECK(results[2].array.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 3, 9, -1, 4});
}

TEST_CASE("counting sort of u64 keys above 2^63 puts them last") {
  auto k = ff::input<std::uint64_t>("k");
  ff::HostBindings b;
  const std::uint64_t huge = (std::uint64_t{1} << 63) + 5;
  b.bind(k, array<std::uint64_t>({huge, 2, 0, huge - 6, 1}));
  CHECK(run_array<std::uint64_t>(ff::counting_sort(k, 3), b) == std::vector<std::uint64_t>{0, 1, 2, huge, huge - 6});
}

TEST_CASE("a raw CUDA expression cannot run on the CPU reference") {
  auto x = ff::input<float>("x");
  ff::HostBindings b;
  b.bind(x, array<float>({1.0f}));
  auto e = ff::cuda_expr<float>("__saturatef($0)", x);
  CHECK(error_of([&] { ff::evaluate(ff::Program(e), b); }) ==
        "fuseflow: the CPU reference evaluator cannot run a raw CUDA expression: cuda_expr<f32>(\"__saturatef($0)\"); "
        "check such a program against values you work out by hand");
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::reduce(e, ff::plus)), b); }).find("raw CUDA") != std::string::npos);
}

TEST_CASE("an integer division by zero in a map is an error") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, 0}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(10 / x), b); }).find("division by zero in operator / on i32") !=
        std::string::npos);
}

TEST_CASE("binding checks the element type and the declared length") {
  auto x = ff::input<float>("x", 3);
  auto p = ff::param<float>("p");
  ff::HostBindings b;
  CHECK(error_of([&] { b.bind(x, array<int>({1, 2, 3})); }) ==
        "fuseflow: bind: input 'x' holds f32 but the array holds i32");
  CHECK(error_of([&] { b.bind(x, array<float>({1.0f})); }) ==
        "fuseflow: bind: input 'x' was declared with 3 elements, the array has 1");
  CHECK(error_of([&] { b.bind(p, ff::Value(2.5)); }) ==
        "fuseflow: bind: parameter 'p' is f32 but the value 2.5 is f64 (convert it first)");
  CHECK(error_of([&] { b.bind(x + 1.0f, array<float>({1, 2, 3})); }) ==
        "fuseflow: bind: an array binds to an ff::input, not to x + 1.0f");
}

TEST_CASE("HostArray checks element types and indices") {
  ff::HostArray a(ff::ScalarType::I32, 2);
  a.set(1, ff::Value(7));
  a.push_back(ff::Value(9));
  CHECK(a.to_vector<int>() == std::vector<int>{0, 7, 9});
  CHECK(a.at(2) == ff::Value(9));
  CHECK(error_of([&] { a.set(0, ff::Value(1.0f)); }) ==
        "fuseflow: HostArray::set: the array holds i32, the value 1.0f is f32");
  CHECK(error_of([&] { a.set(3, ff::Value(1)); }) ==
        "fuseflow: HostArray::set: index 3 is out of range for an array of 3 elements");
  CHECK(error_of([&] { ff::HostArray::from_values(ff::ScalarType::U8, {ff::Value(1)}); }) ==
        "fuseflow: HostArray::set: the array holds u8, the value 1 is i32");
}

TEST_CASE("evaluate_constant rejects an expression over inputs") {
  auto x = ff::input<int>("x");
  CHECK(error_of([&] { ff::evaluate_constant(x + 1); }) ==
        "fuseflow: the expression x + 1 is not a constant: it uses x");
}
