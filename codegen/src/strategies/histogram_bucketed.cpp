// Weighted histogram of many bins by coarse buckets ("histogram weighted bucketed"):
// histogram(bin, weights, bins) whose per-warp sums of all bins do not fit in shared memory
// (histogram.cpp's "weighted" kernel, about 12000 bins of 4-byte sums), but a block's
// HistogramPolicy::bucket_min_warps copies of one bucket's sums do. Deterministic for float
// weights: the same bits on every run of the same inputs, no float atomics.
//
// One step (StepSpec::Kind::HistogramSorted, told apart by its kernels' "bucket_bits"), parts:
//   1. a stable Onesweep pass of (bin, weight) pairs by the bucket, bin >> bucket_bits (the
//      key bits [bucket_bits, bit_width(bins - 1)): at most 256 buckets, one pass;
//      emit_radix_sort), writing scratch; its histogram's counts are the buckets' counts. A
//      dropped element (bin outside [0, bins)) is keyed 0xffffffff (the last bucket) and
//      never added;
//   2. ff_histogram_bucketed_slices_<T>: each bucket's pairs cut into slices of `slice`
//      pairs; a fixed grid strides over the slices, a block's warps each adding a part of
//      the slice into a private copy of the bucket's 2^bucket_bits sums in shared memory
//      (peers by __match_any_sync added in lane order), the copies added in warp order into
//      the slice's row of scratch;
//   3. ff_histogram_bucketed_bins_<T>: each bin adds its bucket's slice rows in slice order
//      and writes its sum, zeros included (<fuseflow/histogram_bucketed.cuh>, which states the
//      whole order of the additions).
// Traffic: the pass's histogram and the pass read the inputs, the pass writes the pairs and
// the slice kernel reads them (about 32 bytes an element of f32 weights and i32 bins, against
// the radix sort path's ~56: histogram_sorted.cpp, which still takes more bins).
#include <algorithm>
#include <bit>
#include <memory>

#include "../array_ops.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"
#include "sort_kernels.hpp"

namespace fuseflow::codegen {

namespace {

constexpr int kBinBlock = 256;  // threads of the bin kernel, a bin each

Expr constant_of(long long v, ScalarType t) { return Expr::constant(Value(v).cast(t)); }

// The split of the bins: buckets of 2^bits bins, `buckets` of them (a power of two <= 256),
// `warps` private copies of a bucket's sums per block, slices of `slice` pairs.
struct BucketSplit {
  int end_bit = 0, bits = 0, buckets = 0, warps = 0;
  std::int64_t slice = 0;
  std::size_t warp_bytes = 0;  // one copy of a bucket's sums
};

BucketSplit bucket_split(const KernelContext& g) {
  const HistogramPolicy& p = g.policies().histogram;
  BucketSplit s;
  s.end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(g.op->bins - 1))));
  s.bits = std::max(0, s.end_bit - 8);
  s.buckets = 1 << (s.end_bit - s.bits);
  s.warp_bytes = (std::size_t{1} << s.bits) * weighted_histogram_acc(g.op->output_types[0]).size();
  const std::size_t room = g.target().shared_per_block_optin - 8192;  // less the static slice table
  s.warps = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(p.bucket_warps), room / s.warp_bytes));
  s.slice = std::max<std::int64_t>(p.bucket_slice_min, std::int64_t{p.bucket_slice_bins} << s.bits);
  return s;
}

// The sort's op: keys the bin as u32 (0xffffffff when dropped), values the weight in the
// type sums are added in (0 when dropped), by bits [bits, end_bit).
std::shared_ptr<OpNode> sort_op(const KernelContext& g, const BucketSplit& split) {
  const OpNode& op = *g.op;
  const Type acc = weighted_histogram_acc(op.output_types[0]);
  const Expr kept = Expr::binary(BinaryOp::Lt, Expr::cast(ScalarType::U64, g.key), constant_of(op.bins, ScalarType::U64));
  auto sort = std::make_shared<OpNode>(op);
  sort->kind = OpKind::CountingSort;
  sort->bins = 0;
  sort->keys = Expr::select(kept, Expr::cast(ScalarType::U32, g.key), constant_of(0xffffffffLL, ScalarType::U32));
  sort->values = Expr::select(kept, Expr::cast(acc, g.value), constant_of(0, acc.scalar()));
  sort->output_types = {Type(ScalarType::U32), acc};
  sort->begin_bit = split.bits;
  sort->end_bit = split.end_bit;
  return sort;
}

