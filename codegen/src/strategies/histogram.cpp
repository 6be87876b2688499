// Histogram: counts of a fused bin expression (any integral map of the inputs, e.g.
// cast<i32>((x - lo) * scale)) over [0, bins); a bin outside is dropped, never written.
//
// "shared" (the default while the counts fit): every block of a fixed grid keeps private
// copies of the histogram in shared memory (32-bit counts, warp w adding into copy
// w % copies, so warps rarely contend for a word), strides through the inputs with
// 16-byte vector loads adding with shared-memory atomics, then adds its non-zero bins into
// the global counts with one global atomic each (32- or 64-bit: the count type).
// "global" (bins * 4 bytes above 48 KB, the static shared memory a block may declare):
// every element is one global atomic. The executor zeroes the counts before the launch.
// Counts are integers: atomics give the same result in any order. The algorithms are
// ff::histogram_shared and ff::histogram_global (<fuseflow/histogram.cuh>); this file
// chooses between them and writes the fused bin expression.
// "weighted" (histogram(bin, weights, nbins)): sums of the weights, deterministic for floats
// too. Few bins (a column of sums per thread fits, at least HistogramPolicy::lane_min_block
// threads' worth): every thread adds its elements, in a fixed order, into a private column
// in dynamic shared memory, conflict-free; the block sums the columns in a fixed tree, the
// last block the blocks in block order (ff::histogram_weighted_lanes). More bins: per-warp
// private sums in shared memory that only their warp writes, peers (__match_any_sync) added
// in lane order, warps in warp order, blocks in block order by the last block (ff::histogram_weighted).
// Weighted histograms whose per-warp sums do not fit in shared memory: histogram_sorted.cpp
// (a sort by bin, then each bin's run added).
// A filter feeding a histogram is a mask (KernelContext::key): its dropped elements have bin -1.
#include <algorithm>

#include "../array_ops.hpp"

namespace fuseflow::codegen {

// bin_of(inputs..., i) and, weighted, weight_of(inputs..., i): the fused expressions of element i.
void emit_bin_and_weight(SourceWriter& w, CudaTypes& types, const KernelContext& g, const std::vector<std::string>& names,
                         const Type& acc) {
  std::string params;
  for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j)
    params += "const " + types.name(g.leaves.inputs[j].type()) + " " + names[j] + ", ";
  ExprEmitter e(w, types,
                [&](const Expr& leaf) { return elementwise_leaf(g, names, leaf, "a histogram's bin expression"); });
  w.open("const auto bin_of = [&](" + params + "const long long i) -> long long");
  w.line("return (long long)" + e.emit(g.key) + ";");
  w.close("};");
  if (!g.value.valid()) return;
  ExprEmitter v(w, types,
                [&](const Expr& leaf) { return elementwise_leaf(g, names, leaf, "a histogram's weights"); });
  w.open("const auto weight_of = [&](" + params + "const long long i) -> " + types.name(acc));
  w.line("return (" + types.name(acc) + ")" + v.emit(g.value) + ";");
  w.close("};");
}

Type weighted_histogram_acc(const Type& sum_type) {
  // Integers are summed in their unsigned twin, so that sums wrap (signed overflow is undefined).
  return sum_type.scalar() == ScalarType::I32   ? Type(ScalarType::U32)
         : sum_type.scalar() == ScalarType::I64 ? Type(ScalarType::U64)
                                                : sum_type;
}

namespace {

std::size_t per_warp_bytes(const KernelContext& g) {
  const Type acc = weighted_histogram_acc(g.op->output_types[0]);
  return static_cast<std::size_t>(g.op->bins) * acc.size() + 32 * (8 + acc.size());
}

}  // namespace

int weighted_histogram_warps(const KernelContext& g) {
  return static_cast<int>(std::min<std::size_t>(8, g.policies().histogram.shared_limit / per_warp_bytes(g)));
}

