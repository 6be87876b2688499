#pragma once
// The strategy registry's interface. A strategy is one type with four parts, each given
// the kernel-building context (KernelContext, kernel_context.hpp):
//   applies(context)                  whether it can plan the context's group, and why (or why not)
//   tuning(policies)                  the policy values it is tuned with, by name
//   emit(context)                     its kernels (KernelSpec, source included)
//   schedule(context, kernels, first) the steps that launch them (StepSpec: data)
// Each lives at the end of its strategy file (strategies/*.cpp) and is listed once, in
// priority order, in strategies/registry.cpp. Its family names the op it plans ("reduce",
// "scan", "filter", ...). choose() picks: a strategy the user forced (the frontend's
// Strategy) is looked up among those of the family that answer to it, a GraphError saying
// why when none applies; otherwise the first of the family, in registry order, that
// applies.
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

// What every registered strategy is: a name, the family (the op it plans), the frontend
// Strategy that forces it (Automatic: it is chosen automatically only), and the four parts.
class RegisteredStrategy {
 public:
  RegisteredStrategy(const char* name, const char* family, Strategy forced_by = Strategy::Automatic)
      : name_(name), family_(family), forced_by_(forced_by) {}
  virtual ~RegisteredStrategy() = default;
  const char* name() const { return name_; }      // "reduce chunked", as explain prints it
  const char* family() const { return family_; }  // "reduce", "scan", ...
  Strategy forced_by() const { return forced_by_; }
  virtual TuningValues tuning(const Policies& p) const = 0;
  virtual Applies applies(const KernelContext& c) const = 0;
  virtual std::vector<KernelSpec> emit(const KernelContext& c) const = 0;
  // The steps launching `kernels`, which the plan holds from index `first` on.
  virtual std::vector<StepSpec> schedule(const KernelContext& c, const std::vector<KernelSpec>& kernels,
                                         int first) const = 0;

 private:
  const char* name_;
  const char* family_;
  Strategy forced_by_;
};

// A strategy whose one kernel is launched once over n (StepSpec::Kind::OnePass, also for
// n = 0: reductions write the identity).
class OnePassStrategy : public RegisteredStrategy {
 public:
  using RegisteredStrategy::RegisteredStrategy;
  std::vector<StepSpec> schedule(const KernelContext&, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::OnePass, first}};
  }
};

// strategies/registry.cpp: every strategy, in priority order.
const std::vector<const RegisteredStrategy*>& registered_strategies();

struct Chosen {
  const RegisteredStrategy* strategy = nullptr;
  std::string why;  // "asked for (...)" or "first that applies: ..."
};

// The strategy of `family` for `c`: the one `forced` names (a GraphError saying why when
// none of the family answers to it, or none that does applies), or with Automatic the
// first of the family, in registry order, that applies.
Chosen choose(const char* family, const KernelContext& c, Strategy forced);

// Fills in what the registry knows of kernels `first`.. of `plan` (made by `chosen`):
// the registered name and why, the policy values, the scratch of each step, the order.
void record_choice(const RegisteredStrategy& s, const std::string& why, const Policies& p, int first, Plan& plan);

// scratch.cpp: the scratch buffers of the kernels `step` launches (KernelSpec::scratch).
void describe_scratch(const StepSpec& step, Plan& plan);

// Emits `c` with the chosen strategy: appends its kernels and steps to `plan` and returns
// the index of its first kernel.
int emit_chosen(const Chosen& chosen, const KernelContext& c, Plan& plan);

// Chooses and emits in one: the strategy of `family` for `c` (forced or automatic), its
// kernels and steps.
inline int plan_with_registry(const char* family, const KernelContext& c, Strategy forced, Plan& plan) {
  return emit_chosen(choose(family, c, forced), c, plan);
}

}  // namespace fuseflow::codegen
