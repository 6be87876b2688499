// The one-pass log-sum-exp rewrite. A program computing
//   m = reduce(f, max),  s = reduce(exp(f - m), plus)
// over the same array expression f (x itself, or any map of the inputs) reads f twice:
// the sum needs the max first. The online (max, scaled sum) monoid gets both in one pass:
//   (m1, s1) . (m2, s2) = (M, s_hi + s_lo * exp(lo - M)),  M = max(m1, m2),
// lo the smaller max and s_lo its sum, s_hi the other; identity (-inf, 0), element
// (f, 1). One exp per combine (the smaller side is rescaled to the larger max), so the
// fused reduction's per-element work is the two-pass second kernel's.
//
// The two reductions become one (at the max's stage), and their results become scalar
// epilogues of its (max, scaled sum) total, so every output reading them (log-sum-exp's
// m + log(s), or m and s asked for themselves) gets the two-pass value:
//   m = M exactly (the same NaN-propagating max, on the same elements);
//   s = the scaled sum, except NaN where M is +-inf and the array is not empty, as the
//   two-pass exp(f - m) gives there (inf - inf); NaN in f gives NaN either way.
// Rounding differs: the scaled sum multiplies partial sums by exp(lo - M) as it goes,
// the two-pass sum adds exp(f - m) to an unscaled total; both are within a few ulp of the
// f64 value for the sizes tested (tests/codegen/log_sum_exp_plan_test.cpp,
// tests/gpu/epilogue_gpu_test.cpp).
//
// Applies only where nothing else reads m or s: no other reduction, scan, array op, or
// array output (their kernels would need them earlier than the fused kernel's end); the
// two reductions have no filter mask and no forced strategy.
#include <algorithm>
#include <limits>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

bool reaches(const Expr& e, const OpNode* a, const OpNode* b, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return false;
  if (e.kind() == ExprKind::Result && (e.node().op.get() == a || e.node().op.get() == b)) return true;
  return std::any_of(e.args().begin(), e.args().end(), [&](const Expr& x) { return reaches(x, a, b, seen); });
}

// Whether m's or s's result is read anywhere but by s's values and the scalar outputs.
bool read_elsewhere(const Program& program, const OpNode* max_op, const OpNode* sum_op) {
  for (const auto& op : program.ops()) {
    if (op.get() == max_op || op.get() == sum_op) continue;
    std::set<const ExprNode*> seen;
    for (const Expr* e : {&op->values, &op->predicate, &op->offsets, &op->keys})
      if (reaches(*e, max_op, sum_op, seen)) return true;
  }
  for (const Expr& o : program.outputs()) {
    if (is_scalar_output(o)) continue;
    std::set<const ExprNode*> seen;
    if (reaches(o, max_op, sum_op, seen)) return true;
  }
  return false;
}

// Whether `sum` is reduce(exp(f - m), plus) over `max` = reduce(f, max), both plain.
bool is_log_sum_exp_pair(const PlannedReduce& max, const PlannedReduce& sum) {
  const Monoid& mm = max.fused.op->monoid;
  const Monoid& sm = sum.fused.op->monoid;
  if (mm.kind() != MonoidKind::Max || sm.kind() != MonoidKind::Plus || !mm.type().is_floating() ||
      !(mm.type() == sm.type()))
    return false;
  // A forced strategy stays as asked (atomic, tree: built-in monoids only).
  if (max.fused.mask.valid() || sum.fused.mask.valid() || max.strategy != Strategy::Automatic ||
      sum.strategy != Strategy::Automatic)
    return false;
  if (max.folded_into_scan || sum.folded_into_scan) return false;
  const Expr& v = sum.fused.value;
  if (v.kind() != ExprKind::Call || v.node().fn != MathFn::Exp) return false;
  const Expr& d = v.args()[0];
  if (d.kind() != ExprKind::Binary || d.node().binary != BinaryOp::Sub) return false;
  const Expr& m = d.args()[1];
  return same_node(d.args()[0], max.fused.value) && m.kind() == ExprKind::Result &&
         m.node().op.get() == max.fused.op.get();
}

Expr constant_of(const Type& t, double v) { return Expr::constant(Value::from_double(t.scalar(), v)); }

// The online (max, scaled sum) monoid over (t, t).
Monoid online_monoid(const Type& t) {
  const Type pair = Type::tuple({t, t});
  const Expr a = Expr::operand(0, pair), b = Expr::operand(1, pair);
  const Expr am = a[0], as = a[1], bm = b[0], bs = b[1];
  const Expr hi = fuseflow::max(am, bm);  // NaN-propagating, as the max monoid
  const Expr b_higher = am < bm;
  const Expr lo = fuseflow::select(b_higher, am, bm);
  const Expr s_hi = fuseflow::select(b_higher, bs, as), s_lo = fuseflow::select(b_higher, as, bs);
  // Equal maxima (also both -inf or both +inf, where lo - hi is NaN) scale by exp(0) = 1.
  const Expr scale = fuseflow::exp(fuseflow::select(lo == hi, constant_of(t, 0), lo - hi));
  const Expr combine = Expr::make_tuple({hi, s_hi + s_lo * scale});
  const Value identity = Value::tuple({Value::from_double(t.scalar(), -std::numeric_limits<double>::infinity()),
                                       Value::from_double(t.scalar(), 0)});
  return Monoid::custom("online_logsumexp", pair, combine, identity, true);
}

