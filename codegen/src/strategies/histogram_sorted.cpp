// Weighted histogram of many bins ("histogram weighted sorted"): histogram(bin, weights,
// bins) whose per-warp sums do not fit in shared memory (histogram.cpp's "weighted" kernel
// keeps a copy per warp there: about 12000 bins of 4-byte sums). Deterministic for float
// weights: the same bits on every run of the same program, n and device, no float atomics.
//
// One step (StepSpec::Kind::HistogramSorted), three parts:
//   1. a stable radix sort of (bin, weight) pairs by bin (radix_sort.cpp's Onesweep kernels,
//      emit_radix_sort, over the bits bins - 1 needs: one pass per 8 bits), its last pass
//      writing scratch. An element whose bin is outside [0, bins) is dropped: it sorts as
//      bin bins - 1 with weight 0 (its weight is never read), which adds nothing, since every
//      sum starts at +0 and x + 0 is x for every x but -0 (no sum here is ever -0);
//   2. ff_histogram_sorted_runs_<T>: each bin's run [start, end) of the sorted pairs (its
//      head and tail write it; a zeroed table of 2 x bins), and each piece of 4096 sorted
//      elements its part of the run it starts in (ff::histogram_sorted_runs);
//   3. ff_histogram_sorted_bins_<T>: a lane per bin adds a run of at most 128 in element
//      order; the warp adds a longer one together (the elements before the first piece
//      starting inside it, then those pieces' sums; lanes in a stride of 32, then a fixed
//      tree); every bin is written, zeros included (ff::histogram_sorted_bins,
//      <fuseflow/histogram_sorted.cuh>).
// A stable sort keeps each bin's weights in element order, so every bin is added in a
// fixed order. Scratch: about 2 x n (bin, weight) pairs, 16 bytes a bin and a sum per piece
// (no cap but the device's memory; the rows this replaced were grid x bins, at most 256 MiB).
// Speed: the sort's histogram reads the inputs once, each pass reads and writes the pairs
// (8 or 12 bytes an element), the run kernel reads the keys and the bin kernel the weights.
// Integer weights take the same path (summed in their unsigned twin, so they wrap).
#include <algorithm>
#include <bit>
#include <memory>

#include "../array_ops.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"
#include "sort_kernels.hpp"

namespace fuseflow::codegen {

namespace {

constexpr int kFoldBlock = 256;  // threads of the run and bin kernels: 8 warps, a piece each, or a bin a lane
constexpr int kPiece = 4096;     // sorted elements per piece (one warp each in the run kernel)

Expr constant_of(long long v, ScalarType t) { return Expr::constant(Value(v).cast(t)); }

// The sort's op: keys the bin as u32 (bins - 1 when dropped), values the weight in the
// type sums are added in (0 when dropped), by bits [0, bit_width(bins - 1)).
std::shared_ptr<OpNode> sort_op(const KernelContext& g) {
  const OpNode& op = *g.op;
  const Type acc = weighted_histogram_acc(op.output_types[0]);
  const Expr kept = Expr::binary(BinaryOp::Lt, Expr::cast(ScalarType::U64, g.key), constant_of(op.bins, ScalarType::U64));
  auto sort = std::make_shared<OpNode>(op);
  sort->kind = OpKind::CountingSort;
  sort->bins = 0;
  sort->keys = Expr::select(kept, Expr::cast(ScalarType::U32, g.key), constant_of(op.bins - 1, ScalarType::U32));
  sort->values = Expr::select(kept, Expr::cast(acc, g.value), constant_of(0, acc.scalar()));
  sort->output_types = {Type(ScalarType::U32), acc};
  sort->begin_bit = 0;
  sort->end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(op.bins - 1))));
  return sort;
}

KernelSpec fold_kernel(const KernelContext& g, const std::string& name, const std::vector<Arg>& args,
                       const std::string& call, const std::string& comment) {
  CudaTypes types;
  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kFoldBlock) + ";  // 8 warps",
                     "constexpr int kPiece = " + std::to_string(kPiece) + ";  // sorted elements per piece",
                     "constexpr long long kBins = " + std::to_string(g.op->bins) + ";"});
  w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kFoldBlock) + ") " + name + "(");
  emit_kernel_parameters(w, types, args);
  w.comment(comment);
  w.line(call);
  w.close();
  KernelSpec k;
  k.name = name;
  k.block = kFoldBlock;
  k.args = args;
  k.tuning = {{"block", kFoldBlock}, {"piece", kPiece}};
  k.source = kernel_source(name, g.program_text(), "strategy: " + comment, {"histogram_sorted.cuh"}, types, w.str());
  return k;
}

