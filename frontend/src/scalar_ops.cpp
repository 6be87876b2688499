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
// - min/max on floats propagate NaN (unlike fmin/fmax): see min_propagating_nan.
// - abs(INT_MIN) is INT_MIN.
//
// Each operation is a typed kernel on 64-bit slots holding a scalar's bytes in their low
// bytes (as a HostArray stores it). The evaluator calls the kernels directly on its slots;
// apply_unary/apply_binary/apply_math wrap them for Values, so both share one definition.
#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>

#include "fuseflow/frontend/reference.hpp"
#include "scalar_kernels.hpp"

namespace fuseflow {


namespace {

using Slot = std::uint64_t;

template <class T>
T get(Slot s) {
  if constexpr (std::is_same_v<T, bool>) {
    return (s & 0xFF) != 0;
  } else {
    T v;
    std::memcpy(&v, &s, sizeof v);
    return v;
  }
}
template <class T>
Slot put(T v) {
  Slot s = 0;
  std::memcpy(&s, &v, sizeof v);
  return s;
}

// Calls f(T{}) with T the C++ type of scalar type s.
template <class R, class F>
R with_cpp_type(ScalarType s, F&& f) {
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

// Calls f(T{}) for the types arithmetic runs in after promotion: bool (logical operators
// only), i32, i64, u32, u64, f32, f64; nullptr for the others.
template <class R, class F>
R with_operation_type(ScalarType s, F&& f) {
  switch (s) {
    case ScalarType::Bool: return f(bool{});
    case ScalarType::I32: return f(std::int32_t{});
    case ScalarType::I64: return f(std::int64_t{});
    case ScalarType::U32: return f(std::uint32_t{});
    case ScalarType::U64: return f(std::uint64_t{});
    case ScalarType::F32: return f(float{});
    case ScalarType::F64: return f(double{});
    default: return nullptr;
  }
}

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Conversion as static_cast, except that float -> integer saturates (NaN gives 0) as
// Value::cast and CUDA's cvt.rzi do, where C++ leaves out-of-range values undefined.
template <class From, class To>
Slot convert(Slot s) {
  From x = get<From>(s);
  if constexpr (std::is_floating_point_v<From> && is_int_v<To>) {
    return put<To>(static_cast<To>(Value::from_double(type_of<To>().scalar(), static_cast<double>(x)).as_int()));
  } else {
    return put<To>(static_cast<To>(x));
  }
}

// Wrapping arithmetic on the unsigned type of T's width. T is i32, i64, u32 or u64
// (promotion has happened), so unsigned operands do not promote to signed int.
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

template <class T>
[[noreturn]] void division_by_zero(BinaryOp op) {
  throw GraphError(std::string("division by zero in operator ") + binary_symbol(op) + " on " +
                   type_of<T>().name() + " (integer division by zero has no defined result in C++ or CUDA)");
}

template <class T>
T divide(T a, T b) {
  if (b == 0) division_by_zero<T>(BinaryOp::Div);
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_sub(T{0}, a);
  }
  return static_cast<T>(a / b);
}
template <class T>
T modulo(T a, T b) {
  if (b == 0) division_by_zero<T>(BinaryOp::Mod);
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T{0};
  }
  return static_cast<T>(a % b);
}

// PTX semantics for shifts: amounts past the width (negative ones too) clamp to it.
template <class T>
T shift_left(T a, std::int64_t amount) {
  using U = std::make_unsigned_t<T>;
  if (amount < 0 || amount >= static_cast<std::int64_t>(sizeof(T) * 8)) return T{0};
  return static_cast<T>(static_cast<U>(static_cast<U>(a) << amount));
}
template <class T>
T shift_right(T a, std::int64_t amount) {
  if (amount < 0 || amount >= static_cast<std::int64_t>(sizeof(T) * 8)) {
    if constexpr (std::is_signed_v<T>) return static_cast<T>(a < 0 ? -1 : 0);
    return T{0};
  }
  return static_cast<T>(a >> amount);  // arithmetic for signed T (defined in C++20)
}

template <class T>
detail::BinaryKernel binary_for(BinaryOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == BinaryOp::And) return [](Slot a, Slot b) { return put<bool>(get<bool>(a) && get<bool>(b)); };
    if (op == BinaryOp::Or) return [](Slot a, Slot b) { return put<bool>(get<bool>(a) || get<bool>(b)); };
    return nullptr;
  } else {
    switch (op) {
      case BinaryOp::Lt: return [](Slot a, Slot b) { return put<bool>(get<T>(a) < get<T>(b)); };
      case BinaryOp::Le: return [](Slot a, Slot b) { return put<bool>(get<T>(a) <= get<T>(b)); };
      case BinaryOp::Gt: return [](Slot a, Slot b) { return put<bool>(get<T>(a) > get<T>(b)); };
      case BinaryOp::Ge: return [](Slot a, Slot b) { return put<bool>(get<T>(a) >= get<T>(b)); };
      case BinaryOp::Eq: return [](Slot a, Slot b) { return put<bool>(get<T>(a) == get<T>(b)); };
      case BinaryOp::Ne: return [](Slot a, Slot b) { return put<bool>(get<T>(a) != get<T>(b)); };
      default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::Add: return [](Slot a, Slot b) { return put<T>(get<T>(a) + get<T>(b)); };
        case BinaryOp::Sub: return [](Slot a, Slot b) { return put<T>(get<T>(a) - get<T>(b)); };
        case BinaryOp::Mul: return [](Slot a, Slot b) { return put<T>(get<T>(a) * get<T>(b)); };
        case BinaryOp::Div: return [](Slot a, Slot b) { return put<T>(get<T>(a) / get<T>(b)); };
        default: return nullptr;
      }
    } else {
      switch (op) {
        case BinaryOp::Add: return [](Slot a, Slot b) { return put<T>(wrap_add(get<T>(a), get<T>(b))); };
        case BinaryOp::Sub: return [](Slot a, Slot b) { return put<T>(wrap_sub(get<T>(a), get<T>(b))); };
        case BinaryOp::Mul: return [](Slot a, Slot b) { return put<T>(wrap_mul(get<T>(a), get<T>(b))); };
        case BinaryOp::Div: return [](Slot a, Slot b) { return put<T>(divide(get<T>(a), get<T>(b))); };
        case BinaryOp::Mod: return [](Slot a, Slot b) { return put<T>(modulo(get<T>(a), get<T>(b))); };
        case BinaryOp::BitAnd: return [](Slot a, Slot b) { return put<T>(static_cast<T>(get<T>(a) & get<T>(b))); };
        case BinaryOp::BitOr: return [](Slot a, Slot b) { return put<T>(static_cast<T>(get<T>(a) | get<T>(b))); };
        case BinaryOp::BitXor: return [](Slot a, Slot b) { return put<T>(static_cast<T>(get<T>(a) ^ get<T>(b))); };
        case BinaryOp::Shl: return [](Slot a, Slot b) { return put<T>(shift_left(get<T>(a), get<std::int64_t>(b))); };
        case BinaryOp::Shr: return [](Slot a, Slot b) { return put<T>(shift_right(get<T>(a), get<std::int64_t>(b))); };
        default: return nullptr;
      }
    }
  }
}

