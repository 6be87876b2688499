// The scalar operations of the CPU reference evaluator, with the semantics the generated
// CUDA has: operands are converted to the operation's type first (C++'s usual arithmetic
// conversions, integer promotion), then the operation runs in that type. f32 operations
// compute in float (each rounded to float), f64 in double.
//
// Where C++ leaves a case undefined, the reference pins down what CUDA does in practice:
// - signed overflow wraps (two's complement). The arithmetic runs on the unsigned type of
//   the same width, so the host never executes undefined behaviour; nvcc/NVRTC emit the
//   same add/mul/neg instructions for signed and unsigned operands, which wrap.
// - INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0 (the wrapped quotient).
// - integer division or modulo by zero throws GraphError: there is no answer to compare.
// - a shift amount outside [0, width) is clamped to the width, as PTX's shl/shr do:
//   x << 40 on i32 is 0, x >> 40 is 0 or -1 (by x's sign); a negative amount counts as huge.
// - min/max on floats are fmin/fmax: a NaN operand is ignored.
// - abs(INT_MIN) is INT_MIN.
#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {

namespace detail {
// apply_math on arguments that need not live in a vector (the evaluator's hot path).
Value apply_math_span(MathFn fn, std::span<const Value> args, const Type& result);
}  // namespace detail

namespace {

// Calls f(T{}) with T the C++ type of scalar type s.
template <class F>
Value with_cpp_type(ScalarType s, F&& f) {
  switch (s) {
    case ScalarType::Bool: return f(bool{});
    case ScalarType::I8: return f(std::int8_t{});
    case ScalarType::I16: return f(std::int16_t{});
    case ScalarType::I32: return f(std::int32_t{});
    case ScalarType::I64: return f(std::int64_t{});
    case ScalarType::U8: return f(std::uint8_t{});
    case ScalarType::U16: return f(std::uint16_t{});
    case ScalarType::U32: return f(std::uint32_t{});
    case ScalarType::U64: return f(std::uint64_t{});
    case ScalarType::F32: return f(float{});
    case ScalarType::F64: return f(double{});
  }
  throw GraphError("unknown scalar type");
}

// A scalar of T's type read as T.
template <class T>
T read(const Value& x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x.as_bool();
  } else if constexpr (std::is_same_v<T, float>) {
    return x.as_float();
  } else if constexpr (std::is_same_v<T, double>) {
    return x.as_double();
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(x.as_int());
  } else {
    return static_cast<T>(x.as_uint());
  }
}

// `v` converted to scalar type `to` (T is its C++ type) as static_cast would.
template <class T>
T convert(const Value& v, ScalarType to) {
  if (v.type().is_scalar() && v.type().scalar() == to) return read<T>(v);
  return read<T>(v.cast(to));
}

template <class T>
Value make(T v) {
  return Value(v);
}

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Wrapping arithmetic on the unsigned type of T's width. T is i32, i64, u32 or u64 here
// (integer promotion has happened), so unsigned operands do not promote to signed int.
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

[[noreturn]] void division_by_zero(BinaryOp op, ScalarType t) {
  throw GraphError(std::string("division by zero in operator ") + binary_symbol(op) + " on " +
                   scalar_name(t) + " (integer division by zero has no defined result in C++ or CUDA)");
}

template <class T>
Value arithmetic(BinaryOp op, T a, T b, ScalarType t) {
  switch (op) {
    case BinaryOp::Add:
      if constexpr (is_int_v<T>) return make(wrap_add(a, b)); else return make(static_cast<T>(a + b));
    case BinaryOp::Sub:
      if constexpr (is_int_v<T>) return make(wrap_sub(a, b)); else return make(static_cast<T>(a - b));
    case BinaryOp::Mul:
      if constexpr (is_int_v<T>) return make(wrap_mul(a, b)); else return make(static_cast<T>(a * b));
    case BinaryOp::Div:
    case BinaryOp::Mod:
      if constexpr (is_int_v<T>) {
        if (b == 0) division_by_zero(op, t);
        if constexpr (std::is_signed_v<T>) {
          if (b == -1) return make(op == BinaryOp::Div ? wrap_sub(T{0}, a) : T{0});
        }
        return make(static_cast<T>(op == BinaryOp::Div ? a / b : a % b));
      } else if constexpr (std::is_floating_point_v<T>) {
        if (op == BinaryOp::Div) return make(static_cast<T>(a / b));
      }
      break;
    case BinaryOp::BitAnd:
      if constexpr (is_int_v<T>) return make(static_cast<T>(a & b));
      break;
    case BinaryOp::BitOr:
      if constexpr (is_int_v<T>) return make(static_cast<T>(a | b));
      break;
    case BinaryOp::BitXor:
      if constexpr (is_int_v<T>) return make(static_cast<T>(a ^ b));
      break;
    case BinaryOp::Lt: return Value(a < b);
    case BinaryOp::Le: return Value(a <= b);
    case BinaryOp::Gt: return Value(a > b);
    case BinaryOp::Ge: return Value(a >= b);
    case BinaryOp::Eq: return Value(a == b);
    case BinaryOp::Ne: return Value(a != b);
    default: break;
  }
  throw GraphError(std::string("operator ") + binary_symbol(op) + " does not apply to " + scalar_name(t));
}