namespace {

// Threads per block of the "weighted lanes" kernel: as many whole warps (up to the policy's
// block) as have a column of sums each in the opt-in shared memory, less 2 KB for static
// shared memory; 0 when fewer than the policy's minimum fit (per-warp sums then).
int weighted_lane_block(const KernelContext& g) {
  const HistogramPolicy& p = g.policies().histogram;
  const std::size_t column = static_cast<std::size_t>(g.op->bins) * weighted_histogram_acc(g.op->output_types[0]).size();
  const std::size_t room = g.target().shared_per_block_optin - 2048;
  const int block = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(p.lane_block), room / column) / 32 * 32);
  return block >= p.lane_min_block ? block : 0;
}

// Few bins: a private column of sums per thread in dynamic shared memory (ff::histogram_weighted_lanes).
KernelSpec emit_weighted_lanes(const KernelContext& g, int block) {
  const OpNode& op = *g.op;
  const Target& t = g.target();
  const Type& sum_type = op.output_types[0];
  const Type acc = weighted_histogram_acc(sum_type);
  const int kBlock = block, kVec = vector_load_width(g), kUnroll = g.policies().histogram.lane_unroll;
  const std::size_t smem = static_cast<std::size_t>(op.bins) * acc.size() * static_cast<std::size_t>(kBlock);
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 2048)));
  const int blocks_per_sm = std::max(1, std::min(t.max_threads_per_sm / kBlock, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;
  const int kItems = 16;  // elements per thread before another block is worth its merge

  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Output, g.output_ids.at(0), "sums", sum_type});
  args.push_back({Arg::Kind::Scratch, 0, "partials", acc});
  args.push_back({Arg::Kind::Ticket, kTicketLastBlock, "ticket", ScalarType::U32});

  const std::string name = "ff_histogram_weighted_lanes_" + short_type_name(sum_type);
  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";  // one column of sums per thread");
  w.line("constexpr int kVec = " + std::to_string(kVec) + ";  // elements per vector load");
  w.line("constexpr int kUnroll = " + std::to_string(kUnroll) + ";  // vector loads per input per batch");
  w.line("constexpr long long kBins = " + std::to_string(op.bins) + ";");
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, kBlock, args, g);
  emit_bin_and_weight(w, types, g, names, acc);
  std::string pointers;
  for (const auto& n : names) pointers += ", in_" + n;
  w.line();
  w.comment("Bin b of thread t at b * kBlock + t: kBins * kBlock sums of dynamic shared memory.");
  w.line("extern __shared__ __align__(16) unsigned char lane_storage[];");
  w.line("ff::histogram_weighted_lanes<kBlock, kVec, kUnroll, kBins, " + types.name(acc) +
         ">(n, bin_of, weight_of, sums, partials, ticket,");
  w.line("    reinterpret_cast<" + types.name(acc) + "*>(lane_storage)" + pointers + ");");
  w.close();

  KernelSpec k;
  k.name = name;
  k.block = kBlock;
  k.max_grid = max_grid;
  k.shared_bytes = smem;
  k.items_per_block_step = kBlock * kItems;
  k.any_grid = false;  // float sums round by the grid: it stays the plan's
  k.tuning = {{"block", kBlock}, {"vec", kVec}, {"unroll", kUnroll}, {"items", kItems}};
  k.args = args;
  k.summary = "histogram, weighted (deterministic, per-thread sums): " + std::to_string(op.bins) + " bins of " +
              sum_type.name() + " sums, a private column per thread in shared memory (" + std::to_string(smem) +
              " bytes, conflict-free), each thread's elements in a fixed order, " + std::to_string(kVec) +
              "-element vector loads " + std::to_string(kUnroll) +
              " per input per batch; threads in a fixed tree, blocks in block order by the last block; block " +
              std::to_string(kBlock) + ", grid <= " + std::to_string(max_grid);
  k.why = "weights are summed in a fixed order, with no atomics, so that float sums are the same bits on every run; "
          "the bins are few enough for a column of sums per thread";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary + "\nBins outside [0, kBins) are dropped.",
                           {"histogram.cuh"}, types, w.str());
  return k;
}

