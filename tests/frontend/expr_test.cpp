// Expressions (expr.hpp): building nodes, the result type of each operator under C++'s
// rules, and the GraphError each misuse throws where the user wrote it.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "fuseflow/frontend/monoid.hpp"
#include "fuseflow/frontend/program.hpp"

namespace ff = fuseflow;
using ff::ScalarType;
using ff::Type;

namespace {
Type pair_type(ScalarType a, ScalarType b) { return Type::tuple({a, b}); }
}  // namespace

TEST_CASE("leaves carry their kind, name and type") {
  const ff::Expr x = ff::input<float>("x", 100);
  CHECK(x.kind() == ff::ExprKind::Input);
  CHECK(x.node().name == "x");
  CHECK(x.node().length == 100);
  CHECK(x.type() == Type(ScalarType::F32));
  CHECK(ff::input<int>("n").node().length == -1);

  const ff::Expr i = ff::index();
  CHECK(i.kind() == ff::ExprKind::Index);
  CHECK(i.type() == Type(ScalarType::I64));

  const ff::Expr p = ff::param<std::uint16_t>("threshold");
  CHECK(p.kind() == ff::ExprKind::Param);
  CHECK(p.node().name == "threshold");
  CHECK(p.type() == Type(ScalarType::U16));

  const ff::Expr pairs = ff::input("pairs", pair_type(ScalarType::F32, ScalarType::I64));
  CHECK(pairs.type() == pair_type(ScalarType::F32, ScalarType::I64));
}

TEST_CASE("literals become constants of their C++ type") {
  CHECK(ff::Expr(2).type() == Type(ScalarType::I32));
  CHECK(ff::Expr(2.5f).type() == Type(ScalarType::F32));
  CHECK(ff::Expr(2.5).type() == Type(ScalarType::F64));
  CHECK(ff::Expr(true).type() == Type(ScalarType::Bool));
  CHECK(ff::Expr(std::uint64_t{7}).type() == Type(ScalarType::U64));
  const ff::Expr c = ff::constant<std::int8_t>(-3);
  CHECK(c.kind() == ff::ExprKind::Constant);
  CHECK(c.node().constant == ff::Value(std::int8_t{-3}));
}

TEST_CASE("arithmetic takes the type of C++'s usual arithmetic conversions") {
  const auto i8 = ff::input<std::int8_t>("a");
  const auto i32 = ff::input<int>("b");
  const auto u32 = ff::input<std::uint32_t>("c");
  const auto i64 = ff::input<std::int64_t>("d");
  const auto u64 = ff::input<std::uint64_t>("e");
  const auto f32 = ff::input<float>("f");
  const auto f64 = ff::input<double>("g");
  CHECK((i8 + i8).type() == Type(ScalarType::I32));
  CHECK((u32 + i32).type() == Type(ScalarType::U32));
  CHECK((i64 - u32).type() == Type(ScalarType::I64));
  CHECK((u64 * i64).type() == Type(ScalarType::U64));
  CHECK((f32 / i64).type() == Type(ScalarType::F32));
  CHECK((f32 + f64).type() == Type(ScalarType::F64));
  CHECK((f32 * 2).type() == Type(ScalarType::F32));
  CHECK((f32 * 2.0).type() == Type(ScalarType::F64));
  CHECK((1 + i8).type() == Type(ScalarType::I32));
  CHECK((u32 % i32).type() == Type(ScalarType::U32));
  CHECK((i8 & u64).type() == Type(ScalarType::U64));
}

TEST_CASE("a binary node keeps its operator and operands in order") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const ff::Expr e = x - y;
  CHECK(e.kind() == ff::ExprKind::Binary);
  CHECK(e.node().binary == ff::BinaryOp::Sub);
  REQUIRE(e.args().size() == 2);
  CHECK(ff::same_node(e.args()[0], x));
  CHECK(ff::same_node(e.args()[1], y));
}

TEST_CASE("comparisons and logic are bool; shifts take the promoted left operand's type") {
  const auto x = ff::input<float>("x");
  const auto n = ff::input<std::uint8_t>("n");
  const auto k = ff::input<std::int64_t>("k");
  CHECK((x < 1.0f).type() == Type(ScalarType::Bool));
  CHECK((x == x).type() == Type(ScalarType::Bool));
  CHECK((x != 0).type() == Type(ScalarType::Bool));
  CHECK((x > 0.0f && x <= 1.0f).type() == Type(ScalarType::Bool));
  CHECK((x < 0.0f || n >= 3).type() == Type(ScalarType::Bool));
  CHECK((!x).type() == Type(ScalarType::Bool));
  CHECK((n << k).type() == Type(ScalarType::I32));
  CHECK((k >> n).type() == Type(ScalarType::I64));
}

