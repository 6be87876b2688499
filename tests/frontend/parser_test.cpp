// Reading programs back from their textual form (parser.cpp): every program the printer
// can print reads back as a program that prints the same text and computes the same
// results (checked with the CPU reference evaluator), and malformed text gives a
// GraphError naming the line, the column and what was expected there.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

#include "catalog/catalog.hpp"

namespace ff = fuseflow;

namespace {

using Mssp = ff::Tuple<int, int, int, int>;
using ff::catalog::mssp;
using ff::catalog::mssp_parts;

// Prints p, reads the text back and prints that: the two texts must be the same.
std::string round_trip(const ff::Program& p) {
  const std::string text = ff::to_string(p);
  const ff::Program back = ff::parse_program(text);
  CHECK(ff::to_string(back) == text);
  return text;
}

// The parse error's message for `text` ("" when it parses).
std::string parse_error(const std::string& text) {
  try {
    ff::parse_program(text);
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "";
}

// Evaluates a program and its read-back copy on the same data (by input and parameter
// name) with the CPU reference: the results must be the same, exactly.
void check_same_results(const ff::Program& p, const std::map<std::string, ff::HostArray>& arrays,
                        const std::map<std::string, ff::Value>& params = {}) {
  const ff::Program back = ff::parse_program(ff::to_string(p));
  auto bind = [&](const ff::Program& q) {
    ff::HostBindings b;
    for (const auto& in : q.inputs()) b.bind(in, arrays.at(in.node().name));
    for (const auto& pa : q.params()) b.bind(pa, params.at(pa.node().name));
    return b;
  };
  const auto want = ff::evaluate(p, bind(p));
  const auto got = ff::evaluate(back, bind(back));
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    REQUIRE(got[i].is_scalar == want[i].is_scalar);
    if (want[i].is_scalar) {
      CHECK(got[i].scalar == want[i].scalar);
      continue;
    }
    REQUIRE(got[i].array.size() == want[i].array.size());
    CHECK(got[i].array.type() == want[i].array.type());
    for (std::size_t k = 0; k < want[i].array.size(); ++k) CHECK(got[i].array.at(k) == want[i].array.at(k));
  }
}

std::vector<int> small_ints(std::size_t n, unsigned seed) {
  std::vector<int> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<int>(seed >> 24) % 21 - 10;
  }
  return v;
}

}  // namespace

TEST_CASE("reductions of every kind read back as the program printed") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const auto t = ff::param<float>("threshold");
  round_trip(ff::reduce(x * y, ff::plus));
  round_trip(ff::reduce(ff::zip(x, ff::index()), ff::argmax));
  round_trip(ff::outputs(ff::reduce(x, ff::plus), ff::reduce(x, ff::max), ff::reduce(ff::zip(x, ff::index()), ff::argmin)));
  round_trip(ff::reduce(ff::filter(x, x > t), ff::plus));
  round_trip(x / ff::reduce(x, ff::plus));
  round_trip(ff::outputs(ff::reduce(x, ff::plus, ff::strategy::tree), ff::reduce(x, ff::max, ff::strategy::atomic),
                         ff::reduce(x, ff::min, ff::strategy::chunked), ff::reduce(x, ff::plus, ff::strategy::staged)));
  const auto b = ff::input<bool>("b");
  const auto u = ff::input<std::uint32_t>("u");
  round_trip(ff::outputs(ff::reduce(b, ff::logical_and), ff::reduce(b, ff::logical_or), ff::reduce(u, ff::bit_and),
                         ff::reduce(u, ff::bit_or), ff::reduce(u, ff::bit_xor), ff::reduce(u, ff::times)));
}

