// The classify pass: filters resolved into masks (filter -> reduce is a masked
// reduction), each reduction given its stage and scalar slot, each program output sorted
// by what plans it. Also the leaves of the expressions a kernel evaluates.
#include <algorithm>
#include <functional>

#include "passes.hpp"

namespace fuseflow::codegen {

void unsupported(const std::string& what) {
  throw GraphError("codegen: " + what + " is not supported by this version of fuseflow's code generator yet");
}

namespace {

// Filter resolution (see resolve_filters): a node's substitute is memoised with the
// predicates of the filters substituted below it, so every use of a shared filtered
// expression gets its mask.
void add_conjuncts(std::vector<Expr>& to, const std::vector<Expr>& from) {
  for (const auto& c : from)
    if (std::none_of(to.begin(), to.end(), [&](const Expr& t) { return same_node(t, c); })) to.push_back(c);
}
bool reads_index(const Expr& e) {
  if (e.kind() == ExprKind::Index) return true;
  return std::any_of(e.args().begin(), e.args().end(), [](const Expr& a) { return reads_index(a); });
}
const ResolvedFilters& resolve(const Expr& e, FilterMemo& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  ResolvedFilters r{e, {}, false};
  if (e.kind() == ExprKind::Result && !e.node().op->scalar_output) {
    const OpNode& op = *e.node().op;
    if (op.kind != OpKind::Filter) unsupported(std::string("using the array result of ") + op_name(op.kind) + " in a map");
    const ResolvedFilters& predicate = resolve(op.predicate, memo);
    add_conjuncts(r.conjuncts, predicate.conjuncts);
    add_conjuncts(r.conjuncts, {predicate.expr});
    const ResolvedFilters& values = resolve(op.values, memo);
    add_conjuncts(r.conjuncts, values.conjuncts);
    r.expr = values.expr;
    r.filtered = true;
  } else if (!e.args().empty()) {
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : e.args()) {
      const ResolvedFilters& arg = resolve(a, memo);
      add_conjuncts(r.conjuncts, arg.conjuncts);
      r.filtered = r.filtered || arg.filtered;
      args.push_back(arg.expr);
      changed = changed || !same_node(args.back(), a);
    }
    // index() means the position in the array the expression maps over: among a filter's
    // survivors when it maps a filter's result, which a masked (uncompacted) kernel does not know.
    if (r.filtered && reads_index(e))
      throw GraphError("codegen: " + to_string(e) +
                       " reads index() beside a filter's result, where it means the position among the survivors; "
                       "that is not supported yet: zip the index before filtering, filter(zip(x, index()), p)");
    if (changed) r.expr = e.with_args(std::move(args));
  }
  return memo.emplace(e.get(), std::move(r)).first->second;
}
// The filters' results an expression reads at its own level (not inside other ops).
bool reads_filter(const Expr& e) {
  if (e.kind() == ExprKind::Result) return e.node().op->kind == OpKind::Filter;
  return std::any_of(e.args().begin(), e.args().end(), [](const Expr& a) { return reads_filter(a); });
}

// `e` with each node for which `leaf` gives an expression replaced by it (`leaf` gives an
// empty Expr for the nodes it keeps).
Expr substitute(const Expr& e, const std::function<Expr(const Expr&)>& leaf, std::map<const ExprNode*, Expr>& memo) {
  if (Expr to = leaf(e); to.valid()) return to;
  if (e.args().empty()) return e;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  std::vector<Expr> args;
  bool changed = false;
  for (const auto& a : e.args()) {
    args.push_back(substitute(a, leaf, memo));
    changed = changed || !same_node(args.back(), a);
  }
  Expr r = changed ? e.with_args(std::move(args)) : e;
  memo.emplace(e.get(), r);
  return r;
}
}  // namespace

Expr substitute(const Expr& e, const std::function<Expr(const Expr&)>& leaf) {
  std::map<const ExprNode*, Expr> memo;
  return substitute(e, leaf, memo);
}

Expr resolve_filters(const Expr& e, Expr& mask, FilterMemo& memo) {
  const ResolvedFilters& r = resolve(e, memo);
  for (const auto& c : r.conjuncts) mask = mask.valid() ? (mask && c) : c;
  return r.expr;
}

// Leaves of an expression: inputs, parameters and scalar results it reads.
void collect_leaves(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& inputs,
                    std::set<const ExprNode*>& params, std::set<const OpNode*>& scalars) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) inputs.insert(e.get());
  if (e.kind() == ExprKind::Param) params.insert(e.get());
  if (e.kind() == ExprKind::Result && e.node().op->scalar_output) scalars.insert(e.node().op.get());
  for (const auto& a : table_free_args(e)) collect_leaves(a, seen, inputs, params, scalars);
}

