#pragma once
// The strategy registry's interface. A strategy is one type with four parts:
//   applies(group, target)      whether it can plan the group, and why (or why not)
//   tuning(policies)            the policy values it is tuned with, by name
//   emit(group, policies, target)  its kernels (KernelSpec, source included)
//   schedule(group, kernels, first)  the steps that launch them (StepSpec: data)
// Each lives at the end of its strategy file (strategies/*.cpp) and is listed once, in
// priority order, in strategies/registry.cpp. The group's C++ type is the strategy's
// family: reductions are planned from a ReduceGroup, scans from a ScanGroup, compactions
// from a CompactGroup, the others from the small bundles below. choose() picks: a strategy
// the user forced (the frontend's Strategy) is looked up among those of the family that
// answer to it, a GraphError saying why when none applies; otherwise the first of the
// family, in registry order, that applies.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "array_ops.hpp"
#include "fuseflow/frontend/error.hpp"
#include "compact_context.hpp"
#include "scan_context.hpp"

namespace fuseflow::codegen {

using TuningValues = std::vector<std::pair<std::string, std::int64_t>>;

// applies()'s answer: `why` it applies (kept in the kernels, printed by explain), or why
// not, phrased to follow "strategy NAME " in an error ("needs a commutative monoid; ...").
struct Applies {
  bool ok = false;
  std::string why;
};

// The groups of the families without a group type of their own: what their emitters take.
struct MapGroup {
  const std::vector<Expr>& outputs;
  const std::vector<int>& output_ids;
  const ReduceGroup& leaves;
};
struct HistogramGroup {
  const OpNode& op;
  const ReduceGroup& leaves;
  int output = 0;
};
struct SortGroup {
  const OpNode& op;
  const ReduceGroup& key_leaves;
  const ReduceGroup& leaves;  // keys and values
  const std::vector<SortOutput>& outputs;
};
struct SegmentedReduceGroup {
  std::shared_ptr<const OpNode> op;
  const ReduceGroup& leaves;
  const ReduceGroup& offsets;
  int domain = 0;
  int output = 0;
  int check = 0;  // its offsets_invalid flag
};
struct SegmentedScanGroup {  // segmented_scan (offsets set) and scan_by_key (offsets null)
  const ScanGroup& scan;
  const SegmentOffsets* offsets = nullptr;
};
struct ReduceByKeyGroup {
  const ScanGroup& scan;
};

// What every registered strategy is, whatever its family.
class RegisteredStrategy {
 public:
  virtual ~RegisteredStrategy() = default;
  virtual const char* name() const = 0;    // "reduce chunked", as explain prints it
  virtual const char* family() const = 0;  // "reduce", "scan", ...: the op it plans
  // The frontend Strategy that forces it (Automatic: it is chosen automatically only).
  virtual Strategy forced_by() const { return Strategy::Automatic; }
  virtual TuningValues tuning(const Policies& p) const = 0;
};

template <class Group>
class StrategyFor : public RegisteredStrategy {
 public:
  virtual Applies applies(const Group& g, const Target& t) const = 0;
  virtual std::vector<KernelSpec> emit(const Group& g, const Policies& p, const Target& t) const = 0;
  // The steps launching `kernels`, which the plan holds from index `first` on.
  virtual std::vector<StepSpec> schedule(const Group& g, const std::vector<KernelSpec>& kernels, int first) const = 0;
};

// strategies/registry.cpp: every strategy, in priority order.
const std::vector<const RegisteredStrategy*>& registered_strategies();

template <class Group>
struct Chosen {
  const StrategyFor<Group>* strategy = nullptr;
  std::string why;  // "asked for (...)" or "first that applies: ..."
};

// The registry's error for a forced strategy: none of the family answers to it, or none
// that does applies (`why_not`: their reasons).
[[noreturn]] void forced_strategy_error(const std::string& family, Strategy forced, const std::vector<std::string>& why_not,
                                        const std::vector<std::string>& family_names);
// InternalError: no strategy of `family` applies (the last in registry order must).
[[noreturn]] void no_strategy_error(const std::string& family);

template <class Group>
Chosen<Group> choose(const Group& g, Strategy forced, const Target& t) {
  std::vector<std::string> why_not, names;
  std::string family;
  for (const RegisteredStrategy* r : registered_strategies()) {
    const auto* s = dynamic_cast<const StrategyFor<Group>*>(r);
    if (!s) continue;
    family = s->family();
    names.push_back(s->name());
    if (forced != Strategy::Automatic && s->forced_by() != forced) continue;
    Applies a = s->applies(g, t);
    if (!a.ok) {
      why_not.push_back(std::move(a.why));
      continue;
    }
    const std::string how = forced != Strategy::Automatic
                                ? std::string("asked for (strategy=") + strategy_name(forced) + ")"
                                : "the first " + family + " strategy that applies";
    return {s, how + ": " + a.why};
  }
  if (forced != Strategy::Automatic) forced_strategy_error(family, forced, why_not, names);
  no_strategy_error(family);
}

// Fills in what the registry knows of kernels `first`.. of `plan` (made by `chosen`):
// the registered name and why, the policy values, the scratch of each step, the order.
void record_choice(const RegisteredStrategy& s, const std::string& why, const Policies& p, int first, Plan& plan);

// scratch.cpp: the scratch buffers of the kernels `step` launches (KernelSpec::scratch).
void describe_scratch(const StepSpec& step, Plan& plan);

// Emits `g` with the chosen strategy: appends its kernels and steps to `plan` and
// returns the index of its first kernel.
template <class Group>
int emit_chosen(const Chosen<Group>& c, const Group& g, const Policies& p, const Target& t, Plan& plan) {
  const int first = static_cast<int>(plan.kernels.size());
  std::vector<KernelSpec> ks = c.strategy->emit(g, p, t);
  for (StepSpec& s : c.strategy->schedule(g, ks, first)) plan.steps.push_back(s);
  for (auto& k : ks) plan.kernels.push_back(std::move(k));
  record_choice(*c.strategy, c.why, p, first, plan);
  return first;
}

// Chooses and emits in one: the strategy for `g` (forced or automatic), its kernels and steps.
template <class Group>
int plan_with_registry(const Group& g, Strategy forced, const Policies& p, const Target& t, Plan& plan) {
  return emit_chosen(choose(g, forced, t), g, p, t, plan);
}

}  // namespace fuseflow::codegen
