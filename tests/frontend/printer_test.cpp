// The textual form of programs (printer.cpp), checked against hand-written text: golden
// tests and error messages depend on it, so it must be exact and stable.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "fuseflow/frontend/program.hpp"
#include "fuseflow/frontend/settings.hpp"

namespace ff = fuseflow;

namespace {
// Some programs here combine with functions that are no monoids (a * 3 + b): they test
// printing only, so the debug check of monoid laws (a debug build's default) is off.
const bool monoid_checks_off = (ff::set_monoid_checks(false), true);

using Mssp = ff::Tuple<int, int, int, int>;
ff::Monoid mssp() {
  return ff::monoid<Mssp>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]), ff::max(a[1], a[3] + b[1]),
                         ff::max(b[2], a[2] + b[3]), a[3] + b[3]);
      },
      ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");
}
std::string print(const ff::Program& p) { return ff::to_string(p); }
}  // namespace

TEST_CASE("a dot product prints its inputs, the fused reduce and the output") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  CHECK(print(ff::reduce(x * y, ff::plus)) ==
        "input x: f32\n"
        "input y: f32\n"
        "%0 = reduce(plus: f32, x * y)\n"
        "output %0\n");
}

TEST_CASE("MSSP prints its custom monoid's definition before the reduce that uses it") {
  const auto x = ff::input<int>("x", 1000);
  const ff::Expr parts = ff::map(x, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
  CHECK(print(ff::reduce(parts, mssp())) ==
        "input x: i32[1000]\n"
        "monoid mssp: (i32, i32, i32, i32), non-commutative\n"
        "  combine(a, b) = (max(max(a[0], b[0]), a[2] + b[1]), max(a[1], a[3] + b[1]), "
        "max(b[2], a[2] + b[3]), a[3] + b[3])\n"
        "  identity = (0, 0, 0, 0)\n"
        "%0 = reduce(mssp: (i32, i32, i32, i32), (max(x, 0), max(x, 0), max(x, 0), x))\n"
        "output %0\n");
}

TEST_CASE("a custom monoid used by two ops is defined once") {
  const auto x = ff::input<int>("x");
  const ff::Monoid m = ff::monoid<int>([](auto a, auto b) { return a * 3 + b; }, 0, ff::non_commutative, "horner");
  CHECK(print(ff::outputs(ff::reduce(x, m), ff::scan(x, m, ff::exclusive))) ==
        "input x: i32\n"
        "monoid horner: i32, non-commutative\n"
        "  combine(a, b) = a * 3 + b\n"
        "  identity = 0\n"
        "%0 = reduce(horner: i32, x)\n"
        "%1 = scan(horner: i32, exclusive, x)\n"
        "output %0\n"
        "output %1\n");
}

TEST_CASE("argmax over zip(x, index()) prints the pair type and the index leaf") {
  const auto x = ff::input<float>("x");
  CHECK(print(ff::reduce(ff::zip(x, ff::index()), ff::argmax)) ==
        "input x: f32\n"
        "%0 = reduce(argmax: (f32, i64), (x, index))\n"
        "output %0\n");
}

TEST_CASE("a filter with a parameter declares the parameter and prints it with $") {
  const auto x = ff::input<float>("x");
  const auto t = ff::param<float>("threshold");
  CHECK(print(ff::filter(x, x > t)) ==
        "input x: f32\n"
        "param threshold: f32\n"
        "%0 = filter(x, where=x > $threshold)\n"
        "output %0\n");
}

TEST_CASE("a scan followed by a map prints the map as the output expression") {
  const auto x = ff::input<float>("x");
  const ff::Expr prefix = ff::scan(x, ff::plus, ff::exclusive);
  CHECK(print(prefix * 2.0f + 1.0f) ==
        "input x: f32\n"
        "%0 = scan(plus: f32, exclusive, x)\n"
        "output %0 * 2.0f + 1.0f\n");
}

TEST_CASE("x / sum(x) prints the reduction first and uses its result in the output") {
  const auto x = ff::input<double>("x");
  CHECK(print(x / ff::reduce(x, ff::plus)) ==
        "input x: f64\n"
        "%0 = reduce(plus: f64, x)\n"
        "output x / %0\n");
}

TEST_CASE("a histogram prints its bin expression, bin count and count type") {
  const auto k = ff::input<int>("k");
  CHECK(print(ff::histogram(k % 8, 8)) ==
        "input k: i32\n"
        "%0 = histogram(k % 8, bins=8, counts=u32)\n"
        "output %0\n");
  const auto x = ff::input<float>("x");
  CHECK(print(ff::histogram(x, [](auto v) { return ff::cast<int>(v * 10.0f); }, 10, ff::ScalarType::U64)) ==
        "input x: f32\n"
        "%0 = histogram(cast<i32>(x * 10.0f), bins=10, counts=u64)\n"
        "output %0\n");
}

TEST_CASE("reduce_by_key names its two results %k.0 and %k.1") {
  const auto k = ff::input<int>("k");
  const auto v = ff::input<float>("v");
  const ff::KeyedResult sums = ff::reduce_by_key(k, v, ff::plus);
  CHECK(print(ff::outputs(sums.keys, sums.values * 0.5f)) ==
        "input v: f32\n"
        "input k: i32\n"
        "%0 = reduce_by_key(plus: f32, v, keys=k)\n"
        "output %0.0\n"
        "output %0.1 * 0.5f\n");
}

TEST_CASE("segmented ops and sorts print their offsets, keys and values") {
  const auto x = ff::input<float>("x");
  const auto offsets = ff::input<std::int64_t>("offsets");
  const auto k = ff::input<std::uint8_t>("k");
  const ff::KeyedResult sorted = ff::sort_by_key(k, x, 4);
  CHECK(print(ff::outputs(ff::segmented_reduce(x, offsets, ff::min),
                          ff::segmented_scan(x, offsets, ff::plus, ff::exclusive), ff::scan_by_key(k, x, ff::max),
                          ff::counting_sort(k, 4), sorted.values)) ==
        "input x: f32\n"
        "input offsets: i64\n"
        "input k: u8\n"
        "%0 = segmented_reduce(min: f32, x, offsets=offsets)\n"
        "%1 = segmented_scan(plus: f32, exclusive, x, offsets=offsets)\n"
        "%2 = scan_by_key(max: f32, inclusive, x, keys=k)\n"
        "%3 = counting_sort(k, bins=4)\n"
        "%4 = counting_sort(k, bins=4, values=x)\n"
        "output %0\n"
        "output %1\n"
        "output %2\n"
        "output %3\n"
        "output %4.1\n");
}

TEST_CASE("a forced strategy is shown; the automatic one is not") {
  const auto x = ff::input<float>("x");
  CHECK(print(ff::outputs(ff::reduce(x, ff::plus, ff::strategy::tree), ff::reduce(x, ff::max, ff::strategy::atomic),
                          ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan),
                          ff::scan(x, ff::min, ff::inclusive, ff::strategy::automatic))) ==
        "input x: f32\n"
        "%0 = reduce(plus: f32, x, strategy=tree)\n"
        "%1 = reduce(max: f32, x, strategy=atomic)\n"
        "%2 = scan(plus: f32, inclusive, x, strategy=reduce_then_scan)\n"
        "%3 = scan(min: f32, inclusive, x)\n"
        "output %0\n"
        "output %1\n"
        "output %2\n"
        "output %3\n");
}