// The weighted histogram: warps of sums in shared memory (as many warps as fit, up to the block's).
KernelSpec emit_weighted_histogram(const KernelContext& g) {
  if (const int lanes = weighted_lane_block(g)) return emit_weighted_lanes(g, lanes);
  const OpNode& op = *g.op;
  const int output = g.output_ids.at(0);
  const Target& t = g.target();
  const Type& sum_type = op.output_types[0];
  const Type acc = weighted_histogram_acc(sum_type);
  const std::size_t kSharedLimit = g.policies().histogram.shared_limit;
  const std::size_t per_warp = per_warp_bytes(g);
  const int warps = weighted_histogram_warps(g);
  if (warps < 1)
    throw GraphError("codegen: a weighted histogram of " + std::to_string(op.bins) + " bins of " + sum_type.name() +
                     " is not supported by this version of fuseflow's code generator yet: its sums must fit in " +
                     std::to_string(kSharedLimit) + " bytes of shared memory (at most " +
                     std::to_string((kSharedLimit - 32 * (8 + acc.size())) / acc.size()) + " bins of " +
                     sum_type.name() + ")");
  const int kBlock = 32 * warps;
  const std::size_t smem = static_cast<std::size_t>(warps) * per_warp;
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(t.max_threads_per_sm / kBlock, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;
  const int kItems = 16;  // elements per thread before another block is worth its merge

  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Output, output, "sums", sum_type});
  args.push_back({Arg::Kind::Scratch, 0, "partials", acc});
  args.push_back({Arg::Kind::Ticket, kTicketLastBlock, "ticket", ScalarType::U32});

  const std::string name = "ff_histogram_weighted_" + short_type_name(sum_type);
  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";  // one private copy of the sums per warp");
  w.line("constexpr long long kBins = " + std::to_string(op.bins) + ";");
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, kBlock, args, g);
  emit_bin_and_weight(w, types, g, names, acc);
  std::string pointers;
  for (const auto& n : names) pointers += ", in_" + n;
  w.line();
  w.line("ff::histogram_weighted<kBlock, kBins, " + types.name(acc) + ">(n, bin_of, weight_of, sums, partials, ticket" +
         pointers + ");");
  w.close();

  KernelSpec k;
  k.name = name;
  k.block = kBlock;
  k.max_grid = max_grid;
  k.items_per_block_step = kBlock * kItems;
  k.any_grid = false;  // float sums round by the grid: it stays the plan's
  k.tuning = {{"block", kBlock}, {"warps", warps}, {"items", kItems}};
  k.args = args;
  k.summary = "histogram, weighted (deterministic): " + std::to_string(op.bins) + " bins of " + sum_type.name() +
              " sums, a private copy per warp in shared memory (" + std::to_string(smem) +
              " bytes), peers matched by __match_any_sync and added in lane order, warps in warp order, blocks in block order by the last block; "
              "block " + std::to_string(kBlock) + ", grid <= " + std::to_string(max_grid);
  k.why = "weights are summed in a fixed order, with no atomics, so that float sums are the same bits on every run";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary + "\nBins outside [0, kBins) are dropped.",
                           {"histogram.cuh"}, types, w.str());
  return k;
}

}  // namespace

