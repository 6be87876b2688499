// The reductions' passes. Reductions that do not depend on each other share one kernel
// and one pass over the inputs (one kernel per strategy of a stage); a reduction used by a
// later map or reduction splits the program there, its result staying on the device in
// its scalar slot. Maps are inlined into the reduction (the emitters evaluate the
// expression on each loaded element); a filter's predicate is its mask.
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

std::vector<ReduceKernelChoice> choose_reduce_kernels(const std::vector<PlannedReduce>& reduces) {
  int stages = 0;
  for (const auto& r : reduces)
    if (!r.folded_into_scan) stages = std::max(stages, r.stage + 1);
  std::vector<ReduceKernelChoice> choices;
  for (int stage = 0; stage < stages; ++stage) {
    // Automatic reductions of one stage share a kernel: chunked when every monoid is
    // commutative, else staged (which keeps order and is right for every monoid).
    std::map<Strategy, std::vector<const PlannedReduce*>> groups;
    bool all_commutative = true;
    for (const auto& r : reduces)
      if (r.stage == stage && r.strategy == Strategy::Automatic && !r.folded_into_scan)
        all_commutative = all_commutative && r.fused.op->monoid.is_commutative();
    for (const auto& r : reduces) {
      if (r.stage != stage || r.folded_into_scan) continue;
      Strategy s = r.strategy;
      if (s == Strategy::Automatic) s = all_commutative ? Strategy::Chunked : Strategy::Staged;
      groups[s].push_back(&r);
    }
    for (const auto& [strategy, members] : groups) choices.push_back({stage, strategy, members, false, stage + 1 == stages});
    if (!choices.empty() && choices.back().stage == stage) choices.back().last_of_stage = true;
  }
  return choices;
}

namespace {

// The kernels of one choice, appended with their steps.
void emit_choice(const ReduceKernelChoice& choice, const PlanContext& c, const Target& target, Plan& plan) {
  ReduceGroup g = group_in(c);
  g.strategy = choice.strategy;
  std::vector<Expr> exprs;
  for (const auto* r : choice.members) {
    g.reduces.push_back(r->fused);
    exprs.push_back(r->fused.value);
    if (r->fused.mask.valid()) exprs.push_back(r->fused.mask);
  }
  fill_leaves(g, c.program, exprs, c.slot_of);
  if (g.inputs.empty()) unsupported("a reduction that reads no input array");
  const ReducePolicy& policy = c.policies.reduce;
  const int at = static_cast<int>(plan.kernels.size());
  if (choice.strategy == Strategy::Tree) {
    std::vector<Kernel> ks = emit_reduce_tree(g, policy, target);
    plan.steps.push_back({StepSpec::Kind::Tree, at, 2});
    for (auto& k : ks) plan.kernels.push_back(std::move(k));
    return;
  }
  if (choice.strategy == Strategy::Atomic) {
    // One atomic kernel per reduction: each needs its own atomic on its own result.
    for (const auto& r : g.reduces) {
      ReduceGroup single = g;
      single.reduces = {r};
      std::vector<Kernel> ks = emit_reduce_atomic(single, policy, target);
      for (auto& k : ks) {
        plan.steps.push_back({StepSpec::Kind::OnePass, static_cast<int>(plan.kernels.size())});
        plan.kernels.push_back(std::move(k));
      }
    }
    return;
  }
  Kernel k = choice.strategy == Strategy::Chunked ? emit_reduce_chunked(g, policy, target)
                                                  : emit_reduce_staged(g, policy, target);
  plan.steps.push_back({StepSpec::Kind::OnePass, at});
  if (choice.members.size() > 1)
    plan.notes.push_back(std::to_string(choice.members.size()) + " reductions share kernel " + k.name +
                         ": one pass over the inputs");
  plan.kernels.push_back(std::move(k));
}

}  // namespace

void emit_reductions(const std::vector<ReduceKernelChoice>& choices, const PlanContext& c, const Target& target,
                     Plan& plan) {
  for (const auto& choice : choices) {
    emit_choice(choice, c, target, plan);
    if (choice.last_of_stage && !choice.last_stage)
      plan.notes.push_back("a reduction's result is used by a later map: the program splits after stage " +
                           std::to_string(choice.stage) + ", the scalar stays on the device");
  }
}

}  // namespace fuseflow::codegen
