// The scalar operations of the CPU reference: C++ promotion and conversion, wrapping
// integer arithmetic, float rounding, and the cases C++ leaves undefined pinned to what
// CUDA does.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "fuseflow/frontend/reference.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;
using ff::BinaryOp;
using ff::MathFn;
using ff::ScalarType;
using ff::UnaryOp;
using ff::Value;

namespace {

// The result type the expression node would have; apply_* are called as the evaluator does.
ff::Type node_type(BinaryOp op, const Value& a, const Value& b) {
  return ff::Expr::binary(op, ff::Expr(a), ff::Expr(b)).type();
}
Value binary(BinaryOp op, const Value& a, const Value& b) { return ff::apply_binary(op, a, b, node_type(op, a, b)); }

Value unary(UnaryOp op, const Value& a) {
  return ff::apply_unary(op, a, ff::Expr::unary(op, ff::Expr(a)).type());
}

Value math(MathFn fn, std::vector<Value> args) {
  std::vector<ff::Expr> exprs;
  for (const auto& v : args) exprs.emplace_back(v);
  return ff::apply_math(fn, args, ff::Expr::call(fn, exprs).type());
}

using ff::test::graph_error_of;

const float fnan = std::numeric_limits<float>::quiet_NaN();
const int imin = std::numeric_limits<int>::min();
const int imax = std::numeric_limits<int>::max();

}  // namespace

TEST_CASE("small integers promote to i32 before arithmetic") {
  CHECK(binary(BinaryOp::Add, Value(std::int8_t{100}), Value(std::int8_t{100})) == Value(200));
  CHECK(binary(BinaryOp::Mul, Value(std::uint8_t{255}), Value(std::uint8_t{255})) == Value(65025));
  CHECK(binary(BinaryOp::Sub, Value(std::uint16_t{0}), Value(std::uint16_t{1})) == Value(-1));
}

TEST_CASE("mixed signedness follows the usual arithmetic conversions") {
  CHECK(binary(BinaryOp::Add, Value(-1), Value(1u)) == Value(0u));
  CHECK(binary(BinaryOp::Lt, Value(-1), Value(1u)) == Value(false));  // -1 converts to 4294967295u
  CHECK(binary(BinaryOp::Lt, Value(-1L), Value(1u)) == Value(true));  // i64 holds every u32
  CHECK(binary(BinaryOp::Add, Value((std::int64_t{1} << 40) + 1), Value(0.5f)) == Value(1099511627776.0f));
}

TEST_CASE("signed overflow wraps in two's complement") {
  CHECK(binary(BinaryOp::Add, Value(imax), Value(1)) == Value(imin));
  CHECK(binary(BinaryOp::Mul, Value(imax), Value(2)) == Value(-2));
  CHECK(binary(BinaryOp::Sub, Value(std::numeric_limits<long>::min()), Value(1L)) ==
        Value(std::numeric_limits<long>::max()));
  CHECK(unary(UnaryOp::Neg, Value(imin)) == Value(imin));
  CHECK(math(MathFn::Abs, {Value(imin)}) == Value(imin));
}

TEST_CASE("unsigned arithmetic wraps") {
  CHECK(binary(BinaryOp::Sub, Value(0u), Value(1u)) == Value(4294967295u));
  CHECK(unary(UnaryOp::Neg, Value(1u)) == Value(4294967295u));
  CHECK(binary(BinaryOp::Mul, Value(std::uint64_t{1} << 63), Value(std::uint64_t{2})) == Value(std::uint64_t{0}));
}

TEST_CASE("the most negative integer divided by -1 wraps to itself") {
  CHECK(binary(BinaryOp::Div, Value(imin), Value(-1)) == Value(imin));
  CHECK(binary(BinaryOp::Mod, Value(imin), Value(-1)) == Value(0));
}

TEST_CASE("integer division and modulo truncate toward zero") {
  CHECK(binary(BinaryOp::Div, Value(-7), Value(2)) == Value(-3));
  CHECK(binary(BinaryOp::Mod, Value(-7), Value(2)) == Value(-1));
}

TEST_CASE("integer division by zero is an error, float division by zero is infinity") {
  CHECK(graph_error_of([] { binary(BinaryOp::Div, Value(1), Value(0)); }) ==
        "fuseflow: division by zero in operator / on i32 (integer division by zero has no defined result in C++ "
        "or CUDA)");
  CHECK(graph_error_of([] { binary(BinaryOp::Mod, Value(std::uint8_t{1}), Value(false)); }).find("operator % on i32") !=
        std::string::npos);
  CHECK(binary(BinaryOp::Div, Value(1.0f), Value(0.0f)) == Value(std::numeric_limits<float>::infinity()));
}

TEST_CASE("f32 arithmetic rounds each operation to float") {
  CHECK(binary(BinaryOp::Add, Value(16777216.0f), Value(1.0f)) == Value(16777216.0f));
  CHECK(binary(BinaryOp::Add, Value(16777216.0f), Value(1.0)) == Value(16777217.0));  // f64 operation
  CHECK(binary(BinaryOp::Div, Value(1.0f), Value(3.0f)).as_float() == 1.0f / 3.0f);
}