// PTX semantics for shifts: the amount is unsigned, and amounts past the width clamp to it.
template <class T>
Value shift(BinaryOp op, T a, const Value& amount_value) {
  constexpr std::uint64_t width = sizeof(T) * 8;
  std::uint64_t amount = amount_value.type().is_signed_integer() && amount_value.as_int() < 0
                             ? width
                             : amount_value.as_uint();
  using U = std::make_unsigned_t<T>;
  if (op == BinaryOp::Shl) {
    if (amount >= width) return make(T{0});
    return make(static_cast<T>(static_cast<U>(static_cast<U>(a) << amount)));
  }
  if (amount >= width) {
    if constexpr (std::is_signed_v<T>) return make(static_cast<T>(a < 0 ? -1 : 0));
    return make(T{0});
  }
  return make(static_cast<T>(a >> amount));  // arithmetic for signed T (defined in C++20)
}

Value conform(const Value& v, const Type& result) {
  if (v.type() == result) return v;
  if (!result.is_scalar()) throw GraphError("a scalar operation cannot produce a " + result.name() + " tuple");
  return v.cast(result.scalar());
}

void require_scalar(const Value& v, const char* what) {
  if (!v.type().is_scalar())
    throw GraphError(std::string(what) + " needs scalar operands, got a " + v.type().name() + " tuple");
}

// ---- math functions -----------------------------------------------------------------

std::size_t math_arity(MathFn fn) {
  switch (fn) {
    case MathFn::Min: case MathFn::Max: case MathFn::Pow: return 2;
    case MathFn::Fma: return 3;
    default: return 1;
  }
}

// A float-only function in F (float or double): CUDA's sqrtf for f32, sqrt for f64. The
// std overloads on float compute in float, as sqrtf does.
template <class F>
F float_function(MathFn fn, std::span<const F> x) {
  switch (fn) {
    case MathFn::Sqrt: return std::sqrt(x[0]);
    case MathFn::Rsqrt: return F{1} / std::sqrt(x[0]);
    case MathFn::Exp: return std::exp(x[0]);
    case MathFn::Exp2: return std::exp2(x[0]);
    case MathFn::Log: return std::log(x[0]);
    case MathFn::Log2: return std::log2(x[0]);
    case MathFn::Log10: return std::log10(x[0]);
    case MathFn::Sin: return std::sin(x[0]);
    case MathFn::Cos: return std::cos(x[0]);
    case MathFn::Tan: return std::tan(x[0]);
    case MathFn::Tanh: return std::tanh(x[0]);
    case MathFn::Pow: return std::pow(x[0], x[1]);
    case MathFn::Floor: return std::floor(x[0]);
    case MathFn::Ceil: return std::ceil(x[0]);
    case MathFn::Round: return std::round(x[0]);  // half away from zero, as CUDA's roundf
    case MathFn::Erf: return std::erf(x[0]);
    case MathFn::Fma: return std::fma(x[0], x[1], x[2]);
    case MathFn::Abs: return std::fabs(x[0]);
    case MathFn::Min: return std::fmin(x[0], x[1]);
    case MathFn::Max: return std::fmax(x[0], x[1]);
  }
  return F{0};
}

