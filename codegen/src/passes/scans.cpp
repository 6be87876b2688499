// The scans' passes. A program output over a scan's result (the scan itself, or a map of
// it) is written by the scan's kernel: the scan's input map is inlined into its loads
// (prologue), and the output's map is the epilogue applied before the store. One kernel
// per scan writes every output that reads it. Scans run after the reductions, so their
// maps may read reductions' results; a reduction over the scan's inputs whose result
// nothing before the scan needs is folded into the scan kernel's pass instead
// (fold_reductions_into_scans). Segmented scans (segmented_scan, scan_by_key) are planned
// alike, by segmented_plan.cpp. A scan of a filter's result is rejected: by definition
// (the CPU reference) it scans the compacted survivors, whose count only the compaction
// kernel knows, on the device; a masked scan over all n elements is
// scan(select(p, x, identity)).
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

void collect_scans(const Expr& e, std::set<const OpNode*>& scans, std::set<const ExprNode*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result && is_scan(e.node().op->kind)) scans.insert(e.node().op.get());
  for (const auto& a : e.args()) collect_scans(a, scans, seen);
}

// The leaves the scan kernel reads: its map, its outputs' epilogues and the maps of the
// reductions folded into it.
void fill_scan_leaves(KernelContext& g) {
  std::vector<Expr> exprs = {g.value};
  if (g.mask.valid()) exprs.push_back(g.mask);
  if (g.op->keys.valid()) exprs.push_back(g.op->keys);  // scan_by_key
  exprs.insert(exprs.end(), g.outputs.begin(), g.outputs.end());
  for (const auto& r : g.reduces) {
    exprs.push_back(r.value);
    if (r.mask.valid()) exprs.push_back(r.mask);
  }
  g.leaves = leaves_in(*g.plan, exprs);
}

}  // namespace

bool is_scan(OpKind k) { return k == OpKind::Scan || k == OpKind::SegmentedScan || k == OpKind::ScanByKey; }

const OpNode* scan_of(const Expr& output) {
  std::set<const OpNode*> scans;
  std::set<const ExprNode*> seen;
  collect_scans(output, scans, seen);
  if (scans.size() > 1) unsupported("an output that combines the results of several scans");
  return scans.empty() ? nullptr : *scans.begin();
}

std::vector<KernelContext> group_scans(const PlanContext& c, const std::vector<int>& output_ids, FilterMemo& memo) {
  const Program& program = c.program;
  std::vector<KernelContext> groups;
  for (int id : output_ids) {
    const Expr& o = program.outputs()[static_cast<std::size_t>(id)];
    const OpNode* op = scan_of(o);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KernelContext& x) { return x.op.get() == op; });
    if (g == groups.end()) {
      KernelContext fresh = context_in(c);
      for (const auto& p : program.ops())
        if (p.get() == op) fresh.op = p;
      groups.push_back(std::move(fresh));
      g = groups.end() - 1;
    }
    g->outputs.push_back(o);
    g->output_ids.push_back(id);
  }
  for (auto& g : groups) {
    g.value = resolve_filters(g.op->values, g.mask, memo);
    if (g.mask.valid())
      throw GraphError("codegen: a scan of a filter's result (the prefixes of the compacted survivors) is not "
                       "supported in one program yet; run the filter first (its result is a device array) and scan "
                       "that, or for a masked scan over all n elements write scan(select(p, x, identity))");
  }
  return groups;
}

void emit_scans(const std::vector<KernelContext>& groups, Plan& plan) {
  for (const auto& g : groups) {
    const std::size_t at = plan.kernels.size();
    if (g.op->kind != OpKind::Scan)  // segmented_scan, scan_by_key: segmented_plan.cpp
      plan_segmented_scan(g, plan);
    else  // the registry: look-back (pipelined or staged for large n), or reduce_then_scan when asked
      plan_with_registry("scan", g, g.op->strategy, plan);
    // A plain scan's second kernel (for large n) applies the epilogue too.
    const std::string& last = plan.kernels.back().name;
    const bool two_lookbacks =
        g.op->kind == OpKind::Scan && g.op->strategy != Strategy::ReduceThenScan && plan.kernels.size() - at == 2;
    const std::string epilogue_of =
        two_lookbacks ? plan.kernels[at].name + "'s (and " + last + "'s)" : last + "'s";
    for (const auto& o : g.outputs)
      if (o.kind() != ExprKind::Result)
        plan.notes.push_back("scan -> map: the map is " + epilogue_of + " epilogue, applied before the store");
    for (const auto& r : g.reduces)
      plan.notes.push_back("scan + reduction: " + to_string(r.op->values) + " folded with " + r.op->monoid.name() + " in " +
                           last + "'s pass over the input (read once), per-tile folds combined in tile order");
  }
}

// A reduction is folded into a look-back scan's kernel when that reads every input the
// reduction reads (one pass serves both), the reduction's strategy is automatic, and its
// result is needed only after the scans: no reduction or scan reads it (those run before
// or in the scan kernel), and it reads no result of another folded reduction. Array
// outputs and array ops, which may read it, run after the scans.
void fold_reductions_into_scans(std::vector<PlannedReduce>& reduces, std::vector<KernelContext>& groups) {
  if (groups.empty()) return;
  std::set<const OpNode*> read_by_reductions;
  std::vector<std::set<const ExprNode*>> inputs_of(reduces.size());
  std::vector<std::set<const OpNode*>> scalars_of(reduces.size());
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    std::set<const ExprNode*> seen, params;
    collect_leaves(reduces[j].fused.value, seen, inputs_of[j], params, scalars_of[j]);
    collect_leaves(reduces[j].fused.mask, seen, inputs_of[j], params, scalars_of[j]);
    read_by_reductions.insert(scalars_of[j].begin(), scalars_of[j].end());
  }
  std::set<const OpNode*> read_by_scans, folded;
  for (auto& g : groups) {
    fill_scan_leaves(g);
    for (const auto& [op, slot] : g.plan->slot_of)
      if (std::count(g.leaves.scalars_read.begin(), g.leaves.scalars_read.end(), slot)) read_by_scans.insert(op);
  }
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    PlannedReduce& r = reduces[j];
    const OpNode* op = r.fused.op.get();
    if (r.strategy != Strategy::Automatic || inputs_of[j].empty() || read_by_reductions.count(op) ||
        read_by_scans.count(op))
      continue;
    if (std::any_of(scalars_of[j].begin(), scalars_of[j].end(), [&](const OpNode* d) { return folded.count(d) > 0; }))
      continue;
    for (auto& g : groups) {
      if (g.op->kind != OpKind::Scan || g.op->strategy == Strategy::ReduceThenScan) continue;
      std::set<const ExprNode*> scan_inputs;
      for (const auto& in : g.leaves.inputs) scan_inputs.insert(in.get());
      if (!std::includes(scan_inputs.begin(), scan_inputs.end(), inputs_of[j].begin(), inputs_of[j].end())) continue;
      g.reduces.push_back(r.fused);
      fill_scan_leaves(g);
      r.folded_into_scan = true;
      folded.insert(op);
      break;
    }
  }
}
}  // namespace fuseflow::codegen