TEST_CASE("comparisons with NaN are false except !=") {
  CHECK(binary(BinaryOp::Eq, Value(fnan), Value(fnan)) == Value(false));
  CHECK(binary(BinaryOp::Lt, Value(fnan), Value(1.0f)) == Value(false));
  CHECK(binary(BinaryOp::Ge, Value(fnan), Value(1.0f)) == Value(false));
  CHECK(binary(BinaryOp::Ne, Value(fnan), Value(fnan)) == Value(true));
}

TEST_CASE("min and max on floats propagate a NaN operand in either position, unlike fmin") {
  const float inf = std::numeric_limits<float>::infinity();
  for (MathFn fn : {MathFn::Min, MathFn::Max}) {
    CHECK(std::isnan(math(fn, {Value(fnan), Value(2.0f)}).as_float()));
    CHECK(std::isnan(math(fn, {Value(3.0f), Value(fnan)}).as_float()));
    CHECK(std::isnan(math(fn, {Value(fnan), Value(fnan)}).as_float()));
    CHECK(std::isnan(math(fn, {Value(inf), Value(fnan)}).as_float()));
    CHECK(std::isnan(math(fn, {Value(-inf), Value(fnan)}).as_float()));
    CHECK(std::isnan(math(fn, {Value(double(fnan)), Value(1.0)}).as_double()));
  }
  CHECK(math(MathFn::Min, {Value(inf), Value(2.0f)}) == Value(2.0f));
  CHECK(math(MathFn::Max, {Value(-inf), Value(2.0f)}) == Value(2.0f));
  CHECK(math(MathFn::Max, {Value(-inf), Value(inf)}) == Value(inf));
}

TEST_CASE("min and max on integers compare after the usual conversions") {
  CHECK(math(MathFn::Min, {Value(-1), Value(1u)}) == Value(1u));  // -1 becomes 4294967295u
  CHECK(math(MathFn::Max, {Value(-1), Value(1L)}) == Value(1L));
  CHECK(math(MathFn::Min, {Value(std::int8_t{-3}), Value(std::int8_t{2})}) == Value(-3));
  CHECK(math(MathFn::Max, {Value(2), Value(2.5f)}) == Value(2.5f));
}

TEST_CASE("shifts use the promoted left type and clamp the amount like PTX") {
  CHECK(binary(BinaryOp::Shl, Value(std::uint8_t{255}), Value(1)) == Value(510));
  CHECK(binary(BinaryOp::Shr, Value(-8), Value(1)) == Value(-4));
  CHECK(binary(BinaryOp::Shl, Value(1), Value(31)) == Value(imin));
  CHECK(binary(BinaryOp::Shl, Value(1), Value(40)) == Value(0));
  CHECK(binary(BinaryOp::Shr, Value(-8), Value(40)) == Value(-1));
  CHECK(binary(BinaryOp::Shr, Value(8u), Value(-1)) == Value(0u));
  CHECK(binary(BinaryOp::Shl, Value(1u), Value(std::uint64_t{33})) == Value(0u));  // u32, not u64
}

TEST_CASE("logical operators convert their operands to bool") {
  CHECK(binary(BinaryOp::And, Value(2), Value(0.5f)) == Value(true));
  CHECK(binary(BinaryOp::Or, Value(0), Value(0.0)) == Value(false));
  CHECK(unary(UnaryOp::Not, Value(0.0)) == Value(true));
  CHECK(unary(UnaryOp::Not, Value(-3)) == Value(false));
}

TEST_CASE("bitwise not promotes its operand") {
  CHECK(unary(UnaryOp::BitNot, Value(std::uint8_t{0})) == Value(-1));
  CHECK(unary(UnaryOp::BitNot, Value(0u)) == Value(4294967295u));
  CHECK(binary(BinaryOp::BitXor, Value(std::uint8_t{0xF0}), Value(std::uint8_t{0xFF})) == Value(0x0F));
}

TEST_CASE("float functions of an f32 compute in float, of an f64 or integer in double") {
  CHECK(math(MathFn::Sqrt, {Value(2.0f)}) == Value(std::sqrt(2.0f)));
  CHECK(math(MathFn::Sqrt, {Value(2)}) == Value(std::sqrt(2.0)));
  CHECK(math(MathFn::Exp, {Value(1.0f)}) == Value(std::exp(1.0f)));
  CHECK(math(MathFn::Pow, {Value(2.0f), Value(10)}) == Value(1024.0f));
  CHECK(math(MathFn::Rsqrt, {Value(4.0)}) == Value(0.5));
  CHECK(math(MathFn::Log2, {Value(8u)}) == Value(3.0));
}

