// Stable LSD radix sort of 32-bit keys (ff::sort, sort_by_key without a bin count): the
// key bits [begin_bit, end_bit) in digits of at most 8 bits, least significant first, each
// digit one pass of the counting sort's three kernels (sort_kernels.cpp) with
// ff::sort::RadixDigit as its bins (<fuseflow/radix_sort.cuh>: the ordered bits of u32,
// i32 and f32 keys). The first pass reads the fused key and value expressions, the others
// the scratch arrays the pass before wrote; the last writes the outputs. Kernels
// ff_radix_sort_{tile_counts,scan_u64,scatter}_*_bits<lo>_<hi>, three per pass.
//
// Not yet Onesweep (Adinets & Merrill 2022): each pass counts its tiles, scans the counts
// and scatters (reading the keys twice per pass), where Onesweep computes every digit's
// histogram in one read up front and ranks, looks back over per-bin tile counts and
// scatters in one kernel per pass.
#include <algorithm>
#include <cstdint>

#include "../scan_context.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"
#include "sort_kernels.hpp"

namespace fuseflow::codegen {

namespace {

constexpr int kDigitBits = 8;

// The digits of the op's key bits, least significant first: (shift, width).
std::vector<std::pair<int, int>> digits(int begin_bit, int end_bit) {
  std::vector<std::pair<int, int>> d;
  for (int lo = begin_bit; lo < end_bit; lo += kDigitBits) d.emplace_back(lo, std::min(kDigitBits, end_bit - lo));
  return d;
}

SortPass radix_pass(const OpNode& op, int pass, int passes, int shift, int width) {
  const std::string lo = std::to_string(shift), hi = std::to_string(shift + width);
  SortPass p;
  p.prefix = "ff_radix_sort";
  p.suffix = "_bits" + lo + "_" + hi;
  p.bin_constants = {"constexpr int kShift = " + lo + ";  // this pass sorts by key bits [" + lo + ", " + hi +
                         ") of their ordered form",
                     "constexpr int kWidth = " + std::to_string(width) + ";",
                     "using Digit = ff::sort::RadixDigit<kShift, kWidth>;  // " + std::to_string(1 << width) + " bins"};
  p.bins_arg = "Digit";
  p.by_functor = true;
  p.bins_text = std::to_string(1 << width) + " bins (key bits [" + lo + ", " + hi + "))";
  p.why = "a stable LSD radix sort of " + op.keys.type().name() + " keys by bits [" + std::to_string(op.begin_bit) +
          ", " + std::to_string(op.end_bit) + "): " + std::to_string(passes) +
          " counting-sort passes of at most 8 bits, each stable, least significant digit first";
  p.from_scratch = pass > 0;
  p.to_scratch = pass + 1 < passes;
  p.step = "radix sort pass " + std::to_string(pass + 1) + " of " + std::to_string(passes) + ",";
  return p;
}

std::vector<KernelSpec> emit_radix_sort(const KernelContext& g, const SortPolicy& policy) {
  const OpNode& op = *g.op;
  const KernelContext keys = keys_context(g);
  const std::vector<SortOutput> outputs = sort_outputs(g);
  const auto d = digits(op.begin_bit, op.end_bit);
  std::vector<KernelSpec> kernels;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const SortPass pass = radix_pass(op, static_cast<int>(i), static_cast<int>(d.size()), d[i].first, d[i].second);
    const SortTuning s = sort_tuning(op, std::int64_t{1} << d[i].second, policy);
    kernels.push_back(emit_sort_tile_counts(op, keys, s, pass));
    kernels.back().tuning.push_back({"bins", s.bins});  // the schedule sizes the count matrix by it
    kernels.push_back(emit_sort_scan_counts(g, policy, pass));
    kernels.push_back(emit_sort_scatter(op, g, outputs, s, pass));
  }
  return kernels;
}

std::int64_t tuning_value(const KernelSpec& k, const std::string& name) {
  for (const auto& [key, value] : k.tuning)
    if (key == name) return value;
  throw InternalError("radix sort: kernel " + k.name + " has no tuning value " + name);
}

}  // namespace

