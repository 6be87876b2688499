#include "fuzz/program_generator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "catalog/catalog.hpp"

namespace fuseflow::fuzz {

namespace {

// ---- random numbers -------------------------------------------------------------------
// splitmix64: small, fast, and the same sequence on every platform.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(mix(seed)) {}
  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  std::int64_t range(std::int64_t lo, std::int64_t hi) {  // inclusive, in unsigned arithmetic (no overflow)
    std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    std::uint64_t off = span == ~std::uint64_t{0} ? next() : below(span + 1);
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + off);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(below(v.size()))];
  }
  // An index drawn with the given weights.
  std::size_t weighted(const std::vector<int>& weights) {
    int total = 0;
    for (int w : weights) total += w;
    auto r = static_cast<int>(below(static_cast<std::uint64_t>(total)));
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  std::uint64_t state_;
};

// ---- types and the static analysis ----------------------------------------------------

constexpr double kFloatLimit = 1e4;    // float magnitudes are clamped to this
constexpr double kIntClampLimit = 1e6; // float -> int casts clamp to this first
constexpr double kSumRelTol = 2e-5;    // float sums: relative to the sum of |terms|

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
std::shared_ptr<Node> make_binary(BinaryOp op, const NodeRef& a, const NodeRef& b, double divisor_min = 1) {
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

// The draw in [0, 1) that picks a seed's shape: a Weyl sequence, frac(seed x golden ratio)
// in 64-bit fixed point, rather than the PRNG. Consecutive seeds (the tests run base ..
// base + count - 1) then spread evenly over the shapes' weights, so even the 60 programs of
// the emulator run meet each shape about as often as its weight says; all else about a
// case comes from the PRNG.
double shape_draw(std::uint64_t seed) {
  return static_cast<double>((seed * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

bool is_array_op(OpKind k) {
  return k == OpKind::Histogram || k == OpKind::SegmentedReduce || k == OpKind::CountingSort || k == OpKind::Filter ||
         k == OpKind::SegmentedScan || k == OpKind::ScanByKey || k == OpKind::ReduceByKey;
}

bool is_by_key(OpKind k) { return k == OpKind::ScanByKey || k == OpKind::ReduceByKey; }
bool is_segmented(OpKind k) { return k == OpKind::SegmentedReduce || k == OpKind::SegmentedScan; }

// The shapes of the two groups (make_array_op_shape, make_shape) and their weights.
const std::vector<std::string> kArrayShapes = {"histogram",  "segmented_reduce", "counting_sort",
                                               "sort_by_key", "array_op_of_reduce", "filter",
                                               "segmented_scan", "scan_by_key",   "reduce_by_key"};
const std::vector<int> kArrayWeights = {6, 7, 5, 5, 5, 6, 6, 5, 6};
const std::vector<std::string> kOtherShapes = {"reduce",      "scan",          "filter_reduce",
                                               "two_reduces", "map_of_reduce", "reduce_of_reduce",
                                               "scan_of_reduce", "scan_and_reduce"};
const std::vector<int> kOtherWeights = {16, 16, 11, 10, 10, 10, 10, 10};

// ---- the generator ------------------------------------------------------------------

const std::vector<ScalarType> kTypes = {ScalarType::I32, ScalarType::I64, ScalarType::U32, ScalarType::F32,
                                        ScalarType::F64};
const std::vector<ScalarType> kIntTypes = {ScalarType::I32, ScalarType::I64, ScalarType::U32};
const std::vector<std::int64_t> kEdgeSizes = {0, 1, 31, 32, 33, 1000, 1023, 1025};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed), shape_draw_(shape_draw(seed)) { c_.seed = seed; }

  Case run() {
    pick_size();
    pick_inputs();
    make_shape();
    return std::move(c_);
  }

 private:
  // ---- sizes, inputs, parameters --------------------------------------------------
  void pick_size() {
    std::size_t k = rng_.weighted({45, 10, 45});
    if (k == 0) {
      c_.n = rng_.pick(kEdgeSizes);
    } else if (k == 1) {
      c_.n = rng_.pick(std::vector<std::int64_t>{4095, 4097, 65539, 1 << 20});
    } else {
      double e = 1 + rng_.uniform() * 19;  // log-uniform in [2, 2^20]
      c_.n = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::exp2(e)), 2, 1 << 20);
    }
  }

  void pick_inputs() {
    int count = static_cast<int>(rng_.range(1, 3));
    for (int k = 0; k < count; ++k) {
      InputSpec s;
      s.name = std::string(1, static_cast<char>('x' + k));  // x, y, z
      s.type = rng_.pick(kTypes);
      if (is_float(s.type)) {
        double r = rng_.pick(std::vector<double>{1, 10, 100});
        std::size_t shape = rng_.weighted({6, 2, 2});
        s.lo = shape == 1 ? r / 2 : -r;  // shape 1: positive only
        s.hi = r;
        s.integral_values = shape == 2;
      } else {
        double r = rng_.pick(std::vector<double>{3, 100, 1000, 1e6, type_max(s.type) / 2});
        if (s.type == ScalarType::I32 || s.type == ScalarType::U32) r = std::min(r, 2.0e9);
        s.lo = is_unsigned(s.type) ? 0 : -r;
        s.hi = r;
      }
      c_.inputs.push_back(s);
      leaves_.push_back(make_input(k, s));
    }
    index_ = make_index(c_.n);
    if (rng_.chance(0.3)) {
      ParamSpec p;
      p.name = "t";
      std::size_t k = rng_.weighted({1, 1, 1});
      if (k == 0) p.value = Value(static_cast<std::int32_t>(rng_.range(-50, 50)));
      else if (k == 1) p.value = Value(static_cast<float>(rng_.range(-16, 16)) / 8.0f);
      else p.value = Value(static_cast<double>(rng_.range(-16, 16)) / 4.0);
      c_.params.push_back(p);
      params_.push_back(make_param(0, p));
    }
  }

  // ---- leaves -------------------------------------------------------------------------
  NodeRef input_leaf() { return leaves_[static_cast<std::size_t>(rng_.below(leaves_.size()))]; }

  NodeRef constant_leaf() {
    ScalarType t = rng_.pick(kTypes);
    if (is_float(t)) return make_const(t, static_cast<double>(rng_.range(-64, 64)) / 8.0);
    if (is_unsigned(t)) return make_const(t, static_cast<double>(rng_.range(0, 20)));
    return make_const(t, static_cast<double>(rng_.range(-20, 20)));
  }

  NodeRef leaf(bool exact) {
    std::vector<NodeRef> extra;
    for (const auto& s : scalars_)
      if (!exact || s->exact) extra.push_back(s);
    std::size_t k = rng_.weighted({8, 1, params_.empty() ? 0 : 2, extra.empty() ? 0 : 4, 3});
    switch (k) {
      case 0: return input_leaf();
      case 1: return index_;
      case 2: return rng_.pick(params_);
      case 3: return rng_.pick(extra);
      default: return constant_leaf();
    }
  }

  // ---- expressions --------------------------------------------------------------------
  // A float version of a (exact stays exact where the conversion allows).
  NodeRef to_float(const NodeRef& a) {
    if (is_float(st(a))) return a;
    ScalarType t = a->bound <= 0x1p24 && rng_.chance(0.5) ? ScalarType::F32 : ScalarType::F64;
    return make_cast(t, a);
  }

  // An integer version of an exact a: floats are clamped, then cast.
  NodeRef to_int(const NodeRef& a, ScalarType t) {
    if (st(a) == t) return a;
    if (a->type.is_bool() || is_int(st(a))) return make_cast(t, a);
    if (!a->exact) return make_cast(t, input_as_int());  // cannot happen by construction
    double lo = is_unsigned(t) ? 0 : -kIntClampLimit;
    NodeRef c = make_call(MathFn::Min, {make_call(MathFn::Max, {a, make_const(st(a), lo)}),
                                        make_const(st(a), kIntClampLimit)});
    auto n = make_cast(t, c);
    n->bound = kIntClampLimit;
    return n;
  }

  NodeRef input_as_int() {
    for (const auto& l : leaves_)
      if (is_int(st(l))) return l;
    return make_cast(ScalarType::I32, make_call(MathFn::Min, {make_call(MathFn::Max, {leaves_[0], make_const(st(leaves_[0]), -1e6)}),
                                                              make_const(st(leaves_[0]), 1e6)}));
  }

  // a converted to t (t numeric); an inexact float never becomes an integer.
  NodeRef coerce(const NodeRef& a, ScalarType t) {
    if (st(a) == t) return a;
    if (is_int(t) && is_float(st(a))) return a->exact ? to_int(a, t) : to_int(input_leaf_exact_int(), t);
    return make_cast(t, a);
  }

  NodeRef input_leaf_exact_int() { return input_as_int(); }

  // Two operands; when `exact`, both convert exactly to their common type.
  std::pair<NodeRef, NodeRef> pair(int depth, bool exact) {
    NodeRef a = number(depth, exact), b = number(depth, exact);
    if (exact) {
      ScalarType common = usual_arithmetic_conversion(st(a), st(b));
      if (!exact_conv(*a, common) || !exact_conv(*b, common)) b = similar_constant(a);
    }
    return {a, b};
  }

  // A constant of a's type inside a's range (a threshold that splits its values).
  NodeRef similar_constant(const NodeRef& a) {
    ScalarType t = st(a);
    double span = std::min(a->bound, 1e6);
    double x = (rng_.uniform() * 2 - 1) * span;
    if (is_unsigned(t)) x = std::fabs(x);
    if (is_float(t)) x = std::round(x * 8) / 8;
    return make_const(t, x);
  }

  NodeRef number(int depth, bool exact) {
    if (depth <= 0 || rng_.chance(0.2)) return leaf(exact);
    // arith, divide, bitwise, unary, min/max, select, cast, math
    std::size_t k = rng_.weighted({30, 8, 8, 8, 10, 10, 8, exact ? 3 : 14});
    NodeRef out;
    switch (k) {
      case 0: {  // + - *
        BinaryOp op = rng_.pick(std::vector<BinaryOp>{BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul});
        if (exact) {
          out = make_binary(op, integer(depth - 1), integer(depth - 1));
        } else {
          NodeRef a = number(depth - 1, false), b = number(depth - 1, false);
          out = make_binary(op, a, b);
        }
        break;
      }
      case 1: out = divide(depth, exact); break;
      case 2: out = bitwise(depth); break;
      case 3: out = make_unary(UnaryOp::Neg, number(depth - 1, exact)); break;
      case 4: {
        auto [a, b] = pair(depth - 1, exact);
        out = rng_.chance(0.2) ? make_call(MathFn::Abs, {a}) : make_call(rng_.chance(0.5) ? MathFn::Min : MathFn::Max, {a, b});
        break;
      }
      case 5: {
        NodeRef c = boolean(depth - 1);
        auto [a, b] = pair(depth - 1, exact);
        out = make_select(c, a, b);
        break;
      }
      case 6: out = cast(depth, exact); break;
      default: out = math(depth, exact); break;
    }
    return tame(out);
  }

  NodeRef integer(int depth) {
    NodeRef a = number(depth, true);
    if (is_float(st(a))) return to_int(a, rng_.pick(kIntTypes));
    return a;
  }

  NodeRef divide(int depth, bool exact) {
    if (exact || rng_.chance(0.4)) {
      NodeRef a = integer(depth - 1);
      ScalarType t = st(a);
      std::vector<double> divisors = is_unsigned(t) ? std::vector<double>{2, 3, 5, 7, 10, 16}
                                                    : std::vector<double>{2, 3, 5, 7, 10, 16, -3, -7};
      NodeRef d = make_const(t, rng_.pick(divisors));
      return make_binary(rng_.chance(0.5) ? BinaryOp::Div : BinaryOp::Mod, a, d);
    }
    NodeRef a = to_float(number(depth - 1, false));
    ScalarType t = st(a);
    if (rng_.chance(0.5)) {
      double c = rng_.pick(std::vector<double>{2, -4, 0.5, 10, 3});
      return make_binary(BinaryOp::Div, a, make_const(t, c), std::fabs(c));
    }
    NodeRef b = to_float(number(depth - 1, false));
    NodeRef denominator = make_binary(BinaryOp::Add, make_call(MathFn::Abs, {b}), make_const(st(b), 1));
    return make_binary(BinaryOp::Div, a, denominator, 1);
  }

  NodeRef bitwise(int depth) {
    NodeRef a = integer(depth - 1);
    std::size_t k = rng_.weighted({3, 2, 1});
    if (k == 0) {
      BinaryOp op = rng_.pick(std::vector<BinaryOp>{BinaryOp::BitAnd, BinaryOp::BitOr, BinaryOp::BitXor});
      return make_binary(op, a, integer(depth - 1));
    }
    if (k == 1) {
      auto amount = make_const(ScalarType::I32, static_cast<double>(rng_.range(0, 7)));
      return make_binary(rng_.chance(0.5) ? BinaryOp::Shl : BinaryOp::Shr, a, amount);
    }
    return make_unary(UnaryOp::BitNot, a);
  }

  NodeRef cast(int depth, bool exact) {
    NodeRef a = number(depth - 1, exact);
    std::vector<ScalarType> targets;
    for (ScalarType t : kTypes) {
      if (t == st(a)) continue;
      if (is_int(t) && is_float(st(a)) && !a->exact) continue;  // inexact floats never become integers
      if (exact && is_float(t) && !exact_conv(*a, t)) continue;
      targets.push_back(t);
    }
    if (targets.empty()) return a;
    ScalarType t = rng_.pick(targets);
    if (is_int(t) && is_float(st(a))) return to_int(a, t);
    return make_cast(t, a);
  }

  NodeRef math(int depth, bool exact) {
    if (exact) {
      NodeRef a = number(depth - 1, true);
      if (!is_float(st(a))) return a;
      return make_call(rng_.pick(std::vector<MathFn>{MathFn::Floor, MathFn::Ceil, MathFn::Round}), {a});
    }
    NodeRef a = to_float(number(depth - 1, false));
    ScalarType t = st(a);
    auto plus_one = [&](const NodeRef& x) { return make_binary(BinaryOp::Add, make_call(MathFn::Abs, {x}), make_const(t, 1)); };
    switch (rng_.weighted({2, 2, 2, 2, 2, 2, 1, 1, 1})) {
      case 0: return make_call(MathFn::Sqrt, {make_call(MathFn::Abs, {a})});
      case 1: return make_call(MathFn::Exp, {clamp(a, 4)});
      case 2: return make_call(MathFn::Log, {plus_one(a)});
      case 3: return make_call(MathFn::Sin, {a});
      case 4: return make_call(MathFn::Cos, {a});
      case 5: return make_call(MathFn::Tanh, {a});
      case 6: return make_call(MathFn::Erf, {a});
      case 7: return make_call(MathFn::Rsqrt, {plus_one(a)});
      default: return a->exact ? NodeRef(make_call(MathFn::Floor, {a})) : NodeRef(make_call(MathFn::Sin, {a}));
    }
  }

  // An exact bool: comparisons of exact operands, && || !.
  NodeRef boolean(int depth) {
    std::size_t k = depth <= 0 ? 0 : rng_.weighted({6, 2, 1});
    if (k == 0) {
      NodeRef a = number(std::max(0, depth - 1), true);
      NodeRef b = rng_.chance(0.6) ? similar_constant(a) : number(std::max(0, depth - 1), true);
      ScalarType common = usual_arithmetic_conversion(st(a), st(b));
      if (!exact_conv(*a, common) || !exact_conv(*b, common)) b = similar_constant(a);
      BinaryOp op = rng_.pick(std::vector<BinaryOp>{BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge,
                                                     BinaryOp::Eq, BinaryOp::Ne});
      if ((op == BinaryOp::Eq || op == BinaryOp::Ne) && is_int(st(a)) && rng_.chance(0.5)) {
        // (a & 1) == 0 style: equalities that hold for a useful share of the elements
        NodeRef masked = make_binary(BinaryOp::BitAnd, a, make_const(st(a), static_cast<double>(rng_.range(1, 3))));
        return make_binary(op, masked, make_const(st(masked), 0));
      }
      return make_binary(op, a, b);
    }
    if (k == 1)
      return make_binary(rng_.chance(0.5) ? BinaryOp::And : BinaryOp::Or, boolean(depth - 1), boolean(depth - 1));
    return make_unary(UnaryOp::Not, boolean(depth - 1));
  }

  // The node combined with an input, so that it is an array.
  NodeRef ensure_input(const NodeRef& a) {
    if (a->reads_input) return a;
    NodeRef x = input_leaf();
    if (a->type.is_bool()) {
      NodeRef cmp = make_binary(BinaryOp::Ge, x, similar_constant(x));
      return make_binary(rng_.chance(0.5) ? BinaryOp::And : BinaryOp::Or, a, cmp);
    }
    ScalarType t = st(a);
    return make_call(rng_.chance(0.5) ? MathFn::Min : MathFn::Max, {a, coerce(x, t)});
  }

  int depth() { return static_cast<int>(rng_.range(1, 4)); }

  // ---- ops ------------------------------------------------------------------------------
  MonoidChoice pick_monoid(bool scan) {
    (void)scan;
    static const std::vector<MonoidChoice> all = {MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max,
                                                  MonoidChoice::ArgMin, MonoidChoice::ArgMax, MonoidChoice::Times,
                                                  MonoidChoice::LogicalOr, MonoidChoice::Mssp, MonoidChoice::Matmul};
    return all[rng_.weighted({25, 10, 10, 8, 8, 6, 8, 10, 8})];
  }

  NodeRef values_for(MonoidChoice m) {
    int d = depth();
    switch (m) {
      case MonoidChoice::Plus: return ensure_input(number(d, rng_.chance(0.3)));
      case MonoidChoice::Min:
      case MonoidChoice::Max:
      case MonoidChoice::ArgMin:
      case MonoidChoice::ArgMax: return ensure_input(number(d, rng_.chance(0.6)));
      case MonoidChoice::Times: {
        // (v & 3) | 1: odd factors, so the wrapped product never collapses to 0
        NodeRef v = ensure_input(integer(d));
        ScalarType t = st(v);
        return make_binary(BinaryOp::BitOr, make_binary(BinaryOp::BitAnd, v, make_const(t, 3)), make_const(t, 1));
      }
      case MonoidChoice::LogicalOr: return ensure_input(boolean(d));
      case MonoidChoice::Mssp: return clamp(coerce(ensure_input(integer(d)), ScalarType::I32), 1000);
      case MonoidChoice::Matmul: {
        std::vector<NodeRef> fields;
        for (int i = 0; i < 4; ++i) {
          NodeRef v = coerce(ensure_input(integer(std::max(1, d - 1))), ScalarType::I32);
          fields.push_back(make_binary(BinaryOp::Mod, v, make_const(ScalarType::I32, 3)));  // [-2, 2]
        }
        return make_tuple(std::move(fields));
      }
    }
    return input_leaf();
  }

  // The element type a monoid reduces over these values: what the result is.
  static bool value_is_float(const OpDesc& op) {
    return op.values->type.is_scalar() && is_float(op.values->type.scalar());
  }

  Strategy reduce_strategy(const OpDesc& op) {
    const Type& t = op.values->type;
    bool atomic_ok = t.is_scalar() && !t.is_bool() &&
                     (op.monoid == MonoidChoice::Plus ||
                      ((op.monoid == MonoidChoice::Min || op.monoid == MonoidChoice::Max) && is_int(t.scalar())));
    std::size_t k = rng_.weighted({35, 20, 20, is_commutative(op.monoid) ? 15 : 0, atomic_ok ? 10 : 0});
    return std::vector<Strategy>{Strategy::Automatic, Strategy::Staged, Strategy::Tree, Strategy::Chunked,
                                 Strategy::Atomic}[k];
  }

  OpDesc reduce_op(bool filtered, std::vector<MonoidChoice> only = {}) {
    OpDesc op;
    op.kind = OpKind::Reduce;
    op.monoid = only.empty() ? pick_monoid(false) : rng_.pick(only);
    op.values = values_for(op.monoid);
    if (filtered) op.predicate = ensure_input(boolean(depth()));
    op.strategy = reduce_strategy(op);
    return op;
  }

  OpDesc scan_op() {
    OpDesc op;
    op.kind = OpKind::Scan;
    op.monoid = pick_monoid(true);
    op.values = values_for(op.monoid);
    op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
    op.strategy = std::vector<Strategy>{Strategy::Automatic, Strategy::Lookback, Strategy::ReduceThenScan}[rng_.weighted({4, 3, 3})];
    return op;
  }

  // A reduction whose scalar result later maps read (plus, min or max over numbers), and
  // the Scalar leaf for it (clamped: an empty min is the identity, +inf or INT_MAX).
  void scalar_reduce() {
    OpDesc op = reduce_op(rng_.chance(0.2), {MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max});
    const int k = static_cast<int>(c_.ops.size());
    c_.ops.push_back(op);
    auto r = fresh(NodeKind::Scalar, op.values->type);
    r->index = k;
    const double n = static_cast<double>(c_.n);
    const bool flt = value_is_float(op);
    if (op.monoid == MonoidChoice::Plus) {
      r->bound = flt ? n * op.values->bound : type_max(st(op.values));
      set_err(*r, flt ? n * op.values->error + kSumRelTol * n * op.values->bound : 0, 0);
      r->exact = !flt;
    } else {
      r->bound = flt ? std::numeric_limits<double>::infinity() : type_max(st(op.values));
      set_err(*r, op.values->abs_err, op.values->rel_err);
      r->exact = op.values->exact;
    }
    scalars_.push_back(clamp(r, flt ? kFloatLimit : 1e6));
  }

  // An output map over the scan's element: an epilogue.
  NodeRef epilogue(int k) {
    const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
    auto e = fresh(NodeKind::ScanElement, op.values->type);
    e->index = k;
    const double n = static_cast<double>(c_.n);
    switch (op.monoid) {
      case MonoidChoice::ArgMin:
      case MonoidChoice::ArgMax:
        e->type = Type::tuple({op.values->type, ScalarType::I64});
        e->exact = op.values->exact;
        if (!e->exact) return nullptr;  // its fields cannot be checked by a static bound
        return make_get(e, rng_.chance(0.5) ? 0 : 1);
      case MonoidChoice::Mssp:
      case MonoidChoice::Matmul:
        e->type = op.values->type.is_tuple() ? op.values->type
                                             : Type::tuple({ScalarType::I32, ScalarType::I32, ScalarType::I32, ScalarType::I32});
        return make_get(e, static_cast<int>(rng_.range(0, 3)));
      case MonoidChoice::LogicalOr:
        e->bound = 1;
        return rng_.chance(0.5) ? NodeRef(make_cast(ScalarType::I32, e))
                                : NodeRef(make_select(e, number(1, true), number(1, true)));
      default: break;
    }
    const bool flt = value_is_float(op);
    if (op.monoid == MonoidChoice::Plus) {
      e->bound = flt ? n * op.values->bound : type_max(st(op.values));
      set_err(*e, flt ? n * op.values->error + kSumRelTol * n * op.values->bound : 0, 0);
      e->exact = !flt;
    } else {
      e->bound = flt ? std::numeric_limits<double>::infinity() : type_max(st(op.values));
      set_err(*e, op.values->abs_err, op.values->rel_err);
      e->exact = op.values->exact;
    }
    NodeRef s = flt ? clamp(e, kFloatLimit) : NodeRef(e);
    NodeRef other = number(static_cast<int>(rng_.range(0, 2)), !flt);
    switch (rng_.weighted({3, 2, 2, 1})) {
      case 0: return tame(make_binary(rng_.chance(0.5) ? BinaryOp::Add : BinaryOp::Sub, s, other));
      case 1: return tame(make_binary(BinaryOp::Mul, s, make_const(st(s), static_cast<double>(rng_.range(-3, 3)))));
      case 2: {
        NodeRef x = input_leaf();
        return make_select(make_binary(BinaryOp::Gt, x, similar_constant(x)), s, coerce(x, st(s)));
      }
      default: return make_cast(flt ? ScalarType::F64 : rng_.pick(kIntTypes), s);
    }
  }

  // A map that reads the last scalar result and an input: x / reduce(x) and relatives.
  NodeRef map_of_scalar() {
    NodeRef s = scalars_.back();
    NodeRef v = ensure_input(number(depth() - 1, s->exact && rng_.chance(0.5)));
    switch (rng_.weighted({3, 3, 2, 2})) {
      case 0: {  // v / (abs(s) + 1)
        NodeRef a = to_float(v), sf = to_float(s);
        NodeRef d = make_binary(BinaryOp::Add, make_call(MathFn::Abs, {sf}), make_const(st(sf), 1));
        return tame(make_binary(BinaryOp::Div, a, d, 1));
      }
      case 1: return tame(make_binary(BinaryOp::Sub, v, s));
      case 2: {
        auto [a, b] = std::pair<NodeRef, NodeRef>(v, s);
        ScalarType common = usual_arithmetic_conversion(st(a), st(b));
        if (exact_conv(*a, common) && exact_conv(*b, common))
          return make_select(make_binary(BinaryOp::Gt, a, b), a, b);
        return tame(make_call(MathFn::Max, {a, b}));
      }
      default: return tame(make_binary(BinaryOp::Mul, v, s));
    }
  }

  static bool reads_op(const NodeRef& n, int op) {
    if (!n) return false;
    if (n->kind == NodeKind::Scalar && n->index == op) return true;
    for (const auto& a : n->args)
      if (reads_op(a, op)) return true;
    return false;
  }

  // An op whose map reads the last scalar result (a few tries; else the last one drawn).
  OpDesc reads_scalar(const std::function<OpDesc()>& make) {
    const int op = static_cast<int>(c_.ops.size()) - 1;
    OpDesc d = make();
    for (int tries = 0; tries < 20 && !reads_op(d.values, op) && !reads_op(d.predicate, op); ++tries) d = make();
    return d;
  }

  // ---- array ops: histogram, segmented reduce, counting sort ----------------------------
  // Their results have lengths of their own (bins, segments, n), so they are program
  // outputs as they are; their element expressions may read an earlier reduction.

  // Bin counts: 1, small, around 256, up to the largest whose private counts fit in the
  // 48 KB of shared memory (12288 x 4 bytes) and just above it, and the global-atomics
  // path well above.
  std::int64_t histogram_bins() {
    switch (rng_.weighted({2, 4, 3, 2, 2, 2})) {
      case 0: return 1;
      case 1: return rng_.range(2, 17);
      case 2: return rng_.pick(std::vector<std::int64_t>{255, 256, 257});
      case 3: return rng_.range(300, 5000);
      case 4: return rng_.pick(std::vector<std::int64_t>{12288, 12289});
      default: return rng_.range(12290, 1 << 17);
    }
  }

  // Sort bins: up to the 8192 counting_sort takes; staged scatter below about 2000, direct
  // above.
  std::int64_t sort_bins() {
    switch (rng_.weighted({2, 5, 3, 2, 2})) {
      case 0: return 1;
      case 1: return rng_.range(2, 17);
      case 2: return rng_.pick(std::vector<std::int64_t>{255, 256, 257});
      case 3: return rng_.range(300, 8191);
      default: return 8192;
    }
  }

  // cast<int>(x * 2^k) of an input (x >> k of an integer one): floats cast to int. The
  // product by a power of two does not round, so it is exact (the same bits everywhere).
  NodeRef scaled_to_int() {
    NodeRef x = input_leaf();
    ScalarType to = rng_.pick(kIntTypes);
    if (!is_float(st(x)))
      return make_cast(to, make_binary(BinaryOp::Shr, x, make_const(ScalarType::I32, static_cast<double>(rng_.range(0, 4)))));
    auto scaled = make_binary(BinaryOp::Mul, x, make_const(st(x), std::ldexp(1.0, static_cast<int>(rng_.range(-2, 4)))));
    scaled->exact = x->exact;
    set_err(*scaled, 0, 0);
    return to_int(scaled, to);
  }

  // An integral bin (or key) expression over the inputs that falls in [0, bins) for a
  // share of the elements and outside it (negative, or bins and above) for others.
  NodeRef bin_expression(std::int64_t bins) {
    NodeRef b;
    switch (rng_.weighted({4, 4, 2})) {
      case 0: b = ensure_input(integer(depth())); break;  // any exact integer map
      case 1: b = scaled_to_int(); break;
      default: {  // index / stride: long runs of one bin (+ (x & 0), which reads an input)
        NodeRef stride = make_const(ScalarType::I64, static_cast<double>(rng_.range(1, 64)));
        NodeRef zero = make_binary(BinaryOp::BitAnd, coerce(input_leaf(), ScalarType::I64), make_const(ScalarType::I64, 0));
        b = make_binary(BinaryOp::Add, make_binary(BinaryOp::Div, index_, stride), zero);
        break;
      }
    }
    switch (rng_.weighted({2, 5, 2})) {
      case 0: return b;  // as it is: often out of range
      case 1: {          // b % m, m at or a little above bins: a signed b gives negative bins too
        std::int64_t m = bins + rng_.pick(std::vector<std::int64_t>{0, 0, 1, 3, bins / 3});
        return make_binary(BinaryOp::Mod, b, make_const(st(b), static_cast<double>(m)));
      }
      default:  // b - c
        return make_binary(BinaryOp::Sub, b, make_const(st(b), static_cast<double>(rng_.range(0, bins / 4 + 2))));
    }
  }

  OpDesc histogram_op() {
    OpDesc op;
    op.kind = OpKind::Histogram;
    op.bins = histogram_bins();
    op.keys = bin_expression(op.bins);
    op.count_type = rng_.chance(0.5) ? ScalarType::U32 : ScalarType::U64;
    return op;
  }

  // Values for sort_by_key: the element index (alone or beside an exact value), so that
  // comparing the permuted values exactly checks that the sort is stable.
  NodeRef sort_values() {
    switch (rng_.weighted({3, 4, 2})) {
      case 0: return index_;
      case 1: return make_tuple({ensure_input(number(depth(), true)), index_});
      default: return ensure_input(number(depth(), true));
    }
  }

  OpDesc sort_op(bool with_values) {
    OpDesc op;
    op.kind = OpKind::CountingSort;
    op.bins = sort_bins();
    op.keys = bin_expression(op.bins);
    if (with_values) op.values = sort_values();
    return op;
  }

  // The offsets input of a segmented op: its own length, never read as elements.
  int offsets_input() {
    InputSpec s;
    s.name = "o";
    s.type = rng_.pick(kIntTypes);
    s.offsets = true;
    s.pattern = static_cast<SegmentPattern>(rng_.weighted({4, 3, 3, 2, 3, 3, 1}));
    s.partial = rng_.chance(0.25);
    c_.inputs.push_back(s);
    return static_cast<int>(c_.inputs.size()) - 1;
  }

  OpDesc segmented_op(int offsets) {
    OpDesc op;
    op.kind = OpKind::SegmentedReduce;
    op.monoid = pick_monoid(false);
    op.values = values_for(op.monoid);
    op.offsets_input = offsets;
    op.offsets_cast = c_.inputs[static_cast<std::size_t>(offsets)].type != ScalarType::I64 && rng_.chance(0.25);
    return op;
  }

  // ---- compaction, segmented scans, by-key ops ---------------------------------------

  // A filter as an output: the survivors of a scalar, or of a (value, index) tuple (the
  // index tells which elements survived, in order); the values are exact when they are a
  // tuple, so it compares exactly.
  OpDesc filter_op() {
    OpDesc op;
    op.kind = OpKind::Filter;
    if (rng_.chance(0.3)) op.values = make_tuple({ensure_input(number(depth(), true)), index_});
    else op.values = ensure_input(number(depth(), rng_.chance(0.5)));
    op.predicate = ensure_input(boolean(depth()));
    return op;
  }

  // The filter's output: its survivors as they are, or a map over them (constants and the
  // parameter only: index() and other arrays have another length). The map's condition
  // compares exact survivors only.
  NodeRef filter_output(int k) {
    const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
    auto e = fresh(NodeKind::ScanElement, op.values->type);
    e->index = k;
    e->exact = op.values->exact;
    if (op.values->type.is_scalar()) {
      e->bound = op.values->bound;
      set_err(*e, op.values->abs_err, op.values->rel_err);
    }
    if (rng_.chance(0.45)) return e;
    NodeRef s = e;
    if (e->type.is_tuple()) {
      auto g = make_get(e, rng_.chance(0.5) ? 0 : 1);
      const NodeRef& field = op.values->args[static_cast<std::size_t>(g->index)];
      g->bound = field->bound;
      g->exact = field->exact;
      s = g;
      if (rng_.chance(0.3)) return s;
    }
    const ScalarType t = st(s);
    switch (rng_.weighted({4, s->exact ? 3 : 0, 2, 2})) {
      case 0: {  // s op constant (or the parameter)
        BinaryOp bop = rng_.pick(std::vector<BinaryOp>{BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul});
        NodeRef other = !params_.empty() && rng_.chance(0.3) ? rng_.pick(params_)
                                                              : make_const(t, static_cast<double>(rng_.range(is_unsigned(t) ? 0 : -3, 3)));
        return tame(make_binary(bop, s, other));
      }
      case 1: return make_select(make_binary(BinaryOp::Gt, s, similar_constant(s)), s, make_const(t, 7));
      case 2:
        if (is_float(t)) return make_cast(ScalarType::F64, s);
        return make_cast(rng_.pick(kIntTypes), s);
      default:
        if (is_float(t)) return rng_.chance(0.5) ? NodeRef(make_call(MathFn::Sqrt, {make_call(MathFn::Abs, {s})}))
                                                 : NodeRef(make_call(MathFn::Abs, {s}));
        return make_call(MathFn::Abs, {s});
    }
  }

  // Values of a segmented scan or a by-key op: values_for, and for plus, min, max, argmin
  // and argmax often cast to a float (and scaled by 0.1, which rounds), so that the
  // per-segment float checks meet more cases than the inputs' types alone give.
  void more_floats(OpDesc& op) {
    const bool numeric = op.monoid == MonoidChoice::Plus || op.monoid == MonoidChoice::Min ||
                         op.monoid == MonoidChoice::Max || op.monoid == MonoidChoice::ArgMin ||
                         op.monoid == MonoidChoice::ArgMax;
    if (!numeric || is_float(st(op.values)) || !rng_.chance(0.6)) return;
    NodeRef f = to_float(op.values);
    // times 0.1 (rounded): inexact values, so min / max / argmin / argmax compare within a bound too
    if (rng_.chance(0.5)) f = make_binary(BinaryOp::Mul, f, make_const(st(f), 0.1));
    op.values = tame(f);
  }

  OpDesc segmented_scan_op(int offsets) {
    OpDesc op = segmented_op(offsets);
    op.kind = OpKind::SegmentedScan;
    op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
    more_floats(op);
    return op;
  }

  // The key input of a by-key op: a random walk (InputSpec::walk) that stays put with a
  // probability from "always moves" to "long runs".
  NodeRef walk_input() {
    InputSpec s;
    s.name = "k";
    s.type = rng_.pick(kIntTypes);
    s.walk = true;
    s.stay = rng_.pick(std::vector<double>{0, 0.5, 0.9, 0.99, 0.999});
    s.lo = is_unsigned(s.type) ? 0 : -50;
    s.hi = 50;
    c_.inputs.push_back(s);
    auto n = make_input(static_cast<int>(c_.inputs.size()) - 1, s);
    n->bound = 50 + 2 * static_cast<double>(c_.n);
    return n;
  }

  // An integral key with runs of equal consecutive values.
  NodeRef scalar_key(const NodeRef& walk) {
    switch (rng_.weighted({5, 2, 2})) {
      case 0: {  // the walk, as it is or coarsened: k / 2, k % 5, k >> 1
        switch (rng_.weighted({3, 1, 1, 1})) {
          case 0: return walk;
          case 1: return make_binary(BinaryOp::Div, walk, make_const(st(walk), 2));
          case 2: return make_binary(BinaryOp::Mod, walk, make_const(st(walk), 5));
          default: return make_binary(BinaryOp::Shr, walk, make_const(ScalarType::I32, 1));
        }
      }
      case 1: {  // index / stride (+ (x & 0), which reads an input): runs of `stride`
        NodeRef stride = make_const(ScalarType::I64, static_cast<double>(rng_.range(1, 64)));
        NodeRef zero = make_binary(BinaryOp::BitAnd, coerce(input_leaf(), ScalarType::I64), make_const(ScalarType::I64, 0));
        return make_binary(BinaryOp::Add, make_binary(BinaryOp::Div, index_, stride), zero);
      }
      default: {  // an exact integer map of the inputs, in a small range: v % 2 or v % 3
        NodeRef v = ensure_input(integer(static_cast<int>(rng_.range(0, 2))));
        return make_binary(BinaryOp::Mod, v, make_const(st(v), static_cast<double>(rng_.range(2, 3))));
      }
    }
  }

  // The key of a by-key op: a scalar, or now and then a (key, i64 key) tuple.
  NodeRef by_key_keys() {
    NodeRef walk = walk_input();
    NodeRef a = scalar_key(walk);
    if (!rng_.chance(0.15)) return a;
    if (!is_int(st(a)) || st(a) == ScalarType::U64) a = make_cast(ScalarType::I64, a);
    return make_tuple({a, make_cast(ScalarType::I64, scalar_key(walk))});
  }

  OpDesc by_key_op(OpKind kind) {
    OpDesc op;
    op.kind = kind;
    op.monoid = pick_monoid(kind == OpKind::ScanByKey);
    op.values = values_for(op.monoid);
    more_floats(op);
    op.keys = by_key_keys();
    op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
    return op;
  }

  // The outputs of op k (sort_by_key: its keys, its values, or both; reduce_by_key: the
  // same; a filter: its survivors, perhaps mapped).
  void array_op_outputs(int k) {
    const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
    if (op.kind == OpKind::Filter) {
      c_.outputs.push_back({-1, filter_output(k), 0});
      return;
    }
    const bool keyed = (op.kind == OpKind::CountingSort && op.values) || op.kind == OpKind::ReduceByKey;
    if (!keyed) {
      c_.outputs.push_back({k, nullptr, 0});
      return;
    }
    switch (rng_.weighted({3, 2, 1})) {
      case 0:
        c_.outputs.push_back({k, nullptr, 0});
        c_.outputs.push_back({k, nullptr, 1});
        break;
      case 1: c_.outputs.push_back({k, nullptr, 1}); break;
      default: c_.outputs.push_back({k, nullptr, 0}); break;
    }
  }

  static bool op_reads_op(const OpDesc& d, int op) {
    return reads_op(d.values, op) || reads_op(d.predicate, op) || reads_op(d.keys, op);
  }

  void make_array_op_shape() {
    std::size_t k = draw_shape(kArrayWeights);
    c_.shape = kArrayShapes[k];
    switch (k) {
      case 0: c_.ops.push_back(histogram_op()); break;
      case 1: c_.ops.push_back(segmented_op(offsets_input())); break;
      case 2: c_.ops.push_back(sort_op(false)); break;
      case 3: c_.ops.push_back(sort_op(true)); break;
      case 5: c_.ops.push_back(filter_op()); break;
      case 6: c_.ops.push_back(segmented_scan_op(offsets_input())); break;
      case 7: c_.ops.push_back(by_key_op(OpKind::ScanByKey)); break;
      case 8: c_.ops.push_back(by_key_op(OpKind::ReduceByKey)); break;
      default: {
        // An array op whose element expression reads a reduction's result (a few tries;
        // else the last one drawn), sometimes with the reduction as an output too.
        scalar_reduce();
        const std::size_t which = rng_.weighted({1, 1, 1});
        const int offsets = which == 1 ? offsets_input() : -1;
        auto make = [&] {
          return which == 0 ? histogram_op() : which == 1 ? segmented_op(offsets) : sort_op(rng_.chance(0.6));
        };
        OpDesc d = make();
        for (int tries = 0; tries < 20 && !op_reads_op(d, 0); ++tries) d = make();
        c_.ops.push_back(d);
        if (rng_.chance(0.5)) c_.outputs.push_back({0, nullptr, 0});
        array_op_outputs(1);
        return;
      }
    }
    array_op_outputs(0);
  }

  // The shape comes from the seed's Weyl draw (shape_draw), not from the PRNG: first the
  // group (array ops: the first kArrayOpShare of [0, 1)), then the shape within it.
  // The share and the weights are chosen so that seeds 1..60 (the emulator's run) meet
  // every shape at least 3 times (checked by fuzz_compile_test).
  static constexpr double kArrayOpShare = 0.52;

  std::size_t draw_shape(const std::vector<int>& weights) {
    double u = shape_draw_ < kArrayOpShare ? shape_draw_ / kArrayOpShare
                                           : (shape_draw_ - kArrayOpShare) / (1 - kArrayOpShare);
    int total = 0;
    for (int w : weights) total += w;
    double at = u * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (at < weights[i]) return i;
      at -= weights[i];
    }
    return weights.size() - 1;
  }

  void make_shape() {
    if (shape_draw_ < kArrayOpShare) return make_array_op_shape();
    std::size_t k = draw_shape(kOtherWeights);
    c_.shape = kOtherShapes[k];
    switch (k) {
      case 0:
        c_.ops.push_back(reduce_op(false));
        c_.outputs.push_back({0, nullptr});
        break;
      case 1: {
        c_.ops.push_back(scan_op());
        NodeRef e = rng_.chance(0.4) ? epilogue(0) : nullptr;
        c_.outputs.push_back({e ? -1 : 0, e});
        break;
      }
      case 2:
        c_.ops.push_back(reduce_op(true));
        c_.outputs.push_back({0, nullptr});
        break;
      case 3:
        c_.ops.push_back(reduce_op(rng_.chance(0.3)));
        c_.ops.push_back(reduce_op(rng_.chance(0.3)));
        c_.outputs.push_back({0, nullptr});
        c_.outputs.push_back({1, nullptr});
        break;
      case 4:
        scalar_reduce();
        if (rng_.chance(0.5)) c_.outputs.push_back({0, nullptr});
        c_.outputs.push_back({-1, map_of_scalar()});
        break;
      case 5:
        scalar_reduce();
        c_.ops.push_back(reads_scalar([&] { return reduce_op(rng_.chance(0.2)); }));
        if (rng_.chance(0.5)) c_.outputs.push_back({0, nullptr});
        c_.outputs.push_back({1, nullptr});
        break;
      case 6:
        scalar_reduce();
        c_.ops.push_back(reads_scalar([&] { return scan_op(); }));
        if (rng_.chance(0.5)) c_.outputs.push_back({0, nullptr});
        c_.outputs.push_back({1, nullptr});
        break;
      default:
        c_.ops.push_back(scan_op());
        c_.ops.push_back(reduce_op(rng_.chance(0.3)));
        c_.outputs.push_back({0, nullptr});
        c_.outputs.push_back({1, nullptr});
        break;
    }
  }

  Rng rng_;
  double shape_draw_;
  Case c_;
  std::vector<NodeRef> leaves_;   // inputs
  std::vector<NodeRef> params_;
  std::vector<NodeRef> scalars_;  // clamped Scalar leaves
  NodeRef index_;
};