TEST_CASE("scalar epilogues (expressions of reductions' results) read back and evaluate the same") {
  const auto x = ff::input<float>("x");
  const auto t = ff::param<float>("t");
  const auto m = ff::reduce(x, ff::max);
  const auto s = ff::reduce(ff::exp(x - m), ff::plus);
  const std::string text = round_trip(ff::outputs(m + ff::log(s), s * t, m));
  CHECK(text.find("output %0 + log(%1)") != std::string::npos);
  const ff::Program back = ff::parse_program(text);
  REQUIRE(back.outputs().size() == 3);
  CHECK(ff::is_scalar_epilogue(back.outputs()[0]));
  CHECK(ff::is_scalar_epilogue(back.outputs()[1]));
  CHECK(ff::is_reduction_result(back.outputs()[2]));
  ff::HostBindings hb;
  hb.bind(back.inputs()[0], ff::HostArray::from(std::vector<float>{1.0f, 2.0f, 3.0f}));
  hb.bind(back.params()[0], ff::Value(2.0f));
  const auto r = ff::evaluate(back, hb);
  const double want = 3.0 + std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  CHECK(r[0].is_scalar);
  CHECK(std::abs(r[0].scalar.as_double() - want) < 1e-6);
  CHECK(std::abs(r[1].scalar.as_double() - 2 * std::exp(want - 3.0)) < 1e-5);
  CHECK(r[2].scalar.as_double() == 3.0);
  CHECK(parse_error("input x: f32\n%0 = reduce(plus: f32, x)\noutput %0 + index\n") ==
        "fuseflow: parse: line 3, column 8: an output is an array, a reduction's result or an expression of "
        "reductions' results; reduce(...) + index is none of these");
}

TEST_CASE("a custom non-commutative monoid reads back with its combine function, identity and order") {
  const auto x = ff::input<int>("x", 1000);
  const std::string text = round_trip(ff::reduce(mssp_parts(x), mssp()));
  const ff::Program back = ff::parse_program(text);
  const ff::Monoid& m = back.ops()[0]->monoid;
  CHECK(m.name() == "mssp");
  CHECK_FALSE(m.is_commutative());
  CHECK(m.identity() == ff::Value(Mssp{0, 0, 0, 0}));
  CHECK(back.inputs()[0].node().length == 1000);
  check_same_results(ff::reduce(mssp_parts(x), mssp()), {{"x", ff::HostArray::from(small_ints(1000, 7))}});
}

TEST_CASE("scans inclusive and exclusive, with strategies and an epilogue, read back") {
  const auto x = ff::input<float>("x");
  const ff::Monoid horner = ff::monoid<int>([](auto a, auto b) { return a * 3 + b; }, 0, ff::non_commutative, "horner");
  const auto xi = ff::input<int>("xi");
  round_trip(ff::outputs(ff::scan(x, ff::plus), ff::scan(x, ff::plus, ff::exclusive, ff::strategy::lookback),
                         ff::scan(x, ff::max, ff::inclusive, ff::strategy::reduce_then_scan),
                         ff::scan(x, ff::plus, ff::exclusive) * 2.0f + 1.0f));
  const ff::Program p = ff::outputs(ff::reduce(xi, horner), ff::scan(xi, horner, ff::exclusive), ff::scan(mssp_parts(xi), mssp()));
  round_trip(p);
  check_same_results(p, {{"xi", ff::HostArray::from(small_ints(100, 3))}});
}

TEST_CASE("segmented, by-key, histogram and sort ops read back and compute the same results") {
  const auto x = ff::input<int>("x");
  const auto offsets = ff::input<std::int64_t>("offsets");
  const auto k = ff::input<std::uint8_t>("k");
  const ff::KeyedResult sums = ff::reduce_by_key(k, x, ff::plus);
  const ff::KeyedResult sorted = ff::sort_by_key(k, x, 4);
  const ff::Program p = ff::outputs(
      ff::segmented_reduce(x, offsets, ff::min), ff::segmented_scan(x, offsets, ff::plus, ff::exclusive),
      ff::segmented_reduce(mssp_parts(x), offsets, mssp()), sums.keys, sums.values * 2, ff::scan_by_key(k, x, ff::max),
      ff::scan_by_key(k, x, ff::plus, ff::exclusive), ff::counting_sort(k, 4), sorted.keys, sorted.values,
      ff::histogram(x + 10, 21), ff::histogram(ff::cast<int>(k), 4, ff::ScalarType::U64));
  const std::string text = round_trip(p);
  CHECK(text.find("= reduce_by_key(plus: i32, x, keys=k)\n") != std::string::npos);
  CHECK(text.find("= histogram(x + 10, bins=21, counts=u32)\n") != std::string::npos);
  CHECK(text.find("= counting_sort(k, bins=4, values=x)\n") != std::string::npos);

  const std::size_t n = 40;
  std::vector<std::uint8_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<std::uint8_t>((i / 3 + i % 2) % 4);
  check_same_results(p, {{"x", ff::HostArray::from(small_ints(n, 11))},
                         {"k", ff::HostArray::from(keys)},
                         {"offsets", ff::HostArray::from(std::vector<std::int64_t>{0, 5, 5, 17, 40})}});
}