std::vector<KernelSpec> emit_histogram_bucketed(const KernelContext& g) {
  const OpNode& op = *g.op;
  const Target& t = g.target();
  const HistogramPolicy& p = g.policies().histogram;
  const BucketSplit split = bucket_split(g);
  const Type& sum_type = op.output_types[0];
  const Type acc = weighted_histogram_acc(sum_type);
  KernelContext s = g;
  s.op = sort_op(g, split);
  s.key_leaves = g.leaves;  // the keys' kernel binds every input (it reads those of the bin)
  s.outputs.clear();
  s.output_ids.clear();
  std::vector<KernelSpec> kernels = emit_radix_sort(s, kOnesweepPolicy, "ff_histogram_bucket", true);
  const std::string bucket_bins = std::to_string(std::int64_t{1} << split.bits);
  for (KernelSpec& k : kernels)
    k.why = "a weighted histogram of " + std::to_string(op.bins) + " bins sorts its (bin, weight) pairs by bucket (bin >> " +
            std::to_string(split.bits) + ", stable: each bucket's weights in element order), then adds each bucket's bins "
            "in shared memory: " + k.why;

  CudaTypes types;
  const std::string tn = short_type_name(sum_type), bins = std::to_string(op.bins);
  const std::string order =
      "Order of the additions, the same on every run: a bucket's pairs (element order) in slices of kSlice, numbered "
      "bucket by bucket; a slice in kWarps consecutive parts, one per warp; a warp's part in steps of 32 pairs, each "
      "step's pairs of one bin added in lane order, then into the warp's copy (from +0); the copies added in warp "
      "order (from +0) into the slice's row; the bin kernel adds its bucket's rows in slice order (from +0).";
  const int block = 32 * split.warps;
  const std::size_t smem = static_cast<std::size_t>(split.warps) * split.warp_bytes;
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 8192)));
  const int blocks_per_sm = std::max(1, std::min(t.max_threads_per_sm / block, by_smem));
  const std::vector<std::string> constants = {
      "constexpr int kBlock = " + std::to_string(block) + ";  // one private copy of a bucket's sums per warp",
      "constexpr int kBuckets = " + std::to_string(split.buckets) + ";  // the sort's digit: bin >> kBucketBits",
      "constexpr int kBucketBits = " + std::to_string(split.bits) + ";  // " + bucket_bins + " bins per bucket",
      "constexpr long long kSlice = " + std::to_string(split.slice) + ";  // pairs per slice of a bucket",
      "constexpr long long kBins = " + bins + ";",
      "constexpr int kUnroll = " + std::to_string(p.bucket_unroll) + ";  // steps of 32 pairs a warp loads at once"};

  const std::vector<Arg> slice_args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                                       {Arg::Kind::Scratch, 0, "keys_in", ScalarType::U32},
                                       {Arg::Kind::Scratch, 1, "values_in", acc},
                                       {Arg::Kind::Scratch, 2, "bucket_counts", ScalarType::U64},
                                       {Arg::Kind::Scratch, 3, "slice_table", ScalarType::I64},
                                       {Arg::Kind::Scratch, 4, "bucket_rows", acc},
                                       {Arg::Kind::Scratch, 5, "slice_rows", acc}};
  KernelSpec slices;
  {
    const std::string name = "ff_histogram_bucketed_slices_" + tn;
    SourceWriter w;
    emit_constants(w, constants);
    w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + name + "(");
    emit_kernel_parameters(w, types, slice_args);
    w.comment("Warp w's copy of the bucket's sums at w * 2^kBucketBits: dynamic shared memory.");
    w.line("extern __shared__ __align__(16) unsigned char warp_storage[];");
    w.line("ff::histogram_bucketed_slices<kBlock, kBuckets, kBucketBits, kSlice, kBins, kUnroll>(keys_in, values_in, "
           "bucket_counts, slice_table,");
    w.line("    bucket_rows, slice_rows, reinterpret_cast<" + types.name(acc) + "*>(warp_storage));");
    w.close();
    slices.name = name;
    slices.block = block;
    slices.args = slice_args;
    slices.shared_bytes = smem;
    slices.max_grid = t.sm_count * blocks_per_sm;
    slices.items_per_block_step = split.slice;
    slices.tuning = {{"block", block},          {"warps", split.warps}, {"bucket_bits", split.bits},
                     {"buckets", split.buckets}, {"slice", split.slice}, {"unroll", p.bucket_unroll}};
    slices.summary = "histogram, weighted bucketed, slices: each of " + std::to_string(split.buckets) + " buckets of " +
                     bucket_bins + " bins in slices of " + std::to_string(split.slice) +
                     " pairs; a warp's part of a slice added into its private copy of the bucket's sums in shared memory (" +
                     std::to_string(smem) + " bytes; peers by __match_any_sync in lane order), the copies in warp order "
                     "into the slice's row; block " + std::to_string(block) + ", grid <= " +
                     std::to_string(slices.max_grid) + " striding over the slices";
    slices.why = "the sort put each bucket's weights in one run, in element order: each slice adds them in a fixed "
                 "order into a bucket's sums that fit in shared memory, with no atomics";
    slices.source = kernel_source(name, g.program_text(), "strategy: " + slices.summary + "\n" + order,
                                  {"histogram_bucketed.cuh"}, types, w.str());
  }

  CudaTypes bin_types;
  const std::vector<Arg> bin_args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                                     {Arg::Kind::Output, g.output_ids.at(0), "sums", sum_type},
                                     {Arg::Kind::Scratch, 0, "slice_table", ScalarType::I64},
                                     {Arg::Kind::Scratch, 1, "bucket_rows", acc},
                                     {Arg::Kind::Scratch, 2, "slice_rows", acc}};
  KernelSpec sums;
  {
    const std::string name = "ff_histogram_bucketed_bins_" + tn;
    SourceWriter w;
    emit_constants(w, {"constexpr int kBlock = " + std::to_string(kBinBlock) + ";  // a bin per thread", constants[1],
                       constants[2], constants[4]});
    w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBinBlock) + ") " + name + "(");
    emit_kernel_parameters(w, bin_types, bin_args);
    w.line("ff::histogram_bucketed_bins<kBlock, kBuckets, kBucketBits, kBins>(slice_table, bucket_rows, slice_rows, "
           "sums);");
    w.close();
    sums.name = name;
    sums.block = kBinBlock;
    sums.args = bin_args;
    sums.max_grid = static_cast<int>(std::min<std::int64_t>((op.bins + kBinBlock - 1) / kBinBlock, 1 << 20));
    sums.items_per_block_step = kBinBlock;
    sums.tuning = {{"block", kBinBlock}, {"bucket_bits", split.bits}, {"buckets", split.buckets}, {"slice", split.slice}};
    sums.summary = "histogram, weighted bucketed, bins: " + bins + " sums of " + sum_type.name() +
                   ", a thread per bin adding its bucket's slice rows in slice order; block " + std::to_string(kBinBlock);
    sums.why = "every bin's sum is its bucket's slices added in slice order: the same bits on every run";
    sums.source = kernel_source(name, g.program_text(), "strategy: " + sums.summary + "\n" + order,
                                {"histogram_bucketed.cuh"}, bin_types, w.str());
  }
  kernels.push_back(slices);
  kernels.push_back(sums);
  return kernels;
}

}  // namespace