TEST_CASE("round goes half away from zero, floor and ceil toward the infinities") {
  CHECK(math(MathFn::Round, {Value(2.5f)}) == Value(3.0f));
  CHECK(math(MathFn::Round, {Value(-2.5f)}) == Value(-3.0f));
  CHECK(math(MathFn::Floor, {Value(-0.5)}) == Value(-1.0));
  CHECK(math(MathFn::Ceil, {Value(-0.5)}) == Value(-0.0));
}

TEST_CASE("fma on f32 rounds once") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the product alone loses 2^-24 in float, fma keeps it.
  float a = 1.0f + std::ldexp(1.0f, -12);
  float c = -(1.0f + std::ldexp(1.0f, -11));
  CHECK(math(MathFn::Fma, {Value(a), Value(a), Value(c)}) == Value(std::ldexp(1.0f, -24)));
  CHECK(binary(BinaryOp::Add, binary(BinaryOp::Mul, Value(a), Value(a)), Value(c)) == Value(0.0f));
}

TEST_CASE("abs keeps the type of an integer after promotion and of a float") {
  CHECK(math(MathFn::Abs, {Value(std::int8_t{-5})}) == Value(5));
  CHECK(math(MathFn::Abs, {Value(-2.5f)}) == Value(2.5f));
  CHECK(math(MathFn::Abs, {Value(7u)}) == Value(7u));
}

TEST_CASE("the result is converted to the type the node asks for") {
  CHECK(ff::apply_binary(BinaryOp::Add, Value(1), Value(2), ScalarType::F64) == Value(3.0));
  CHECK(ff::apply_math(MathFn::Sqrt, {Value(2)}, ScalarType::F32) == Value(std::sqrt(2.0f)));
}

TEST_CASE("scalar operations reject tuples and the wrong number of arguments") {
  Value t(ff::Tuple<int, int>(1, 2));
  CHECK(graph_error_of([&] { ff::apply_binary(BinaryOp::Add, t, Value(1), ScalarType::I32); }) ==
        "fuseflow: + needs scalar operands, got a (i32, i32) tuple");
  CHECK(graph_error_of([] { ff::apply_math(MathFn::Pow, {Value(1.0)}, ScalarType::F64); }) ==
        "fuseflow: pow takes 2 argument(s), got 1");
  CHECK(graph_error_of([] { ff::apply_binary(BinaryOp::Mod, Value(1.0f), Value(2.0f), ScalarType::F32); }) ==
        "fuseflow: operator % does not apply to f32");
}

TEST_CASE("every operator the type rules accept has a host function for its operand types") {
  // The operator table gives each row a class (the type rule) and a host function (what
  // the CPU reference computes); the two must agree on every pair of scalar types. The
  // operands are 1 (of each type), so that no division is by zero.
  std::size_t checked = 0;
  for (const ff::ScalarInfo& a : ff::all_scalar_types()) {
    const Value one_a = Value::from_int(a.type, 1);
    for (const ff::UnaryOpInfo& op : ff::all_unary_ops()) {
      ff::Type type;
      try {
        type = ff::Expr::unary(op.op, ff::Expr(one_a)).type();
      } catch (const ff::GraphError&) {
        continue;
      }
      CAPTURE(op.symbol);
      CAPTURE(a.name);
      CHECK(ff::apply_unary(op.op, one_a, type).type() == type);
      ++checked;
    }
    for (const ff::MathFnInfo& fn : ff::all_math_fns()) {
      std::vector<Value> args(fn.arity, one_a);
      ff::Type type = ff::Expr::call(fn.fn, std::vector<ff::Expr>(fn.arity, ff::Expr(one_a))).type();
      CAPTURE(fn.name);
      CAPTURE(a.name);
      CHECK(ff::apply_math(fn.fn, args, type).type() == type);
      ++checked;
    }
    for (const ff::ScalarInfo& b : ff::all_scalar_types()) {
      const Value one_b = Value::from_int(b.type, 1);
      for (const ff::BinaryOpInfo& op : ff::all_binary_ops()) {
        ff::Type type;
        try {
          type = node_type(op.op, one_a, one_b);
        } catch (const ff::GraphError&) {
          continue;
        }
        CAPTURE(op.symbol);
        CAPTURE(a.name);
        CAPTURE(b.name);
        CHECK(ff::apply_binary(op.op, one_a, one_b, type).type() == type);
        ++checked;
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("a wrapping operator wraps on signed integers, and only the operators marked so") {
  const Value lowest(std::numeric_limits<std::int32_t>::min()), highest(std::numeric_limits<std::int32_t>::max());
  CHECK(ff::binary_info(BinaryOp::Add).wraps);
  CHECK(binary(BinaryOp::Add, highest, Value(1)) == lowest);
  CHECK(ff::binary_info(BinaryOp::Mul).wraps);
  CHECK(binary(BinaryOp::Mul, highest, Value(2)) == Value(-2));
  CHECK(ff::unary_info(UnaryOp::Neg).wraps);
  CHECK(unary(UnaryOp::Neg, lowest) == lowest);
  CHECK_FALSE(ff::binary_info(BinaryOp::Div).wraps);
  CHECK_FALSE(ff::binary_info(BinaryOp::Shl).wraps);
}