template <class T>
detail::UnaryKernel unary_for(UnaryOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == UnaryOp::Not) return [](Slot a) { return put<bool>(!get<bool>(a)); };
  } else if constexpr (std::is_floating_point_v<T>) {
    if (op == UnaryOp::Neg) return [](Slot a) { return put<T>(-get<T>(a)); };
  } else {
    if (op == UnaryOp::Neg) return [](Slot a) { return put<T>(wrap_sub(T{0}, get<T>(a))); };
    if (op == UnaryOp::BitNot) return [](Slot a) { return put<T>(static_cast<T>(~get<T>(a))); };
  }
  return nullptr;
}

// Float functions in F: CUDA's sqrtf for f32, sqrt for f64. The std overloads on float
// compute in float, as sqrtf does.
template <class F>
detail::MathKernel float_math_for(MathFn fn) {
  using A = const Slot*;
  switch (fn) {
    case MathFn::Min: return [](A x) { return put<F>(detail::min_propagating_nan(get<F>(x[0]), get<F>(x[1]))); };
    case MathFn::Max: return [](A x) { return put<F>(detail::max_propagating_nan(get<F>(x[0]), get<F>(x[1]))); };
    case MathFn::Abs: return [](A x) { return put<F>(std::fabs(get<F>(x[0]))); };
    case MathFn::Sqrt: return [](A x) { return put<F>(std::sqrt(get<F>(x[0]))); };
    case MathFn::Rsqrt: return [](A x) { return put<F>(F{1} / std::sqrt(get<F>(x[0]))); };
    case MathFn::Exp: return [](A x) { return put<F>(std::exp(get<F>(x[0]))); };
    case MathFn::Exp2: return [](A x) { return put<F>(std::exp2(get<F>(x[0]))); };
    case MathFn::Log: return [](A x) { return put<F>(std::log(get<F>(x[0]))); };
    case MathFn::Log2: return [](A x) { return put<F>(std::log2(get<F>(x[0]))); };
    case MathFn::Log10: return [](A x) { return put<F>(std::log10(get<F>(x[0]))); };
    case MathFn::Sin: return [](A x) { return put<F>(std::sin(get<F>(x[0]))); };
    case MathFn::Cos: return [](A x) { return put<F>(std::cos(get<F>(x[0]))); };
    case MathFn::Tan: return [](A x) { return put<F>(std::tan(get<F>(x[0]))); };
    case MathFn::Tanh: return [](A x) { return put<F>(std::tanh(get<F>(x[0]))); };
    case MathFn::Pow: return [](A x) { return put<F>(std::pow(get<F>(x[0]), get<F>(x[1]))); };
    case MathFn::Floor: return [](A x) { return put<F>(std::floor(get<F>(x[0]))); };
    case MathFn::Ceil: return [](A x) { return put<F>(std::ceil(get<F>(x[0]))); };
    // Half away from zero, as CUDA's roundf.
    case MathFn::Round: return [](A x) { return put<F>(std::round(get<F>(x[0]))); };
    case MathFn::Erf: return [](A x) { return put<F>(std::erf(get<F>(x[0]))); };
    case MathFn::Fma: return [](A x) { return put<F>(std::fma(get<F>(x[0]), get<F>(x[1]), get<F>(x[2]))); };
  }
  return nullptr;
}

