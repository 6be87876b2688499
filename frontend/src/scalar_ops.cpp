// The scalar operations of the CPU reference evaluator, with the semantics the generated
// CUDA has: operands are converted to the operation's type first (C++'s usual arithmetic
// conversions, integer promotion), then the operation runs in that type. What each
// operator computes is its host function (scalar_semantics.hpp), named in the operator
// table (operators.hpp); here the table's rows become kernels.
//
// Each operation is a typed kernel on 64-bit slots holding a scalar's bytes in their low
// bytes (as a HostArray stores it). The evaluator calls the kernels directly on its slots;
// apply_unary/apply_binary/apply_math wrap them for Values, so both share one definition.
#include <cstring>
#include <type_traits>

#include "fuseflow/frontend/reference.hpp"
#include "scalar_kernels.hpp"
#include "scalar_semantics.hpp"

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

// Calls f(T{}) for the types operations run in: those integer promotion leaves alone
// (i32, i64, u32, u64, f32, f64) and bool (logical operators); nullptr for the others.
template <class R, class F>
R with_operation_type(ScalarType s, F&& f) {
  if (scalar_info(s).kind != ScalarKind::Logical && integer_promotion(s) != s) return nullptr;
  return visit_scalar(s, [&f](auto t) -> R { return f(t); });
}

// Conversion as static_cast, except that float -> integer saturates (NaN gives 0) as
// Value::cast and CUDA's cvt.rzi do, where C++ leaves out-of-range values undefined.
template <class From, class To>
Slot convert(Slot s) {
  From x = get<From>(s);
  if constexpr (std::is_floating_point_v<From> && host::is_int_v<To>) {
    return put<To>(static_cast<To>(Value::from_double(type_of<To>().scalar(), static_cast<double>(x)).as_int()));
  } else {
    return put<To>(static_cast<To>(x));
  }
}

// The kernel of host function Fn in operation type T, or nullptr where Fn does not apply.
template <class Fn, class T>
detail::UnaryKernel unary_kernel_of() {
  if constexpr (Fn::template applies<T>) return [](Slot a) { return put(Fn{}(get<T>(a))); };
  else return nullptr;
}

// Shifts take their amount as i64.
template <class Fn, BinaryClass C, class T>
detail::BinaryKernel binary_kernel_of() {
  if constexpr (!Fn::template applies<T>) return nullptr;
  else if constexpr (C == BinaryClass::Shift)
    return [](Slot a, Slot b) { return put(Fn{}(get<T>(a), get<std::int64_t>(b))); };
  else return [](Slot a, Slot b) { return put(Fn{}(get<T>(a), get<T>(b))); };
}

// Every argument is in T.
template <class Fn, std::size_t Arity, class T>
detail::MathKernel math_kernel_of() {
  using A = const Slot*;
  if constexpr (!Fn::template applies<T>) return nullptr;
  else if constexpr (Arity == 1) return [](A x) { return put(Fn{}(get<T>(x[0]))); };
  else if constexpr (Arity == 2) return [](A x) { return put(Fn{}(get<T>(x[0]), get<T>(x[1]))); };
  else return [](A x) { return put(Fn{}(get<T>(x[0]), get<T>(x[1]), get<T>(x[2]))); };
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
  return visit_scalar(from, [to](auto f) {
    using From = decltype(f);
    return visit_scalar(to, [](auto t) -> ConvertKernel {
      using To = decltype(t);
      return convert<From, To>;
    });
  });
}

BinarySignature binary_signature(BinaryOp op, ScalarType a, ScalarType b) {
  switch (binary_info(op).op_class) {
    case BinaryClass::Logical:
      return {ScalarType::Bool, ScalarType::Bool, ScalarType::Bool};
    case BinaryClass::Shift:
      if (!Type(a).is_integral() || !Type(b).is_integral())
        throw GraphError(std::string("operator ") + binary_symbol(op) + " needs integral operands, got " +
                         scalar_name(a) + " and " + scalar_name(b));
      // The amount goes in as i64; a negative one stays negative, so it clamps.
      return {integer_promotion(a), ScalarType::I64, integer_promotion(a)};
    case BinaryClass::Comparison: {
      ScalarType t = usual_arithmetic_conversion(a, b);
      return {t, t, ScalarType::Bool};
    }
    case BinaryClass::Arithmetic:
    case BinaryClass::Integral: break;
  }
  ScalarType t = usual_arithmetic_conversion(a, b);
  return {t, t, t};
}

BinaryKernel binary_kernel(BinaryOp op, ScalarType operation) {
  BinaryKernel k = with_operation_type<BinaryKernel>(operation, [op](auto t) -> BinaryKernel {
    using T = decltype(t);
    switch (op) {
#define FUSEFLOW_BINARY_KERNEL(e, symbol, precedence, cls, wraps, function) \
  case BinaryOp::e: return binary_kernel_of<function, BinaryClass::cls, T>();
      FUSEFLOW_BINARY_OPS(FUSEFLOW_BINARY_KERNEL)
#undef FUSEFLOW_BINARY_KERNEL
    }
    return nullptr;
  });
  if (!k) not_applicable(std::string("operator ") + binary_symbol(op), operation);
  return k;
}

ScalarType unary_operand_type(UnaryOp op, ScalarType a) {
  switch (unary_info(op).op_class) {
    case UnaryClass::Logical: return ScalarType::Bool;
    case UnaryClass::Arithmetic: return Type(a).is_floating() ? a : integer_promotion(a);
    case UnaryClass::Integral:
      if (!Type(a).is_integral()) not_applicable(std::string("operator ") + unary_symbol(op), a);
      return integer_promotion(a);
  }
  return a;
}

UnaryKernel unary_kernel(UnaryOp op, ScalarType operation) {
  UnaryKernel k = with_operation_type<UnaryKernel>(operation, [op](auto t) -> UnaryKernel {
    using T = decltype(t);
    switch (op) {
#define FUSEFLOW_UNARY_KERNEL(e, symbol, cls, wraps, function) \
  case UnaryOp::e: return unary_kernel_of<function, T>();
      FUSEFLOW_UNARY_OPS(FUSEFLOW_UNARY_KERNEL)
#undef FUSEFLOW_UNARY_KERNEL
    }
    return nullptr;
  });
  if (!k) not_applicable(std::string("operator ") + unary_symbol(op), operation);
  return k;
}

MathKernel math_kernel(MathFn fn, ScalarType operation) {
  MathKernel k = with_operation_type<MathKernel>(operation, [fn](auto t) -> MathKernel {
    using T = decltype(t);
    switch (fn) {
#define FUSEFLOW_MATH_KERNEL(e, name, arity, cls, cuda, function) \
  case MathFn::e: return math_kernel_of<function, arity, T>();
      FUSEFLOW_MATH_FNS(FUSEFLOW_MATH_KERNEL)
#undef FUSEFLOW_MATH_KERNEL
    }
    return nullptr;
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
  if (args.size() != math_info(fn).arity)
    throw GraphError(std::string(math_name(fn)) + " takes " + std::to_string(math_info(fn).arity) +
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