TEST_CASE("radix sorts read back with their key bits and compute the same results") {
  const auto x = ff::input<int>("x");
  const auto f = ff::input<float>("f");
  const ff::KeyedResult by_bits = ff::sort_by_key(x, f, {3, 17});
  const ff::Program p = ff::outputs(ff::sort(f), by_bits.keys, by_bits.values, ff::sort(x * 3));
  const std::string text = round_trip(p);
  CHECK(text.find("= counting_sort(f, begin_bit=0, end_bit=32)\n") != std::string::npos);
  CHECK(text.find("= counting_sort(x, begin_bit=3, end_bit=17, values=f)\n") != std::string::npos);
  const std::size_t n = 50;
  std::vector<float> fs(n);
  for (std::size_t i = 0; i < n; ++i) fs[i] = static_cast<float>((static_cast<int>(i * 7) % 13) - 6) * 0.5f;
  check_same_results(p, {{"x", ff::HostArray::from(small_ints(n, 1000))}, {"f", ff::HostArray::from(fs)}});
}

TEST_CASE("every kind of expression reads back") {
  const auto x = ff::input<float>("x");
  const auto i = ff::input<int>("i");
  const auto u = ff::input<std::uint32_t>("u");
  const auto p = ff::input("p", ff::Type::tuple({ff::ScalarType::F32, ff::ScalarType::I64}));
  const auto s = ff::param<double>("s");
  std::vector<ff::Expr> outs = {
      (x + 1.0f) * (x - 2.0f) / (x * x + 1.0f),
      i % 7 + (i & 3) + (i | 4) + (i ^ 5) + (i << 2) + (i >> 1) + ~i + -i,
      ff::select((x < 1.0f && x >= 0.0f) || !(x != 2.0f) || x <= -3.0f || x > 4.0f || x == 5.0f, i, 0),
      ff::min(x, 2.0f) + ff::max(x, 1.0f) + ff::abs(x) + ff::sqrt(x) + ff::rsqrt(x) + ff::exp(x) + ff::exp2(x) +
          ff::log(x) + ff::log2(x) + ff::log10(x) + ff::sin(x) + ff::cos(x) + ff::tan(x) + ff::tanh(x) +
          ff::pow(x, 2.0f) + ff::floor(x) + ff::ceil(x) + ff::round(x) + ff::fma(x, x, 1.0f) + ff::erf(x),
      ff::cast<std::int8_t>(x) + ff::cast<std::uint64_t>(u) + ff::cast<double>(s),
      ff::tuple(x, ff::get<1>(p), ff::index(), ff::tuple(i)),
      ff::cuda_expr<float>("__saturatef($0) + $1", x, ff::get<0>(p)),
      ff::cuda_expr<std::uint32_t>("__popc(\"\\q\"\n\t[$0])", u),
      -(-x) + -(x + 1.0f) + ff::Expr(-2.5f) - -x,
  };
  round_trip(ff::Program(outs));
}