// min, max and abs on a (promoted) integer type.
template <class T>
detail::MathKernel integer_math_for(MathFn fn) {
  using A = const Slot*;
  switch (fn) {
    case MathFn::Min: return [](A x) { T a = get<T>(x[0]), b = get<T>(x[1]); return put<T>(b < a ? b : a); };
    case MathFn::Max: return [](A x) { T a = get<T>(x[0]), b = get<T>(x[1]); return put<T>(a < b ? b : a); };
    case MathFn::Abs:
      return [](A x) {
        T a = get<T>(x[0]);
        if constexpr (std::is_signed_v<T>) return put<T>(a < 0 ? wrap_sub(T{0}, a) : a);
        return put<T>(a);
      };
    default: return nullptr;
  }
}

[[noreturn]] void not_applicable(const std::string& what, ScalarType t) {
  throw GraphError(what + " does not apply to " + scalar_name(t));
}

void require_scalar(const Value& v, const char* what) {
  if (!v.type().is_scalar())
    throw GraphError(std::string(what) + " needs scalar operands, got a " + v.type().name() + " tuple");
}

Slot bits_of(const Value& v) {
  Slot s = 0;
  v.to_bytes(&s);  // the scalar's bytes, little-endian, in the low bytes
  return s;
}

Slot converted(const Value& v, ScalarType to) {
  return detail::convert_kernel(v.type().scalar(), to)(bits_of(v));
}

// `bits` of type `natural` as a Value of the node's result type.
Value result_value(ScalarType natural, Slot bits, const Type& result) {
  Value v = Value::from_bytes(natural, &bits);
  if (v.type() == result) return v;
  if (!result.is_scalar()) throw GraphError("a scalar operation cannot produce a " + result.name() + " tuple");
  return v.cast(result.scalar());
}

}  // namespace