// ---- building -------------------------------------------------------------------------

class Builder {
 public:
  Builder(const Case& c, Mode m) : c_(c), mode_(m) {}

  Built run() {
    std::vector<Expr> values, predicates, keys;
    for (const auto& in : c_.inputs) inputs_.push_back(ff_input(in));
    for (const auto& p : c_.params) params_.push_back(Expr::param(p.name, widen(p.value.type(), mode_)));
    for (const auto& op : c_.ops) {
      keys.push_back(is_by_key(op.kind) ? node(op.keys) : Expr());
      if (is_array_op(op.kind)) {
        array_op(op, values, predicates);
        continue;
      }
      Expr v = node(op.values);
      Expr pred = op.predicate ? node(op.predicate) : Expr();
      values.push_back(v);
      predicates.push_back(pred);
      Expr xs = pack(op.monoid, v);
      if (op.kind == OpKind::Reduce) {
        if (pred.valid()) xs = filter(xs, pred);
        results_.push_back(reduce(xs, monoid(op.monoid), op.strategy));
      } else {
        results_.push_back(scan(xs, monoid(op.monoid), op.scan_kind, op.strategy));
      }
    }
    std::vector<Expr> outs;
    for (const auto& o : c_.outputs)
      outs.push_back(o.map ? node(o.map) : o.field == 1 ? sorted_values_.at(o.op) : results_[static_cast<std::size_t>(o.op)]);
    return Built{Program(std::move(outs)), inputs_, params_, std::move(values), std::move(predicates), std::move(keys)};
  }