Expr substitute(const Expr& e, const OpNode* max_op, const Expr& m, const OpNode* sum_op, const Expr& s,
                std::map<const ExprNode*, Expr>& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  Expr r = e;
  if (e.kind() == ExprKind::Result && e.node().op.get() == max_op) {
    r = m;
  } else if (e.kind() == ExprKind::Result && e.node().op.get() == sum_op) {
    r = s;
  } else if (!e.args().empty()) {
    std::vector<Expr> args;
    bool changed = false;
    for (const Expr& a : e.args()) {
      args.push_back(substitute(a, max_op, m, sum_op, s, memo));
      changed = changed || !same_node(args.back(), a);
    }
    if (changed) r = e.with_args(std::move(args));
  }
  memo.emplace(e.get(), r);
  return r;
}

// The slots an epilogue reads, recomputed after the substitution.
void read_slots(const Expr& e, const std::map<const OpNode*, int>& slot_of, std::set<const ExprNode*>& seen,
                std::set<int>& slots) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) slots.insert(slot_of.at(e.node().op.get()));
  for (const Expr& a : e.args()) read_slots(a, slot_of, seen, slots);
}

void fuse_pair(const Program& program, std::size_t max_at, std::size_t sum_at, Classified& c, Plan& plan) {
  const PlannedReduce max = c.reduces[max_at], sum = c.reduces[sum_at];
  const Type t = max.fused.op->monoid.type();
  const Type pair = Type::tuple({t, t});

  auto node = std::make_shared<OpNode>();
  node->kind = OpKind::Reduce;
  node->values = Expr::make_tuple({max.fused.value, constant_of(t, 1)});
  node->monoid = online_monoid(t);
  node->strategy = max.strategy;
  node->output_types = {pair};
  node->scalar_output = true;

  PlannedReduce fused = max;
  fused.fused.op = node;
  fused.fused.value = node->values;
  const std::size_t offset = (plan.scalar_bytes + pair.alignment() - 1) / pair.alignment() * pair.alignment();
  fused.fused.output_slot = static_cast<int>(plan.scalars.size());
  plan.scalars.push_back({pair, offset});
  plan.scalar_bytes = offset + pair.size();
  c.slot_types.push_back(pair);
  c.slot_of[node.get()] = fused.fused.output_slot;

  // m and s as expressions of the fused total.
  const Expr total = Expr::result(node, 0, pair);
  const Expr m = total[0], scaled = total[1];
  const Expr inf = constant_of(t, std::numeric_limits<double>::infinity());
  const Expr nan = constant_of(t, std::numeric_limits<double>::quiet_NaN());
  const Expr s = fuseflow::select(fuseflow::abs(m) == inf && scaled > constant_of(t, 0), nan, scaled);

  const OpNode* max_op = max.fused.op.get();
  const OpNode* sum_op = sum.fused.op.get();
  std::map<const ExprNode*, Expr> memo;
  for (ScalarEpilogue& ep : c.epilogues) ep.expr = substitute(ep.expr, max_op, m, sum_op, s, memo);
  // Outputs that are m or s themselves: epilogues writing the reductions' own slots.
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    if (o.kind() != ExprKind::Result || (o.node().op.get() != max_op && o.node().op.get() != sum_op)) continue;
    ScalarEpilogue ep;
    ep.expr = o.node().op.get() == max_op ? m : s;
    ep.output = static_cast<int>(i);
    ep.slot = plan.output_scalar.at(i);
    c.epilogues.push_back(ep);
  }
  for (ScalarEpilogue& ep : c.epilogues) {
    std::set<const ExprNode*> seen;
    std::set<int> slots;
    read_slots(ep.expr, c.slot_of, seen, slots);
    ep.slots_read.assign(slots.begin(), slots.end());
  }

  c.reduces[max_at] = fused;
  c.reduces.erase(c.reduces.begin() + static_cast<std::ptrdiff_t>(sum_at));
  plan.notes.push_back("log-sum-exp: " + to_string(max.fused.op->values) +
                       "'s max and sum of exp(" + to_string(max.fused.op->values) +
                       " - max) in one pass (the online (max, scaled sum) monoid)");
}

}  // namespace

void fuse_log_sum_exp(const Program& program, Classified& c, Plan& plan) {
  for (bool again = true; again;) {
    again = false;
    for (std::size_t i = 0; i < c.reduces.size() && !again; ++i)
      for (std::size_t j = 0; j < c.reduces.size() && !again; ++j) {
        if (i == j || !is_log_sum_exp_pair(c.reduces[i], c.reduces[j])) continue;
        if (read_elsewhere(program, c.reduces[i].fused.op.get(), c.reduces[j].fused.op.get())) continue;
        fuse_pair(program, i, j, c, plan);
        again = true;
      }
  }
}

}  // namespace fuseflow::codegen
