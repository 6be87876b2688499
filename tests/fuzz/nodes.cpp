// The scalar types, the static analysis of a node (a bound on |value|, a bound on the
// rounding error of the narrow computation, and whether the value is exact) and the node
// constructors that compute it (program_generator.hpp says what each means).
#include <algorithm>
#include <cmath>
#include <limits>

#include "fuzz/fuzz_detail.hpp"

namespace fuseflow::fuzz::detail {

bool is_float(ScalarType t) { return t == ScalarType::F32 || t == ScalarType::F64; }
bool is_unsigned(ScalarType t) { return t == ScalarType::U32 || t == ScalarType::U64 || t == ScalarType::Bool; }
bool is_int(ScalarType t) { return !is_float(t) && t != ScalarType::Bool; }

double ulp(ScalarType t) {
  if (t == ScalarType::F32) return 0x1p-23;
  if (t == ScalarType::F64) return 0x1p-52;
  return 0;
}

double type_max(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 1;
    case ScalarType::I32: return 2147483648.0;
    case ScalarType::U32: return 4294967295.0;
    case ScalarType::I64: return 9.3e18;
    case ScalarType::U64: return 1.85e19;
    case ScalarType::F32: return 3.4e38;
    case ScalarType::F64: return 1.7e308;
    default: return 9.3e18;
  }
}

ScalarType widen(ScalarType t, Mode m) { return m == Mode::Wide && t == ScalarType::F32 ? ScalarType::F64 : t; }
Type widen(const Type& t, Mode m) {
  if (t.is_scalar()) return widen(t.scalar(), m);
  std::vector<Type> fields;
  for (const auto& f : t.fields()) fields.push_back(widen(f, m));
  return Type::tuple(std::move(fields));
}
Value widen(const Value& v, Mode m) {
  if (m == Mode::Wide && v.type().is_scalar() && v.type().scalar() == ScalarType::F32)
    return Value(static_cast<double>(v.as_float()));
  return v;
}

ScalarType st(const NodeRef& n) { return n->type.scalar(); }

// Rounding error converting `a` to `to` (0 when the conversion is exact for every value
// `a` can take).
double conv_err(const Node& a, ScalarType to) {
  ScalarType from = a.type.scalar();
  if (from == to || !is_float(to)) return 0;
  if (!is_float(from)) {
    double limit = to == ScalarType::F32 ? 0x1p24 : 0x1p53;
    return a.bound <= limit ? 0 : ulp(to) * a.bound;
  }
  if (from == ScalarType::F64 && to == ScalarType::F32) return ulp(ScalarType::F32) * a.bound;
  return 0;  // f32 -> f64
}

// Exact after conversion: the same bits on both sides and the same real value when wide.
// f64 -> f32 is never exact in that sense (the wide program does not round).
bool exact_conv(const Node& a, ScalarType to) {
  if (!a.exact) return false;
  ScalarType from = a.type.scalar();
  if (from == ScalarType::F64 && to == ScalarType::F32) return a.bound == 0;
  return conv_err(a, to) == 0;
}

double conv_bound(const Node& a, ScalarType to) {
  ScalarType from = a.type.scalar();
  if (is_float(to)) return a.bound;
  if (!is_float(from) && is_unsigned(to) && !is_unsigned(from)) return type_max(to);  // may be negative: wraps
  return std::min(a.bound, type_max(to));
}

// Sets the node's error as an absolute and a relative part (its bound must be set).
// Both values lie within the bound, so they never differ by more than twice it.
void set_err(Node& n, double abs_part, double rel_part) {
  n.abs_err = abs_part;
  n.rel_err = rel_part;
  n.error = abs_part + (rel_part > 0 ? rel_part * n.bound : 0);
  if (std::isfinite(n.bound) && n.error > 2 * n.bound) {
    n.abs_err = n.error = 2 * n.bound;
    n.rel_err = 0;
  }
}

// The error parts of `a` converted to `to`: a rounding conversion adds one ulp, relative.
struct Err {
  double abs = 0, rel = 0;
  double total(double bound) const { return abs + (rel > 0 ? rel * bound : 0); }
};
Err conv(const Node& a, ScalarType to) {
  return {a.abs_err, a.rel_err + (conv_err(a, to) > 0 ? ulp(to) : 0)};
}