TEST_CASE("unary minus and bitwise not promote small integers") {
  const auto n = ff::input<std::uint8_t>("n");
  const auto x = ff::input<float>("x");
  const auto u = ff::input<std::uint64_t>("u");
  CHECK((-n).type() == Type(ScalarType::I32));
  CHECK((~n).type() == Type(ScalarType::I32));
  CHECK((~u).type() == Type(ScalarType::U64));
  CHECK((-x).type() == Type(ScalarType::F32));
  CHECK((-x).node().unary == ff::UnaryOp::Neg);
}

TEST_CASE("math functions compute in f32 for f32 and in f64 otherwise") {
  const auto x = ff::input<float>("x");
  const auto d = ff::input<double>("d");
  const auto n = ff::input<int>("n");
  const auto b = ff::input<std::int8_t>("b");
  CHECK(ff::sqrt(x).type() == Type(ScalarType::F32));
  CHECK(ff::exp(d).type() == Type(ScalarType::F64));
  CHECK(ff::log(n).type() == Type(ScalarType::F64));
  CHECK(ff::pow(x, 2.0f).type() == Type(ScalarType::F32));
  CHECK(ff::pow(x, d).type() == Type(ScalarType::F64));
  CHECK(ff::fma(x, x, x).type() == Type(ScalarType::F32));
  CHECK(ff::abs(b).type() == Type(ScalarType::I32));
  CHECK(ff::abs(x).type() == Type(ScalarType::F32));
  CHECK(ff::max(n, 0).type() == Type(ScalarType::I32));
  CHECK(ff::min(x, 1).type() == Type(ScalarType::F32));
  CHECK(ff::max(b, b).type() == Type(ScalarType::I32));
  const ff::Expr call = ff::tanh(x);
  CHECK(call.kind() == ff::ExprKind::Call);
  CHECK(call.node().fn == ff::MathFn::Tanh);
}

TEST_CASE("select converts scalar branches and keeps a shared type as is") {
  const auto c = ff::input<bool>("c");
  const auto n = ff::input<std::uint8_t>("n");
  const auto x = ff::input<float>("x");
  const auto i = ff::input<std::int8_t>("i");
  CHECK(ff::select(c, n, n).type() == Type(ScalarType::U8));
  CHECK(ff::select(c, i, n).type() == Type(ScalarType::I32));
  CHECK(ff::select(c, x, 0).type() == Type(ScalarType::F32));
  const ff::Expr t = ff::tuple(x, ff::index());
  CHECK(ff::select(x > 0.0f, t, t).type() == pair_type(ScalarType::F32, ScalarType::I64));
  CHECK(ff::select(c, x, 0).kind() == ff::ExprKind::Select);
}

TEST_CASE("cast makes a node for a new type and returns the expression for its own type") {
  const auto x = ff::input<float>("x");
  const ff::Expr narrow = ff::cast<std::int8_t>(x);
  CHECK(narrow.kind() == ff::ExprKind::Cast);
  CHECK(narrow.type() == Type(ScalarType::I8));
  CHECK(ff::same_node(ff::cast<float>(x), x));
  CHECK(ff::cast(Type(ScalarType::U64), x).type() == Type(ScalarType::U64));
  const ff::Expr t = ff::tuple(x, 1);
  CHECK(ff::same_node(ff::cast(t.type(), t), t));
}

TEST_CASE("tuples are built from expressions and read by get, t[i] or zip") {
  const auto x = ff::input<float>("x");
  const auto p = ff::input("p", pair_type(ScalarType::I32, ScalarType::F64));
  const ff::Expr t = ff::tuple(x, 1, p);
  CHECK(t.kind() == ff::ExprKind::MakeTuple);
  CHECK(t.type() == Type::tuple({ScalarType::F32, ScalarType::I32, pair_type(ScalarType::I32, ScalarType::F64)}));
  // A field of a tuple built in place is the field's own expression.
  CHECK(ff::same_node(ff::get<0>(t), x));
  CHECK(ff::same_node(t[2], p));
  const ff::Expr field = ff::get<1>(p);
  CHECK(field.kind() == ff::ExprKind::Get);
  CHECK(field.node().index == 1);
  CHECK(field.type() == Type(ScalarType::F64));
  CHECK(t[2][0].type() == Type(ScalarType::I32));
  CHECK(ff::zip(x, ff::index()).type() == pair_type(ScalarType::F32, ScalarType::I64));
}