KernelSpec emit_histogram(const KernelContext& g) {
  if (g.value.valid()) return emit_weighted_histogram(g);
  const OpNode& op = *g.op;
  const int output = g.output_ids.at(0);
  const HistogramPolicy& policy = g.policies().histogram;
  const Target& t = g.target();
  const int kBlock = policy.block, kWarps = kBlock / 32, kUnroll = policy.unroll, kPasses = policy.passes;
  const std::size_t kSharedLimit = policy.shared_limit, kCopiesBudget = policy.copies_budget;
  const Type& count_type = op.output_types[0];
  const std::size_t private_bytes = static_cast<std::size_t>(op.bins) * 4;
  const bool shared = private_bytes <= kSharedLimit;
  const int copies = shared ? static_cast<int>(std::clamp<std::size_t>(kCopiesBudget / private_bytes, 1, kWarps)) : 0;
  const std::size_t smem = static_cast<std::size_t>(copies) * private_bytes;
  const int vec = vector_load_width(g);
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(t.max_threads_per_sm / kBlock, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;

  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  args.push_back({Arg::Kind::Output, output, "counts", count_type});

  const std::string name = std::string("ff_histogram_") + (shared ? "shared_" : "global_") + short_type_name(count_type);
  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";");
  w.line("constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector load");
  w.line("constexpr long long kBins = " + std::to_string(op.bins) + ";");
  if (shared) w.line("constexpr int kCopies = " + std::to_string(copies) + ";  // private copies of the counts per block");
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, kBlock, args, g);
  emit_bin_and_weight(w, types, g, names, count_type);
  std::string pointers;
  for (const auto& n : names) pointers += ", in_" + n;
  w.line();
  w.line(std::string(shared ? "ff::histogram_shared<kBlock, kVec, kBins, kCopies>" : "ff::histogram_global<kBlock, kVec, kBins>") +
         "(n, bin_of, counts" + pointers + ");");
  w.close();

  KernelSpec k;
  k.name = name;
  k.block = kBlock;
  k.max_grid = max_grid;
  k.items_per_block_step = kBlock * vec * kUnroll * kPasses;
  k.tuning = {{"block", kBlock}, {"vec", vec}, {"unroll", kUnroll}, {"passes", kPasses}, {"copies", copies}};
  k.args = args;
  if (shared) {
    k.summary = "histogram, shared (privatised): " + std::to_string(op.bins) + " bins, " + std::to_string(copies) +
                " private copies of 32-bit counts per block (" + std::to_string(smem) + " bytes), shared atomics, " +
                "merged with one global atomic per non-zero bin into " + short_type_name(count_type) +
                " counts; block " + std::to_string(kBlock) + ", grid <= " + std::to_string(max_grid) + ", " +
                std::to_string(vec) + " elements per vector load, >= " + std::to_string(kBlock * vec * kUnroll * kPasses) +
                " elements per block";
    k.why = "the bins fit in shared memory (" + std::to_string(private_bytes) + " <= " +
            std::to_string(kSharedLimit) + " bytes): shared atomics are fast, global traffic is one merge per block";
  } else {
    k.summary = "histogram, global atomics: " + std::to_string(op.bins) + " bins of " + short_type_name(count_type) +
                ", one global atomic per counted element; block " + std::to_string(kBlock) + ", grid <= " +
                std::to_string(max_grid);
    k.why = "the bins do not fit in shared memory (" + std::to_string(private_bytes) + " > " +
            std::to_string(kSharedLimit) + " bytes)";
  }
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary + "\nBins outside [0, kBins) are dropped.",
                           {"histogram.cuh"}, types, w.str());
  return k;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class Histogram final : public RegisteredStrategy {
 public:
  Histogram() : RegisteredStrategy("histogram", "histogram") {}
  Applies applies(const KernelContext& g) const override {
    if (g.value.valid() && weighted_histogram_warps(g) < 1)  // histogram_sorted.cpp takes it
      return {false, "keeps a weighted histogram's sums in shared memory, and " + std::to_string(g.op->bins) +
                         " bins of them do not fit in " + std::to_string(g.policies().histogram.shared_limit) + " bytes"};
    return {true, "one pass counts each element's bin (private counts per block where they fit)"};
  }
  TuningValues tuning(const Policies& p) const override {
    const HistogramPolicy& h = p.histogram;
    return {{"block", h.block}, {"unroll", h.unroll}, {"passes", h.passes},
            {"shared_limit", static_cast<std::int64_t>(h.shared_limit)},
            {"copies_budget", static_cast<std::int64_t>(h.copies_budget)}, {"lane_block", h.lane_block},
            {"lane_min_block", h.lane_min_block}, {"lane_unroll", h.lane_unroll}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_histogram(g)}; }
  // No launch for n = 0: the zeroed output is the answer.
  // A weighted histogram's partials hold every bin per block (StepSpec::bins).
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::OnePass, first, 1, -1, 0, INT64_MAX, g.value.valid() ? g.op->bins : 0, false}};
  }
};

}  // namespace

const RegisteredStrategy& histogram_strategy() {
  static const Histogram s;
  return s;
}

}  // namespace fuseflow::codegen
