// Planning of segmented scans (segmented_scan by offsets, scan_by_key) and reduce_by_key:
// one look-back kernel each (strategies/segmented_scan.cpp, through the registry). A segmented scan has n
// outputs and may carry epilogues like any scan (plan_scans groups its outputs); its
// offsets are an input domain of their own. reduce_by_key writes one key and one value per
// run of equal keys, a number only the device knows: its outputs are counted (capacity n,
// the kernel writes the count).
#include "strategy.hpp"

namespace fuseflow::codegen {

void plan_segmented_scan(const KernelContext& scan, Plan& plan) {
  const PlanContext& c = *scan.plan;
  const OpNode& op = *scan.op;
  if (op.kind == OpKind::ScanByKey) {
    (void)leaves_of(c, {op.keys}, op_name(op.kind));  // GraphError for an array result among the keys
    plan_with_registry("segmented_scan", scan, op.strategy, plan);
    return;
  }
  KernelContext g = scan;
  g.offsets = SegmentOffsets{offsets_leaves(c, op), 0, static_cast<int>(plan.checked_offsets.size())};
  g.offsets->domain = offsets_domain(c, g.offsets->leaves, op_name(op.kind), plan);
  plan.checked_offsets.push_back(g.op);
  plan_with_registry("segmented_scan", g, op.strategy, plan);
}

void plan_reduce_by_key(const PlanContext& c, const std::shared_ptr<const OpNode>& op, Plan& plan) {
  KernelContext g = context_in(c);
  g.op = op;
  g.value = op->values;
  for (std::size_t i = 0; i < c.program.outputs().size(); ++i) {
    const Expr& o = c.program.outputs()[i];
    if (o.kind() == ExprKind::Result && o.node().op == op) {
      g.outputs.push_back(o);
      g.output_ids.push_back(static_cast<int>(i));
    }
  }
  // One kernel writes every output of the op: planned with the first of them.
  if (plan.output_shapes[static_cast<std::size_t>(g.output_ids[0])].counted) return;
  for (int id : g.output_ids) plan.output_shapes[static_cast<std::size_t>(id)].counted = true;
  g.leaves = leaves_of(c, {op->values, op->keys}, "reduce_by_key");
  plan_with_registry("reduce_by_key", g, op->strategy, plan);
}

}  // namespace fuseflow::codegen