std::shared_ptr<Node> fresh(NodeKind k, Type t) {
  auto n = std::make_shared<Node>();
  n->kind = k;
  n->type = std::move(t);
  return n;
}

bool any_reads_input(const std::vector<NodeRef>& args) {
  for (const auto& a : args)
    if (a->reads_input) return true;
  return false;
}

std::shared_ptr<Node> make_input(int k, const InputSpec& spec) {
  auto n = fresh(NodeKind::Input, spec.type);
  n->index = k;
  n->bound = std::max(std::fabs(spec.lo), std::fabs(spec.hi));
  n->reads_input = true;
  return n;
}

std::shared_ptr<Node> make_shift(const NodeRef& x, int k, const NodeRef& fill) {
  auto n = fresh(NodeKind::Shift, x->type);
  n->args = {x, fill};
  n->index = k;
  n->bound = std::max(x->bound, fill->bound);
  set_err(*n, std::max(x->abs_err, fill->abs_err), std::max(x->rel_err, fill->rel_err));
  n->exact = x->exact && fill->exact;
  n->reads_input = true;
  return n;
}

std::shared_ptr<Node> make_halved(const NodeRef& x, const NodeRef& index) {
  auto n = fresh(NodeKind::Gather, x->type);
  n->args = {x, make_binary(BinaryOp::Div, index, make_const(ScalarType::I64, 2))};
  n->bound = x->bound;
  set_err(*n, x->abs_err, x->rel_err);
  n->exact = x->exact;
  return n;
}

std::shared_ptr<Node> make_fill(const NodeRef& like, const NodeRef& value) {
  auto n = fresh(NodeKind::Fill, value->type);
  n->args = {like, value};
  n->bound = value->bound;
  set_err(*n, value->abs_err, value->rel_err);
  n->exact = value->exact;
  n->reads_input = true;
  return n;
}

std::shared_ptr<Node> make_index(std::int64_t count) {
  auto n = fresh(NodeKind::Index, ScalarType::I64);
  n->bound = static_cast<double>(std::max<std::int64_t>(count, 1));
  return n;
}

std::shared_ptr<Node> make_const(const Value& v) {
  auto n = fresh(NodeKind::Constant, v.type());
  n->constant = v;
  n->bound = v.type().is_bool() ? 1 : std::fabs(v.as_double());
  return n;
}

// A constant of scalar type t with (about) the value x.
std::shared_ptr<Node> make_const(ScalarType t, double x) {
  if (t == ScalarType::F32) return make_const(Value(static_cast<float>(x)));
  if (t == ScalarType::F64) return make_const(Value(x));
  if (t == ScalarType::Bool) return make_const(Value(x != 0));
  if (is_unsigned(t)) return make_const(Value::from_uint(t, static_cast<std::uint64_t>(std::max(0.0, x))));
  return make_const(Value::from_int(t, static_cast<std::int64_t>(x)));
}

std::shared_ptr<Node> make_param(int k, const ParamSpec& p) {
  auto n = fresh(NodeKind::Param, p.value.type());
  n->index = k;
  n->bound = std::fabs(p.value.as_double());
  return n;
}

std::shared_ptr<Node> make_unary(UnaryOp op, const NodeRef& a) {
  ScalarType s = st(a);
  ScalarType t = op == UnaryOp::Not ? ScalarType::Bool : is_float(s) ? s : integer_promotion(s);
  auto n = fresh(NodeKind::Unary, t);
  n->unary = op;
  n->args = {a};
  n->reads_input = a->reads_input;
  n->exact = a->exact;
  if (op == UnaryOp::Not) n->bound = 1;
  else if (op == UnaryOp::BitNot || is_unsigned(t)) n->bound = type_max(t);
  else n->bound = conv_bound(*a, t);
  if (is_float(t)) set_err(*n, a->abs_err, a->rel_err);
  return n;
}

