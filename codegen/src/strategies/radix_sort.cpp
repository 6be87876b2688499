// Stable LSD radix sort of 32-bit keys (ff::sort, sort_by_key without a bin count): the
// key bits [begin_bit, end_bit) in digits of at most 8 bits, least significant first, by
// Onesweep (Adinets & Merrill 2022; <fuseflow/onesweep.cuh>): one kernel reads the keys
// once and counts every digit (ff_radix_sort_histograms_*), then one kernel per digit
// (ff_radix_sort_onesweep_*_bits<lo>_<hi>) ranks each tile, looks back over the earlier
// tiles' per-bin counts and scatters, with ff::sort::RadixDigit as its bins
// (<fuseflow/radix_sort.cuh>: the ordered bits of u32, i32 and f32 keys). The histogram and
// the first pass read the fused key and value expressions, the other passes the scratch
// arrays the pass before wrote; the last writes the outputs.
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

SortPass radix_pass(const OpNode& op, const std::string& prefix, int pass, int passes, int shift, int width,
                    bool last_to_scratch) {
  const std::string lo = std::to_string(shift), hi = std::to_string(shift + width);
  SortPass p;
  p.prefix = prefix;
  p.suffix = "_bits" + lo + "_" + hi;
  p.bin_constants = {"constexpr int kShift = " + lo + ";  // this pass sorts by key bits [" + lo + ", " + hi +
                         ") of their ordered form",
                     "constexpr int kWidth = " + std::to_string(width) + ";",
                     "using Digit = ff::sort::RadixDigit<kShift, kWidth>;  // " + std::to_string(1 << width) + " bins"};
  p.bins_arg = "Digit";
  p.by_functor = true;
  p.onesweep = true;
  p.bins_text = std::to_string(1 << width) + " bins (key bits [" + lo + ", " + hi + "))";
  p.why = "a stable LSD radix sort of " + op.keys.type().name() + " keys by bits [" + std::to_string(op.begin_bit) +
          ", " + std::to_string(op.end_bit) + "): every digit's histogram in one read, then " + std::to_string(passes) +
          " Onesweep passes of at most 8 bits, each stable, least significant digit first";
  p.from_scratch = pass > 0;
  p.to_scratch = pass + 1 < passes || last_to_scratch;
  p.step = "radix sort pass " + std::to_string(pass + 1) + " of " + std::to_string(passes) + ":";
  return p;
}

}  // namespace

std::vector<KernelSpec> emit_radix_sort(const KernelContext& g, const OnesweepPolicy& policy, const std::string& prefix,
                                        bool last_to_scratch) {
  const OpNode& op = *g.op;
  const std::vector<SortOutput> outputs = last_to_scratch ? std::vector<SortOutput>{} : sort_outputs(g);
  const auto d = digits(op.begin_bit, op.end_bit);
  const int passes = static_cast<int>(d.size());
  const std::int64_t row_bins = std::int64_t{1} << std::min(kDigitBits, op.end_bit - op.begin_bit);
  SortPass histogram = radix_pass(op, prefix, 0, passes, op.begin_bit, 0, last_to_scratch);
  histogram.suffix = "_bits" + std::to_string(op.begin_bit) + "_" + std::to_string(op.end_bit);
  histogram.step = "radix sort";
  std::vector<KernelSpec> kernels = {emit_onesweep_histogram(
      op, keys_context(g),
      "ff::sort::RadixDigits<" + std::to_string(op.begin_bit) + ", " + std::to_string(op.end_bit) + ">", passes,
      row_bins, policy, histogram)};
  for (int i = 0; i < passes; ++i) {
    const SortPass pass = radix_pass(op, prefix, i, passes, d[static_cast<std::size_t>(i)].first,
                                     d[static_cast<std::size_t>(i)].second, last_to_scratch);
    const OnesweepTuning s = onesweep_tuning(op, std::int64_t{1} << d[static_cast<std::size_t>(i)].second, policy);
    kernels.push_back(emit_onesweep_pass(op, g, outputs, s, pass, i, row_bins, i % 2));
  }
  return kernels;
}

// The histogram, then each pass (onesweep_kernels.cpp): the keys (and values) go back and
// forth between two scratch arrays of n (one when there are two passes).
void radix_sort_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  onesweep_launches(plan, step.kernel, step.kernels - 1, n, b);
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
    return {true, "32-bit keys by bits [begin_bit, end_bit): every digit's histogram in one read, one Onesweep pass "
                  "per 8-bit digit"};
  }
  TuningValues tuning(const Policies&) const override { return onesweep_tuning_values(kOnesweepPolicy); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return emit_radix_sort(g, kOnesweepPolicy, "ff_radix_sort", false);
  }
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
