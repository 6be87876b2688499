// Built-in and custom monoids. A built-in is generic until an op instantiates it for an
// element type; then its combine function and identity are spelled in the DSL itself, so
// the code generator and the CPU reference treat built-ins and custom monoids alike.
#include "fuseflow/frontend/monoid.hpp"

#include <cstring>
#include <limits>
#include <mutex>
#include <string_view>
#include <vector>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {

const MonoidNode& Monoid::node() const {
  if (!node_) throw GraphError("use of an empty ff::Monoid");
  return *node_;
}

namespace {

// The largest (or lowest) value of a scalar type; infinities for floats.
Value extreme(ScalarType s, bool largest) {
  const ScalarInfo& info = scalar_info(s);
  if (info.is_floating()) {
    const double infinity = std::numeric_limits<double>::infinity();
    return Value::from_double(s, largest ? infinity : -infinity);
  }
  if (info.kind == ScalarKind::Logical) return Value(largest);
  int bits = static_cast<int>(info.size) * 8;
  if (info.is_unsigned_integer()) return Value::from_uint(s, largest ? ~std::uint64_t{0} : 0);
  std::uint64_t max_signed = (std::uint64_t{1} << (bits - 1)) - 1;
  return largest ? Value::from_uint(s, max_signed) : Value::from_uint(s, max_signed + 1);
}

Value identity_of(MonoidIdentity id, ScalarType s) {
  switch (id) {
    case MonoidIdentity::Zero: return Value::from_int(s, 0);
    case MonoidIdentity::One: return Value::from_int(s, 1);
    case MonoidIdentity::AllOnes: return Value::from_uint(s, ~std::uint64_t{0});
    case MonoidIdentity::Largest: return extreme(s, true);
    case MonoidIdentity::Lowest: return extreme(s, false);
  }
  throw InternalError("unknown monoid identity");
}

[[noreturn]] void not_applicable(const std::string& op, MonoidKind k, const Type& t, const std::string& needs) {
  throw GraphError(op + ": monoid " + builtin_monoid_info(k).name + " needs " + needs + ", got " + t.name());
}

// Checks that a built-in applies to element type t.
void require_elements(const std::string& op, MonoidKind k, const Type& t) {
  const MonoidElements e = builtin_monoid_info(k).elements;
  if (e == MonoidElements::ValueIndex) {
    if (!t.is_tuple() || t.arity() != 2 || !t.fields()[0].is_scalar() || !t.fields()[1].is_integral() ||
        t.fields()[1].is_bool())
      not_applicable(op, k, t, "(value, index) pairs such as zip(x, index())");
    return;
  }
  if (!t.is_scalar()) not_applicable(op, k, t, "a scalar element type (use a custom monoid for tuples)");
  if (e == MonoidElements::Numeric && t.is_bool())
    not_applicable(op, k, t, "a numeric type (bool: use logical_or / logical_and)");
  if (e == MonoidElements::Bool && !t.is_bool()) not_applicable(op, k, t, "bool elements");
  if (e == MonoidElements::Integral && !t.is_integral()) not_applicable(op, k, t, "an integral type");
}

// The combine function over operands a and b of type t, for each form of the table's
// combine column.
Expr combine_of(BinaryOp op, const Type& t, const Expr& a, const Expr& b) { return cast(t, Expr::binary(op, a, b)); }
Expr combine_of(MathFn fn, const Type& t, const Expr& a, const Expr& b) { return cast(t, Expr::call(fn, {a, b})); }
Expr combine_of(ArgBy by, const Type& t, const Expr& a, const Expr& b) {
  Expr av = a[0], bv = b[0];  // one node each, so the kernel reads each field once
  Expr better = Expr::binary(by.better, bv, av);
  Expr tie = bv == av;
  if (t.fields()[0].is_floating()) {
    // NaN propagates, as through min and max: it ranks above every value (below, for
    // argmin), so the result is the first NaN when there is one, whatever the order.
    Expr b_nan = bv != bv, a_nan = av != av;
    better = better || (b_nan && !a_nan);
    tie = tie || (b_nan && a_nan);
  }
  tie = tie && b[1] < a[1];
  return select(better || tie, b, a);
}

Expr builtin_combine(MonoidKind k, const Type& t, const Expr& a, const Expr& b) {
  switch (k) {
#define FUSEFLOW_MONOID_COMBINE(e, name, combine, ...) \
  case MonoidKind::e: return combine_of(combine, t, a, b);
    FUSEFLOW_BUILTIN_MONOIDS(FUSEFLOW_MONOID_COMBINE)
#undef FUSEFLOW_MONOID_COMBINE
    case MonoidKind::Custom: break;
  }
  throw InternalError("a custom monoid has no built-in combine function");
}

}  // namespace