 private:
  Expr ff_input(const InputSpec& in) { return Expr::input(in.name, widen(in.type, mode_)); }

  // Histogram, filter, segmented reduce / scan, scan / reduce by key, counting sort / sort_by_key.
  void array_op(const OpDesc& op, std::vector<Expr>& values, std::vector<Expr>& predicates) {
    Expr v = op.values ? node(op.values) : Expr();
    values.push_back(v);
    predicates.push_back(op.kind == OpKind::Filter ? node(op.predicate) : Expr());
    switch (op.kind) {
      case OpKind::Histogram: results_.push_back(histogram(node(op.keys), op.bins, op.count_type)); return;
      case OpKind::Filter: results_.push_back(filter(v, predicates.back())); return;
      case OpKind::SegmentedReduce:
      case OpKind::SegmentedScan: {
        Expr offsets = inputs_[static_cast<std::size_t>(op.offsets_input)];
        if (op.offsets_cast) offsets = Expr::cast(ScalarType::I64, offsets);
        results_.push_back(op.kind == OpKind::SegmentedReduce
                               ? segmented_reduce(pack(op.monoid, v), offsets, monoid(op.monoid))
                               : segmented_scan(pack(op.monoid, v), offsets, monoid(op.monoid), op.scan_kind));
        return;
      }
      case OpKind::ScanByKey: results_.push_back(scan_by_key(node(op.keys), pack(op.monoid, v), monoid(op.monoid), op.scan_kind)); return;
      case OpKind::ReduceByKey: {
        KeyedResult r = reduce_by_key(node(op.keys), pack(op.monoid, v), monoid(op.monoid));
        sorted_values_[static_cast<int>(results_.size())] = r.values;
        results_.push_back(r.keys);
        return;
      }
      default:
        if (!v.valid()) {
          results_.push_back(counting_sort(node(op.keys), op.bins));
          return;
        }
        KeyedResult r = sort_by_key(node(op.keys), v, op.bins);
        sorted_values_[static_cast<int>(results_.size())] = r.values;
        results_.push_back(r.keys);
    }
  }

