// Planning of the general per-segment broadcast (rows.hpp): a program with ff::broadcast
// that is not a per-row program (rows_plan.cpp) is planned here when its ops are segmented
// reductions over offsets inputs (any segment lengths; one or several offsets arrays), whose
// values may read earlier ones' broadcasts over the same offsets, and its outputs are element-wise expressions of the inputs,
// parameters, index() and those broadcasts, or the reductions' per-segment results. The
// kernels: strategies/broadcast.cpp, one step (launched by strategies/broadcast_launches.cpp);
// the broadcasts a kernel reads: broadcasts_in. Anything else is refused with a GraphError
// saying what fits neither path.
#include <algorithm>
#include <set>

#include "array_ops.hpp"
#include "kernel_context.hpp"
#include "passes/passes.hpp"
#include "rows.hpp"
#include "strategy.hpp"

namespace fuseflow::codegen {

namespace {

void collect_broadcasts(const Program& p, const Expr& e, std::set<const ExprNode*>& seen, std::vector<BroadcastRead>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Broadcast) {
    const OpNode* op = e.args()[0].node().op.get();
    if (std::none_of(out.begin(), out.end(), [&](const BroadcastRead& b) { return b.op == op; })) {
      BroadcastRead b;
      b.op = op;
      b.type = e.type();
      for (std::size_t k = 0; k < p.ops().size(); ++k)
        if (p.ops()[k].get() == op) b.op_index = static_cast<int>(k);
      b.output = result_output(p, *op);
      out.push_back(b);
    }
    return;
  }
  for (const auto& a : e.args()) collect_broadcasts(p, a, seen, out);
}

struct Refusal {
  const std::string& misfit;
  [[noreturn]] void operator()(const std::string& why) const {
    throw GraphError("codegen: " + why +
                     "; a per-segment broadcast is planned as one per-row kernel (not this program: " + misfit +
                     ") or as segmented reductions over offsets inputs, each element reading its segment's result; "
                     "ff::broadcast_by_key, ff::rows offsets of rows longer than a block and other ops beside a "
                     "broadcast are not supported by this version of fuseflow's code generator yet (the CPU reference "
                     "evaluates them)");
  }
};

// An element-wise expression of a broadcast program: inputs, parameters, constants,
// index(), gathers and shifts, and broadcasts by offsets of the program's reductions (of
// `earlier` only, when given: a reduction's values read the reductions before it).
void check_element(const Expr& e, const std::string& where, const std::set<const OpNode*>* earlier,
                   std::set<const ExprNode*>& seen, const Refusal& refuse) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  switch (e.kind()) {
    case ExprKind::Broadcast:
      if (e.node().index != 0) refuse(to_string(e) + " in " + where);
      if (earlier && !earlier->count(e.args()[0].node().op.get()))
        refuse(to_string(e) + " in " + where + " reads a reduction that comes later");
      return;
    case ExprKind::Rows: refuse("the row offsets " + to_string(e) + " read as values in " + where);
    case ExprKind::Result:
      refuse(std::string("the result of ") + op_name(e.node().op->kind) + " read in " + where +
             " (the elements read a segmented reduction's result through ff::broadcast)");
    default: break;
  }
  for (const auto& a : e.args()) check_element(a, where, earlier, seen, refuse);
}

}  // namespace

int result_output(const Program& p, const OpNode& op) {
  for (std::size_t i = 0; i < p.outputs().size(); ++i) {
    const Expr& o = p.outputs()[i];
    if (o.kind() == ExprKind::Result && o.node().op.get() == &op) return static_cast<int>(i);
  }
  return -1;
}

std::vector<BroadcastRead> broadcasts_in(const Program& p, const std::vector<Expr>& exprs) {
  std::set<const ExprNode*> seen;
  std::vector<BroadcastRead> out;
  for (const auto& e : exprs) collect_broadcasts(p, e, seen, out);
  return out;
}

void plan_broadcast_program(const Program& program, const Policies& policies, const Target& target,
                            const std::string& misfit, Plan& plan) {
  const Refusal refuse{misfit};
  const auto& ops = program.ops();
  std::set<const OpNode*> earlier;
  for (const auto& op : ops) {
    if (op->kind != OpKind::SegmentedReduce)
      refuse(std::string(op_name(op->kind)) + " in a program with a broadcast");
    if (op->offsets.kind() != ExprKind::Input)
      refuse("segmented_reduce over offsets " + to_string(op->offsets) + " (not one input array)");
    std::set<const ExprNode*> seen;
    check_element(op->values, "the values of a segmented_reduce", &earlier, seen, refuse);
    for (const BroadcastRead& b : broadcasts_in(program, {op->values}))  // found by op's own offsets
      if (!same_node(b.op->offsets, op->offsets))
        refuse("the values of a segmented_reduce over " + to_string(op->offsets) + " read a broadcast over other offsets, " +
               to_string(b.op->offsets));
    earlier.insert(op.get());
  }
  if (ops.empty()) refuse("a broadcast program with no segmented_reduce");

  // Each offsets input once (the first, the map's walk; the others, a cursor each): its
  // domain and the flag its kernels set when it leaves elements outside every segment.
  const PlanContext context{program, to_string(program), {}, {}, policies, target};
  KernelContext g = context_in(context);
  std::vector<SegmentOffsets> all;
  const auto offsets_of = [&](const OpNode& op) -> const SegmentOffsets& {
    for (const SegmentOffsets& s : all)
      if (same_node(s.leaves.inputs.at(0), op.offsets)) return s;
    throw InternalError("codegen: a broadcast's reduction over offsets " + to_string(op.offsets) + " not planned");
  };
  for (const auto& op : ops) {
    if (std::any_of(all.begin(), all.end(), [&](const SegmentOffsets& s) { return same_node(s.leaves.inputs.at(0), op->offsets); }))
      continue;
    SegmentOffsets offsets{offsets_leaves(context, *op), 0, static_cast<int>(plan.checked_offsets.size())};
    offsets.domain = offsets_domain(context, offsets.leaves, "segmented_reduce", plan);
    plan.checked_offsets.push_back(op);
    all.push_back(offsets);
  }
  g.offsets = all.front();
  g.more_offsets.assign(all.begin() + 1, all.end());
  plan.output_shapes.resize(program.outputs().size());
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    const std::string where = "output " + std::to_string(i) + " (" + to_string(o) + ")";
    plan.output_scalar.push_back(-1);
    if (o.kind() == ExprKind::Result) {  // a reduction's per-segment results, written by its kernels
      if (o.node().op->kind != OpKind::SegmentedReduce) refuse(where + " in a program with a broadcast");
      plan.output_shapes[i].domain = offsets_of(*o.node().op).domain;
      plan.output_shapes[i].less = 1;
      continue;
    }
    if (!is_array(o)) refuse(where + " is not an array");
    std::set<const ExprNode*> seen;
    check_element(o, where, nullptr, seen, refuse);
    g.outputs.push_back(o);
    g.output_ids.push_back(static_cast<int>(i));
  }
  g.leaves = leaves_in(context, g.outputs);
  g.leaves.broadcasts = broadcasts_in(program, g.outputs);
  plan_with_registry("broadcast", g, Strategy::Automatic, plan);
}

Plan plan_segment_results(const Program& program, const Target& target, const PlanOptions& options) {
  Plan plan;
  plan_tables(program, plan);
  plan_broadcast_program(program, policies_for(target, options), target,
                         "stage 1 of a program whose broadcasts other ops read", plan);
  return plan;
}

}  // namespace fuseflow::codegen