TEST_CASE("parentheses appear exactly where C++ precedence needs them") {
  const auto x = ff::input<int>("x");
  const auto y = ff::input<int>("y");
  const auto z = ff::input<int>("z");
  CHECK(ff::to_string((x + y) * z) == "(x + y) * z");
  CHECK(ff::to_string(x + y * z) == "x + y * z");
  CHECK(ff::to_string(x * (y + z)) == "x * (y + z)");
  CHECK(ff::to_string(x - y - z) == "x - y - z");
  CHECK(ff::to_string(x - (y - z)) == "x - (y - z)");
  CHECK(ff::to_string(x / (y * z)) == "x / (y * z)");
  CHECK(ff::to_string(x << (y + 1)) == "x << y + 1");
  CHECK(ff::to_string((x << y) + 1) == "(x << y) + 1");
  CHECK(ff::to_string((x & y) == z) == "(x & y) == z");
  CHECK(ff::to_string(x & (y == z)) == "x & y == z");
  CHECK(ff::to_string((x < y || y < z) && x > 0) == "(x < y || y < z) && x > 0");
  CHECK(ff::to_string(x < y || (y < z && x > 0)) == "x < y || y < z && x > 0");
  CHECK(ff::to_string(-(x + y)) == "-(x + y)");
  CHECK(ff::to_string(~x * y) == "~x * y");
  CHECK(ff::to_string(!(x < y)) == "!(x < y)");
}

TEST_CASE("every kind of expression node prints as the DSL spells it") {
  const auto x = ff::input<float>("x");
  const auto p = ff::input("p", ff::Type::tuple({ff::ScalarType::F32, ff::ScalarType::I64}));
  CHECK(ff::to_string(ff::select(x > 0.0f, x, -x)) == "select(x > 0.0f, x, -x)");
  CHECK(ff::to_string(ff::fma(x, x, 1.0f)) == "fma(x, x, 1.0f)");
  CHECK(ff::to_string(ff::cast<std::int64_t>(x) + ff::index()) == "cast<i64>(x) + index");
  CHECK(ff::to_string(ff::get<1>(p) * 2) == "p[1] * 2");
  CHECK(ff::to_string(ff::tuple(x, 2.5, true)) == "(x, 2.5, true)");
  CHECK(ff::to_string(ff::cuda_expr<float>("__saturatef($0)", x)) == "cuda<f32>(\"__saturatef($0)\", x)");
  CHECK(ff::to_string(ff::cuda_expr<std::uint32_t>("threadIdx.x")) == "cuda<u32>(\"threadIdx.x\")");
  CHECK(ff::to_string(ff::reduce(x, ff::plus)) == "reduce(...)");
}