  static Expr pack(MonoidChoice m, const Expr& v) {
    if (m == MonoidChoice::ArgMin || m == MonoidChoice::ArgMax) return zip(v, index());
    if (m == MonoidChoice::Mssp) return catalog::mssp_parts(v);
    return v;
  }

  static Monoid monoid(MonoidChoice m) {
    switch (m) {
      case MonoidChoice::Plus: return plus;
      case MonoidChoice::Times: return times;
      case MonoidChoice::Min: return fuseflow::min;
      case MonoidChoice::Max: return fuseflow::max;
      case MonoidChoice::LogicalOr: return logical_or;
      case MonoidChoice::ArgMin: return argmin;
      case MonoidChoice::ArgMax: return argmax;
      case MonoidChoice::Mssp: return catalog::mssp();
      case MonoidChoice::Matmul: return catalog::matmul2x2(ScalarType::I32);
    }
    return plus;
  }

  Expr node(const NodeRef& n) {
    auto it = memo_.find(n.get());
    if (it != memo_.end()) return it->second;
    Expr e = compute(*n);
    if (e.type() != widen(n->type, mode_))
      throw GraphError("fuzz: built " + e.type().name() + " for a node of type " + n->type.name());
    memo_[n.get()] = e;
    return e;
  }

  Expr compute(const Node& n) {
    std::vector<Expr> a;
    for (const auto& x : n.args) a.push_back(node(x));
    switch (n.kind) {
      case NodeKind::Input: return inputs_[static_cast<std::size_t>(n.index)];
      case NodeKind::Index: return index();
      case NodeKind::Constant: return Expr::constant(widen(n.constant, mode_));
      case NodeKind::Param: return params_[static_cast<std::size_t>(n.index)];
      case NodeKind::Scalar:
      case NodeKind::ScanElement: return results_[static_cast<std::size_t>(n.index)];
      case NodeKind::Unary: return Expr::unary(n.unary, a[0]);
      case NodeKind::Binary: return Expr::binary(n.binary, a[0], a[1]);
      case NodeKind::Select: return Expr::select(a[0], a[1], a[2]);
      case NodeKind::Call: return Expr::call(n.fn, a);
      case NodeKind::Cast: return Expr::cast(widen(n.type, mode_), a[0]);
      case NodeKind::Tuple: return Expr::make_tuple(a);
      case NodeKind::Get: return Expr::get(a[0], n.index);
    }
    throw GraphError("fuzz: unknown node kind");
  }

