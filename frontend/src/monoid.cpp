// Built-in and custom monoids. A built-in is generic until an op instantiates it for an
// element type; then its combine function and identity are spelled in the DSL itself, so
// the code generator and the CPU reference treat built-ins and custom monoids alike.
#include "fuseflow/frontend/monoid.hpp"

#include <limits>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {

const MonoidNode& Monoid::node() const {
  if (!node_) throw GraphError("use of an empty ff::Monoid");
  return *node_;
}

namespace {
const char* builtin_name(MonoidKind k) {
  switch (k) {
    case MonoidKind::Plus: return "plus";
    case MonoidKind::Times: return "times";
    case MonoidKind::Min: return "min";
    case MonoidKind::Max: return "max";
    case MonoidKind::LogicalAnd: return "logical_and";
    case MonoidKind::LogicalOr: return "logical_or";
    case MonoidKind::BitAnd: return "bit_and";
    case MonoidKind::BitOr: return "bit_or";
    case MonoidKind::BitXor: return "bit_xor";
    case MonoidKind::ArgMin: return "argmin";
    case MonoidKind::ArgMax: return "argmax";
    case MonoidKind::Custom: return "custom";
  }
  return "?";
}

// The largest (or lowest) value of a scalar type; infinities for floats.
Value extreme(ScalarType s, bool largest) {
  switch (s) {
    case ScalarType::F32:
      return Value(largest ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
    case ScalarType::F64:
      return Value(largest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
    case ScalarType::Bool: return Value(largest);
    default: break;
  }
  Type t(s);
  int bits = static_cast<int>(scalar_size(s)) * 8;
  if (t.is_unsigned_integer()) return Value::from_uint(s, largest ? ~std::uint64_t{0} : 0);
  std::uint64_t max_signed = (std::uint64_t{1} << (bits - 1)) - 1;
  return largest ? Value::from_uint(s, max_signed) : Value::from_uint(s, max_signed + 1);
}

[[noreturn]] void not_applicable(const std::string& op, MonoidKind k, const Type& t, const std::string& needs) {
  throw GraphError(op + ": monoid " + builtin_name(k) + " needs " + needs + ", got " + t.name());
}
}  // namespace

Monoid Monoid::builtin(MonoidKind kind) {
  auto n = std::make_shared<MonoidNode>();
  n->kind = kind;
  n->name = builtin_name(kind);
  n->commutative = true;
  return Monoid(std::move(n));
}

Monoid Monoid::instantiate(const Type& t, const std::string& op) const {
  const MonoidNode& self = node();
  if (self.typed) {
    if (self.type != t)
      throw GraphError(op + ": monoid " + self.name + " is over " + self.type.name() + " but the elements are " + t.name());
    return *this;
  }
  auto n = std::make_shared<MonoidNode>(self);
  n->typed = true;
  n->type = t;
  Expr a = Expr::operand(0, t), b = Expr::operand(1, t);
  MonoidKind k = self.kind;
  if (k == MonoidKind::ArgMin || k == MonoidKind::ArgMax) {
    // (value, index) pairs; ties resolve to the lower index, so the result is the first
    // extreme element whatever the combine order.
    if (!t.is_tuple() || t.arity() != 2 || !t.fields()[0].is_scalar() || !t.fields()[1].is_integral() ||
        t.fields()[1].is_bool())
      not_applicable(op, k, t, "(value, index) pairs such as zip(x, index())");
    bool is_max = k == MonoidKind::ArgMax;
    Expr av = a[0], bv = b[0];  // one node each, so the kernel reads each field once
    Expr better = is_max ? bv > av : bv < av;
    Expr tie = bv == av;
    if (t.fields()[0].is_floating()) {
      // NaN propagates, as through min and max: it ranks above every value (below, for
      // argmin), so the result is the first NaN when there is one, whatever the order.
      Expr b_nan = bv != bv, a_nan = av != av;
      better = better || (b_nan && !a_nan);
      tie = tie || (b_nan && a_nan);
    }
    tie = tie && b[1] < a[1];
    n->combine = select(better || tie, b, a);
    n->identity = Value::tuple({extreme(t.fields()[0].scalar(), !is_max), extreme(t.fields()[1].scalar(), true)});
    return Monoid(std::move(n));
  }
  if (!t.is_scalar()) not_applicable(op, k, t, "a scalar element type (use a custom monoid for tuples)");
  ScalarType s = t.scalar();
  switch (k) {
    case MonoidKind::Plus:
    case MonoidKind::Times:
      if (t.is_bool()) not_applicable(op, k, t, "a numeric type (bool: use logical_or / logical_and)");
      n->combine = cast(t, k == MonoidKind::Plus ? a + b : a * b);
      n->identity = Value::from_int(s, k == MonoidKind::Plus ? 0 : 1);
      break;
    case MonoidKind::Min:
    case MonoidKind::Max:
      n->combine = cast(t, k == MonoidKind::Min ? fuseflow::min(a, b) : fuseflow::max(a, b));
      n->identity = extreme(s, k == MonoidKind::Min);
      break;
    case MonoidKind::LogicalAnd:
    case MonoidKind::LogicalOr:
      if (!t.is_bool()) not_applicable(op, k, t, "bool elements");
      n->combine = k == MonoidKind::LogicalAnd ? (a && b) : (a || b);
      n->identity = Value(k == MonoidKind::LogicalAnd);
      break;
    case MonoidKind::BitAnd:
    case MonoidKind::BitOr:
    case MonoidKind::BitXor:
      if (!t.is_integral()) not_applicable(op, k, t, "an integral type");
      n->combine = cast(t, k == MonoidKind::BitAnd ? (a & b) : k == MonoidKind::BitOr ? (a | b) : (a ^ b));
      n->identity = k == MonoidKind::BitAnd ? Value::from_uint(s, ~std::uint64_t{0}) : Value::from_uint(s, 0);
      break;
    default:
      break;
  }
  return Monoid(std::move(n));
}

Monoid Monoid::custom(std::string name, Type t, Expr combine, Value identity, bool is_commutative) {
  auto n = std::make_shared<MonoidNode>();
  n->kind = MonoidKind::Custom;
  n->name = std::move(name);
  n->typed = true;
  n->type = std::move(t);
  n->combine = std::move(combine);
  n->identity = std::move(identity);
  n->commutative = is_commutative;
  return Monoid(std::move(n));
}

namespace detail {

[[noreturn]] void throw_combine_arity(const std::string& name, int arity) {
  std::string who = "monoid" + (name.empty() ? std::string() : " " + name);
  if (arity < 0)
    throw GraphError(who + ": the combine function must be callable as combine(a, b) with two ff::Expr operands");
  throw GraphError(who + ": the combine function must take 2 arguments (a, b), it takes " + std::to_string(arity));
}

// Leaves a combine function may use: its operands and constants. An input or an op
// result inside a combine would make it depend on data it cannot see.
void check_combine_leaves(const std::string& who, const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Input:
      throw GraphError(who + ": the combine function uses input '" + e.node().name + "'; it may use only a, b and constants");
    case ExprKind::Param:
      throw GraphError(who + ": the combine function uses parameter '" + e.node().name + "'; it may use only a, b and constants");
    case ExprKind::Index:
    case ExprKind::Result:
      throw GraphError(who + ": the combine function may use only a, b and constants");
    default:
      for (const auto& a : e.args()) check_combine_leaves(who, a);
  }
}

Monoid trace_monoid(std::string name, const Type& t, const Expr& combine_result, const Expr& identity,
                    Commutativity c) {
  std::string who = "monoid" + (name.empty() ? std::string() : " " + name);
  if (!combine_result.valid()) throw GraphError(who + ": the combine function returned an empty ff::Expr");
  if (combine_result.type() != t)
    throw GraphError(who + ": the combine function returns " + combine_result.type().name() +
                     " but the monoid is over " + t.name() + " (use ff::cast for narrowing)");
  check_combine_leaves(who, combine_result);
  if (!identity.valid()) throw GraphError(who + ": the identity is an empty ff::Expr");
  if (identity.type() != t)
    throw GraphError(who + ": the identity has type " + identity.type().name() + " but the monoid is over " + t.name());
  Value id = evaluate_constant(identity);
  return Monoid::custom(name.empty() ? "custom" : std::move(name), t, combine_result, id,
                        c == Commutativity::Commutative);
}

}  // namespace detail
}  // namespace fuseflow