TEST_CASE("monoids and types print on their own") {
  CHECK(ff::to_string(ff::plus) == "plus");
  CHECK(ff::to_string(ff::plus.instantiate(ff::ScalarType::I32, "reduce")) ==
        "monoid plus: i32, commutative\n"
        "  combine(a, b) = a + b\n"
        "  identity = 0");
  CHECK(ff::to_string(ff::Monoid(ff::max).instantiate(ff::ScalarType::U8, "reduce")) ==
        "monoid max: u8, commutative\n"
        "  combine(a, b) = cast<u8>(max(a, b))\n"
        "  identity = u8(0)");
  CHECK(ff::to_string(ff::Type::tuple({ff::ScalarType::U8, ff::ScalarType::F64})) == "(u8, f64)");
}

TEST_CASE("printing a program twice, or the same program built twice, gives the same text") {
  const auto x = ff::input<int>("x");
  const auto y = ff::input<int>("y");
  auto build = [&] {
    const ff::Expr prefix = ff::scan(x + y, ff::plus);
    const ff::Expr total = ff::reduce(prefix, ff::max);
    return ff::outputs(total, prefix - total, ff::reduce(ff::zip(y, ff::index()), ff::argmin));
  };
  const ff::Program p = build();
  const std::string first = print(p);
  CHECK(first ==
        "input x: i32\n"
        "input y: i32\n"
        "%0 = scan(plus: i32, inclusive, x + y)\n"
        "%1 = reduce(max: i32, %0)\n"
        "%2 = reduce(argmin: (i32, i64), (y, index))\n"
        "output %1\n"
        "output %0 - %1\n"
        "output %2\n");
  CHECK(print(p) == first);
  CHECK(print(build()) == first);
}

TEST_CASE("a negation of a negative operand keeps the two minus signs apart") {
  const auto x = ff::input<int>("x");
  CHECK(ff::to_string(-(-x)) == "-(-x)");
  CHECK(ff::to_string(-ff::Expr(-2)) == "-(-2)");
  CHECK(ff::to_string(x - -x) == "x - -x");
  CHECK(ff::to_string(!(!x)) == "!!x");
  CHECK(ff::to_string(-~x) == "-~x");
}

TEST_CASE("two different custom monoids of the same name are both defined, under distinct names") {
  const auto x = ff::input<int>("x");
  const ff::Monoid by3 = ff::monoid<int>([](auto a, auto b) { return a * 3 + b; }, 0, ff::non_commutative);
  const ff::Monoid by5 = ff::monoid<int>([](auto a, auto b) { return a * 5 + b; }, 0, ff::non_commutative);
  CHECK(print(ff::outputs(ff::reduce(x, by3), ff::reduce(x, by5), ff::scan(x, by3))) ==
        "input x: i32\n"
        "monoid custom: i32, non-commutative\n"
        "  combine(a, b) = a * 3 + b\n"
        "  identity = 0\n"
        "%0 = reduce(custom: i32, x)\n"
        "monoid custom#2: i32, non-commutative\n"
        "  combine(a, b) = a * 5 + b\n"
        "  identity = 0\n"
        "%1 = reduce(custom#2: i32, x)\n"
        "%2 = scan(custom: i32, inclusive, x)\n"
        "output %0\n"
        "output %1\n"
        "output %2\n");
}

TEST_CASE("names and CUDA text that would not read back are quoted; a one-field tuple is (x,)") {
  const auto x = ff::input<float>("x");
  CHECK(ff::to_string(ff::cuda_expr<float>("f(\"a\\b\"\n\t$0)", x)) == "cuda<f32>(\"f(\\\"a\\\\b\\\"\\n\\t$0)\", x)");
  CHECK(ff::to_string(ff::cuda_expr<int>(std::string("g(\x01)"))) == "cuda<i32>(\"g(\\x01)\")");
  CHECK(ff::to_string(ff::input<float>("index") + ff::input<float>("my x") * ff::param<float>("t 2")) ==
        "\"index\" + \"my x\" * $\"t 2\"");
  CHECK(ff::to_string(ff::input<float>("inf") + ff::input<float>("cast")) == "\"inf\" + \"cast\"");
  CHECK(ff::to_string(ff::tuple(x)) == "(x,)");
  CHECK(ff::to_string(ff::Expr::constant(ff::Value::tuple({ff::Value(1)}))) == "(1,)");
  CHECK(ff::to_string(ff::Expr::constant(ff::Value::tuple({ff::Value(1), ff::Value::tuple({ff::Value(2.5f)})}))) ==
        "(1, (2.5f,))");
}

TEST_CASE("a custom monoid named like a built-in is printed apart from it") {
  const auto x = ff::input<int>("x");
  const ff::Monoid mine = ff::monoid<int>([](auto a, auto b) { return a - b; }, 0, ff::non_commutative, "max");
  CHECK(print(ff::outputs(ff::reduce(x, ff::max), ff::reduce(x, mine))) ==
        "input x: i32\n"
        "%0 = reduce(max: i32, x)\n"
        "monoid max#2: i32, non-commutative\n"
        "  combine(a, b) = a - b\n"
        "  identity = 0\n"
        "%1 = reduce(max#2: i32, x)\n"
        "output %0\n"
        "output %1\n");
}
