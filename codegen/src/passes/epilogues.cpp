// The scalar epilogues' pass (scalar_epilogue.hpp): each output that is an expression of
// reductions' results gets a scalar slot (classify), and a place to be computed: the last
// block of the program's last reduce kernel when that kernel's strategy ends in one block
// holding the totals (chunked, staged) and every reduction it reads is computed by the
// reduce kernels (not folded into a scan, which runs later); otherwise a one-thread
// kernel after every other kernel.
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {
void epilogue_reads(const Expr& e, const std::map<const OpNode*, int>& slot_of, std::set<const ExprNode*>& seen,
                    std::set<int>& slots, std::set<const ExprNode*>& params) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) slots.insert(slot_of.at(e.node().op.get()));
  if (e.kind() == ExprKind::Param) params.insert(e.get());
  for (const auto& a : e.args()) epilogue_reads(a, slot_of, seen, slots, params);
}
}  // namespace

ScalarEpilogue plan_scalar_epilogue(const Program& program, int output, const std::map<const OpNode*, int>& slot_of,
                                    Plan& plan) {
  ScalarEpilogue ep;
  ep.expr = program.outputs().at(static_cast<std::size_t>(output));
  ep.output = output;
  std::set<const ExprNode*> seen, params;
  std::set<int> slots;
  epilogue_reads(ep.expr, slot_of, seen, slots, params);
  ep.slots_read.assign(slots.begin(), slots.end());
  for (std::size_t i = 0; i < program.params().size(); ++i)
    if (params.count(program.params()[i].get())) {
      ep.params.push_back(program.params()[i]);
      ep.param_ids.push_back(static_cast<int>(i));
    }
  const Type& t = ep.expr.type();
  const std::size_t offset = (plan.scalar_bytes + t.alignment() - 1) / t.alignment() * t.alignment();
  ep.slot = static_cast<int>(plan.scalars.size());
  plan.scalars.push_back({t, offset});
  plan.scalar_bytes = offset + t.size();
  return ep;
}

std::vector<ScalarEpilogue> place_epilogues(const std::vector<ScalarEpilogue>& epilogues,
                                            const std::vector<PlannedReduce>& reduces,
                                            std::vector<ReduceKernelChoice>& kernels) {
  ReduceKernelChoice* last = kernels.empty() ? nullptr : &kernels.back();
  const bool last_block_combines = last && (last->strategy->forced_by() == Strategy::Chunked ||
                                            last->strategy->forced_by() == Strategy::Staged);
  std::vector<ScalarEpilogue> after_all;
  for (const ScalarEpilogue& ep : epilogues) {
    bool in_last_block = last_block_combines;
    for (int slot : ep.slots_read)
      for (const PlannedReduce& r : reduces)
        if (r.fused.output_slot == slot && r.folded_into_scan) in_last_block = false;
    (in_last_block ? last->epilogues : after_all).push_back(ep);
  }
  return after_all;
}

}  // namespace fuseflow::codegen