TEST_CASE("map traces its lambda once with the arrays' element expressions") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<int>("y");
  int calls = 0;
  const ff::Expr e = ff::map(x, y, [&](auto a, auto b) {
    ++calls;
    return a * b + 1;
  });
  CHECK(calls == 1);
  CHECK(e.type() == Type(ScalarType::F32));
  CHECK(ff::to_string(e) == "x * y + 1");
  const ff::Expr parts = ff::map(y, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
  CHECK(parts.type() == ff::type_of<ff::Tuple<int, int, int, int>>());
}

TEST_CASE("cuda_expr builds a raw node of the requested type over its arguments") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const ff::Expr e = ff::cuda_expr<float>("__fmaf_rn($0, $1, 1.0f)", x, y);
  CHECK(e.kind() == ff::ExprKind::RawCuda);
  CHECK(e.type() == Type(ScalarType::F32));
  CHECK(e.node().name == "__fmaf_rn($0, $1, 1.0f)");
  CHECK(e.args().size() == 2);
  CHECK(ff::cuda_expr<std::uint32_t>("__popc($0)", ff::cast<std::uint32_t>(x)).type() ==
        Type(ScalarType::U32));
}

TEST_CASE("arithmetic on a tuple operand throws a GraphError naming the operator and types") {
  const auto t = ff::zip(ff::input<float>("x"), ff::input<int>("k"));
  const auto x = ff::input<float>("y");
  CHECK_THROWS_WITH_AS(t + x, "fuseflow: operator + needs scalar operands, got (f32, i32) and f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(x * t, "fuseflow: operator * needs scalar operands, got f32 and (f32, i32)", ff::GraphError);
  CHECK_THROWS_WITH_AS(t < t, "fuseflow: operator < needs scalar operands, got (f32, i32) and (f32, i32)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(-t, "fuseflow: operator - needs scalar operands, got a (f32, i32) tuple", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sqrt(t), "fuseflow: sqrt needs scalar operands, got a (f32, i32) tuple", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::max(x, t), "fuseflow: max needs scalar operands, got a (f32, i32) tuple", ff::GraphError);
}

TEST_CASE("integer-only operators on floats throw a GraphError naming the operator and types") {
  const auto x = ff::input<float>("x");
  const auto d = ff::input<double>("d");
  const auto n = ff::input<int>("n");
  CHECK_THROWS_WITH_AS(x % 2, "fuseflow: operator % needs integral operands, got f32 and i32", ff::GraphError);
  CHECK_THROWS_WITH_AS(n % d, "fuseflow: operator % needs integral operands, got i32 and f64", ff::GraphError);
  CHECK_THROWS_WITH_AS(x & n, "fuseflow: operator & needs integral operands, got f32 and i32", ff::GraphError);
  CHECK_THROWS_WITH_AS(n | d, "fuseflow: operator | needs integral operands, got i32 and f64", ff::GraphError);
  CHECK_THROWS_WITH_AS(n ^ x, "fuseflow: operator ^ needs integral operands, got i32 and f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(x << n, "fuseflow: operator << needs integral operands, got f32 and i32", ff::GraphError);
  CHECK_THROWS_WITH_AS(n >> d, "fuseflow: operator >> needs integral operands, got i32 and f64", ff::GraphError);
  CHECK_THROWS_WITH_AS(~x, "fuseflow: operator ~ needs an integral operand, got f32", ff::GraphError);
}

TEST_CASE("a math call with the wrong number of arguments throws naming the function and its arity") {
  auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::Expr::call(ff::MathFn::Pow, {x}), "fuseflow: pow takes 2 argument(s), got 1", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Expr::call(ff::MathFn::Sqrt, {}), "fuseflow: sqrt takes 1 argument(s), got 0", ff::GraphError);
}

TEST_CASE("select with branches of different tuple types or a non-bool condition throws") {
  const auto x = ff::input<float>("x");
  const auto a = ff::zip(x, ff::index());
  const auto b = ff::zip(x, 0);
  CHECK_THROWS_WITH_AS(ff::select(x > 0.0f, a, b),
                       "fuseflow: select: both branches must have the same type, got (f32, i64) and (f32, i32)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::select(x > 0.0f, a, x),
                       "fuseflow: select: both branches must have the same type, got (f32, i64) and f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::select(a, x, x), "fuseflow: select: the condition must be bool, got (f32, i64)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::select(x, x, 0.0f), "fuseflow: select: the condition must be bool, got f32",
                       ff::GraphError);
}

TEST_CASE("get out of range or on a non-tuple throws a GraphError naming the type") {
  const auto x = ff::input<float>("x");
  const auto p = ff::input("p", pair_type(ScalarType::F32, ScalarType::I64));
  CHECK_THROWS_WITH_AS(ff::get<2>(p), "fuseflow: get<2>: index out of range for (f32, i64)", ff::GraphError);
  CHECK_THROWS_WITH_AS(p[-1], "fuseflow: get<-1>: index out of range for (f32, i64)", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::get<3>(ff::tuple(x, x)), "fuseflow: get<3>: index out of range for (f32, f32)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::get<0>(x), "fuseflow: get<0>: f32 is not a tuple", ff::GraphError);
  CHECK_THROWS_WITH_AS(x[1], "fuseflow: get<1>: f32 is not a tuple", ff::GraphError);
}

TEST_CASE("casting a tuple to another type throws a GraphError naming both types") {
  const auto p = ff::input("p", pair_type(ScalarType::F32, ScalarType::I64));
  CHECK_THROWS_WITH_AS(ff::cast<float>(p), "fuseflow: cast<f32>: only scalars can be cast, got (f32, i64)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cast(pair_type(ScalarType::F64, ScalarType::I64), p),
                       "fuseflow: cast<(f64, i64)>: only scalars can be cast, got (f32, i64)", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cast(p.type(), ff::input<float>("x")),
                       "fuseflow: cast<(f32, i64)>: only scalars can be cast, got f32", ff::GraphError);
}

TEST_CASE("using an empty Expr throws a GraphError naming where it was used") {
  const ff::Expr empty;
  const auto x = ff::input<float>("x");
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_WITH_AS(empty.type(),
                       "fuseflow: use of an empty ff::Expr (default-constructed, never assigned)", ff::GraphError);
  CHECK_THROWS_WITH_AS(x + empty, "fuseflow: operator +: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(!empty, "fuseflow: operator !: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::select(empty, x, x), "fuseflow: select: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::exp(empty), "fuseflow: exp: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cast<int>(empty), "fuseflow: cast: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::tuple(x, empty), "fuseflow: tuple: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::get<0>(empty), "fuseflow: get: an operand is an empty ff::Expr", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cuda_expr<float>("$0", empty), "fuseflow: cuda_expr: an operand is an empty ff::Expr",
                       ff::GraphError);
}

TEST_CASE("a raw CUDA expression that never uses one of its arguments throws") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  CHECK_THROWS_WITH_AS(ff::cuda_expr<float>("$0 * 2.0f", x, y),
                       "fuseflow: cuda_expr \"$0 * 2.0f\": argument $1 is never used", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cuda_expr<float>("$1 * 2.0f", x, y),
                       "fuseflow: cuda_expr \"$1 * 2.0f\": argument $0 is never used", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::cuda_expr<float>("", x), "fuseflow: cuda_expr: the CUDA text is empty", ff::GraphError);
}

TEST_CASE("a nameless input or parameter, or a tuple parameter, throws") {
  CHECK_THROWS_WITH_AS(ff::input<float>(""), "fuseflow: input: an input needs a name", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::param<float>(""), "fuseflow: param: a parameter needs a name", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Expr::param("p", pair_type(ScalarType::I32, ScalarType::I32)),
                       "fuseflow: param 'p': parameters are scalars, got (i32, i32)", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Expr::make_tuple({}), "fuseflow: tuple: a tuple needs at least one field",
                       ff::GraphError);
}

TEST_CASE("with_args makes the same node over other arguments of the same types") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const auto n = ff::input<int>("n");
  const ff::Expr e = x * 2.0f;
  const ff::Expr swapped = e.with_args({y, x});
  CHECK_FALSE(ff::same_node(swapped, e));
  CHECK(swapped.node().binary == ff::BinaryOp::Mul);
  CHECK(ff::same_node(swapped.args()[0], y));
  CHECK(ff::to_string(swapped) == "y * x");
  CHECK(ff::to_string(e) == "x * 2.0f");
  CHECK_THROWS_WITH_AS(e.with_args({x}), "fuseflow: with_args: wrong number of arguments", ff::GraphError);
  CHECK_THROWS_WITH_AS(e.with_args({x, n}), "fuseflow: with_args: argument 1 changes type", ff::GraphError);
  CHECK_THROWS_WITH_AS(e.with_args({ff::Expr(), x}), "fuseflow: with_args: argument 0 changes type",
                       ff::GraphError);
}
