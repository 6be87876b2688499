// The Generator (generator.hpp): the shape of a case, drawn from its seed, and the ops of the
// non-array group: reductions and scans over a monoid, maps over their results.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "fuzz/generator.hpp"

namespace fuseflow::fuzz::detail {

// The draw in [0, 1) that picks a seed's shape: a Weyl sequence, frac(seed x golden ratio)
// in 64-bit fixed point, rather than the PRNG. Consecutive seeds (the tests run base ..
// base + count - 1) then spread evenly over the shapes' weights, so even the 60 programs of
// the emulator run meet each shape about as often as its weight says; all else about a
// case comes from the PRNG.
double shape_draw(std::uint64_t seed) {
  return static_cast<double>((seed * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

Case Generator::run() {
  pick_size();
  pick_inputs();
  make_shape();
  return std::move(c_);
}

std::size_t Generator::draw_shape(const std::vector<int>& weights) {
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

void Generator::make_shape() {
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
    case 7:
      c_.ops.push_back(scan_op());
      c_.ops.push_back(reduce_op(rng_.chance(0.3)));
      c_.outputs.push_back({0, nullptr});
      c_.outputs.push_back({1, nullptr});
      break;
    default:  // outputs that are expressions of reductions' results, computed on the device
      if (c_.n > 0 && rng_.chance(0.3)) {
        if (NodeRef lse = log_sum_exp()) {
          if (rng_.chance(0.3)) c_.outputs.push_back({0, nullptr});
          c_.outputs.push_back({-1, lse});
          break;
        }
      }
      scalar_reduce();
      if (rng_.chance(0.6)) scalar_reduce();
      if (rng_.chance(0.4)) c_.outputs.push_back({0, nullptr});
      c_.outputs.push_back({-1, scalar_epilogue()});
      if (rng_.chance(0.4)) c_.outputs.push_back({-1, scalar_epilogue()});
      break;
  }
}

// ---- ops ------------------------------------------------------------------------------

MonoidChoice Generator::pick_monoid(bool scan) {
  (void)scan;
  static const std::vector<MonoidChoice> all = {MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max,
                                                MonoidChoice::ArgMin, MonoidChoice::ArgMax, MonoidChoice::Times,
                                                MonoidChoice::LogicalOr, MonoidChoice::Mssp, MonoidChoice::Matmul};
  return all[rng_.weighted({25, 10, 10, 8, 8, 6, 8, 10, 8})];
}

NodeRef Generator::values_for(MonoidChoice m) {
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
bool Generator::value_is_float(const OpDesc& op) {
  return op.values->type.is_scalar() && is_float(op.values->type.scalar());
}

Strategy Generator::reduce_strategy(const OpDesc& op) {
  const Type& t = op.values->type;
  bool atomic_ok = t.is_scalar() && !t.is_bool() &&
                   (op.monoid == MonoidChoice::Plus ||
                    ((op.monoid == MonoidChoice::Min || op.monoid == MonoidChoice::Max) && is_int(t.scalar())));
  std::size_t k = rng_.weighted({35, 20, 20, is_commutative(op.monoid) ? 15 : 0, atomic_ok ? 10 : 0});
  return std::vector<Strategy>{Strategy::Automatic, Strategy::Staged, Strategy::Tree, Strategy::Chunked,
                               Strategy::Atomic}[k];
}

OpDesc Generator::reduce_op(bool filtered, std::vector<MonoidChoice> only) {
  OpDesc op;
  op.kind = OpKind::Reduce;
  op.monoid = only.empty() ? pick_monoid(false) : rng_.pick(only);
  op.values = values_for(op.monoid);
  if (filtered) op.predicate = ensure_input(boolean(depth()));
  op.strategy = reduce_strategy(op);
  return op;
}

OpDesc Generator::scan_op() {
  OpDesc op;
  op.kind = OpKind::Scan;
  op.monoid = pick_monoid(true);
  op.values = values_for(op.monoid);
  op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
  op.strategy = std::vector<Strategy>{Strategy::Automatic, Strategy::Lookback, Strategy::ReduceThenScan}[rng_.weighted({4, 3, 3})];
  // A scan of a filter's result (the survivors' scan, compacted) where its check is exact:
  // the float checks of scans bound element k by the first k values of all n.
  if (op.strategy != Strategy::ReduceThenScan && !value_is_float(op) && rng_.chance(0.3))
    op.predicate = ensure_input(boolean(depth()));
  return op;
}

// A reduction whose scalar result later maps read (plus, min or max over numbers), and
// the Scalar leaf for it (clamped: an empty min is the identity, +inf or INT_MAX).
void Generator::scalar_reduce() {
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
NodeRef Generator::epilogue(int k) {
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
      if (rng_.chance(0.5)) return make_cast(ScalarType::I32, e);
      // A scan of a filter's result has the survivors' length, not the inputs': its select
      // picks between constants (fuzz seed 1475 mixed it with an input of all n).
      if (op.predicate) return make_select(e, constant_leaf(), constant_leaf());
      return make_select(e, number(1, true), number(1, true));
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
  if (op.predicate) other = make_const(st(s), 1);  // no input beside the survivors' scan
  switch (rng_.weighted({3, 2, 2, 1})) {
    case 0: return tame(make_binary(rng_.chance(0.5) ? BinaryOp::Add : BinaryOp::Sub, s, other));
    case 1: return tame(make_binary(BinaryOp::Mul, s, make_const(st(s), static_cast<double>(rng_.range(-3, 3)))));
    case 2: {
      if (op.predicate) break;  // a scan of a filter's result has the survivors' length, not the inputs'
      NodeRef x = input_leaf();
      return make_select(make_binary(BinaryOp::Gt, x, similar_constant(x)), s, coerce(x, st(s)));
    }
    default: break;
  }
  return make_cast(flt ? ScalarType::F64 : rng_.pick(kIntTypes), s);
}

// A map that reads the last scalar result and an input: x / reduce(x) and relatives.
NodeRef Generator::map_of_scalar() {
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

// An expression of the scalar results (no input): s + t, s * k, the larger, t / (|s| + 1).
NodeRef Generator::scalar_epilogue() {
  NodeRef s = scalars_.back(), t = scalars_[static_cast<std::size_t>(rng_.range(0, static_cast<int>(scalars_.size()) - 1))];
  switch (rng_.weighted({3, 3, 2, 2})) {
    case 0: return tame(make_binary(rng_.chance(0.5) ? BinaryOp::Add : BinaryOp::Sub, s, t));
    case 1: return tame(make_binary(BinaryOp::Mul, s, make_const(st(s), static_cast<double>(rng_.range(-3, 3)))));
    case 2: {
      ScalarType common = usual_arithmetic_conversion(st(s), st(t));
      if (exact_conv(*s, common) && exact_conv(*t, common)) return make_select(make_binary(BinaryOp::Gt, s, t), s, t);
      return tame(make_call(MathFn::Max, {s, t}));
    }
    default: {
      NodeRef a = to_float(t), sf = to_float(s);
      NodeRef d = make_binary(BinaryOp::Add, make_call(MathFn::Abs, {sf}), make_const(st(sf), 1));
      return tame(make_binary(BinaryOp::Div, a, d, 1));
    }
  }
}

// Log-sum-exp of a float input f: m + log(reduce(exp(f - m), plus)) with m = reduce(f, max)
// (ops 0 and 1), the form the planner fuses into one online reduction. m is read as it is
// (no clamp, so the planner sees the pattern); f - m <= 0, so each term is in (0, 1] and the
// largest is exactly 1: the sum is in [1, n] and its log within its error of the f64 one.
// Null when no input is a float (or n is 0: m is then -inf).
NodeRef Generator::log_sum_exp() {
  std::vector<NodeRef> floats;
  for (const auto& l : leaves_)
    if (is_float(st(l))) floats.push_back(l);
  if (floats.empty()) return nullptr;
  const NodeRef f = rng_.pick(floats);
  const ScalarType t = st(f);
  OpDesc max_op;
  max_op.monoid = MonoidChoice::Max;
  max_op.values = f;
  c_.ops.push_back(max_op);
  auto m = fresh(NodeKind::Scalar, f->type);
  m->index = 0;
  m->bound = f->bound;
  m->exact = f->exact;
  auto term = make_call(MathFn::Exp, {make_binary(BinaryOp::Sub, f, m)});
  term->bound = 1;
  set_err(*term, term->args[0]->error * 1.01 + 4 * ulp(t), 4 * ulp(t));
  OpDesc sum_op;
  sum_op.monoid = MonoidChoice::Plus;
  sum_op.values = term;
  c_.ops.push_back(sum_op);
  auto s = fresh(NodeKind::Scalar, f->type);
  s->index = 1;
  const double n = static_cast<double>(c_.n);
  s->bound = n;
  set_err(*s, n * term->error + kSumRelTol * n, 0);
  s->exact = false;
  return make_binary(BinaryOp::Add, m, make_call(MathFn::Log, {s}));
}

bool Generator::reads_op(const NodeRef& n, int op) {
  if (!n) return false;
  if (n->kind == NodeKind::Scalar && n->index == op) return true;
  for (const auto& a : n->args)
    if (reads_op(a, op)) return true;
  return false;
}

// An op whose map reads the last scalar result (a few tries; else the last one drawn).
OpDesc Generator::reads_scalar(const std::function<OpDesc()>& make) {
  const int op = static_cast<int>(c_.ops.size()) - 1;
  OpDesc d = make();
  for (int tries = 0; tries < 20 && !reads_op(d.values, op) && !reads_op(d.predicate, op); ++tries) d = make();
  return d;
}

}  // namespace fuseflow::fuzz::detail

namespace fuseflow::fuzz {

Case generate(std::uint64_t seed) { return detail::Generator(seed).run(); }

}  // namespace fuseflow::fuzz
