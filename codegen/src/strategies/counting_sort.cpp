// Stable counting sort by a small integer key (counting_sort, sort_by_key with a bin
// count). A key outside [0, bins) goes to one more bin after every key in range (the CPU
// reference's definition): a permutation of n. Up to OnesweepPolicy::max_bins bins (the
// extra one included), Onesweep (<fuseflow/onesweep.cuh>, onesweep_kernels.cpp): the bins
// counted in one read (ff_counting_sort_histograms_*), then one kernel that ranks each tile,
// looks back over the earlier tiles' per-bin counts and scatters
// (ff_counting_sort_onesweep_*). More bins: per-tile counts (ff_counting_sort_tile_counts_*),
// one exclusive scan of them into 64-bit output positions (ff_counting_sort_scan_u64,
// decoupled look-back), a scatter (ff_counting_sort_scatter_*) that ranks each element
// within its tile and bin by per-warp ballots (<fuseflow/counting_sort.cuh>).
#include <cstdint>

#include "../scan_context.hpp"
#include "../schedule.hpp"
#include "sort_kernels.hpp"

namespace fuseflow::codegen {

namespace {

SortPass counting_sort_pass(const OpNode& op) {
  SortPass p;
  p.prefix = "ff_counting_sort";
  p.bin_constants = {"constexpr long long kKeyBins = " + std::to_string(op.bins) +
                     ";  // keys in [0, kKeyBins); any other key sorts last"};
  p.bins_arg = "kKeyBins";
  p.bins_text = std::to_string(op.bins + 1) + " bins (" + std::to_string(op.bins) + " keys + 1 for keys outside [0, " +
                std::to_string(op.bins) + "))";
  p.why = "a stable counting sort (DESIGN.md): per-tile counts, one exclusive scan of them, a scatter; the per-tile "
          "positions keep equal keys in input order";
  p.scatter_note = "Keys outside [0, kKeyBins) follow every key in range, in input order: the output is a permutation.";
  p.step = "counting sort";
  return p;
}

}  // namespace

std::vector<KernelSpec> emit_counting_sort(const OpNode& op, const KernelContext& key_leaves, const KernelContext& leaves,
                                       const std::vector<SortOutput>& outputs, const SortPolicy& policy) {
  if (op.bins > kMaxCountingSortBins)
    throw GraphError("counting_sort: " + std::to_string(op.bins) + " bins is more than the " +
                     std::to_string(kMaxCountingSortBins) + " this version sorts by (a tile's per-warp counts live in "
                     "shared memory); sort by a coarser key, or with ff::sort / sort_by_key without a bin count (a "
                     "radix sort of 32-bit keys)");
  SortPass pass = counting_sort_pass(op);
  if (op.bins + 1 <= kOnesweepPolicy.max_bins) {
    pass.onesweep = true;
    pass.bins_arg = "ff::sort::KeyBins<kKeyBins>";
    pass.why = "a stable counting sort by Onesweep: the bins counted in one read, then one kernel ranks each tile, "
               "looks back over the earlier tiles' per-bin counts and scatters; ranks in element order keep equal keys "
               "in input order";
    const OnesweepTuning s = onesweep_tuning(op, op.bins + 1, kOnesweepPolicy);
    return {emit_onesweep_histogram(op, key_leaves, "ff::sort::CountingDigits<" + std::to_string(op.bins) + ">", 1,
                                    op.bins + 1, kOnesweepPolicy, pass),
            emit_onesweep_pass(op, leaves, outputs, s, pass, 0, op.bins + 1, 0)};
  }
  const SortTuning s = sort_tuning(op, op.bins + 1, policy);
  return {emit_sort_tile_counts(op, key_leaves, s, pass), emit_sort_scan_counts(leaves, policy, pass),
          emit_sort_scatter(op, leaves, outputs, s, pass)};
}

void counting_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (step.kernels == 2) {
    onesweep_launches(plan, step.kernel, 1, n, b);
    return;
  }
  if (n == 0) return;
  const int first = step.kernel;
  const std::int64_t tile = plan.kernels.at(static_cast<std::size_t>(first)).items_per_block_step;
  const std::int64_t scan_tile = plan.kernels.at(static_cast<std::size_t>(first) + 1).items_per_block_step;
  const std::int64_t bins = step.bins;
  const std::int64_t tiles = (n + tile - 1) / tile;
  const std::int64_t counts = bins * tiles;
  const std::int64_t scan_tiles = (counts + scan_tile - 1) / scan_tile;
  if (scan_tiles > INT32_MAX)
    throw GraphError("counting_sort: " + std::to_string(n) + " elements over " + std::to_string(bins) +
                     " bins need more tiles than one launch has blocks");
  const std::size_t tile_counts = b.allocate(static_cast<std::size_t>(counts) * 4);
  const std::size_t positions = b.allocate(static_cast<std::size_t>(counts) * 8);
  b.launch({first, n, static_cast<int>(tiles), {tile_counts}});
  b.launch({first + 1, counts, static_cast<int>(scan_tiles), {tile_counts, positions},
            lookback_status_bytes(sizeof(std::uint64_t), scan_tiles)});
  b.launch({first + 2, n, static_cast<int>(tiles), {positions}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class CountingSort final : public RegisteredStrategy {
 public:
  CountingSort() : RegisteredStrategy("counting sort", "counting_sort") {}
  Applies applies(const KernelContext& g) const override {
    if (g.op->bins == 0) return {false, "sorts by a small integer key with a bin count; this sort is by key bits"};
    return {true, "small integer keys: Onesweep (a histogram, one ranking, look-back and scatter kernel) up to " +
                      std::to_string(kOnesweepPolicy.max_bins - 1) + " bins; above, tile counts, their scan, a stable "
                      "scatter"};
  }
  TuningValues tuning(const Policies& p) const override {
    TuningValues values = sort_tuning_values(p.sort);
    for (const auto& v : onesweep_tuning_values(kOnesweepPolicy)) values.push_back(v);
    return values;
  }
  // The tile counts read what the keys read; the scan and the scatter, keys and values.
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return emit_counting_sort(*g.op, keys_context(g), g, sort_outputs(g), g.policies().sort);
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::CountingSort, first, static_cast<int>(kernels.size()), -1, 0, INT64_MAX, g.op->bins + 1, false}};
  }
};

}  // namespace

const RegisteredStrategy& counting_sort_strategy() {
  static const CountingSort s;
  return s;
}

}  // namespace fuseflow::codegen