bool histogram_bucketed_applies(const KernelContext& g) {
  if (!g.value.valid() || g.op->bins < 2 || g.op->bins > (std::int64_t{1} << 31)) return false;
  return bucket_split(g).warps >= g.policies().histogram.bucket_min_warps;
}

bool is_histogram_bucketed(const Plan& plan, const StepSpec& step) {
  const KernelSpec& last = plan.kernels.at(static_cast<std::size_t>(step.kernel + step.kernels - 1));
  for (const auto& [key, value] : last.tuning)
    if (key == "bucket_bits") return true;
  return false;
}

bool histogram_bucketed_scratch(const KernelSpec& k, const Arg& a, std::vector<ScratchBuffer>& out) {
  std::int64_t bits = -1, buckets = 256, slice = 1;
  for (const auto& [key, value] : k.tuning) {
    if (key == "bucket_bits") bits = value;
    if (key == "buckets") buckets = value;
    if (key == "slice") slice = value;
  }
  if (bits < 0) return false;
  using Per = ScratchBuffer::Per;
  const std::size_t size = a.type.size(), row = (std::size_t{1} << bits) * size;
  const auto ub = static_cast<std::size_t>(buckets);
  if (a.name == "bucket_counts")
    out.push_back({a.name, "each bucket's count of pairs (the sort histogram's counts)", ub * size, Per::Fixed, 1, true});
  else if (a.name == "slice_table")
    out.push_back({a.name, "each bucket's first slice (and their number), written by the slice kernel", (ub + 1) * size,
                   Per::Fixed, 1, false});
  else if (a.name == "bucket_rows")
    out.push_back({a.name, "the sums of the first slices, a row of a bucket's bins each", ub * row, Per::Fixed, 1, false});
  else if (a.name == "slice_rows")
    out.push_back({a.name, "the sums of the other slices, a row of a bucket's bins each", row, Per::Element, slice, false});
  else
    out.push_back({a.name, "the pairs sorted by bucket the sort's pass wrote (its keys_out, values_out)", size,
                   Per::Element, 1, false});
  return true;
}

