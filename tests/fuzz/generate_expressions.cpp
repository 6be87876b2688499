// The Generator (generator.hpp): the size, the inputs and the parameter, the leaves, and the
// element-wise expressions over them, each with its static analysis (nodes.cpp).
#include <algorithm>
#include <cmath>

#include "fuzz/generator.hpp"

namespace fuseflow::fuzz::detail {

// ---- sizes, inputs, parameters --------------------------------------------------

void Generator::pick_size() {
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

void Generator::pick_inputs() {
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
    p.name = std::string("t");  // not = "t": GCC 12 under ASan warns -Wrestrict on that (a false positive, GCC bug 105329)
    std::size_t k = rng_.weighted({1, 1, 1});
    if (k == 0) p.value = Value(static_cast<std::int32_t>(rng_.range(-50, 50)));
    else if (k == 1) p.value = Value(static_cast<float>(rng_.range(-16, 16)) / 8.0f);
    else p.value = Value(static_cast<double>(rng_.range(-16, 16)) / 4.0);
    c_.params.push_back(p);
    params_.push_back(make_param(0, p));
  }
}

// ---- leaves -------------------------------------------------------------------------

NodeRef Generator::constant_leaf() {
  ScalarType t = rng_.pick(kTypes);
  if (is_float(t)) return make_const(t, static_cast<double>(rng_.range(-64, 64)) / 8.0);
  if (is_unsigned(t)) return make_const(t, static_cast<double>(rng_.range(0, 20)));
  return make_const(t, static_cast<double>(rng_.range(-20, 20)));
}

// An input read at another position: a neighbour (shift by -2..3, a constant fill
// outside) or at half the index (a gather), of the input or of a map of it (computed()); or an array of its length without its values
// (iota(x), fill(x, constant or the parameter)).
NodeRef Generator::neighbour() {
  NodeRef x = input_leaf();
  if (rng_.chance(0.2)) {
    if (rng_.chance(0.5)) return make_fill(x, index_);
    return make_fill(x, !params_.empty() && rng_.chance(0.4) ? rng_.pick(params_) : constant_leaf());
  }
  if (rng_.chance(0.3)) return make_halved(rng_.chance(0.25) ? computed(x) : x, index_);
  const auto k = static_cast<int>(rng_.range(-2, 3));
  if (k != 0 && rng_.chance(0.25)) x = computed(x);
  const ScalarType t = st(x);
  NodeRef fill = make_const(t, static_cast<double>(rng_.range(is_unsigned(t) ? 0 : -5, 5)));
  return k == 0 ? x : make_shift(x, k, fill);
}

// A computed array to gather from or shift (issue 25): x + x, a map of the input (gathers
// and shifts, backwards and forwards, fuse it: the map applied to what they read).
NodeRef Generator::computed(const NodeRef& x) { return make_binary(BinaryOp::Add, x, x); }

// ---- expressions --------------------------------------------------------------------

NodeRef Generator::leaf(bool exact) {
  std::vector<NodeRef> extra;
  for (const auto& s : scalars_)
    if (!exact || s->exact) extra.push_back(s);
  std::size_t k = rng_.weighted({8, 1, params_.empty() ? 0 : 2, extra.empty() ? 0 : 4, 3, 2});
  switch (k) {
    case 0: return input_leaf();
    case 5: return neighbour();
    case 1: return index_;
    case 2: return rng_.pick(params_);
    case 3: return rng_.pick(extra);
    default: return constant_leaf();
  }
}

// A float version of a (exact stays exact where the conversion allows).
NodeRef Generator::to_float(const NodeRef& a) {
  if (is_float(st(a))) return a;
  ScalarType t = a->bound <= 0x1p24 && rng_.chance(0.5) ? ScalarType::F32 : ScalarType::F64;
  return make_cast(t, a);
}

// An integer version of an exact a: floats are clamped, then cast.
NodeRef Generator::to_int(const NodeRef& a, ScalarType t) {
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

NodeRef Generator::input_as_int() {
  for (const auto& l : leaves_)
    if (is_int(st(l))) return l;
  return make_cast(ScalarType::I32, make_call(MathFn::Min, {make_call(MathFn::Max, {leaves_[0], make_const(st(leaves_[0]), -1e6)}),
                                                            make_const(st(leaves_[0]), 1e6)}));
}

// a converted to t (t numeric); an inexact float never becomes an integer.
NodeRef Generator::coerce(const NodeRef& a, ScalarType t) {
  if (st(a) == t) return a;
  if (is_int(t) && is_float(st(a))) return a->exact ? to_int(a, t) : to_int(input_leaf_exact_int(), t);
  return make_cast(t, a);
}

// Two operands; when `exact`, both convert exactly to their common type.
std::pair<NodeRef, NodeRef> Generator::pair(int depth, bool exact) {
  NodeRef a = number(depth, exact), b = number(depth, exact);
  if (exact) {
    ScalarType common = usual_arithmetic_conversion(st(a), st(b));
    if (!exact_conv(*a, common) || !exact_conv(*b, common)) b = similar_constant(a);
  }
  return {a, b};
}

// A constant of a's type inside a's range (a threshold that splits its values).
NodeRef Generator::similar_constant(const NodeRef& a) {
  ScalarType t = st(a);
  double span = std::min(a->bound, 1e6);
  double x = (rng_.uniform() * 2 - 1) * span;
  if (is_unsigned(t)) x = std::fabs(x);
  if (is_float(t)) x = std::round(x * 8) / 8;
  return make_const(t, x);
}

NodeRef Generator::number(int depth, bool exact) {
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

NodeRef Generator::integer(int depth) {
  NodeRef a = number(depth, true);
  if (is_float(st(a))) return to_int(a, rng_.pick(kIntTypes));
  return a;
}

NodeRef Generator::divide(int depth, bool exact) {
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

NodeRef Generator::bitwise(int depth) {
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

NodeRef Generator::cast(int depth, bool exact) {
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

NodeRef Generator::math(int depth, bool exact) {
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
NodeRef Generator::boolean(int depth) {
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
NodeRef Generator::ensure_input(const NodeRef& a) {
  if (a->reads_input) return a;
  NodeRef x = input_leaf();
  if (a->type.is_bool()) {
    NodeRef cmp = make_binary(BinaryOp::Ge, x, similar_constant(x));
    return make_binary(rng_.chance(0.5) ? BinaryOp::And : BinaryOp::Or, a, cmp);
  }
  ScalarType t = st(a);
  return make_call(rng_.chance(0.5) ? MathFn::Min : MathFn::Max, {a, coerce(x, t)});
}

}  // namespace fuseflow::fuzz::detail