TEST_CASE("constants of every type read back with their type and value") {
  const auto x = ff::input<int>("x");
  const float f32_max = std::numeric_limits<float>::max();
  const std::vector<ff::Value> values = {
      ff::Value(true), ff::Value(false), ff::Value(std::int8_t{-128}), ff::Value(std::int16_t{-7}),
      ff::Value(std::numeric_limits<std::int32_t>::min()), ff::Value(std::numeric_limits<std::int64_t>::min()),
      ff::Value(std::uint8_t{255}), ff::Value(std::uint16_t{65535}), ff::Value(std::numeric_limits<std::uint32_t>::max()),
      ff::Value(std::numeric_limits<std::uint64_t>::max()), ff::Value(0.1f), ff::Value(-0.0f), ff::Value(f32_max),
      ff::Value(std::numeric_limits<float>::denorm_min()), ff::Value(std::numeric_limits<float>::infinity()),
      ff::Value(-std::numeric_limits<float>::infinity()), ff::Value(std::numeric_limits<float>::quiet_NaN()),
      ff::Value(0.1), ff::Value(-1e300), ff::Value(-std::numeric_limits<double>::infinity()),
      ff::Value(std::numeric_limits<double>::quiet_NaN()), ff::Value(1e-310), ff::Value(100000000.0f),
      ff::Value::tuple({ff::Value(1), ff::Value(std::int8_t{-2})}), ff::Value::tuple({ff::Value(2.5)}),
  };
  for (const auto& v : values) {
    CAPTURE(v.to_string());
    const ff::Expr e = ff::tuple(x, ff::Expr::constant(v));
    const ff::Program back = ff::parse_program(round_trip(e));
    const ff::Expr read = back.outputs()[0].args()[1];
    // A tuple constant prints as the tuple of its fields, and reads back as that tuple.
    CHECK(read.kind() == (v.is_tuple() ? ff::ExprKind::MakeTuple : ff::ExprKind::Constant));
    CHECK(read.type() == v.type());
    CHECK(ff::evaluate_constant(read) == v);
  }
  // -2 is the constant -2, not a negation; (1, 2)[0] is a field of the constant tuple.
  const ff::Program p = ff::parse_program("input x: i32\noutput x * -2 + (1, i8(-2))[1]\n");
  CHECK(ff::to_string(p) == "input x: i32\noutput x * -2 + (1, i8(-2))[1]\n");
  const ff::Expr sum = p.outputs()[0];
  CHECK(sum.args()[0].args()[1].kind() == ff::ExprKind::Constant);
  CHECK(sum.args()[1].kind() == ff::ExprKind::Get);
  CHECK(sum.args()[1].args()[0].kind() == ff::ExprKind::Constant);
}

TEST_CASE("one-field tuples print as (x,) and read back as tuples") {
  const auto x = ff::input<int>("x");
  const ff::Monoid first = ff::monoid(ff::Type::tuple({ff::ScalarType::I32}), [](auto a, auto) { return a; },
                                      ff::Expr::constant(ff::Value::tuple({ff::Value(0)})), ff::non_commutative, "first");
  const std::string text = round_trip(ff::reduce(ff::tuple(x), first));
  CHECK(text ==
        "input x: i32\n"
        "monoid first: (i32), non-commutative\n"
        "  combine(a, b) = a\n"
        "  identity = (0,)\n"
        "%0 = reduce(first: (i32), (x,))\n"
        "output %0\n");
}

TEST_CASE("names that would read back as something else are quoted") {
  const auto index_input = ff::input<float>("index");
  const auto spaced = ff::input<float>("my x");
  const auto t = ff::param<float>("the threshold");
  const ff::Monoid plus_named = ff::monoid<float>([](auto a, auto b) { return a + b; }, 0.0f, ff::commutative, "plus");
  const ff::Monoid spaced_monoid = ff::monoid<float>([](auto, auto b) { return b; }, 0.0f, ff::non_commutative, "last one");
  const std::string text = round_trip(ff::outputs(ff::reduce(index_input + spaced * t, plus_named),
                                                  ff::reduce(spaced, ff::plus), ff::scan(spaced, spaced_monoid)));
  CHECK(text ==
        "input \"index\": f32\n"
        "input \"my x\": f32\n"
        "param \"the threshold\": f32\n"
        "monoid plus#2: f32, commutative\n"
        "  combine(a, b) = a + b\n"
        "  identity = 0.0f\n"
        "%0 = reduce(plus#2: f32, \"index\" + \"my x\" * $\"the threshold\")\n"
        "%1 = reduce(plus: f32, \"my x\")\n"
        "monoid \"last one\": f32, non-commutative\n"
        "  combine(a, b) = b\n"
        "  identity = 0.0f\n"
        "%2 = scan(\"last one\": f32, inclusive, \"my x\")\n"
        "output %0\n"
        "output %1\n"
        "output %2\n");
  // The custom monoid printed plus#2 keeps its own name, plus.
  CHECK(ff::parse_program(text).ops()[0]->monoid.name() == "plus");
}