  const Case& c_;
  Mode mode_;
  std::vector<Expr> inputs_, params_, results_;
  std::map<int, Expr> sorted_values_;  // per sort_by_key / reduce_by_key op: its values (results_ has its keys)
  std::map<const Node*, Expr> memo_;
};

// ---- data -----------------------------------------------------------------------------

template <class T>
HostArray fill(std::size_t n, const InputSpec& s, std::uint64_t seed) {
  std::vector<T> v(n);
  Rng r(seed);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      double d = s.lo + r.uniform() * (s.hi - s.lo);
      if (s.integral_values) d = std::round(d);
      x = static_cast<T>(d);
    } else {
      auto lo = static_cast<std::int64_t>(s.lo), hi = static_cast<std::int64_t>(s.hi);
      x = static_cast<T>(r.range(lo, hi));
    }
  }
  return HostArray::from(v);
}

// The keys of a by-key op: a random walk from a start in [lo, hi] that stays put with
// probability s.stay, else steps by -2..2 (0 included).
template <class T>
HostArray fill_walk(std::size_t n, const InputSpec& s, std::uint64_t seed) {
  std::vector<T> v(n);
  Rng r(seed);
  std::int64_t at = r.range(static_cast<std::int64_t>(s.lo), static_cast<std::int64_t>(s.hi));
  for (auto& x : v) {
    if (!r.chance(s.stay)) at += r.range(-2, 2);
    x = static_cast<T>(at);
  }
  return HostArray::from(v);
}