// Three launches per pass; the keys (and values) go back and forth between two scratch
// arrays of n (one when there are two passes), the count matrix and positions are shared
// by the passes (one stream: a pass starts after the one before has finished).
void radix_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n == 0) return;
  const int passes = step.kernels / 3;
  std::size_t key_bytes = 0, value_bytes = 0;
  for (const Arg& a : plan.kernels.at(static_cast<std::size_t>(step.kernel + 2)).args) {
    if (a.name == "keys_out") key_bytes = a.type.size();
    if (a.name == "values_out") value_bytes = a.type.size();
  }
  std::int64_t max_counts = 0;
  for (int p = 0; p < passes; ++p) {
    const KernelSpec& counts = plan.kernels.at(static_cast<std::size_t>(step.kernel + 3 * p));
    const std::int64_t tiles = (n + counts.items_per_block_step - 1) / counts.items_per_block_step;
    max_counts = std::max(max_counts, tuning_value(counts, "bins") * tiles);
  }
  const std::int64_t scan_tile = plan.kernels.at(static_cast<std::size_t>(step.kernel) + 1).items_per_block_step;
  const std::int64_t max_scan_tiles = (max_counts + scan_tile - 1) / scan_tile;
  if (max_scan_tiles > INT32_MAX)
    throw GraphError("sort: " + std::to_string(n) + " elements need more tiles than one launch has blocks");
  const auto un = static_cast<std::size_t>(n);
  std::size_t keys[2] = {0, 0}, values[2] = {0, 0};
  for (int i = 0; i < std::min(passes - 1, 2); ++i) {
    keys[i] = b.allocate(un * key_bytes);
    if (value_bytes) values[i] = b.allocate(un * value_bytes);
  }
  const std::size_t tile_counts = b.allocate(static_cast<std::size_t>(max_counts) * 4);
  const std::size_t positions = b.allocate(static_cast<std::size_t>(max_counts) * 8);
  for (int p = 0; p < passes; ++p) {
    const int first = step.kernel + 3 * p;
    const KernelSpec& counts_kernel = plan.kernels.at(static_cast<std::size_t>(first));
    const std::int64_t tiles = (n + counts_kernel.items_per_block_step - 1) / counts_kernel.items_per_block_step;
    const std::int64_t counts = tuning_value(counts_kernel, "bins") * tiles;
    const std::int64_t scan_tiles = (counts + scan_tile - 1) / scan_tile;
    std::vector<std::size_t> in, out;
    if (p > 0) {
      in.push_back(keys[(p - 1) % 2]);
      if (value_bytes) in.push_back(values[(p - 1) % 2]);
    }
    if (p + 1 < passes) {
      out.push_back(keys[p % 2]);
      if (value_bytes) out.push_back(values[p % 2]);
    }
    std::vector<std::size_t> count_scratch = p > 0 ? std::vector<std::size_t>{in.front(), tile_counts}
                                                   : std::vector<std::size_t>{tile_counts};
    std::vector<std::size_t> scatter_scratch = in;
    scatter_scratch.insert(scatter_scratch.end(), out.begin(), out.end());
    scatter_scratch.push_back(positions);
    b.launch({first, n, static_cast<int>(tiles), count_scratch});
    b.launch({first + 1, counts, static_cast<int>(scan_tiles), {tile_counts, positions},
              lookback_status_bytes(sizeof(std::uint64_t), scan_tiles)});
    b.launch({first + 2, n, static_cast<int>(tiles), scatter_scratch});
  }
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
namespace fuseflow::codegen {

namespace {
class RadixSort final : public RegisteredStrategy {
 public:
  RadixSort() : RegisteredStrategy("radix sort", "counting_sort") {}
  Applies applies(const KernelContext& g) const override {
    if (g.op->bins != 0) return {false, "sorts 32-bit keys by their bits; this sort is by a small key with a bin count"};
    return {true, "32-bit keys by bits [begin_bit, end_bit): a stable counting-sort pass per 8-bit digit"};
  }
  TuningValues tuning(const Policies& p) const override { return sort_tuning_values(p.sort); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_radix_sort(g, g.policies().sort); }
  std::vector<StepSpec> schedule(const KernelContext&, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::RadixSort, first, static_cast<int>(kernels.size()), -1, 0, INT64_MAX, 0, false}};
  }
};

}  // namespace

const RegisteredStrategy& radix_sort_strategy() {
  static const RadixSort s;
  return s;
}

}  // namespace fuseflow::codegen