TEST_CASE("two unnamed custom monoids read back as two monoids, custom and custom#2") {
  const auto x = ff::input<int>("x");
  const ff::Monoid by3 = ff::monoid<int>([](auto a, auto b) { return a * 3 + b; }, 0, ff::non_commutative);
  const ff::Monoid by5 = ff::monoid<int>([](auto a, auto b) { return a * 5 + b; }, 0, ff::non_commutative);
  const ff::Program p = ff::outputs(ff::reduce(x, by3), ff::reduce(x, by5), ff::scan(x, by3));
  const ff::Program back = ff::parse_program(round_trip(p));
  CHECK(back.ops()[0]->monoid.name() == "custom");
  CHECK(back.ops()[1]->monoid.name() == "custom");
  CHECK(&back.ops()[0]->monoid.node() == &back.ops()[2]->monoid.node());
  check_same_results(p, {{"x", ff::HostArray::from(small_ints(50, 5))}});
}

TEST_CASE("hand-written text may have comments, blank lines and expressions over several lines") {
  const ff::Program p = ff::parse_program(
      "// a dot product\n"
      "\n"
      "input x: f32   // the first vector\n"
      "input y: f32\n"
      "%0 = reduce(plus: f32,\n"
      "            x * y)\n"
      "output %0\n");
  CHECK(ff::to_string(p) == "input x: f32\ninput y: f32\n%0 = reduce(plus: f32, x * y)\noutput %0\n");
}

TEST_CASE("a value used twice is one node, as when a C++ program names it") {
  const ff::Program p = ff::parse_program("input x: i32\noutput (max(x, 0), max(x, 0), x)\n");
  const ff::Expr t = p.outputs()[0];
  CHECK(ff::same_node(t.args()[0], t.args()[1]));
}