// The offsets of a segmented op over n elements, drawn with the input's pattern: n_segments
// + 1 non-decreasing values in [0, n].
template <class T>
HostArray fill_offsets(std::int64_t n, const InputSpec& s, std::uint64_t seed) {
  Rng r(seed);
  std::int64_t lo = 0, hi = n;
  if (s.partial && n > 0) {
    lo = r.range(0, n / 4);
    hi = n - r.range(0, (n - lo) / 4);
  }
  const std::int64_t span = hi - lo;
  std::vector<std::int64_t> off = {lo};
  auto add = [&](std::int64_t length) { off.push_back(std::min(off.back() + length, hi)); };
  switch (s.pattern) {
    case SegmentPattern::None: break;
    case SegmentPattern::Random: {
      const std::int64_t cuts = r.range(0, std::min<std::int64_t>(2 * span + 3, 1 << 20));
      std::vector<std::int64_t> points;
      for (std::int64_t i = 0; i < cuts; ++i) points.push_back(r.range(lo, hi));
      std::sort(points.begin(), points.end());
      off.insert(off.end(), points.begin(), points.end());
      break;
    }
    case SegmentPattern::Tiny:
      while (off.back() < hi) add(std::vector<std::int64_t>{0, 0, 1, 1, 1, 2, 3}[r.below(7)]);
      break;
    case SegmentPattern::Between:
      while (off.back() < hi) add(r.range(10, 50));
      break;
    case SegmentPattern::Threes:
      while (off.back() < hi) add(3);
      break;
    case SegmentPattern::Huge: {
      const std::int64_t parts = r.range(1, 3);
      if (parts >= 2) add(r.range(0, std::min<std::int64_t>(span, 5)));
      if (parts == 3) off.push_back(std::max(off.back(), hi - r.range(0, std::min<std::int64_t>(span, 5))));
      break;
    }
    case SegmentPattern::Skewed:
      while (off.back() < hi) add(r.chance(0.02) ? r.range(span / 8, span / 4 + 1) : r.range(0, 2));
      break;
  }
  if (s.pattern != SegmentPattern::None) {
    if (off.back() < hi || off.size() == 1) off.push_back(hi);
    for (std::int64_t extra = r.range(-2, 2); extra > 0; --extra) off.push_back(hi);  // empty segments at the end
  }
  std::vector<T> out(off.size());
  for (std::size_t i = 0; i < off.size(); ++i) out[i] = static_cast<T>(off[i]);
  return HostArray::from(out);
}

// ---- comparing ------------------------------------------------------------------------

enum class CheckKind : std::uint8_t {
  Exact,          // the narrow reference, exactly
  SumScalar,      // float plus: within n * E + 2e-5 * sum |v| of the f64 reference
  ExtremeScalar,  // float min / max of inexact values: within E
  ArgScalar,      // float argmin / argmax of inexact values
  SumScan,        // per element, as SumScalar over the prefix
  ExtremeScan,
  ArgScan,
  MapArray,       // per element within the map's static error bound
  SegmentSum,     // segmented reduce: per segment, as SumScalar over its elements
  SegmentExtreme,
  SegmentArg,
  SegmentScanSum,      // segmented scan / scan_by_key: per element, as SumScan over its segment's prefix
  SegmentScanExtreme,
  SegmentScanArg,
};

struct Plan {
  CheckKind kind = CheckKind::Exact;
  double error = 0;  // the element (or map) error bound
  double rel = kSumRelTol;  // sums: tolerance relative to the sum of |terms|
  int op = -1;
};

bool float_monoid_values(const OpDesc& op) {
  if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort || op.kind == OpKind::Filter)
    return false;  // integers, or moved as they are (a filter's output is a map over its element)
  return op.values->type.is_scalar() && is_float(op.values->type.scalar());
}

Plan plan_check(const Case& c, std::size_t i) {
  const OutputDesc& o = c.outputs[i];
  Plan p;
  if (o.map) {
    p.kind = o.map->exact ? CheckKind::Exact : CheckKind::MapArray;
    p.error = o.map->error;
    return p;
  }
  const OpDesc& op = c.ops[static_cast<std::size_t>(o.op)];
  p.op = o.op;
  if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort) return p;  // counts, keys, moved values
  if (op.kind == OpKind::ReduceByKey && o.field == 0) return p;  // the unique keys: integers
  p.error = op.values->error;
  // Per-element atomics add in any order, one rounding after another: a sequential sum,
  // whose error grows like sqrt(n) ulps of the sum of |terms| (positive terms).
  if (op.strategy == Strategy::Atomic) p.rel += 8 * ulp(ScalarType::F32) * std::sqrt(static_cast<double>(c.n));
  if (!float_monoid_values(op)) return p;
  bool scan = op.kind == OpKind::Scan;
  const bool segment_scan = op.kind == OpKind::SegmentedScan || op.kind == OpKind::ScanByKey;
  if (segment_scan || op.kind == OpKind::SegmentedReduce || op.kind == OpKind::ReduceByKey) {
    // Per segment: every scanned element of it (scans) or its one result (reductions).
    switch (op.monoid) {
      case MonoidChoice::Plus: p.kind = segment_scan ? CheckKind::SegmentScanSum : CheckKind::SegmentSum; break;
      case MonoidChoice::Min:
      case MonoidChoice::Max:
        if (!op.values->exact) p.kind = segment_scan ? CheckKind::SegmentScanExtreme : CheckKind::SegmentExtreme;
        break;
      case MonoidChoice::ArgMin:
      case MonoidChoice::ArgMax:
        if (!op.values->exact) p.kind = segment_scan ? CheckKind::SegmentScanArg : CheckKind::SegmentArg;
        break;
      default: break;
    }
    return p;
  }
  switch (op.monoid) {
    case MonoidChoice::Plus: p.kind = scan ? CheckKind::SumScan : CheckKind::SumScalar; break;
    case MonoidChoice::Min:
    case MonoidChoice::Max:
      if (!op.values->exact) p.kind = scan ? CheckKind::ExtremeScan : CheckKind::ExtremeScalar;
      break;
    case MonoidChoice::ArgMin:
    case MonoidChoice::ArgMax:
      if (!op.values->exact) p.kind = scan ? CheckKind::ArgScan : CheckKind::ArgScalar;
      break;
    default: break;
  }
  return p;
}

bool close(double got, double want, double tol) {
  if (got == want) return true;  // infinities included
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  return std::fabs(got - want) <= tol;
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

bool same_element(const HostArray& a, const HostArray& b, std::size_t i) {
  const std::size_t size = a.type().size();
  if (std::memcmp(a.data() + i * size, b.data() + i * size, size) == 0) return true;
  return a.at(i) == b.at(i);  // +0 == -0, NaN == NaN, tuple padding ignored
}

struct Mismatches {
  std::size_t count = 0;
  std::string first;
  void add(std::size_t i, const std::string& what) {
    if (count++ == 0) first = "element " + std::to_string(i) + ": " + what;
  }
};

// Values of an argmin / argmax tuple as (double value, index).
std::pair<double, std::int64_t> arg_pair(const Value& v) { return {v[0].as_double(), v[1].as_int()}; }

// Checks an argmin/argmax answer (value, index) against the wide values over [begin, end)
// (survivors only when `pred` is given); want is the wide reference answer.
std::string check_arg(const Value& got, const Value& want, const HostArray& values, const HostArray* pred,
                      std::size_t end, double e, bool is_max, std::size_t begin = 0) {
  auto [gv, gi] = arg_pair(got);
  auto [wv, wi] = arg_pair(want);
  if (wi == std::numeric_limits<std::int64_t>::max()) {  // nothing to choose from: the identity
    if (gi == wi && close(gv, wv, 0)) return "";
    return "got " + got.to_string() + ", want the identity " + want.to_string();
  }
  if (gi < 0 || static_cast<std::size_t>(gi) < begin || static_cast<std::size_t>(gi) >= end) return "got " + got.to_string() + ": index out of range, want " + want.to_string();
  auto at = static_cast<std::size_t>(gi);
  if (pred && !pred->at(at).as_bool()) return "got " + got.to_string() + ": that element is filtered out";
  double v = values.at(at).as_double();
  if (!close(gv, v, 2 * e + 1e-300)) return "got " + got.to_string() + ": its value differs from element " + std::to_string(gi) + " = " + num(v) + " (f64) by more than " + num(2 * e);
  bool ok = is_max ? v >= wv - 2 * e : v <= wv + 2 * e;
  if (!ok) return "got " + got.to_string() + ", want " + want.to_string() + " (f64), tolerance " + num(2 * e);
  return "";
}

// A float segmented reduce: each segment as a float reduce of its elements (an empty one
// is the monoid's identity, which the wide reference gives too).
std::string compare_segments(const Plan& p, const std::vector<std::size_t>& bounds, const HostArray& values,
                             const HostResult& want, const HostResult& got, bool is_max, const std::string& head) {
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " segments, want " + std::to_string(want.array.size());
  const double e = p.error;
  Mismatches m;
  for (std::size_t k = 0; k + 1 < bounds.size() && k < want.array.size(); ++k) {
    const std::size_t begin = bounds[k], end = bounds[k + 1];
    if (p.kind == CheckKind::SegmentArg) {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, end, e, is_max, begin);
      if (!why.empty()) m.add(k, why + " (segment [" + std::to_string(begin) + ", " + std::to_string(end) + "))");
      continue;
    }
    double g = got.array.at(k).as_double(), w = want.array.at(k).as_double(), tol = 2 * e;
    if (p.kind == CheckKind::SegmentSum) {
      double magnitude = 0;
      for (std::size_t j = begin; j < end; ++j) magnitude += std::fabs(values.at(j).as_double());
      tol = 2 * static_cast<double>(end - begin) * e + p.rel * magnitude;
    }
    if (!close(g, w, tol + 1e-300))
      m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol) + " (segment [" +
                   std::to_string(begin) + ", " + std::to_string(end) + "))");
  }
  return m.count ? head + std::to_string(m.count) + " segments out of tolerance, the first is " + m.first : "";
}