namespace detail {

ConvertKernel convert_kernel(ScalarType from, ScalarType to) {
  return with_cpp_type<ConvertKernel>(from, [to](auto f) {
    using From = decltype(f);
    return with_cpp_type<ConvertKernel>(to, [](auto t) -> ConvertKernel {
      using To = decltype(t);
      return convert<From, To>;
    });
  });
}

BinarySignature binary_signature(BinaryOp op, ScalarType a, ScalarType b) {
  switch (op) {
    case BinaryOp::And:
    case BinaryOp::Or:
      return {ScalarType::Bool, ScalarType::Bool, ScalarType::Bool};
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if (!Type(a).is_integral() || !Type(b).is_integral())
        throw GraphError(std::string("operator ") + binary_symbol(op) + " needs integral operands, got " +
                         scalar_name(a) + " and " + scalar_name(b));
      // The amount goes in as i64; a negative one stays negative, so it clamps.
      return {integer_promotion(a), ScalarType::I64, integer_promotion(a)};
    case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
    case BinaryOp::Eq: case BinaryOp::Ne: {
      ScalarType t = usual_arithmetic_conversion(a, b);
      return {t, t, ScalarType::Bool};
    }
    default: {
      ScalarType t = usual_arithmetic_conversion(a, b);
      return {t, t, t};
    }
  }
}

BinaryKernel binary_kernel(BinaryOp op, ScalarType operation) {
  BinaryKernel k = with_operation_type<BinaryKernel>(operation, [op](auto t) { return binary_for<decltype(t)>(op); });
  if (!k) not_applicable(std::string("operator ") + binary_symbol(op), operation);
  return k;
}

ScalarType unary_operand_type(UnaryOp op, ScalarType a) {
  switch (op) {
    case UnaryOp::Not: return ScalarType::Bool;
    case UnaryOp::Neg: return Type(a).is_floating() ? a : integer_promotion(a);
    case UnaryOp::BitNot:
      if (!Type(a).is_integral()) not_applicable("operator ~", a);
      return integer_promotion(a);
  }
  return a;
}

UnaryKernel unary_kernel(UnaryOp op, ScalarType operation) {
  UnaryKernel k = with_operation_type<UnaryKernel>(operation, [op](auto t) { return unary_for<decltype(t)>(op); });
  if (!k) not_applicable(std::string("operator ") + unary_symbol(op), operation);
  return k;
}

std::size_t math_arity(MathFn fn) {
  switch (fn) {
    case MathFn::Min: case MathFn::Max: case MathFn::Pow: return 2;
    case MathFn::Fma: return 3;
    default: return 1;
  }
}

MathKernel math_kernel(MathFn fn, ScalarType operation) {
  MathKernel k = with_operation_type<MathKernel>(operation, [fn](auto t) -> MathKernel {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) return float_math_for<T>(fn);
    else if constexpr (is_int_v<T>) return integer_math_for<T>(fn);
    else return nullptr;
  });
  if (!k) not_applicable(math_name(fn), operation);
  return k;
}

}  // namespace detail

Value apply_unary(UnaryOp op, const Value& a, const Type& result) {
  require_scalar(a, unary_symbol(op));
  ScalarType t = detail::unary_operand_type(op, a.type().scalar());
  return result_value(t, detail::unary_kernel(op, t)(converted(a, t)), result);
}

Value apply_binary(BinaryOp op, const Value& a, const Value& b, const Type& result) {
  require_scalar(a, binary_symbol(op));
  require_scalar(b, binary_symbol(op));
  detail::BinarySignature s = detail::binary_signature(op, a.type().scalar(), b.type().scalar());
  detail::BinaryKernel k = detail::binary_kernel(op, s.left);
  return result_value(s.result, k(converted(a, s.left), converted(b, s.right)), result);
}

// Every argument is converted to the result type the node says: min/max compute in the
// arguments' common type, abs in the promoted one, float functions in f32 for f32 and
// f64 otherwise (std::sqrt(int) computes in double).
Value apply_math(MathFn fn, const std::vector<Value>& args, const Type& result) {
  if (args.size() != detail::math_arity(fn))
    throw GraphError(std::string(math_name(fn)) + " takes " + std::to_string(detail::math_arity(fn)) +
                     " argument(s), got " + std::to_string(args.size()));
  for (const Value& v : args) require_scalar(v, math_name(fn));
  if (!result.is_scalar()) throw GraphError(std::string(math_name(fn)) + " cannot produce " + result.name());
  ScalarType t = result.scalar();
  detail::MathKernel k = detail::math_kernel(fn, t);
  Slot x[3] = {};
  for (std::size_t i = 0; i < args.size(); ++i) x[i] = converted(args[i], t);
  return result_value(t, k(x), result);
}

}  // namespace fuseflow