// The one pass (into scratch; its histogram's counts are the buckets'), then the slice
// kernel over a fixed grid and the bin kernel over the bins. Nothing for n = 0: the zeroed
// output is the answer.
void histogram_bucketed_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n <= 0) return;
  const int passes = step.kernels - 3;  // the sort's histogram, its pass, the slice and bin kernels
  const SortedScratch sorted = onesweep_launches(plan, step.kernel, passes, n, b);
  const int slice_kernel = step.kernel + 1 + passes;
  const KernelSpec& slices = plan.kernels.at(static_cast<std::size_t>(slice_kernel));
  const KernelSpec& sums = plan.kernels.at(static_cast<std::size_t>(slice_kernel + 1));
  std::int64_t bits = 0, buckets = 0, slice = 1;
  for (const auto& [key, value] : slices.tuning) {
    if (key == "bucket_bits") bits = value;
    if (key == "buckets") buckets = value;
    if (key == "slice") slice = value;
  }
  const std::size_t acc_bytes = slices.args.at(6).type.size(), row = (std::size_t{1} << bits) * acc_bytes;
  const std::size_t table = b.allocate(static_cast<std::size_t>(buckets + 1) * 8);
  const std::size_t bucket_rows = b.allocate(static_cast<std::size_t>(buckets) * row);
  const std::size_t slice_rows = b.allocate(static_cast<std::size_t>((n + slice - 1) / slice) * row);
  // Every block strides over the slices: at most a block per slice is worth launching.
  const int grid = static_cast<int>(std::min<std::int64_t>((n + slice - 1) / slice + buckets, slices.max_grid));
  b.launch({slice_kernel, n, grid, {sorted.keys, sorted.values, sorted.digit_counts, table, bucket_rows, slice_rows}});
  b.launch({slice_kernel + 1, n, grid_for(step.bins, sums.items_per_block_step, sums.max_grid), {table, bucket_rows, slice_rows}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
namespace fuseflow::codegen {

namespace {
class HistogramBucketed final : public RegisteredStrategy {
 public:
  HistogramBucketed() : RegisteredStrategy("histogram weighted bucketed", "histogram") {}
  Applies applies(const KernelContext& g) const override {
    if (!g.value.valid()) return {false, "sums weights: the histogram has none"};
    if (!histogram_bucketed_applies(g))
      return {false, "keeps " + std::to_string(g.policies().histogram.bucket_min_warps) + " copies of a bucket's sums (" +
                         std::to_string(g.op->bins) + " bins in at most 256 buckets) in shared memory, and they do not fit"};
    return {true, "one stable Onesweep pass of the (bin, weight) pairs by bucket (bin >> bits), then each bucket's bins "
                  "added in shared memory in a fixed order"};
  }
  TuningValues tuning(const Policies& policies) const override {
    const HistogramPolicy& h = policies.histogram;
    TuningValues v = onesweep_tuning_values(kOnesweepPolicy);
    v.push_back({"bucket_warps", h.bucket_warps});
    v.push_back({"bucket_min_warps", h.bucket_min_warps});
    v.push_back({"bucket_unroll", h.bucket_unroll});
    v.push_back({"bucket_slice_bins", h.bucket_slice_bins});
    v.push_back({"bucket_slice_min", h.bucket_slice_min});
    return v;
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_histogram_bucketed(g); }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::HistogramSorted, first, static_cast<int>(kernels.size()), -1, 0, INT64_MAX, g.op->bins, false}};
  }
};

}  // namespace

const RegisteredStrategy& histogram_bucketed_strategy() {
  static const HistogramBucketed s;
  return s;
}

}  // namespace fuseflow::codegen
