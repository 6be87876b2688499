#pragma once
// The scalar operators and math functions, one row each: the enum, how the textual form
// and CUDA spell it, its class (which fixes its type rule, what it applies to and how its
// operands are converted) and the host function that defines it for the CPU reference
// (frontend/src/scalar_semantics.hpp). A new operator is a new row, plus its host
// function when no existing one fits.
#include <cstddef>
#include <cstdint>
#include <span>

namespace fuseflow {

// Unary operators: X(enum, symbol, class, wraps, host function); `wraps` as for binary
// operators below.
//   Arithmetic  the operand promoted (floats stay), as C++'s unary minus
//   Logical     bool operand, bool result
//   Integral    an integral operand, promoted
#define FUSEFLOW_UNARY_OPS(X)                   \
  X(Neg, "-", Arithmetic, true, host::Negate)   \
  X(Not, "!", Logical, false, host::LogicalNot) \
  X(BitNot, "~", Integral, false, host::BitwiseNot)

// Binary operators: X(enum, symbol, C++ precedence (higher binds tighter), class, wraps,
// host function). `wraps`: on signed integers the result wraps (two's complement), which
// CUDA C++ leaves undefined; the generated code computes it in the unsigned type.
//   Arithmetic  both operands converted to their common type (usual arithmetic conversions)
//   Integral    as Arithmetic, integral operands only
//   Shift       integral operands; the result has the left operand's promoted type
//   Comparison  operands converted to their common type; bool result
//   Logical     bool operands, bool result, the right one evaluated only when needed
#define FUSEFLOW_BINARY_OPS(X)                          \
  X(Add, "+", 9, Arithmetic, true, host::WrappingAdd)   \
  X(Sub, "-", 9, Arithmetic, true, host::WrappingSub)   \
  X(Mul, "*", 10, Arithmetic, true, host::WrappingMul)  \
  X(Div, "/", 10, Arithmetic, false, host::Divide)      \
  X(Mod, "%", 10, Integral, false, host::Modulo)        \
  X(BitAnd, "&", 5, Integral, false, host::BitwiseAnd)  \
  X(BitOr, "|", 3, Integral, false, host::BitwiseOr)    \
  X(BitXor, "^", 4, Integral, false, host::BitwiseXor)  \
  X(Shl, "<<", 8, Shift, false, host::ShiftLeft)        \
  X(Shr, ">>", 8, Shift, false, host::ShiftRight)       \
  X(Lt, "<", 7, Comparison, false, host::Less)          \
  X(Le, "<=", 7, Comparison, false, host::LessEqual)    \
  X(Gt, ">", 7, Comparison, false, host::Greater)       \
  X(Ge, ">=", 7, Comparison, false, host::GreaterEqual) \
  X(Eq, "==", 6, Comparison, false, host::Equal)        \
  X(Ne, "!=", 6, Comparison, false, host::NotEqual)     \
  X(And, "&&", 2, Logical, false, host::LogicalAnd)     \
  X(Or, "||", 1, Logical, false, host::LogicalOr)

// Math functions: X(enum, name, arity, class, CUDA function, host function). The CUDA
// function takes an f suffix for f32 (sqrtf).
//   MinMax  arguments converted to their common type; NaN propagates (not fminf/fmaxf),
//           spelled as a conditional in CUDA
//   Abs     the argument promoted (floats stay); fabs for floats, a conditional for
//           signed integers, nothing for unsigned ones
//   Float   computed in f32 for f32 arguments, else in f64 (std::sqrt(int) is double)
#define FUSEFLOW_MATH_FNS(X)                        \
  X(Min, "min", 2, MinMax, nullptr, host::Min)      \
  X(Max, "max", 2, MinMax, nullptr, host::Max)      \
  X(Abs, "abs", 1, Abs, "fabs", host::Abs)          \
  X(Sqrt, "sqrt", 1, Float, "sqrt", host::Sqrt)     \
  X(Rsqrt, "rsqrt", 1, Float, "rsqrt", host::Rsqrt) \
  X(Exp, "exp", 1, Float, "exp", host::Exp)         \
  X(Exp2, "exp2", 1, Float, "exp2", host::Exp2)     \
  X(Log, "log", 1, Float, "log", host::Log)         \
  X(Log2, "log2", 1, Float, "log2", host::Log2)     \
  X(Log10, "log10", 1, Float, "log10", host::Log10) \
  X(Sin, "sin", 1, Float, "sin", host::Sin)         \
  X(Cos, "cos", 1, Float, "cos", host::Cos)         \
  X(Tan, "tan", 1, Float, "tan", host::Tan)         \
  X(Tanh, "tanh", 1, Float, "tanh", host::Tanh)     \
  X(Pow, "pow", 2, Float, "pow", host::Pow)         \
  X(Floor, "floor", 1, Float, "floor", host::Floor) \
  X(Ceil, "ceil", 1, Float, "ceil", host::Ceil)     \
  X(Round, "round", 1, Float, "round", host::Round) \
  X(Fma, "fma", 3, Float, "fma", host::Fma)         \
  X(Erf, "erf", 1, Float, "erf", host::Erf)

#define FUSEFLOW_OPERATOR_ENUM(e, ...) e,
enum class UnaryOp : std::uint8_t { FUSEFLOW_UNARY_OPS(FUSEFLOW_OPERATOR_ENUM) };
enum class BinaryOp : std::uint8_t { FUSEFLOW_BINARY_OPS(FUSEFLOW_OPERATOR_ENUM) };
enum class MathFn : std::uint8_t { FUSEFLOW_MATH_FNS(FUSEFLOW_OPERATOR_ENUM) };
#undef FUSEFLOW_OPERATOR_ENUM

enum class UnaryClass : std::uint8_t { Arithmetic, Logical, Integral };
enum class BinaryClass : std::uint8_t { Arithmetic, Integral, Shift, Comparison, Logical };
enum class MathClass : std::uint8_t { MinMax, Abs, Float };

struct UnaryOpInfo {
  UnaryOp op;
  const char* symbol;
  UnaryClass op_class;
  bool wraps;
};

struct BinaryOpInfo {
  BinaryOp op;
  const char* symbol;
  int precedence;
  BinaryClass op_class;
  bool wraps;
};

struct MathFnInfo {
  MathFn fn;
  const char* name;
  std::size_t arity;
  MathClass fn_class;
  const char* cuda_name;  // nullptr: spelled by its class
};

inline constexpr UnaryOpInfo kUnaryOps[] = {
#define FUSEFLOW_UNARY_ROW(e, symbol, cls, wraps, host) {UnaryOp::e, symbol, UnaryClass::cls, wraps},
    FUSEFLOW_UNARY_OPS(FUSEFLOW_UNARY_ROW)
#undef FUSEFLOW_UNARY_ROW
};

inline constexpr BinaryOpInfo kBinaryOps[] = {
#define FUSEFLOW_BINARY_ROW(e, symbol, precedence, cls, wraps, host) \
  {BinaryOp::e, symbol, precedence, BinaryClass::cls, wraps},
    FUSEFLOW_BINARY_OPS(FUSEFLOW_BINARY_ROW)
#undef FUSEFLOW_BINARY_ROW
};

inline constexpr MathFnInfo kMathFns[] = {
#define FUSEFLOW_MATH_ROW(e, name, arity, cls, cuda, host) {MathFn::e, name, arity, MathClass::cls, cuda},
    FUSEFLOW_MATH_FNS(FUSEFLOW_MATH_ROW)
#undef FUSEFLOW_MATH_ROW
};

constexpr const UnaryOpInfo& unary_info(UnaryOp op) { return kUnaryOps[static_cast<std::size_t>(op)]; }
constexpr const BinaryOpInfo& binary_info(BinaryOp op) { return kBinaryOps[static_cast<std::size_t>(op)]; }
constexpr const MathFnInfo& math_info(MathFn fn) { return kMathFns[static_cast<std::size_t>(fn)]; }
constexpr std::span<const UnaryOpInfo> all_unary_ops() { return kUnaryOps; }
constexpr std::span<const BinaryOpInfo> all_binary_ops() { return kBinaryOps; }
constexpr std::span<const MathFnInfo> all_math_fns() { return kMathFns; }

}  // namespace fuseflow