bool is_compare(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

// `divisor_min`: for a float division, a lower bound on |divisor| (the generator divides
// only by constants or by abs(x) + 1).
std::shared_ptr<Node> make_binary(BinaryOp op, const NodeRef& a, const NodeRef& b, double divisor_min) {
  ScalarType sa = st(a), sb = st(b);
  ScalarType common = usual_arithmetic_conversion(sa, sb);
  ScalarType t = common;
  if (is_compare(op) || op == BinaryOp::And || op == BinaryOp::Or) t = ScalarType::Bool;
  if (op == BinaryOp::Shl || op == BinaryOp::Shr) t = integer_promotion(sa);
  auto n = fresh(NodeKind::Binary, t);
  n->binary = op;
  n->args = {a, b};
  n->reads_input = any_reads_input(n->args);
  if (t == ScalarType::Bool) {
    n->bound = 1;
    n->exact = is_compare(op) ? exact_conv(*a, common) && exact_conv(*b, common) : a->exact && b->exact;
    return n;
  }
  if (is_float(t)) {
    const Err ea = conv(*a, t), eb = conv(*b, t);
    const double ba = a->bound, bb = b->bound, u = ulp(t);
    n->exact = false;
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        n->bound = ba + bb;
        set_err(*n, ea.total(ba) + eb.total(bb), u);
        break;
      case BinaryOp::Mul:
        n->bound = ba * bb;
        set_err(*n, ea.abs * bb * (1 + eb.rel) + eb.abs * ba * (1 + ea.rel) + ea.abs * eb.abs,
                ea.rel + eb.rel + ea.rel * eb.rel + u);
        break;
      case BinaryOp::Div:
        n->bound = ba / divisor_min;
        set_err(*n, ea.abs / divisor_min + ba * eb.total(bb) / (divisor_min * divisor_min), ea.rel + u);
        break;
      default: break;
    }
    return n;
  }
  // Integers: exact; the bound is only used to tell whether a conversion to float rounds.
  double ba = conv_bound(*a, t), bb = conv_bound(*b, t), cap = type_max(t);
  switch (op) {
    case BinaryOp::Add: n->bound = std::min(cap, ba + bb); break;
    case BinaryOp::Sub: n->bound = is_unsigned(t) ? cap : std::min(cap, ba + bb); break;
    case BinaryOp::Mul: n->bound = std::min(cap, ba * bb); break;
    case BinaryOp::Div: n->bound = ba; break;
    case BinaryOp::Mod: n->bound = std::min(ba, bb); break;
    case BinaryOp::Shl: n->bound = std::min(cap, ba * std::ldexp(1.0, static_cast<int>(b->bound))); break;
    case BinaryOp::Shr: n->bound = conv_bound(*a, t); break;
    default: n->bound = cap; break;  // bitwise
  }
  return n;
}

std::shared_ptr<Node> make_select(const NodeRef& c, const NodeRef& a, const NodeRef& b) {
  ScalarType t = a->type == b->type ? st(a) : usual_arithmetic_conversion(st(a), st(b));
  auto n = fresh(NodeKind::Select, t);
  n->args = {c, a, b};
  n->reads_input = any_reads_input(n->args);
  n->exact = c->exact && exact_conv(*a, t) && exact_conv(*b, t);
  n->bound = std::max(conv_bound(*a, t), conv_bound(*b, t));
  const Err ea = conv(*a, t), eb = conv(*b, t);
  set_err(*n, std::max(ea.abs, eb.abs), std::max(ea.rel, eb.rel));
  return n;
}