// A float segmented scan or scan_by_key: each segment as a float scan of its elements;
// an element outside every segment (partial offsets) is the identity, exactly.
std::string compare_segment_scan(const Plan& p, const std::vector<std::size_t>& bounds, const HostArray& values,
                                 const HostResult& want, const HostResult& got, bool is_max, bool exclusive,
                                 const std::string& head) {
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
  const double e = p.error;
  const std::size_t n = want.array.size();
  Mismatches m;
  auto check = [&](std::size_t k, std::size_t begin, std::size_t count, double prefix, const std::string& where) {
    if (p.kind == CheckKind::SegmentScanArg) {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, begin + count, e, is_max, begin);
      if (!why.empty()) m.add(k, why + where);
      return;
    }
    double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
    double tol = count == 0 ? 0 : 2 * e;
    if (p.kind == CheckKind::SegmentScanSum) tol = 2 * static_cast<double>(count) * e + p.rel * prefix;
    if (!close(g, w, tol + (count == 0 ? 0 : 1e-300)))
      m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol) + where);
  };
  if (bounds.empty() || bounds.back() > n) return head + "no segment bounds";
  for (std::size_t k = 0; k < bounds.front(); ++k) check(k, k, 0, 0, " (before every segment)");
  for (std::size_t k = bounds.back(); k < n; ++k) check(k, k, 0, 0, " (after every segment)");
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
    const std::size_t begin = bounds[r], end = bounds[r + 1];
    const std::string where = " (segment [" + std::to_string(begin) + ", " + std::to_string(end) + "))";
    double prefix = 0;
    for (std::size_t k = begin; k < end; ++k) {
      if (!exclusive) prefix += std::fabs(values.at(k).as_double());
      check(k, begin, exclusive ? k - begin : k - begin + 1, prefix, where);
      if (exclusive) prefix += std::fabs(values.at(k).as_double());
    }
  }
  return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
}

std::string compare_output(const Case& c, const Reference& ref, std::size_t i, const HostResult& got) {
  const Plan p = plan_check(c, i);
  const std::string head = "output " + std::to_string(i) + " (" + check_kind(c, i) + "): ";
  if (p.kind == CheckKind::Exact) {
    const HostResult& want = ref.narrow[i];
    if (want.is_scalar != got.is_scalar) return head + "scalar / array mismatch";
    if (want.is_scalar) return got.scalar == want.scalar ? "" : head + "got " + got.scalar.to_string() + ", want " + want.scalar.to_string();
    if (got.array.type() != want.array.type()) return head + "type " + got.array.type().name() + ", want " + want.array.type().name();
    if (got.array.size() != want.array.size())
      return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
    Mismatches m;
    for (std::size_t k = 0; k < want.array.size(); ++k)
      if (!same_element(got.array, want.array, k))
        m.add(k, "got " + got.array.at(k).to_string() + ", want " + want.array.at(k).to_string());
    return m.count ? head + std::to_string(m.count) + " elements differ, the first at " + m.first : "";
  }
  const HostResult& want = ref.wide[i];
  if (p.kind == CheckKind::MapArray) {
    if (got.array.size() != want.array.size())
      return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
    const double tol = 2 * p.error + 1e-300;
    Mismatches m;
    for (std::size_t k = 0; k < want.array.size(); ++k) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      if (!close(g, w, tol)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol));
    }
    return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
  }
  const OpDesc& op = c.ops[static_cast<std::size_t>(p.op)];
  const HostArray& values = ref.wide_values[static_cast<std::size_t>(p.op)];
  const HostArray* pred = op.predicate ? &ref.wide_predicates[static_cast<std::size_t>(p.op)] : nullptr;
  const bool is_max = op.monoid == MonoidChoice::Max || op.monoid == MonoidChoice::ArgMax;
  const double e = p.error;
  switch (p.kind) {
    case CheckKind::SumScalar: {
      double magnitude = 0, terms = 0;  // over the survivors of the filter
      for (std::size_t k = 0; k < values.size(); ++k)
        if (!pred || pred->at(k).as_bool()) {
          magnitude += std::fabs(values.at(k).as_double());
          terms += 1;
        }
      double g = got.scalar.as_double(), w = want.scalar.as_double();
      double tol = 2 * terms * e + p.rel * magnitude + 1e-300;
      return close(g, w, tol) ? "" : head + "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol);
    }
    case CheckKind::ExtremeScalar: {
      double g = got.scalar.as_double(), w = want.scalar.as_double();
      return close(g, w, 2 * e + 1e-300) ? "" : head + "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(2 * e);
    }
    case CheckKind::ArgScalar: {
      std::string why = check_arg(got.scalar, want.scalar, values, pred, values.size(), e, is_max);
      return why.empty() ? "" : head + why;
    }
    case CheckKind::SegmentSum:
    case CheckKind::SegmentExtreme:
    case CheckKind::SegmentArg: return compare_segments(p, ref.segments[static_cast<std::size_t>(p.op)], values, want, got, is_max, head);
    case CheckKind::SegmentScanSum:
    case CheckKind::SegmentScanExtreme:
    case CheckKind::SegmentScanArg:
      return compare_segment_scan(p, ref.segments[static_cast<std::size_t>(p.op)], values, want, got, is_max,
                                  op.scan_kind == ScanKind::Exclusive, head);
    default: break;
  }
  // Scans.
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
  const bool exclusive = op.scan_kind == ScanKind::Exclusive;
  Mismatches m;
  double prefix = 0;
  for (std::size_t k = 0; k < want.array.size(); ++k) {
    if (!exclusive) prefix += std::fabs(values.at(k).as_double());
    const std::size_t count = exclusive ? k : k + 1;  // elements combined into output k
    if (p.kind == CheckKind::SumScan) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      double tol = 2 * static_cast<double>(count) * e + p.rel * prefix + 1e-300;
      if (!close(g, w, tol)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol));
    } else if (p.kind == CheckKind::ExtremeScan) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      if (!close(g, w, 2 * e + 1e-300)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(2 * e));
    } else {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, count, e, is_max);
      if (!why.empty()) m.add(k, why);
    }
    if (exclusive) prefix += std::fabs(values.at(k).as_double());
  }
  return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
}

}  // namespace

// ---- public ---------------------------------------------------------------------------

const char* monoid_name(MonoidChoice m) {
  switch (m) {
    case MonoidChoice::Plus: return "plus";
    case MonoidChoice::Times: return "times";
    case MonoidChoice::Min: return "min";
    case MonoidChoice::Max: return "max";
    case MonoidChoice::LogicalOr: return "logical_or";
    case MonoidChoice::ArgMin: return "argmin";
    case MonoidChoice::ArgMax: return "argmax";
    case MonoidChoice::Mssp: return "mssp";
    case MonoidChoice::Matmul: return "matmul2x2";
  }
  return "?";
}

const char* pattern_name(SegmentPattern p) {
  switch (p) {
    case SegmentPattern::Random: return "random cuts";
    case SegmentPattern::Tiny: return "lengths 0..3";
    case SegmentPattern::Between: return "lengths 10..50";
    case SegmentPattern::Threes: return "all of length 3";
    case SegmentPattern::Huge: return "one huge";
    case SegmentPattern::Skewed: return "skewed";
    case SegmentPattern::None: return "no segments";
  }
  return "?";
}

bool is_commutative(MonoidChoice m) { return m != MonoidChoice::Mssp && m != MonoidChoice::Matmul; }

Case generate(std::uint64_t seed) { return Generator(seed).run(); }

const std::vector<std::string>& all_shapes() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out = kArrayShapes;
    out.insert(out.end(), kOtherShapes.begin(), kOtherShapes.end());
    return out;
  }();
  return all;
}

Built build(const Case& c, Mode mode) { return Builder(c, mode).run(); }

std::vector<HostArray> make_inputs(const Case& c) {
  std::vector<HostArray> out;
  const auto n = static_cast<std::size_t>(c.n);
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const InputSpec& s = c.inputs[k];
    std::uint64_t seed = mix(c.seed ^ (0x51ed2705ULL * (k + 1)));
    if (s.offsets) {
      switch (s.type) {
        case ScalarType::I32: out.push_back(fill_offsets<std::int32_t>(c.n, s, seed)); break;
        case ScalarType::I64: out.push_back(fill_offsets<long long>(c.n, s, seed)); break;
        case ScalarType::U32: out.push_back(fill_offsets<std::uint32_t>(c.n, s, seed)); break;
        default: throw GraphError("fuzz: unexpected offsets type " + scalar_name(s.type));
      }
      continue;
    }
    if (s.walk) {
      switch (s.type) {
        case ScalarType::I32: out.push_back(fill_walk<std::int32_t>(n, s, seed)); break;
        case ScalarType::I64: out.push_back(fill_walk<long long>(n, s, seed)); break;
        case ScalarType::U32: out.push_back(fill_walk<std::uint32_t>(n, s, seed)); break;
        default: throw GraphError("fuzz: unexpected key type " + scalar_name(s.type));
      }
      continue;
    }
    switch (s.type) {
      case ScalarType::I32: out.push_back(fill<std::int32_t>(n, s, seed)); break;
      case ScalarType::I64: out.push_back(fill<long long>(n, s, seed)); break;
      case ScalarType::U32: out.push_back(fill<std::uint32_t>(n, s, seed)); break;
      case ScalarType::F32: out.push_back(fill<float>(n, s, seed)); break;
      case ScalarType::F64: out.push_back(fill<double>(n, s, seed)); break;
      default: throw GraphError("fuzz: unexpected input type " + scalar_name(s.type));
    }
  }
  return out;
}

