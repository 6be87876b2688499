#pragma once
// The host functions of the operator table (operators.hpp): what each scalar operator and
// math function computes, for the CPU reference, with the semantics the generated CUDA has.
// Each is a function object whose `applies<T>` says which C++ types it is defined on.
//
// Where C++ leaves a case undefined, the reference pins down what CUDA does in practice:
// - signed overflow wraps (two's complement). The arithmetic runs on an unsigned type of
//   at least T's width, so the host never executes undefined behaviour; nvcc/NVRTC emit
//   the same add/mul/neg instructions for signed and unsigned operands, which wrap.
// - INT_MIN / -1 gives INT_MIN and INT_MIN % -1 gives 0 (the wrapped quotient).
// - integer division or modulo by zero throws GraphError: there is no answer to compare.
// - a shift amount outside [0, width) is clamped to the width, as PTX's shl/shr do:
//   x << 40 on i32 is 0, x >> 40 is 0 or -1 (by x's sign); a negative amount counts as huge.
// - min/max on floats propagate NaN (unlike fmin/fmax): a NaN operand gives NaN (std::fmin
//   and CUDA's fminf return the other operand instead). With NaN absorbing, the min and max
//   monoids keep their laws (+-inf stay identities, NaN or not), so the order a reduction
//   combines in cannot change its answer. The generated CUDA spells the same rule
//   (codegen/src/expr_emitter.cpp).
// - abs(INT_MIN) is INT_MIN.
// Float functions on f32 compute in float, as CUDA's sqrtf does (the std overloads on float
// do); round is half away from zero, as roundf.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fuseflow/frontend/expr.hpp"

namespace fuseflow::host {

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_number_v = is_int_v<T> || std::is_floating_point_v<T>;

// Integer arithmetic wraps in Wide<T>: unsigned, at least 32 bits, so nothing promotes to
// (signed) int.
template <class T>
using Wide = std::conditional_t<(sizeof(T) <= 4), std::uint32_t, std::uint64_t>;

template <class T>
T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b));
}
template <class T>
[[noreturn]] void division_by_zero(BinaryOp op) {
  throw GraphError(std::string("division by zero in operator ") + binary_symbol(op) + " on " +
                   type_of<T>().name() + " (integer division by zero has no defined result in C++ or CUDA)");
}

// ---- unary operators ------------------------------------------------------------------

struct Negate {
  template <class T>
  static constexpr bool applies = is_number_v<T>;
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) return -a;
    else return wrap_sub(T{0}, a);
  }
};
struct LogicalNot {
  template <class T>
  static constexpr bool applies = std::is_same_v<T, bool>;
  bool operator()(bool a) const { return !a; }
};
struct BitwiseNot {
  template <class T>
  static constexpr bool applies = is_int_v<T>;
  template <class T>
  T operator()(T a) const { return static_cast<T>(~a); }
};

// ---- binary operators -----------------------------------------------------------------

// + - * on numbers; integers wrap.
#define FUSEFLOW_HOST_WRAPPING(Name, operator_)                                              \
  struct Name {                                                                              \
    template <class T>                                                                       \
    static constexpr bool applies = is_number_v<T>;                                          \
    template <class T>                                                                       \
    T operator()(T a, T b) const {                                                           \
      if constexpr (std::is_floating_point_v<T>) return a operator_ b;                       \
      else return static_cast<T>(static_cast<Wide<T>>(a) operator_ static_cast<Wide<T>>(b)); \
    }                                                                                        \
  };
FUSEFLOW_HOST_WRAPPING(WrappingAdd, +)
FUSEFLOW_HOST_WRAPPING(WrappingSub, -)
FUSEFLOW_HOST_WRAPPING(WrappingMul, *)
#undef FUSEFLOW_HOST_WRAPPING

// & | ^ on integers, bool included (a bit_and monoid over bool).
#define FUSEFLOW_HOST_BITWISE(Name, operator_)                             \
  struct Name {                                                            \
    template <class T>                                                     \
    static constexpr bool applies = std::is_integral_v<T>;                 \
    template <class T>                                                     \
    T operator()(T a, T b) const { return static_cast<T>(a operator_ b); } \
  };
FUSEFLOW_HOST_BITWISE(BitwiseAnd, &)
FUSEFLOW_HOST_BITWISE(BitwiseOr, |)
FUSEFLOW_HOST_BITWISE(BitwiseXor, ^)
#undef FUSEFLOW_HOST_BITWISE

struct Divide {
  template <class T>
  static constexpr bool applies = is_number_v<T>;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {
      if (b == 0) division_by_zero<T>(BinaryOp::Div);
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap_sub(T{0}, a);
      }
      return static_cast<T>(a / b);
    }
  }
};
struct Modulo {
  template <class T>
  static constexpr bool applies = is_int_v<T>;
  template <class T>
  T operator()(T a, T b) const {
    if (b == 0) division_by_zero<T>(BinaryOp::Mod);
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return T{0};
    }
    return static_cast<T>(a % b);
  }
};