template <class F>
Value float_call(MathFn fn, std::span<const Value> args, ScalarType t) {
  F x[3] = {};
  for (std::size_t i = 0; i < args.size(); ++i) x[i] = convert<F>(args[i], t);
  return make(float_function<F>(fn, std::span<const F>(x, args.size())));
}

// min, max, abs on integers, in the (promoted) result type T.
template <class T>
Value integer_call(MathFn fn, std::span<const Value> args, ScalarType t) {
  T a = convert<T>(args[0], t);
  if (fn == MathFn::Abs) {
    if constexpr (std::is_signed_v<T>) return make(a < 0 ? wrap_sub(T{0}, a) : a);
    return make(a);
  }
  T b = convert<T>(args[1], t);
  return make(fn == MathFn::Min ? (b < a ? b : a) : (a < b ? b : a));
}

}  // namespace

Value apply_unary(UnaryOp op, const Value& a, const Type& result) {
  require_scalar(a, unary_symbol(op));
  if (op == UnaryOp::Not) return conform(Value(!a.as_bool()), result);
  if (!result.is_scalar()) throw GraphError(std::string("operator ") + unary_symbol(op) + " cannot produce " + result.name());
  // Neg and BitNot run in the result type (the promoted operand type).
  ScalarType t = result.scalar();
  return with_cpp_type(t, [&](auto zero) -> Value {
    using T = decltype(zero);
    T x = convert<T>(a, t);
    if constexpr (is_int_v<T>) {
      if (op == UnaryOp::Neg) return make(wrap_sub(T{0}, x));
      return make(static_cast<T>(~x));
    } else if constexpr (std::is_floating_point_v<T>) {
      if (op == UnaryOp::Neg) return make(static_cast<T>(-x));
    }
    throw GraphError(std::string("operator ") + unary_symbol(op) + " does not apply to " + scalar_name(t));
  });
}

Value apply_binary(BinaryOp op, const Value& a, const Value& b, const Type& result) {
  require_scalar(a, binary_symbol(op));
  require_scalar(b, binary_symbol(op));
  if (op == BinaryOp::And) return conform(Value(a.as_bool() && b.as_bool()), result);
  if (op == BinaryOp::Or) return conform(Value(a.as_bool() || b.as_bool()), result);
  if (op == BinaryOp::Shl || op == BinaryOp::Shr) {
    ScalarType t = integer_promotion(a.type().scalar());
    if (!Type(t).is_integral() || !b.type().is_integral())
      throw GraphError(std::string("operator ") + binary_symbol(op) + " needs integral operands, got " +
                       a.type().name() + " and " + b.type().name());
    Value r = with_cpp_type(t, [&](auto zero) -> Value {
      using T = decltype(zero);
      if constexpr (is_int_v<T>) return shift(op, convert<T>(a, t), b);
      throw GraphError("shift of a non-integer");
    });
    return conform(r, result);
  }
  ScalarType t = usual_arithmetic_conversion(a.type().scalar(), b.type().scalar());
  Value r = with_cpp_type(t, [&](auto zero) -> Value {
    using T = decltype(zero);
    return arithmetic(op, convert<T>(a, t), convert<T>(b, t), t);
  });
  return conform(r, result);
}

namespace detail {
Value apply_math_span(MathFn fn, std::span<const Value> args, const Type& result) {
  if (args.size() != math_arity(fn))
    throw GraphError(std::string(math_name(fn)) + " takes " + std::to_string(math_arity(fn)) +
                     " argument(s), got " + std::to_string(args.size()));
  for (const Value& v : args) require_scalar(v, math_name(fn));
  if (!result.is_scalar()) throw GraphError(std::string(math_name(fn)) + " cannot produce " + result.name());
  ScalarType t = result.scalar();
  Value r = with_cpp_type(t, [&](auto zero) -> Value {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      return float_call<T>(fn, args, t);
    } else if constexpr (is_int_v<T>) {
      if (fn == MathFn::Min || fn == MathFn::Max || fn == MathFn::Abs) return integer_call<T>(fn, args, t);
    }
    throw GraphError(std::string(math_name(fn)) + " cannot produce " + scalar_name(t));
  });
  return conform(r, result);
}
}  // namespace detail

Value apply_math(MathFn fn, const std::vector<Value>& args, const Type& result) {
  return detail::apply_math_span(fn, args, result);
}

}  // namespace fuseflow
