#pragma once
// Monoids: an associative combine function with an identity. The built-ins (plus, times,
// min, max, logical and/or, bitwise and/or/xor, argmin, argmax) are generic: they are
// instantiated for an element type when an op uses them, know their identity for that
// type, and are commutative. A custom monoid traces its combine lambda over two symbolic
// operands and says whether it is commutative; the DSL never assumes what it was not told.
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "fuseflow/frontend/expr.hpp"

namespace fuseflow {

// The built-in monoids, one row each: X(enum, name, combine, identity, elements).
//   combine   a . b: a BinaryOp or MathFn, its result cast back to the element type; or
//             ArgBy{op}: over (value, index) pairs, b wins when op(b.value, a.value), and
//             ties go to the lower index (the first extreme element, whatever the order)
//   identity  Zero, One, AllOnes, or Largest / Lowest (+inf / -inf for floats); for
//             (value, index) pairs, the value's, with the largest index
//   elements  what the element type must be: Numeric (not bool), Scalar, Bool, Integral,
//             ValueIndex ((value, index) pairs, the index an integer)
// Every built-in is commutative. The CPU reference runs the combine operator's host
// function (operators.hpp) in a typed loop.
#define FUSEFLOW_BUILTIN_MONOIDS(X)                             \
  X(Plus, "plus", BinaryOp::Add, Zero, Numeric)                 \
  X(Times, "times", BinaryOp::Mul, One, Numeric)                \
  X(Min, "min", MathFn::Min, Largest, Scalar)                   \
  X(Max, "max", MathFn::Max, Lowest, Scalar)                    \
  X(LogicalAnd, "logical_and", BinaryOp::And, One, Bool)        \
  X(LogicalOr, "logical_or", BinaryOp::Or, Zero, Bool)          \
  X(BitAnd, "bit_and", BinaryOp::BitAnd, AllOnes, Integral)     \
  X(BitOr, "bit_or", BinaryOp::BitOr, Zero, Integral)           \
  X(BitXor, "bit_xor", BinaryOp::BitXor, Zero, Integral)        \
  X(ArgMin, "argmin", ArgBy{BinaryOp::Lt}, Largest, ValueIndex) \
  X(ArgMax, "argmax", ArgBy{BinaryOp::Gt}, Lowest, ValueIndex)

enum class MonoidKind : std::uint8_t {
#define FUSEFLOW_MONOID_ENUM(e, ...) e,
  FUSEFLOW_BUILTIN_MONOIDS(FUSEFLOW_MONOID_ENUM)
#undef FUSEFLOW_MONOID_ENUM
  Custom,
};

// The combine of argmin / argmax: b replaces a when `better`(b's value, a's value).
struct ArgBy {
  BinaryOp better;
};
enum class MonoidIdentity : std::uint8_t { Zero, One, AllOnes, Largest, Lowest };
enum class MonoidElements : std::uint8_t { Numeric, Scalar, Bool, Integral, ValueIndex };

struct BuiltinMonoidInfo {
  MonoidKind kind;
  const char* name;
  MonoidIdentity identity;
  MonoidElements elements;
};

inline constexpr BuiltinMonoidInfo kBuiltinMonoids[] = {
#define FUSEFLOW_MONOID_ROW(e, name, combine, identity, elements) \
  {MonoidKind::e, name, MonoidIdentity::identity, MonoidElements::elements},
    FUSEFLOW_BUILTIN_MONOIDS(FUSEFLOW_MONOID_ROW)
#undef FUSEFLOW_MONOID_ROW
};

// The row of a built-in (not Custom).
constexpr const BuiltinMonoidInfo& builtin_monoid_info(MonoidKind k) {
  return kBuiltinMonoids[static_cast<std::size_t>(k)];
}
constexpr std::span<const BuiltinMonoidInfo> all_builtin_monoids() { return kBuiltinMonoids; }

enum class Commutativity : std::uint8_t { NonCommutative, Commutative };
inline constexpr Commutativity commutative = Commutativity::Commutative;
inline constexpr Commutativity non_commutative = Commutativity::NonCommutative;

struct MonoidNode {
  MonoidKind kind;
  std::string name;       // "plus", or the custom monoid's name
  bool typed = false;     // false for a generic built-in not yet instantiated
  Type type;              // element type, when typed
  Expr combine;           // over Expr::operand(0, type) and Expr::operand(1, type)
  Value identity;
  bool commutative = true;
};

class Monoid {
 public:
  Monoid() = default;
  static Monoid builtin(MonoidKind kind);
  // A custom monoid; checks that combine has type `t` and identity is of type `t`.
  static Monoid custom(std::string name, Type t, Expr combine, Value identity, bool commutative);

  // The monoid for element type `t`: instantiates a generic built-in (checking that it
  // applies to `t`), or checks that a typed monoid is over `t`. `op` names the caller for
  // error messages.
  Monoid instantiate(const Type& t, const std::string& op) const;

