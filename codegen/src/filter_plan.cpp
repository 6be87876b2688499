// Planning of stream compaction: program outputs over a filter's result. Every output
// that is a filter's result, or a map of it (filter -> map), is written by one kernel per
// filter: the filter's values and predicate (with any filter below it substituted, as for
// a masked reduction) are evaluated on each loaded element, the survivors are written in
// order and each output's map is applied to them before the store. The outputs' lengths
// are the survivor count, which the kernel writes on the device (OutputShape::counted).
// A filter feeding a reduction is not planned here: it stays a masked reduction.
#include <algorithm>
#include <optional>
#include <set>

#include "compact_context.hpp"
#include "scan_context.hpp"
#include "strategy.hpp"

namespace fuseflow::codegen {

namespace {

// The array leaves an output reads at its own level (not inside the ops it reads).
void collect_arrays(const Expr& e, std::set<const ExprNode*>& seen, std::vector<Expr>& filters, std::vector<Expr>& others) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) others.push_back(e);
  if (e.kind() == ExprKind::Result && !e.node().op->scalar_output)
    (e.node().op->kind == OpKind::Filter ? filters : others).push_back(e);
  // A gather's table is read at computed positions: it has a length of its own.
  for (std::size_t k = e.kind() == ExprKind::Gather ? 1 : 0; k < e.args().size(); ++k)
    collect_arrays(e.args()[k], seen, filters, others);
}

std::string describe(const Expr& leaf) {
  if (leaf.kind() == ExprKind::Input) return "input '" + leaf.node().name + "'";
  return std::string("the result of ") + op_name(leaf.node().op->kind);
}


}  // namespace

std::shared_ptr<const OpNode> compacted_filter(const Expr& output) {
  std::set<const ExprNode*> seen;
  std::vector<Expr> filters, others;
  collect_arrays(output, seen, filters, others);
  if (filters.empty()) return nullptr;
  for (const auto& f : filters)
    if (f.node().op != filters.front().node().op)
      throw GraphError("codegen: output " + to_string(output) +
                       " maps the results of two different filters, whose lengths differ; compact each on its own");
  if (!others.empty())
    throw GraphError("codegen: output " + to_string(output) + " maps a filter's result together with " +
                     describe(others.front()) +
                     ", which has a different length; apply the map before the filter, filter(f(x, y), p)");
  return filters.front().node().op;
}

void plan_filters(const PlanContext& c, const std::vector<int>& output_ids, Plan& plan) {
  std::vector<KernelContext> groups;
  for (int id : output_ids) {
    const Expr& o = c.program.outputs()[static_cast<std::size_t>(id)];
    std::shared_ptr<const OpNode> op = compacted_filter(o);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KernelContext& x) { return x.op == op; });
    if (g == groups.end()) {
      groups.push_back(context_in(c));
      g = groups.end() - 1;
      g->op = op;
    }
    g->outputs.push_back(o);
    g->output_ids.push_back(id);
  }
  if (plan.output_shapes.empty()) plan.output_shapes.resize(c.program.outputs().size());
  for (auto& g : groups) {
    // A memo per group: it is keyed by node address, and the result node made here dies
    // after the call, so a later group's could take its address.
    FilterMemo memo;
    g.value = resolve_filters(Expr::result(g.op, 0, g.op->output_types[0]), g.mask, memo);
    std::vector<Expr> exprs = {g.value, g.mask};
    exprs.insert(exprs.end(), g.outputs.begin(), g.outputs.end());
    g.leaves = leaves_in(c, exprs);
    // The registry: the compaction kernel, and on sm_90 the pipelined one for large n.
    const auto index = static_cast<std::size_t>(plan_with_registry("filter", g, g.op->strategy, plan));
    const std::string& k = plan.kernels[index].name;
    const std::string also = plan.kernels.size() > index + 1 ? " (and " + plan.kernels[index + 1].name + ")" : "";
    for (std::size_t j = 0; j < g.outputs.size(); ++j) {
      plan.output_shapes[static_cast<std::size_t>(g.output_ids[j])].counted = true;
      if (g.outputs[j].kind() != ExprKind::Result)
        plan.notes.push_back("filter -> map: output " + std::to_string(g.output_ids[j]) +
                             "'s map is applied to the survivors in " + k + also + " before they are written");
    }
  }
}

}  // namespace fuseflow::codegen