std::vector<KernelSpec> emit_histogram_sorted(const KernelContext& g) {
  const OpNode& op = *g.op;
  if (op.bins > (std::int64_t{1} << 32))
    throw GraphError("histogram: a weighted histogram of " + std::to_string(op.bins) +
                     " bins sorts its bins as 32-bit keys: at most 2^32 bins");
  const Type& sum_type = op.output_types[0];
  const Type acc = weighted_histogram_acc(sum_type);
  KernelContext s = g;
  s.op = sort_op(g);
  s.key_leaves = g.leaves;  // the keys' kernel binds every input (it reads those of the bin)
  s.outputs.clear();
  s.output_ids.clear();
  std::vector<KernelSpec> kernels = emit_radix_sort(s, kOnesweepPolicy, "ff_histogram_sort", true);
  const std::string sorted = "the (bin, weight) pairs sorted by bin";
  for (KernelSpec& k : kernels)
    k.why = "a weighted histogram of " + std::to_string(op.bins) + " bins sorts its (bin, weight) pairs by bin " +
            "(stable: each bin's weights in element order), then adds each bin's run: " + k.why;

  const std::string t = short_type_name(sum_type), bins = std::to_string(op.bins);
  const std::vector<Arg> run_args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                                     {Arg::Kind::Scratch, 0, "keys_in", ScalarType::U32},
                                     {Arg::Kind::Scratch, 1, "values_in", acc},
                                     {Arg::Kind::Scratch, 2, "runs", ScalarType::I64},
                                     {Arg::Kind::Scratch, 3, "piece_sums", acc}};
  KernelSpec runs = fold_kernel(
      g, "ff_histogram_sorted_runs_" + t, run_args, "ff::histogram_sorted_runs<kBlock, kPiece>(n, keys_in, values_in, runs, piece_sums);",
      "histogram, weighted sorted, runs: of " + sorted + ", each bin's run [start, end) (its head and tail), and "
      "each piece of " + std::to_string(kPiece) + " its part of the run it starts in (lanes in a stride, then a fixed tree)");
  runs.max_grid = 65535;
  runs.items_per_block_step = kPiece * (kFoldBlock / 32);
  runs.summary = "histogram, weighted sorted, runs: each bin's run of the sorted pairs and each piece of " +
                 std::to_string(kPiece) + " sorted elements its part of its first run (a warp per piece); block " +
                 std::to_string(kFoldBlock);
  runs.why = "the bin kernel adds each bin's run: its bounds, and the sums of the pieces it spans";

  const std::vector<Arg> bin_args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                                     {Arg::Kind::Output, g.output_ids.at(0), "sums", sum_type},
                                     {Arg::Kind::Scratch, 0, "values_in", acc},
                                     {Arg::Kind::Scratch, 1, "runs", ScalarType::I64},
                                     {Arg::Kind::Scratch, 2, "piece_sums", acc}};
  KernelSpec sums = fold_kernel(
      g, "ff_histogram_sorted_bins_" + t, bin_args,
      "ff::histogram_sorted_bins<kBlock, kPiece, kBins>(values_in, runs, piece_sums, sums);",
      "histogram, weighted sorted, bins: each of " + bins + " bins adds its run of " + sorted + " (a lane a run of at "
      "most 128 in element order, the warp a longer one: lanes in a stride over its elements and the sums of the pieces "
      "it spans, then a fixed tree) and writes its sum, 0 for an empty bin");
  sums.max_grid = static_cast<int>(std::min<std::int64_t>((op.bins + kFoldBlock - 1) / kFoldBlock, 1 << 20));
  sums.items_per_block_step = kFoldBlock;
  sums.summary = "histogram, weighted sorted, bins: " + bins + " sums of " + sum_type.name() +
                 ", a lane per bin adding its run in element order (a warp for a run over 128); block " + std::to_string(kFoldBlock);
  sums.why = "a stable sort put each bin's weights in one run, in element order: adding it in a fixed order gives "
             "the same bits on every run, with no atomics";
  kernels.push_back(runs);
  kernels.push_back(sums);
  return kernels;
}

}  // namespace

int histogram_sorted_piece() { return kPiece; }

// The sort (its last pass into scratch; no launch for n = 0: the zeroed output is the
// answer), then the run kernel over the sorted pairs and the bin kernel over the bins.
void histogram_sorted_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (is_histogram_bucketed(plan, step)) return histogram_bucketed_launches(plan, step, n, b);
  if (n <= 0) return;
  const int passes = step.kernels - 3;  // the sort's histogram, its passes, the run and bin kernels
  const SortedScratch sorted = onesweep_launches(plan, step.kernel, passes, n, b);
  const int run_kernel = step.kernel + 1 + passes;
  const KernelSpec& runs = plan.kernels.at(static_cast<std::size_t>(run_kernel));
  const KernelSpec& sums = plan.kernels.at(static_cast<std::size_t>(run_kernel + 1));
  std::size_t acc_bytes = 0;
  for (const Arg& a : runs.args)
    if (a.name == "piece_sums") acc_bytes = a.type.size();
  const std::size_t table = b.allocate(static_cast<std::size_t>(step.bins) * 16, true);
  const std::size_t pieces = b.allocate(static_cast<std::size_t>((n + kPiece - 1) / kPiece) * acc_bytes);
  b.launch({run_kernel, n, grid_for(n, runs.items_per_block_step, runs.max_grid), {sorted.keys, sorted.values, table, pieces}});
  b.launch({run_kernel + 1, n, grid_for(step.bins, sums.items_per_block_step, sums.max_grid), {sorted.values, table, pieces}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
namespace fuseflow::codegen {

namespace {
class HistogramSorted final : public RegisteredStrategy {
 public:
  HistogramSorted() : RegisteredStrategy("histogram weighted sorted", "histogram") {}
  Applies applies(const KernelContext& g) const override {
    if (!g.value.valid()) return {false, "sums weights: the histogram has none"};
    // Past 2^32 bins it still applies (the family's last): emit names the limit in a GraphError.
    return {true, "a stable radix sort of the (bin, weight) pairs by bin, then each bin's run added in a fixed order"};
  }
  TuningValues tuning(const Policies&) const override {
    TuningValues v = onesweep_tuning_values(kOnesweepPolicy);
    v.push_back({"fold_block", kFoldBlock});
    v.push_back({"piece", kPiece});
    return v;
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_histogram_sorted(g); }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::HistogramSorted, first, static_cast<int>(kernels.size()), -1, 0, INT64_MAX, g.op->bins, false}};
  }
};

}  // namespace

const RegisteredStrategy& histogram_sorted_strategy() {
  static const HistogramSorted s;
  return s;
}

}  // namespace fuseflow::codegen
