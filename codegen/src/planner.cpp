// The planner: program -> kernels, as a pipeline of passes over plain data (passes/):
// classify the ops and outputs, choose how they share kernels, emit each kernel and its
// schedule step in launch order. Maps are inlined into their consumers; a reduction of a
// filter's result is a masked reduction, a filter's result as an output a compaction;
// reductions that do not depend on each other share one kernel and one pass over the
// inputs, and a reduction used by a later map splits the program there, its result
// staying on the device in a scalar slot; scans write the outputs over their results and
// fold reductions over their inputs; array outputs are computed by a final element-wise
// kernel.
#include <algorithm>

#include "fuseflow/frontend/filter_lift.hpp"
#include "passes/passes.hpp"
#include "rows.hpp"

namespace fuseflow::codegen {

namespace {

// The element-wise kernel of the array outputs (maps of inputs, parameters and results).
void emit_array_outputs(const Classified& classified, const PlanContext& c, Plan& plan) {
  KernelContext map = context_in(c);
  map.outputs = classified.array_outputs;
  map.output_ids = classified.array_output_ids;
  map.leaves = leaves_in(c, classified.array_outputs);
  plan_with_registry("map", map, Strategy::Automatic, plan);
}

// The plan's invariants: every kernel is launched by exactly one step, in order, and its
// source defines it. InternalError otherwise (a bug in a pass, never the program's).
void check_plan(const Plan& plan) {
  int next = 0;
  for (const StepSpec& s : plan.steps) {
    if (s.kernel != next || s.kernels < 1 || s.kernel + s.kernels > static_cast<int>(plan.kernels.size()))
      throw InternalError("planner: a " + std::string(step_kind_name(s.kind)) + " step launches kernels " +
                          std::to_string(s.kernel) + " + " + std::to_string(s.kernels) + " where kernel " +
                          std::to_string(next) + " of " + std::to_string(plan.kernels.size()) + " is next");
    next = s.kernel + s.kernels;
  }
  if (next != static_cast<int>(plan.kernels.size()))
    throw InternalError("planner: " + std::to_string(plan.kernels.size() - static_cast<std::size_t>(next)) +
                        " kernels are launched by no step");
  for (const KernelSpec& k : plan.kernels)
    if (k.source.find(" " + k.name + "(") == std::string::npos)
      throw InternalError("planner: the source of kernel " + k.name + " does not define it");
}

// ff::fill(n, v) and ff::iota(n) fix the length of the elements' domain (every element-wise
// array of a program has one length): Plan::fill_length, which the runtime checks the inputs
// against; a fill of a parameter's length, Plan::fill_length_param (read when it runs).
void fill_lengths(const Program& p, const Expr& e, bool offsets, std::set<const void*>& seen, Plan& plan) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (!seen.insert(&op).second) return;
    for (const Expr* x : {&op.values, &op.predicate, &op.keys}) fill_lengths(p, *x, false, seen, plan);
    fill_lengths(p, op.offsets, true, seen, plan);
    return;
  }
  if (fill_has_own_length(e) && offsets) unsupported(to_string(e) + " as segment offsets");
  if (e.kind() == ExprKind::Fill && e.args().size() == 1) {
    if (plan.fill_length >= 0 && plan.fill_length != e.node().length)
      throw GraphError("program: arrays of different lengths: a fill of " + std::to_string(plan.fill_length) +
                       " elements and " + to_string(e) + " of " + std::to_string(e.node().length));
    plan.fill_length = e.node().length;
  } else if (fill_has_own_length(e)) {
    const auto& params = p.params();
    const auto at = std::find_if(params.begin(), params.end(), [&](const Expr& q) { return same_node(q, e.args()[1]); });
    const int index = static_cast<int>(at - params.begin());
    if (plan.fill_length_param >= 0 && plan.fill_length_param != index)
      unsupported("fills of two parameters' lengths, " + to_string(params[static_cast<std::size_t>(plan.fill_length_param)]) +
                  " and " + to_string(e.args()[1]) + ", in one program");
    plan.fill_length_param = index;
  }
  for (const auto& a : e.args()) fill_lengths(p, a, offsets, seen, plan);
}

// A segmented op the lifting rewrote (its values read a lifted filter) is checked under the
// user's op, which the runtime looks up among the program's ops to explain a bad offset.
void check_original_ops(const Program& original, Plan& plan) {
  for (auto& op : plan.checked_offsets) {
    if (!op) continue;
    const auto& ops = original.ops();
    if (std::find(ops.begin(), ops.end(), op) != ops.end()) continue;
    for (const auto& o : ops)
      if (o->kind == op->kind && same_node(o->offsets, op->offsets)) op = o;
  }
}

}  // namespace

Plan plan(const Program& original, const Target& target, const PlanOptions& options) {
  validate(options);
  if (std::optional<Plan> staged = plan_in_stages(original, target, options)) {  // passes/stages.cpp
    check_plan(*staged);
    return std::move(*staged);
  }
  // Filters' results mixed with other arrays read one filter alone (filter_lift.hpp).
  const Program program = lift_filters(original);
  const Policies policies = policies_for(target, options);  // the target's tuning, the options over it
  Plan plan;
  FilterMemo memo;
  if (program.ops() != original.ops()) {
    std::string lifted;
    for (const char ch : to_string(program)) lifted += ch == '\n' ? std::string("; ") : std::string(1, ch);
    if (lifted.size() >= 2) lifted.resize(lifted.size() - 2);
    plan.notes.push_back("filter mix: arrays beside a filter's result are read at the survivors' positions, "
                         "planned as: " + lifted);
  }
  plan_tables(program, plan);
  std::set<const void*> seen;
  for (const Expr& o : program.outputs()) fill_lengths(program, o, false, seen, plan);
  if (plan_rows_program(program, policies, target, plan)) {  // a per-segment broadcast: rows_plan.cpp
    check_plan(plan);
    return plan;
  }

  // Classify: every op and output by what plans it; a scalar slot per reduction.
  Classified classified = classify(program, plan, memo);
  classified.program_text = to_string(original);
  fuse_log_sum_exp(program, classified, plan);
  const PlanContext context{program, classified.program_text, classified.slot_types, classified.slot_of, policies, target};

  // Choose: each scan writes the outputs over its result and folds the reductions over its
  // inputs whose results nothing earlier needs; the other reductions share kernels.
  std::vector<KernelContext> scans = group_scans(context, classified.scan_output_ids, memo);
  adopt_filter_outputs(program, scans, classified.filter_output_ids);
  plan_position_scans(context, classified.reduces, scans);
  fold_reductions_into_scans(classified.reduces, scans);
  std::vector<ReduceKernelChoice> reduce_kernels = choose_reduce_kernels(classified.reduces, context);
  const std::vector<ScalarEpilogue> after_all = place_epilogues(classified.epilogues, classified.reduces, reduce_kernels);

  // Emit, in launch order: reductions (stage by stage), scans, array ops, compactions,
  // the element-wise outputs.
  emit_reductions(reduce_kernels, context, plan);
  emit_scans(scans, plan);
  for (int i : classified.array_op_output_ids)
    plan_array_op(context, program.outputs()[static_cast<std::size_t>(i)].node().op, i, plan);
  if (!classified.filter_output_ids.empty()) plan_filters(context, classified.filter_output_ids, plan);
  if (!classified.array_outputs.empty()) emit_array_outputs(classified, context, plan);
  if (!after_all.empty())
    emit_epilogue_kernel(after_all, context, plan);
  check_original_ops(original, plan);
  check_plan(plan);
  return plan;
}

}  // namespace fuseflow::codegen
