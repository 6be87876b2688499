// The CPU reference evaluator's ops on hand-worked examples: it is the oracle of every GPU
// test, so each expected value here was worked out by hand, not by running it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "frontend/reference_test_support.hpp"

using namespace reference_test;

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

TEST_CASE("sort orders f32 keys -inf < -1 < -0.0 < +0.0 < 1 < inf < every NaN, NaNs and equal keys in input order") {
  auto f = ff::input<float>("f");
  auto v = ff::input<int>("v");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  ff::HostBindings b;
  b.bind(f, array<float>({nan, 0.0f, -0.0f, 1.0f, -inf, inf, -1.0f, -nan, 1.0f}));
  b.bind(v, array<int>({0, 1, 2, 3, 4, 5, 6, 7, 8}));
  auto sorted = ff::sort_by_key(f, v);
  auto results = ff::evaluate(ff::outputs(sorted.keys, sorted.values), b);
  REQUIRE(results.size() == 2);
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{4, 6, 2, 1, 3, 8, 5, 0, 7});
  const std::vector<float> keys = results[0].array.to_vector<float>();
  CHECK(std::signbit(keys[2]));
  CHECK(!std::signbit(keys[3]));
  CHECK((std::isnan(keys[7]) && !std::signbit(keys[7]) && std::isnan(keys[8]) && std::signbit(keys[8])));
}

TEST_CASE("sort of i32 keys is signed, and key bits [4, 8) sort by that digit alone, stably") {
  auto k = ff::input<int>("k");
  auto v = ff::input<int>("v");
  ff::HostBindings b;
  b.bind(k, array<int>({5, -3, 0x120, 0x35, -200, 0x21, 7}));
  b.bind(v, array<int>({0, 1, 2, 3, 4, 5, 6}));
  CHECK(run_array<int>(ff::sort(k), b) == std::vector<int>{-200, -3, 5, 7, 0x21, 0x35, 0x120});
  // Bits [4, 8) of the ordered form (the sign bit flipped does not touch them): 5 -> 0,
  // -3 (0x7ffffffd) -> 15, 0x120 -> 2, 0x35 -> 3, -200 (0x7fffff38) -> 3, 0x21 -> 2, 7 -> 0.
  auto sorted = ff::sort_by_key(k, v, {4, 8});
  auto results = ff::evaluate(ff::outputs(sorted.values), b);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{0, 6, 2, 5, 3, 4, 1});
}
