// The strategy registry: every strategy, one line each, in priority order. Within a
// family (the op a strategy plans: see strategy.hpp), the planner takes the first
// that applies, unless the program forces one (strategy=...), which is looked up among
// those answering to it. Adding a strategy: write its type at the end of its file
// (strategies/NAME.cpp), declare its accessor below, and list it where it ranks.
#include "../strategy.hpp"

#include <string_view>

namespace fuseflow::codegen {

// Accessors, one per strategy (each file's registry block defines its own).
const RegisteredStrategy& reduce_chunked_strategy();            // reduce_chunked.cpp
const RegisteredStrategy& reduce_staged_strategy();             // reduce_staged.cpp
const RegisteredStrategy& reduce_tree_strategy();               // reduce_tree.cpp
const RegisteredStrategy& reduce_atomic_strategy();             // reduce_atomic.cpp
const RegisteredStrategy& scan_pipelined_strategy();            // scan_lookback.cpp
const RegisteredStrategy& scan_lookback_strategy();             // scan_lookback.cpp
const RegisteredStrategy& scan_reduce_then_scan_strategy();     // scan_reduce_then_scan.cpp
const RegisteredStrategy& filter_compact_pipelined_strategy();  // filter_compact.cpp
const RegisteredStrategy& filter_compact_strategy();            // filter_compact.cpp
const RegisteredStrategy& histogram_strategy();                 // histogram.cpp
const RegisteredStrategy& segmented_reduce_strategy();          // segmented_reduce.cpp
const RegisteredStrategy& segmented_scan_strategy();            // segmented_scan.cpp
const RegisteredStrategy& segmented_scan_pipelined_strategy();  // segmented_scan_pipelined.cpp
const RegisteredStrategy& reduce_by_key_strategy();             // segmented_scan.cpp
const RegisteredStrategy& reduce_by_key_pipelined_strategy();   // segmented_scan_pipelined.cpp
const RegisteredStrategy& counting_sort_strategy();             // counting_sort.cpp
const RegisteredStrategy& map_strategy();                       // map.cpp
const RegisteredStrategy& map_stencil_strategy();               // map_stencil.cpp
const RegisteredStrategy& scalar_epilogue_strategy();           // scalar_epilogue.cpp
const RegisteredStrategy& radix_sort_strategy();                // radix_sort.cpp
const RegisteredStrategy& rows_strategy();                      // rows.cpp
const RegisteredStrategy& broadcast_strategy();                 // broadcast.cpp
const RegisteredStrategy& histogram_sorted_strategy();          // histogram_sorted.cpp
const RegisteredStrategy& histogram_bucketed_strategy();        // histogram_bucketed.cpp

const std::vector<const RegisteredStrategy*>& registered_strategies() {
  static const std::vector<const RegisteredStrategy*> all = {
      &reduce_chunked_strategy(),            // commutative monoids: any order, vector loads
      &reduce_staged_strategy(),             // every monoid, order kept
      &reduce_tree_strategy(),               // asked for only (staged always applies first)
      &reduce_atomic_strategy(),             // asked for only
      &scan_pipelined_strategy(),            // look-back + the sm_90 pipelined kernel for large n
      &scan_lookback_strategy(),             // look-back (+ the staged tile for large n)
      &scan_reduce_then_scan_strategy(),     // asked for only
      &filter_compact_pipelined_strategy(),  // compaction + the sm_90 pipelined kernel for large n
      &filter_compact_strategy(),
      &histogram_strategy(),
      &segmented_reduce_strategy(),
      &segmented_scan_pipelined_strategy(),  // sm_90, 4-byte inputs and values: the pipelined kernel for large n
      &segmented_scan_strategy(),
      &reduce_by_key_pipelined_strategy(),  // sm_90, 4-byte inputs and values: the pipelined kernel for large n
      &reduce_by_key_strategy(),
      &radix_sort_strategy(),  // ff::sort, sort_by_key without a bin count: 32-bit keys by bits
      &counting_sort_strategy(),
      &map_stencil_strategy(),  // maps reading a shift: vectors, neighbours by shuffles
      &map_strategy(),
      &scalar_epilogue_strategy(),  // outputs from reductions' results, after every kernel
      &rows_strategy(),             // per-row programs over ff::rows: one kernel when a row fits a block
      &broadcast_strategy(),        // other broadcasts: segmented reductions, then a map finding segments
      &histogram_bucketed_strategy(),  // weighted histograms whose bucket of <= 2^21 bins fits in shared memory
      &histogram_sorted_strategy(),  // weighted histograms whose per-warp sums do not fit in shared memory
  };
  return all;
}

namespace {

// A forced strategy: none of the family answers to it, or none that does applies
// (`why_not`: their reasons).
[[noreturn]] void forced_strategy_error(const std::string& family, Strategy forced, const std::vector<std::string>& why_not,
                                        const std::vector<std::string>& family_names) {
  const std::string head = family + ": strategy " + strategy_name(forced);
  if (!why_not.empty()) {
    std::string why = why_not.front();
    for (std::size_t i = 1; i < why_not.size(); ++i)
      if (why_not[i] != why_not.front()) why += "; or " + why_not[i];
    throw GraphError(head + " " + why);
  }
  std::string names;
  for (const auto& n : family_names) names += (names.empty() ? "" : ", ") + n;
  throw GraphError(head + " is not one of the " + family + " strategies (" + names + ")");
}

}  // namespace

Chosen choose(const char* family, const KernelContext& c, Strategy forced) {
  std::vector<std::string> why_not, names;
  for (const RegisteredStrategy* s : registered_strategies()) {
    if (std::string_view(s->family()) != family) continue;
    names.push_back(s->name());
    if (forced != Strategy::Automatic && s->forced_by() != forced) continue;
    Applies a = s->applies(c);
    if (!a.ok) {
      why_not.push_back(std::move(a.why));
      continue;
    }
    const std::string how = forced != Strategy::Automatic
                                ? std::string("asked for (strategy=") + strategy_name(forced) + ")"
                                : std::string("the first ") + family + " strategy that applies";
    return {s, how + ": " + a.why};
  }
  if (forced != Strategy::Automatic) forced_strategy_error(family, forced, why_not, names);
  throw InternalError(std::string("strategy registry: no ") + family +
                      " strategy applies; the last of the family must apply always");
}

int emit_chosen(const Chosen& chosen, const KernelContext& c, Plan& plan) {
  const int first = static_cast<int>(plan.kernels.size());
  std::vector<KernelSpec> ks = chosen.strategy->emit(c);
  for (StepSpec& s : chosen.strategy->schedule(c, ks, first)) plan.steps.push_back(s);
  for (auto& k : ks) plan.kernels.push_back(std::move(k));
  record_choice(*chosen.strategy, chosen.why, c.policies(), first, plan);
  return first;
}

namespace {

// What the launches of kernel `i` (the step's kernel number `j`) wait for: one stream, so
// the launch before each; said per kernel as the kernel before it in launch order.
LaunchOrder order_of(const Plan& plan, const StepSpec& step, int j) {
  const int i = step.kernel + j;
  const auto name = [&](int k) { return plan.kernels.at(static_cast<std::size_t>(k)).name; };
  const bool alternative = step.kind == StepSpec::Kind::Lookback && j > 0;
  if (j == 0 || alternative) {
    LaunchOrder o{step.kernel - 1, step.kernel == 0 ? "nothing: it is in the run's first step"
                                                    : "stream order: the step before (" + name(step.kernel - 1) + "'s)"};
    if (alternative)
      o.reason += "; it launches instead of " + name(step.kernel) + " from " + std::to_string(step.from) + " elements";
    return o;
  }
  LaunchOrder o{i - 1, "stream order: " + name(i - 1) + " in the same step"};
  if (step.kind == StepSpec::Kind::Tree) o.reason += ", then its own previous level";
  if (step.kind == StepSpec::Kind::SegmentedReduce)
    o.reason += " when that launches (short segments), else the step before";
  return o;
}

}  // namespace

void record_choice(const RegisteredStrategy& s, const std::string& why, const Policies& p, int first, Plan& plan) {
  for (std::size_t i = static_cast<std::size_t>(first); i < plan.kernels.size(); ++i) {
    KernelSpec& k = plan.kernels[i];
    k.registered = s.name();
    k.chosen = why;
    k.policy = s.tuning(p);
  }
  for (const StepSpec& step : plan.steps) {
    if (step.kernel < first) continue;
    describe_scratch(step, plan);
    for (int j = 0; j < step.kernels; ++j)
      plan.kernels.at(static_cast<std::size_t>(step.kernel + j)).order = order_of(plan, step, j);
  }
}

}  // namespace fuseflow::codegen