  const MonoidNode& node() const;
  bool valid() const { return node_ != nullptr; }
  MonoidKind kind() const { return node().kind; }
  const std::string& name() const { return node().name; }
  bool is_typed() const { return node().typed; }
  const Type& type() const { return node().type; }
  const Expr& combine() const { return node().combine; }
  const Value& identity() const { return node().identity; }
  bool is_commutative() const { return node().commutative; }
  bool is_builtin() const { return node().kind != MonoidKind::Custom; }

 private:
  explicit Monoid(std::shared_ptr<const MonoidNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const MonoidNode> node_;
};

// ff::min / ff::max are both the element-wise function (ff::max(a, b)) and the monoid
// (ff::reduce(x, ff::max)).
struct MinFn {
  Expr operator()(const Expr& a, const Expr& b) const { return Expr::call(MathFn::Min, {a, b}); }
  operator Monoid() const { return Monoid::builtin(MonoidKind::Min); }  // NOLINT
};
struct MaxFn {
  Expr operator()(const Expr& a, const Expr& b) const { return Expr::call(MathFn::Max, {a, b}); }
  operator Monoid() const { return Monoid::builtin(MonoidKind::Max); }  // NOLINT
};
inline constexpr MinFn min{};
inline constexpr MaxFn max{};
inline const Monoid plus = Monoid::builtin(MonoidKind::Plus);
inline const Monoid times = Monoid::builtin(MonoidKind::Times);
inline const Monoid logical_and = Monoid::builtin(MonoidKind::LogicalAnd);
inline const Monoid logical_or = Monoid::builtin(MonoidKind::LogicalOr);
inline const Monoid bit_and = Monoid::builtin(MonoidKind::BitAnd);
inline const Monoid bit_or = Monoid::builtin(MonoidKind::BitOr);
inline const Monoid bit_xor = Monoid::builtin(MonoidKind::BitXor);
inline const Monoid argmin = Monoid::builtin(MonoidKind::ArgMin);
inline const Monoid argmax = Monoid::builtin(MonoidKind::ArgMax);

namespace detail {
[[noreturn]] void throw_combine_arity(const std::string& name, int arity);
Monoid trace_monoid(std::string name, const Type& t, const Expr& combine_result,
                    const Expr& identity, Commutativity c);
// `last` if it was traced with this name, element type, identity (its value, bit for bit)
// and commutativity, else an invalid Monoid.
Monoid reuse_traced(const Monoid& last, const std::string& name, const Type& t, const Expr& identity,
                    Commutativity c);
template <class F>
Monoid make_monoid(std::string name, const Type& t, F&& combine, const Expr& identity,
                   Commutativity c) {
  if constexpr (std::is_invocable_v<F, Expr, Expr>) {
    if constexpr (std::is_empty_v<std::remove_cvref_t<F>>) {
      // A captureless combine (a lambda without captures) is one fixed function of its
      // operands: the monoid it traced last on this thread, one per lambda type, serves
      // again while the name, type, identity and commutativity repeat, so a program
      // rebuilt in a loop does not trace it again (and shares one MonoidNode, whose
      // structural key the Runtime keeps).
      thread_local Monoid last;
      if (Monoid again = reuse_traced(last, name, t, identity, c); again.valid()) return again;
      Expr result(combine(Expr::operand(0, t), Expr::operand(1, t)));
      last = trace_monoid(std::move(name), t, result, identity, c);
      return last;
    }
    Expr result(combine(Expr::operand(0, t), Expr::operand(1, t)));
    return trace_monoid(std::move(name), t, result, identity, c);
  } else if constexpr (std::is_invocable_v<F, Expr>) {
    throw_combine_arity(name, 1);
  } else if constexpr (std::is_invocable_v<F, Expr, Expr, Expr>) {
    throw_combine_arity(name, 3);
  } else {
    throw_combine_arity(name, -1);
  }
}
}  // namespace detail

// A custom monoid over T: ff::monoid<ff::Tuple<int,int>>(combine, identity, ff::non_commutative).
// combine(a, b) is traced once with symbolic a and b of type T and must return a T (a
// lambda without captures is traced once per thread while the arguments repeat, so it must
// not read state that changes between calls: capture such state instead); the
// identity must be a constant of type T. In debug builds (or after set_monoid_checks(true),
// settings.hpp) the first op to use it checks its laws on its elements
// (frontend/src/monoid_laws.hpp).
template <class T, class F>
Monoid monoid(F&& combine, const Expr& identity, Commutativity c, std::string name = "") {
  return detail::make_monoid(std::move(name), type_of<T>(), std::forward<F>(combine), identity, c);
}
template <class F>
Monoid monoid(const Type& t, F&& combine, const Expr& identity, Commutativity c,
              std::string name = "") {
  return detail::make_monoid(std::move(name), t, std::forward<F>(combine), identity, c);
}

}  // namespace fuseflow