Monoid Monoid::builtin(MonoidKind kind) {
  if (kind == MonoidKind::Custom)
    throw GraphError("Monoid::builtin: Custom is not a built-in monoid; make a custom one with ff::monoid");
  auto n = std::make_shared<MonoidNode>();
  n->kind = kind;
  n->name = builtin_monoid_info(kind).name;
  n->commutative = true;
  return Monoid(std::move(n));
}

namespace {

// Built-ins instantiated so far, by (kind, element type): a generic built-in's typed form
// depends on nothing else, and nodes are immutable, so every op over that type shares one
// (a program rebuilt in a loop traces argmax's combine once, not per build). Bounded: past
// kMost the rest are made per call, as before.
class Instantiated {
 public:
  std::shared_ptr<const MonoidNode> find(MonoidKind kind, const Type& t) {
    std::lock_guard lock(mutex_);
    for (const auto& [k, type, node] : entries_)
      if (k == kind && type == t) return node;
    return nullptr;
  }
  void add(MonoidKind kind, const Type& t, std::shared_ptr<const MonoidNode> node) {
    std::lock_guard lock(mutex_);
    if (entries_.size() < kMost) entries_.push_back({kind, t, std::move(node)});
  }

 private:
  static constexpr std::size_t kMost = 64;
  struct Entry {
    MonoidKind kind;
    Type type;
    std::shared_ptr<const MonoidNode> node;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

Instantiated& instantiated() {
  static Instantiated* cache = new Instantiated;  // never destroyed: used until exit
  return *cache;
}

}  // namespace

Monoid Monoid::instantiate(const Type& t, const std::string& op) const {
  const MonoidNode& self = node();
  if (self.typed) {
    if (self.type != t)
      throw GraphError(op + ": monoid " + self.name + " is over " + self.type.name() + " but the elements are " + t.name());
    return *this;
  }
  require_elements(op, self.kind, t);
  if (std::shared_ptr<const MonoidNode> known = instantiated().find(self.kind, t)) return Monoid(std::move(known));
  auto n = std::make_shared<MonoidNode>(self);
  n->typed = true;
  n->type = t;
  n->combine = builtin_combine(self.kind, t, Expr::operand(0, t), Expr::operand(1, t));
  const MonoidIdentity id = builtin_monoid_info(self.kind).identity;
  if (t.is_tuple())  // (value, index): the value's identity, and the largest index
    n->identity = Value::tuple(
        {identity_of(id, t.fields()[0].scalar()), identity_of(MonoidIdentity::Largest, t.fields()[1].scalar())});
  else
    n->identity = identity_of(id, t.scalar());
  instantiated().add(self.kind, t, n);
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

namespace {
// The value of a constant expression: literals and tuples of them directly (an identity
// is nearly always one), anything else by the CPU reference.
Value folded(const Expr& e) {
  if (e.kind() == ExprKind::Constant) return e.node().constant;
  if (e.kind() == ExprKind::MakeTuple) {
    std::vector<Value> fields;
    fields.reserve(e.args().size());
    for (const Expr& a : e.args()) fields.push_back(folded(a));
    return Value::tuple(std::move(fields));
  }
  return evaluate_constant(e);
}
}  // namespace

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
  Value id = folded(identity);
  return Monoid::custom(name.empty() ? "custom" : std::move(name), t, combine_result, id,
                        c == Commutativity::Commutative);
}

Monoid reuse_traced(const Monoid& last, const std::string& name, const Type& t, const Expr& identity,
                    Commutativity c) {
  if (!last.valid() || !identity.valid()) return {};
  const MonoidNode& n = last.node();
  if (n.commutative != (c == Commutativity::Commutative) || n.type != t || identity.type() != t ||
      n.name != (name.empty() ? std::string_view("custom") : std::string_view(name)))
    return {};
  // The identity's value, bit for bit (-0.0 is not 0.0).
  const Value id = folded(identity);
  const std::size_t bytes = t.size();
  unsigned char small[2][64] = {};
  std::vector<unsigned char> big[2];
  unsigned char* a = small[0];
  unsigned char* b = small[1];
  if (bytes > sizeof small[0]) {
    big[0].resize(bytes);
    big[1].resize(bytes);
    a = big[0].data();
    b = big[1].data();
  }
  id.to_bytes(a);
  n.identity.to_bytes(b);
  return std::memcmp(a, b, bytes) == 0 ? last : Monoid();
}

}  // namespace detail
}  // namespace fuseflow