std::vector<HostArray> widen_inputs(const Case& c, const std::vector<HostArray>& narrow) {
  std::vector<HostArray> out;
  for (std::size_t k = 0; k < narrow.size(); ++k) {
    if (c.inputs[k].type != ScalarType::F32) {
      out.push_back(narrow[k]);
      continue;
    }
    std::vector<double> wide(narrow[k].size());
    const auto* f = reinterpret_cast<const float*>(narrow[k].data());
    for (std::size_t i = 0; i < wide.size(); ++i) {
      float x;
      std::memcpy(&x, f + i, sizeof x);
      wide[i] = x;
    }
    out.push_back(HostArray::from(wide));
  }
  return out;
}

HostBindings bind_data(const Case& c, const Built& b, const std::vector<HostArray>& data, Mode mode) {
  HostBindings hb;
  for (std::size_t k = 0; k < b.inputs.size(); ++k)
    if (uses(b.program, b.inputs[k])) hb.bind(b.inputs[k], data[k]);
  for (std::size_t k = 0; k < b.params.size(); ++k)
    if (uses(b.program, b.params[k])) hb.bind(b.params[k], widen(c.params[k].value, mode));
  return hb;
}

bool uses(const Program& p, const Expr& leaf) {
  for (const auto* list : {&p.inputs(), &p.params()})
    for (const auto& e : *list)
      if (same_node(e, leaf)) return true;
  return false;
}

Reference compute_reference(const Case& c, const std::vector<HostArray>& narrow_inputs) {
  Reference ref;
  bool need_narrow = false, need_wide = false;
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (plan_check(c, i).kind == CheckKind::Exact) need_narrow = true;
    else need_wide = true;
  }
  if (need_narrow) {
    Built b = build(c, Mode::Narrow);
    ref.narrow = evaluate(b.program, bind_data(c, b, narrow_inputs, Mode::Narrow));
  }
  if (need_wide) {
    Built b = build(c, Mode::Wide);
    std::vector<HostArray> wide = widen_inputs(c, narrow_inputs);
    ref.wide = evaluate(b.program, bind_data(c, b, wide, Mode::Wide));
    HostBindings hb;  // every input: an op's values may read one the program's outputs do not
    for (std::size_t k = 0; k < b.inputs.size(); ++k) hb.bind(b.inputs[k], wide[k]);
    for (std::size_t k = 0; k < b.params.size(); ++k) hb.bind(b.params[k], widen(c.params[k].value, Mode::Wide));
    ref.wide_values.resize(c.ops.size());
    ref.wide_predicates.resize(c.ops.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      if (!float_monoid_values(c.ops[k])) continue;
      std::vector<Expr> outs = {b.values[k]};
      if (b.predicates[k].valid()) outs.push_back(b.predicates[k]);
      std::vector<HostResult> r = evaluate(Program(outs), hb);
      ref.wide_values[k] = std::move(r[0].array);
      if (r.size() > 1) ref.wide_predicates[k] = std::move(r[1].array);
    }
    ref.segments.resize(c.ops.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      const OpDesc& op = c.ops[k];
      if (!float_monoid_values(op)) continue;
      if (is_segmented(op.kind)) {
        const auto o = static_cast<std::size_t>(op.offsets_input);
        ref.segments[k] = segment_bounds(op_name(op.kind), c.inputs[o].type, narrow_inputs[o].data(),
                                         narrow_inputs[o].size(), static_cast<std::size_t>(c.n));
      } else if (is_by_key(op.kind)) {
        // The runs of equal consecutive keys (integers: the same in both programs).
        const HostArray keys = std::move(evaluate(Program(b.keys[k]), hb)[0].array);
        for (std::size_t j = 0; j < keys.size(); ++j)
          if (j == 0 || !(keys.at(j) == keys.at(j - 1))) ref.segments[k].push_back(j);
        ref.segments[k].push_back(keys.size());
      }
    }
  }
  return ref;
}

std::string compare(const Case& c, const Reference& ref, const std::vector<HostResult>& got) {
  if (got.size() != c.outputs.size())
    return std::to_string(got.size()) + " results, want " + std::to_string(c.outputs.size());
  std::string out;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::string m = compare_output(c, ref, i, got[i]);
    if (!m.empty()) out += (out.empty() ? "" : "\n") + m;
  }
  return out;
}

std::string check_kind(const Case& c, std::size_t output) {
  const Plan p = plan_check(c, output);
  switch (p.kind) {
    case CheckKind::Exact: return "exact";
    case CheckKind::SumScalar: return "float sum, f64 reference, element error " + num(p.error);
    case CheckKind::ExtremeScalar: return "float min/max of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::ArgScalar: return "float argmin/argmax of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SumScan: return "float sum scan, f64 reference, element error " + num(p.error);
    case CheckKind::ExtremeScan: return "float min/max scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::ArgScan: return "float argmin/argmax scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::MapArray: return "float map, f64 reference, static error bound " + num(p.error);
    case CheckKind::SegmentSum: return "float segmented sum, f64 reference, element error " + num(p.error);
    case CheckKind::SegmentExtreme: return "float segmented min/max of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentArg: return "float segmented argmin/argmax of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentScanSum: return "float segmented sum scan, f64 reference, element error " + num(p.error);
    case CheckKind::SegmentScanExtreme: return "float segmented min/max scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentScanArg: return "float segmented argmin/argmax scan of rounded values, f64 reference, error " + num(p.error);
  }
  return "?";
}

std::string describe(const Case& c) {
  std::ostringstream os;
  os << "seed " << c.seed << " (FUSEFLOW_FUZZ_SEED=" << c.seed << "), n = " << c.n << ", shape " << c.shape << "\n";
  for (const auto& in : c.inputs) {
    if (in.offsets) {
      os << "  input " << in.name << ": " << scalar_name(in.type) << " segment offsets, pattern " << pattern_name(in.pattern)
         << (in.partial ? ", segments inside (0, n)" : "") << "\n";
      continue;
    }
    if (in.walk) {
      os << "  input " << in.name << ": " << scalar_name(in.type) << " keys, a random walk from [" << num(in.lo) << ", "
         << num(in.hi) << "] staying put with probability " << num(in.stay) << ", else stepping by -2..2\n";
      continue;
    }
    os << "  input " << in.name << ": " << scalar_name(in.type) << " in [" << num(in.lo) << ", " << num(in.hi) << "]"
       << (in.integral_values ? ", integral values" : "") << "\n";
  }
  for (const auto& p : c.params) os << "  param " << p.name << " = " << p.value.to_string() << "\n";
  for (std::size_t k = 0; k < c.ops.size(); ++k) {
    const OpDesc& op = c.ops[k];
    if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort) {
      os << "  op " << k << ": " << (op.kind == OpKind::Histogram ? "histogram" : op.values ? "sort_by_key" : "counting_sort")
         << ", " << op.bins << " bins";
      if (op.kind == OpKind::Histogram) os << ", " << scalar_name(op.count_type) << " counts";
      os << "\n";
      continue;
    }
    const char* kind = op.scan_kind == ScanKind::Inclusive ? ", inclusive" : ", exclusive";
    if (is_segmented(op.kind)) {
      os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", offsets "
         << c.inputs[static_cast<std::size_t>(op.offsets_input)].name << (op.offsets_cast ? " (cast to i64)" : "")
         << (op.kind == OpKind::SegmentedScan ? kind : "") << "\n";
      continue;
    }
    if (is_by_key(op.kind)) {
      os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", keys of type "
         << op.keys->type.name() << (op.kind == OpKind::ScanByKey ? kind : "") << "\n";
      continue;
    }
    if (op.kind == OpKind::Filter) {
      os << "  op " << k << ": filter of " << op.values->type.name() << " (compaction, an output)\n";
      continue;
    }
    os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", strategy "
       << strategy_name(op.strategy);
    if (op.kind == OpKind::Scan) os << (op.scan_kind == ScanKind::Inclusive ? ", inclusive" : ", exclusive");
    if (op.predicate) os << ", filtered";
    os << "\n";
  }
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    const OutputDesc& o = c.outputs[i];
    os << "  output " << i << ": ";
    if (o.op >= 0 && c.ops[static_cast<std::size_t>(o.op)].kind == OpKind::ReduceByKey)
      os << (o.field == 0 ? "the unique keys, " : "the values, ");
    if (o.op >= 0 && c.ops[static_cast<std::size_t>(o.op)].kind == OpKind::CountingSort &&
        c.ops[static_cast<std::size_t>(o.op)].values)
      os << (o.field == 0 ? "the sorted keys, " : "the values, ");
    os << "checked " << check_kind(c, i) << "\n";
  }
  try {
    os << "program:\n" << to_string(build(c, Mode::Narrow).program);
  } catch (const std::exception& e) {
    os << "program: cannot be built: " << e.what();
  }
  return os.str();
}

// No known bugs now. Found by these tests and fixed: -(negative literal) emitted as "--c"
// and filter -> reduce with strategy atomic reading an undefined `identity` (3e92d21);
// integer abs/min/max of a negative literal emitted as "--c" (c2caeb6). A new one is
// listed here as a structural test on the Case, returning "<name>: <symptom>", until the
// code generator is fixed.
std::string known_bug(const Case& c) {
  (void)c;
  return "";
}

void write_report(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("FUSEFLOW_FUZZ_REPORT_DIR");
  if (!dir || !*dir) dir = std::getenv("OUT");
  if (!dir || !*dir) return;
  if (std::FILE* f = std::fopen((std::string(dir) + "/" + name + ".txt").c_str(), "w")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

std::vector<std::uint64_t> seeds_from_environment(std::size_t count) {
  if (const char* s = std::getenv("FUSEFLOW_FUZZ_SEED"); s && *s) return {std::strtoull(s, nullptr, 0)};
  std::uint64_t base = 1;
  if (const char* b = std::getenv("FUSEFLOW_FUZZ_BASE"); b && *b) base = std::strtoull(b, nullptr, 0);
  if (const char* n = std::getenv("FUSEFLOW_FUZZ_COUNT"); n && *n) count = std::strtoull(n, nullptr, 0);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(base + i);
  return out;
}

}  // namespace fuseflow::fuzz