TEST_CASE("malformed text gives an error naming the line, the column and what was expected") {
  CHECK(parse_error("input x: f32\n%0 = reduce(plus: f32, min(x, x, x))\noutput %0\n") ==
        "fuseflow: parse: line 2, column 32: expected ')' after the arguments of min (it takes 2), found ','");
  CHECK(parse_error("input x: f32\noutput select(x > 0.0f, x)\n") ==
        "fuseflow: parse: line 2, column 26: expected ',' after the second argument of select, found ')'");
  CHECK(parse_error("input x: f32\noutput x + y\n") ==
        "fuseflow: parse: line 2, column 12: unknown input 'y' (declare it first: input y: TYPE)");
  CHECK(parse_error("input x: f32\n") == "fuseflow: parse: line 2, column 1: expected an 'output' line: the program has no outputs");
  CHECK(parse_error("") == "fuseflow: parse: line 1, column 1: expected an 'output' line: the program has no outputs");
  CHECK(parse_error("input x: f32\n%0 = sum(plus: f32, x)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 6: expected an op (reduce, scan, filter, segmented_reduce, segmented_scan, "
        "reduce_by_key, scan_by_key, histogram or counting_sort) after '=', found 'sum'");
  CHECK(parse_error("input x: f32\n%1 = reduce(plus: f32, x)\noutput %1\n") ==
        "fuseflow: parse: line 2, column 1: expected %0 (ops are numbered %0, %1 ... in order), found '%1'");
  CHECK(parse_error("input x: f32\noutput %0\n") ==
        "fuseflow: parse: line 2, column 8: '%0' is not defined above (an op is used after its line)");
  CHECK(parse_error("input x: f32\noutput x y\n") ==
        "fuseflow: parse: line 2, column 10: expected the end of the line after the output, found 'y'");
  CHECK(parse_error("input x: f32\noutput x @ 2\n") == "fuseflow: parse: line 2, column 10: unexpected character '@'");
  CHECK(parse_error("input x: f32\nouptut x\n") ==
        "fuseflow: parse: line 2, column 1: expected a line that starts with input, param, monoid, %N = or output, "
        "found 'ouptut'");
  CHECK(parse_error("input x: f32\ninput x: i32\noutput x\n") ==
        "fuseflow: parse: line 2, column 7: 'x' is already declared on line 1");
  CHECK(parse_error("input x: float\noutput x\n") ==
        "fuseflow: parse: line 1, column 10: expected a type after the input's name (bool, i8, i16, i32, i64, u8, "
        "u16, u32, u64, f32 or f64, or a tuple such as (f32, i64)), found 'float'");
  CHECK(parse_error("input x: i32\noutput x + 2147483648\n") ==
        "fuseflow: parse: line 2, column 12: 2147483648 does not fit in i32");
  CHECK(parse_error("input x: f32\noutput x * 2.5L\n") ==
        "fuseflow: parse: line 2, column 12: cannot read the number '2.5L': numbers are written 2 (i32), 2L (i64), "
        "2u (u32), 2uL (u64), 2.5f (f32), 2.5 (f64) or i8(2)");
  CHECK(parse_error("input x: f32\noutput cuda<f32>(\"__saturatef($0)\n") ==
        "fuseflow: parse: line 2, column 18: the string is not closed (a '\"' is missing) before the end of the line");
}

TEST_CASE("ops, monoids and results used wrongly are errors at the place they are written") {
  CHECK(parse_error("input x: f32\n%0 = reduce(plus: i32, x)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 24: the values are f32 but the monoid is written over i32");
  CHECK(parse_error("input x: f32\n%0 = reduce(sum: f32, x)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 13: unknown monoid 'sum' (the built-in monoids are plus, times, min, max, "
        "logical_and, logical_or, bit_and, bit_or, bit_xor, argmin or argmax; define your own with a 'monoid' line "
        "before its use)");
  CHECK(parse_error("input x: f32\n%0 = reduce(plus: f32, x, strategy=lookback)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 6: reduce: strategy lookback is a scan strategy");
  CHECK(parse_error("input x: f32\n%0 = scan(plus: f32, forward, x)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 22: expected inclusive or exclusive after the monoid of scan, found 'forward'");
  CHECK(parse_error("input x: f32\n%0 = histogram(x, bins=4, counts=u32)\noutput %0\n") ==
        "fuseflow: parse: line 2, column 6: histogram: the bin expression must be integral, got f32");
  CHECK(parse_error("input x: f32\noutput x + (x, x)\n") ==
        "fuseflow: parse: line 2, column 10: operator + needs scalar operands, got f32 and (f32, f32)");
  CHECK(parse_error("input k: i32\ninput v: f32\n%0 = reduce_by_key(plus: f32, v, keys=k)\noutput %0\n") ==
        "fuseflow: parse: line 4, column 8: %0 has 2 results: write %0.0 or %0.1");
  CHECK(parse_error("input x: f32\ninput y: f32\noutput x\n") ==
        "fuseflow: parse: line 2, column 7: input 'y' is declared but no output uses it");
  CHECK(parse_error("input x: f32\n%0 = reduce(plus: f32, x)\noutput x\n") ==
        "fuseflow: parse: line 2, column 1: %0 is computed but no output uses it");
  CHECK(parse_error("param t: (f32, f32)\ninput x: f32\noutput x\n") ==
        "fuseflow: parse: line 1, column 7: param 't': parameters are scalars, got (f32, f32)");
  CHECK(parse_error("input x: f32\noutput 1.0f\n") ==
        "fuseflow: parse: line 2, column 8: an output is an array, a reduction's result or an expression of "
        "reductions' results; 1.0f is none of these");
}

TEST_CASE("custom monoid definitions are checked where they are written") {
  const std::string head = "input x: i32\n";
  const std::string tail = "%0 = reduce(m: i32, x)\noutput %0\n";
  CHECK(parse_error(head + "monoid m: i32, non-commutative\n  combine(a, b) = a + x\n  identity = 0\n" + tail) ==
        "fuseflow: parse: line 3, column 23: a combine function may use only a, b and constants, found 'x'");
  CHECK(parse_error(head + "monoid m: i32, non-commutative\n  combine(a, b) = a + 1.0f\n  identity = 0\n" + tail) ==
        "fuseflow: parse: line 3, column 19: the combine function returns f32 but the monoid is over i32 (use "
        "cast<...> for narrowing)");
  CHECK(parse_error(head + "monoid m: i32, non-commutative\n  combine(a, b) = a\n  identity = 0L\n" + tail) ==
        "fuseflow: parse: line 4, column 14: the identity has type i64 but the monoid is over i32");
  CHECK(parse_error(head + "monoid m: i32, non-commutative\n  combine(a, b) = a\n  identity = index\n" + tail) ==
        "fuseflow: parse: line 4, column 14: an identity is a constant such as 0 or (0, 1.0f), found 'index'");
  CHECK(parse_error(head + "monoid m: i32, associative\n  combine(a, b) = a\n  identity = 0\n" + tail) ==
        "fuseflow: parse: line 2, column 16: expected commutative or non-commutative after the monoid's type, found "
        "'associative'");
  CHECK(parse_error(head + "monoid plus: i32, commutative\n  combine(a, b) = a\n  identity = 0\n" + tail) ==
        "fuseflow: parse: line 2, column 8: 'plus' is a built-in monoid; give yours another name");
  CHECK(parse_error(head + "monoid m: i32, commutative\n  combine(a, b) = a\n  identity = 0\n%0 = reduce(m: f32, x)\noutput %0\n") ==
        "fuseflow: parse: line 5, column 16: monoid 'm' is over i32, not f32");
}

TEST_CASE("deeply nested text is an error, not a stack overflow") {
  const std::string deep = std::string(400, '(') + "x" + std::string(400, ')');
  CHECK(ff::to_string(ff::parse_program("input x: i32\noutput " + deep + "\n")) == "input x: i32\noutput x\n");
  CHECK(parse_error("input x: i32\noutput " + std::string(100000, '(') + "x\n") ==
        "fuseflow: parse: line 2, column 508: the text nests deeper than 500 levels");
  CHECK(parse_error("input x: " + std::string(100000, '(') + "\n") ==
        "fuseflow: parse: line 1, column 510: the text nests deeper than 500 levels");
}

TEST_CASE("every mangled version of a program's text parses or gives a GraphError, never a crash") {
  const auto x = ff::input<int>("x");
  const auto k = ff::input<std::uint8_t>("k");
  const auto t = ff::param<float>("t");
  const std::string text = ff::to_string(ff::outputs(
      ff::reduce(mssp_parts(x), mssp()), ff::scan(ff::zip(ff::cast<float>(x) * t, ff::index()), ff::argmax),
      ff::histogram(x & 7, 8), ff::reduce_by_key(k, x, ff::plus).values, ff::cuda_expr<int>("__popc($0)", x)));
  const std::string noise = "()[],:=%$\"\\-+!#0.5fLu_a\n";
  std::size_t parsed = 0, errors = 0;
  auto attempt = [&](const std::string& mangled) {
    try {
      ff::parse_program(mangled);
      ++parsed;
    } catch (const ff::GraphError&) {
      ++errors;
    }
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    attempt(text.substr(0, i));                           // cut short
    attempt(text.substr(0, i) + text.substr(i + 1));      // one character left out
    attempt(text.substr(0, i) + noise[i % noise.size()] + text.substr(i));  // one character more
  }
  CHECK(parsed + errors == 3 * text.size());
  CHECK(errors > 0);
  CHECK(parsed > 0);
}
