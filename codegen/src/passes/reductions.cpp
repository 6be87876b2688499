// The reductions' passes. Reductions that do not depend on each other share one kernel
// and one pass over the inputs (one kernel per strategy of a stage); a reduction used by a
// later map or reduction splits the program there, its result staying on the device in
// its scalar slot. Maps are inlined into the reduction (the emitters evaluate the
// expression on each loaded element); a filter's predicate is its mask.
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

std::vector<ReduceKernelChoice> choose_reduce_kernels(const std::vector<PlannedReduce>& reduces, const PlanContext& c) {
  int stages = 0;
  for (const auto& r : reduces)
    if (!r.folded_into_scan) stages = std::max(stages, r.stage + 1);
  std::vector<ReduceKernelChoice> choices;
  for (int stage = 0; stage < stages; ++stage) {
    // The automatic reductions of the stage choose together (the first reduce strategy
    // that applies to all of them); a forced one is looked up, and checked, on its own.
    KernelContext automatic = context_in(c);
    for (const auto& r : reduces)
      if (r.stage == stage && r.strategy == Strategy::Automatic && !r.folded_into_scan)
        automatic.reduces.push_back(r.fused);
    Chosen for_automatic;
    if (!automatic.reduces.empty()) for_automatic = choose("reduce", automatic, Strategy::Automatic);
    // By the frontend strategy each answers to, which orders the kernels of a stage.
    std::map<Strategy, ReduceKernelChoice> kernels;
    for (const auto& r : reduces) {
      if (r.stage != stage || r.folded_into_scan) continue;
      Chosen chosen = for_automatic;
      if (r.strategy != Strategy::Automatic) {
        KernelContext one = context_in(c);
        one.reduces = {r.fused};
        chosen = choose("reduce", one, r.strategy);
      }
      ReduceKernelChoice& k = kernels[chosen.strategy->forced_by()];
      if (!k.strategy) k = {stage, chosen.strategy, chosen.why, {}, false, stage + 1 == stages, {}};
      k.members.push_back(&r);
    }
    for (auto& [forced, choice] : kernels) choices.push_back(std::move(choice));
    if (!choices.empty() && choices.back().stage == stage) choices.back().last_of_stage = true;
  }
  return choices;
}

namespace {

// The kernels of one choice, appended with their steps.
void emit_choice(const ReduceKernelChoice& choice, const PlanContext& c, Plan& plan) {
  KernelContext g = context_in(c);
  g.epilogues = choice.epilogues;
  std::vector<Expr> exprs;
  for (const auto* r : choice.members) {
    g.reduces.push_back(r->fused);
    exprs.push_back(r->fused.value);
    if (r->fused.mask.valid()) exprs.push_back(r->fused.mask);
  }
  g.leaves = leaves_in(c, exprs);
  const int at = emit_chosen(Chosen{choice.strategy, choice.why}, g, plan);
  if (choice.members.size() > 1 && plan.kernels.size() == static_cast<std::size_t>(at) + 1)
    plan.notes.push_back(std::to_string(choice.members.size()) + " reductions share kernel " + plan.kernels.back().name +
                         ": one pass over the inputs");
}

}  // namespace

void emit_reductions(const std::vector<ReduceKernelChoice>& choices, const PlanContext& c, Plan& plan) {
  for (const auto& choice : choices) {
    emit_choice(choice, c, plan);
    if (choice.last_of_stage && !choice.last_stage)
      plan.notes.push_back("a reduction's result is used by a later map: the program splits after stage " +
                           std::to_string(choice.stage) + ", the scalar stays on the device");
  }
}

}  // namespace fuseflow::codegen