KernelContext context_in(const PlanContext& c) {
  KernelContext g;
  g.plan = &c;
  return g;
}

Leaves leaves_in(const PlanContext& c, const std::vector<Expr>& exprs) {
  const Program& p = c.program;
  std::set<const ExprNode*> seen, inputs, params;
  std::set<const OpNode*> scalars;
  for (const auto& e : exprs) collect_leaves(e, seen, inputs, params, scalars);
  Leaves g;
  for (std::size_t i = 0; i < p.inputs().size(); ++i)
    if (inputs.count(p.inputs()[i].get())) {
      g.inputs.push_back(p.inputs()[i]);
      g.input_ids.push_back(static_cast<int>(i));
    }
  for (std::size_t i = 0; i < p.params().size(); ++i)
    if (params.count(p.params()[i].get())) {
      g.params.push_back(p.params()[i]);
      g.param_ids.push_back(static_cast<int>(i));
    }
  for (const auto* op : scalars) g.scalars_read.push_back(c.slot_of.at(op));
  std::sort(g.scalars_read.begin(), g.scalars_read.end());
  fill_tables(g, c.program, exprs);
  return g;
}


Classified classify(const Program& program, Plan& plan, FilterMemo& memo) {
  Classified c;
  std::map<const OpNode*, int>& slot_of = c.slot_of;
  std::vector<PlannedReduce>& reduces = c.reduces;
  for (const auto& op : program.ops()) {
    if (op->kind == OpKind::Filter) continue;  // fused into its consumers below
    if (is_scan(op->kind)) continue;           // group_scans, emit_scans
    if (op->kind == OpKind::Histogram || op->kind == OpKind::SegmentedReduce || op->kind == OpKind::CountingSort ||
        op->kind == OpKind::ReduceByKey)
      continue;  // plan_array_op
    if (op->kind != OpKind::Reduce) unsupported(op_name(op->kind));
    PlannedReduce r;
    Expr mask;
    r.fused.op = op;
    if (reads_index(op->values) && reads_filter(op->values)) {
      // index() beside a filter's result: the position among the survivors, a placeholder
      // until plan_position_scans gives it a scan's count (its own memo: the rewritten nodes
      // are fresh, and die with it).
      r.survivor_position = Expr::param("survivor_position", ScalarType::I64);
      FilterMemo fresh;
      r.fused.value = resolve_filters(
          substitute(op->values, [&](const Expr& e) { return e.kind() == ExprKind::Index ? r.survivor_position : Expr(); }),
          mask, fresh);
    } else {
      r.fused.value = resolve_filters(op->values, mask, memo);
    }
    r.fused.mask = mask;
    r.fused.output_slot = static_cast<int>(plan.scalars.size());
    // A reduction runs after every reduction whose result its map reads, also through a
    // filter it consumes (the filter's values and predicate are substituted in by now).
    std::set<const ExprNode*> seen, inputs, params;
    std::set<const OpNode*> scalars;
    collect_leaves(r.fused.value, seen, inputs, params, scalars);
    collect_leaves(r.fused.mask, seen, inputs, params, scalars);
    for (const auto* dep : scalars)
      for (const auto& other : reduces)
        if (other.fused.op.get() == dep) r.stage = std::max(r.stage, other.stage + 1);
    r.strategy = op->strategy;
    slot_of[op.get()] = r.fused.output_slot;
    std::size_t size = op->monoid.type().size(), align = op->monoid.type().alignment();
    std::size_t offset = (plan.scalar_bytes + align - 1) / align * align;
    plan.scalars.push_back({op->monoid.type(), offset});
    plan.scalar_bytes = offset + size;
    reduces.push_back(std::move(r));
  }
  for (const auto& s : plan.scalars) c.slot_types.push_back(s.type);

  // Outputs: reductions read their slot; arrays are computed by the final map kernel.
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    if (is_scalar_epilogue(o)) {  // computed on the device after the reductions it reads
      c.epilogues.push_back(plan_scalar_epilogue(program, static_cast<int>(i), slot_of, plan));
      c.slot_types.push_back(o.type());
      plan.output_scalar.push_back(c.epilogues.back().slot);
      continue;
    }
    if (o.kind() == ExprKind::Result && o.node().op->scalar_output) {
      plan.output_scalar.push_back(slot_of.at(o.node().op.get()));
    } else {
      plan.output_scalar.push_back(-1);
      if (is_array_op(o)) {
        c.array_op_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      if (compacted_filter(o)) {  // a filter's compacted array, or a map of it: plan_filters
        c.filter_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      if (scan_of(o)) {
        c.scan_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      Expr mask;
      c.array_outputs.push_back(resolve_filters(o, mask, memo));
      c.array_output_ids.push_back(static_cast<int>(i));
    }
  }

  c.program_text = to_string(program);
  return c;
}

}  // namespace fuseflow::codegen