std::shared_ptr<Node> make_call(MathFn fn, std::vector<NodeRef> args) {
  ScalarType common = st(args[0]);
  for (const auto& a : args) common = usual_arithmetic_conversion(common, st(a));
  ScalarType t;
  if (fn == MathFn::Min || fn == MathFn::Max) t = common;
  else if (fn == MathFn::Abs) t = is_float(st(args[0])) ? st(args[0]) : integer_promotion(st(args[0]));
  else t = common == ScalarType::F32 ? ScalarType::F32 : ScalarType::F64;
  auto n = fresh(NodeKind::Call, t);
  n->fn = fn;
  n->args = args;
  n->reads_input = any_reads_input(args);
  const Node& a = *args[0];
  const double ba = conv_bound(a, t), ea = conv(a, t).total(ba);
  const double lib = 8 * ulp(t);  // library functions: a few ulps on the device and the host
  switch (fn) {
    case MathFn::Min:
    case MathFn::Max:
    case MathFn::Abs: {
      n->exact = true;
      n->bound = 0;
      Err e;
      for (const auto& x : args) {
        n->exact = n->exact && exact_conv(*x, t);
        n->bound = std::max(n->bound, conv_bound(*x, t));
        const Err ex = conv(*x, t);
        e.abs = std::max(e.abs, ex.abs);
        e.rel = std::max(e.rel, ex.rel);
      }
      if (fn == MathFn::Abs && is_unsigned(t)) n->bound = conv_bound(a, t);
      if (is_float(t)) set_err(*n, e.abs, e.rel);
      return n;
    }
    case MathFn::Floor:
    case MathFn::Ceil:
    case MathFn::Round:
      n->exact = exact_conv(a, t);
      n->bound = ba + 1;
      set_err(*n, n->exact ? 0 : ea + 1, 0);
      return n;
    default: break;
  }
  n->exact = false;
  switch (fn) {
    case MathFn::Sqrt:  // of abs(x): |sqrt(x + d) - sqrt(x)| <= sqrt(|d|)
      n->bound = std::sqrt(ba);
      set_err(*n, std::sqrt(ea), lib);
      break;
    case MathFn::Exp:  // of x in [-4, 4]: exp(x + d) = exp(x) * exp(d), relative
      n->bound = std::exp(ba);
      set_err(*n, 0, ea * 1.01 + lib);
      break;
    case MathFn::Log:  // of abs(x) + 1 >= 1: |derivative| <= 1
      n->bound = std::log(std::max(ba, 1.0)) + 1e-6;
      set_err(*n, ea + lib, lib);
      break;
    case MathFn::Rsqrt:  // of abs(x) + 1 >= 1: |derivative| <= 1/2
      n->bound = 1;
      set_err(*n, 0.5 * ea, lib);
      break;
    case MathFn::Erf:
      n->bound = 1;
      set_err(*n, 1.13 * ea + lib, 0);
      break;
    default:  // sin, cos, tanh: |derivative| <= 1
      n->bound = 1;
      set_err(*n, ea + lib, 0);
      break;
  }
  return n;
}

std::shared_ptr<Node> make_cast(ScalarType to, const NodeRef& a) {
  auto n = fresh(NodeKind::Cast, to);
  n->args = {a};
  n->reads_input = a->reads_input;
  n->exact = exact_conv(*a, to);
  n->bound = conv_bound(*a, to);
  if (to == ScalarType::Bool) n->bound = 1;
  if (is_float(to)) {
    const Err e = conv(*a, to);
    set_err(*n, e.abs, e.rel);
  }
  return n;
}

std::shared_ptr<Node> make_tuple(std::vector<NodeRef> fields) {
  std::vector<Type> types;
  for (const auto& f : fields) types.push_back(f->type);
  auto n = fresh(NodeKind::Tuple, Type::tuple(std::move(types)));
  n->args = std::move(fields);
  n->reads_input = any_reads_input(n->args);
  for (const auto& f : n->args) n->exact = n->exact && f->exact;
  return n;
}

std::shared_ptr<Node> make_get(const NodeRef& t, int field) {
  auto n = fresh(NodeKind::Get, t->type.fields()[static_cast<std::size_t>(field)]);
  n->args = {t};
  n->index = field;
  n->reads_input = t->reads_input;
  n->exact = t->exact;
  n->bound = n->type.is_scalar() ? type_max(n->type.scalar()) : 0;
  return n;
}

// min(max(a, -limit), limit) (min(a, limit) for unsigned): bounds |a| by limit.
NodeRef clamp(const NodeRef& a, double limit) {
  ScalarType t = st(a);
  NodeRef lo = is_unsigned(t) ? a : NodeRef(make_call(MathFn::Max, {a, make_const(t, -limit)}));
  auto n = make_call(MathFn::Min, {lo, make_const(t, limit)});
  n->bound = std::min(a->bound, limit);
  // |x' - x| <= A + r|x|: below 2 * limit that is A + 2 r limit; above it (r small, A
  // below the limit) both saturate alike. Never more than the clamp's range.
  if (is_float(t)) set_err(*n, std::min({a->error, a->abs_err + 2 * a->rel_err * limit, 2 * limit}), 0);
  return n;
}

// Keeps float magnitudes bounded.
NodeRef tame(const NodeRef& a) {
  if (a->type.is_scalar() && is_float(st(a)) && a->bound > kFloatLimit) return clamp(a, kFloatLimit);
  return a;
}

}  // namespace fuseflow::fuzz::detail