// Shifts take the amount as i64; PTX semantics: amounts past the width (negative ones
// too) clamp to it.
struct ShiftLeft {
  template <class T>
  static constexpr bool applies = is_int_v<T>;
  template <class T>
  T operator()(T a, std::int64_t amount) const {
    using U = std::make_unsigned_t<T>;
    if (amount < 0 || amount >= static_cast<std::int64_t>(sizeof(T) * 8)) return T{0};
    return static_cast<T>(static_cast<U>(static_cast<U>(a) << amount));
  }
};
struct ShiftRight {
  template <class T>
  static constexpr bool applies = is_int_v<T>;
  template <class T>
  T operator()(T a, std::int64_t amount) const {
    if (amount < 0 || amount >= static_cast<std::int64_t>(sizeof(T) * 8)) {
      if constexpr (std::is_signed_v<T>) return static_cast<T>(a < 0 ? -1 : 0);
      return T{0};
    }
    return static_cast<T>(a >> amount);  // arithmetic for signed T (defined in C++20)
  }
};

// Comparisons of numbers (bool operands have been promoted), and the logical operators.
#define FUSEFLOW_HOST_PREDICATE(Name, applies_to, operator_)  \
  struct Name {                                               \
    template <class T>                                        \
    static constexpr bool applies = applies_to<T>;            \
    template <class T>                                        \
    bool operator()(T a, T b) const { return a operator_ b; } \
  };
template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
FUSEFLOW_HOST_PREDICATE(Less, is_number_v, <)
FUSEFLOW_HOST_PREDICATE(LessEqual, is_number_v, <=)
FUSEFLOW_HOST_PREDICATE(Greater, is_number_v, >)
FUSEFLOW_HOST_PREDICATE(GreaterEqual, is_number_v, >=)
FUSEFLOW_HOST_PREDICATE(Equal, is_number_v, ==)
FUSEFLOW_HOST_PREDICATE(NotEqual, is_number_v, !=)
FUSEFLOW_HOST_PREDICATE(LogicalAnd, is_bool_v, &&)
FUSEFLOW_HOST_PREDICATE(LogicalOr, is_bool_v, ||)
#undef FUSEFLOW_HOST_PREDICATE

// ---- math functions -------------------------------------------------------------------

struct Min {
  template <class T>
  static constexpr bool applies = is_number_v<T>;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return (b < a || b != b) ? b : a;
    else return b < a ? b : a;
  }
};
struct Max {
  template <class T>
  static constexpr bool applies = is_number_v<T>;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return (a < b || b != b) ? b : a;
    else return a < b ? b : a;
  }
};
struct Abs {
  template <class T>
  static constexpr bool applies = is_number_v<T>;
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(a);
    else if constexpr (std::is_signed_v<T>) return a < 0 ? wrap_sub(T{0}, a) : a;
    else return a;
  }
};

// Float functions: F is float or double.
#define FUSEFLOW_HOST_FLOAT_FN(Name, ...)                        \
  struct Name {                                                  \
    template <class F>                                           \
    static constexpr bool applies = std::is_floating_point_v<F>; \
    template <class F>                                           \
    F operator()(F x) const { return __VA_ARGS__; }              \
  };
FUSEFLOW_HOST_FLOAT_FN(Sqrt, std::sqrt(x))
FUSEFLOW_HOST_FLOAT_FN(Rsqrt, F{1} / std::sqrt(x))
FUSEFLOW_HOST_FLOAT_FN(Exp, std::exp(x))
FUSEFLOW_HOST_FLOAT_FN(Exp2, std::exp2(x))
FUSEFLOW_HOST_FLOAT_FN(Log, std::log(x))
FUSEFLOW_HOST_FLOAT_FN(Log2, std::log2(x))
FUSEFLOW_HOST_FLOAT_FN(Log10, std::log10(x))
FUSEFLOW_HOST_FLOAT_FN(Sin, std::sin(x))
FUSEFLOW_HOST_FLOAT_FN(Cos, std::cos(x))
FUSEFLOW_HOST_FLOAT_FN(Tan, std::tan(x))
FUSEFLOW_HOST_FLOAT_FN(Tanh, std::tanh(x))
FUSEFLOW_HOST_FLOAT_FN(Floor, std::floor(x))
FUSEFLOW_HOST_FLOAT_FN(Ceil, std::ceil(x))
FUSEFLOW_HOST_FLOAT_FN(Round, std::round(x))
FUSEFLOW_HOST_FLOAT_FN(Erf, std::erf(x))
#undef FUSEFLOW_HOST_FLOAT_FN

struct Pow {
  template <class F>
  static constexpr bool applies = std::is_floating_point_v<F>;
  template <class F>
  F operator()(F x, F y) const { return std::pow(x, y); }
};
struct Fma {
  template <class F>
  static constexpr bool applies = std::is_floating_point_v<F>;
  template <class F>
  F operator()(F x, F y, F z) const { return std::fma(x, y, z); }
};

// The host function of a BinaryOp or MathFn known at compile time (built-in monoids).
template <auto Op>
struct FunctionOf {
  using type = void;  // ArgBy: argmin and argmax run their compiled combine function
};
#define FUSEFLOW_HOST_OF_BINARY(e, symbol, precedence, cls, wraps, function) \
  template <>                                                                \
  struct FunctionOf<BinaryOp::e> {                                           \
    using type = function;                                                   \
  };
FUSEFLOW_BINARY_OPS(FUSEFLOW_HOST_OF_BINARY)
#undef FUSEFLOW_HOST_OF_BINARY
#define FUSEFLOW_HOST_OF_MATH(e, name, arity, cls, cuda, function) \
  template <>                                                      \
  struct FunctionOf<MathFn::e> {                                   \
    using type = function;                                         \
  };
FUSEFLOW_MATH_FNS(FUSEFLOW_HOST_OF_MATH)
#undef FUSEFLOW_HOST_OF_MATH

}  // namespace fuseflow::host
