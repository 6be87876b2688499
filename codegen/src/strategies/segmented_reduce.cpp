// Segmented reduce by offsets (CSR), any monoid: short segments one per thread, then the
// "merge path" (load-balanced) for the rest.
//
// The segment lengths are only known on the device, at run time, and the three shapes that
// matter (one huge segment, random lengths 10..50, millions of segments of 3) want
// different thread/warp/block-per-segment kernels, each of which is slow on one of the
// others. So two kernels, each doing what it is fast at, decided per segment on the device:
//  1. ff_segmented_short_*, launched when the segments average at most 8 elements (n <= 8 x
//     segments, which the host knows): a thread per segment of at most 8 elements, folded
//     in order from unrolled loads (segments of 3 at the copy's speed); each longer segment
//     gets a bit in a mask, and a flag says whether there was one.
//  2. ff_segmented_reduce_*: the merge path (ff::segmented::reduce_by_offsets in
//     <fuseflow/segmented.cuh>): the merge of segment ends and elements split evenly, so
//     one huge segment, skew and empty segments cost the same per item. After the short
//     pass it returns at once when the flag is clear and takes only the segments left to
//     it; when the short pass was not launched (the same test, made in the kernel), all.
// Order is preserved throughout, so non-commutative monoids (maximum segment sum) are
// exact, and floats give the same bits on every run. The plan option segmented_short=0
// (FUSEFLOW_SEGMENTED_SHORT=0) plans the merge path alone.
//
// Where the merge path's time goes, and what keeps it down (the next tile prefetched into
// registers, vector loads for tiles with no segment end, padded staging, a head byte per
// element, a ballot-based join): <fuseflow/segmented.cuh>. Tiles of 256 x 16 items for 4-byte values (8 with a gather).
#include <algorithm>
#include <limits>
#include <string>

#include "../array_ops.hpp"

namespace fuseflow::codegen {

namespace {

// The short-segment pass: threads per block (SegmentedPolicy::short_block) and segments
// per thread (warp-striped); the longest segment one thread folds is kShortSegment.
// Measured on the H100 at 2^28 (bench/RESULTS.md, eleventh run): segments of 3 in 640 us
// (the merge path: 1218), with 2 segments per thread 12% faster than 4; longer segments
// are better split by the merge path (a thread folding 10..50 elements reads them uncoalesced).
int short_per_thread(const Type& acc) { return acc.size() <= 4 ? 2 : 1; }

// What both kernels read: the inputs, n, the offsets, parameters and scalar results; then
// the output.
std::vector<Arg> element_args(const KernelContext& g, const Type& acc) {
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  const std::vector<Arg> offsets_read = offsets_args(g.offsets->leaves, g.offsets->domain);
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(g.leaves.inputs.size()) + 1, offsets_read.begin(),
              offsets_read.end());  // after n
  args.push_back({Arg::Kind::Output, g.output_ids.at(0), "out", acc});
  return args;
}

// The translation unit: the header comment (program, strategy), includes, tuple types, body.
std::string segmented_source(const std::string& name, const KernelContext& g, const std::string& strategy,
                             const CudaTypes& types, const SourceWriter& body) {
  return kernel_source(name, g.program_text(), "strategy: " + strategy, {"collectives.cuh", "segmented.cuh"}, types, body.str());
}

const char* kClampNote =
    "Offsets are clamped to [0, n], so bad ones never read or write out of bounds; one outside [0, n] or below its "
    "predecessor sets offsets_invalid, which run() reports as an error. An empty segment gives the identity.";

// g: the segmented reduction's context, its one reduction set (emit_segmented_reduce).
KernelSpec emit_short_pass(const KernelContext& g) {
  const OpNode& op = *g.op;
  const int kShortBlock = g.policies().segmented.short_block;
  const Type& acc = op.monoid.type();
  const std::string name = "ff_segmented_short_" + short_type_name(acc) + "_" + sanitize(op.monoid.name());
  ReduceKernelWriter k(g, name, ReduceKernelWriter::Partials::None);
  const int per_thread = short_per_thread(acc);
  std::vector<Arg> args = element_args(g, acc);
  args.push_back({Arg::Kind::Scratch, 0, "deferred", ScalarType::U32});
  args.push_back({Arg::Kind::Ticket, 2, "any_deferred", ScalarType::U32});
  args.push_back({Arg::Kind::InvalidFlag, g.offsets->check, "offsets_invalid", ScalarType::U32});

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kShortBlock) + ";",
                     "constexpr int kPerThread = " + std::to_string(per_thread) + ";  // segments per thread per step (32 apart)",
                     "constexpr int kShort = " + std::to_string(kShortSegment) + ";  // the longest segment a thread folds"});
  w.line("extern \"C\" __global__ void __launch_bounds__(kBlock) " + name + "(");
  emit_kernel_parameters(w, k.types(), args);
  k.emit_functions(w);
  w.line("bool out_of_range = false;  // stored once, at the end: a store in the loop would slow it by 10%");
  emit_offset_at(w, k.types(), op, g.offsets->leaves, "a segment ending before its start is flagged too", "out_of_range = true");
  w.line("const auto value_at = [&](const long long i) -> " + k.acc() + " { return " + k.element_at("i") + "; };");
  w.line("ff::segmented::reduce_short_segments<kBlock, kPerThread, kShort>(n, offsets_count - 1, value_at, offset_at, combine,");
  w.line("                                                                 identity, out, deferred, any_deferred,");
  w.line("                                                                 offsets_invalid);");
  w.line("if (out_of_range) *offsets_invalid = 1u;");
  w.close();

  KernelSpec out;
  out.name = name;
  out.block = kShortBlock;
  // A warp per chunk of segments, all launched at once: measured on the H100 at 2^28, 1-6%
  // faster than a resident grid striding over them (segments of 3, 1..8).
  out.max_grid = std::numeric_limits<int>::max();
  out.any_grid = false;
  out.items_per_block_step = kShortBlock * per_thread;  // segments
  out.tuning = {{"block", kShortBlock}, {"segments_per_thread", per_thread}, {"short_segment", kShortSegment}};
  out.args = args;
  out.summary = "segmented reduce, short segments first: a thread per segment of at most " + std::to_string(kShortSegment) +
                " elements (" + std::to_string(per_thread) + " per thread per step, each warp reading 32 consecutive "
                "offsets once), folded in order with unrolled loads; longer segments are left to the merge path "
                "(a bit each in `deferred`), which returns at once if none was left; launched when the segments "
                "average at most " + std::to_string(kShortSegment) + " elements (n <= " + std::to_string(kShortSegment) +
                " x segments), else the merge path takes every segment; a block of " + std::to_string(kShortBlock) +
                " per " + std::to_string(kShortBlock * per_thread) + " segments";
  out.why = "millions of short segments are faster one per thread than through the merge path's tiles; the bits "
            "leave skewed lengths to the load-balanced kernel";
  out.source = segmented_source(name, g, out.summary + "\n" + kClampNote, k.types(), w);
  return out;
}

KernelSpec emit_merge_path(const KernelContext& g, bool after_short) {
  const OpNode& op = *g.op;
  const SegmentedPolicy& policy = g.policies().segmented;
  const Target& t = g.target();
  const Type& acc = op.monoid.type();
  const std::string name = "ff_segmented_reduce_" + short_type_name(acc) + "_" + sanitize(op.monoid.name());
  ReduceKernelWriter k(g, name, ReduceKernelWriter::Partials::None);
  const bool gathers = !g.leaves.tables.empty() && !policy.tile;  // a smaller tile, more blocks
  SegmentedTuning tuning = segmented_tuning(acc, policy);
  if (gathers) tuning.items = std::min(tuning.items, policy.gather_items);
  // Tiles holding no segment end load vectors (1: they are staged like the others).
  const int vec = vector_load_width(g);
  const bool vector_tiles = vec > 1 && tuning.items % vec == 0;
  const std::size_t smem = segmented_shared_bytes(tuning, acc);
  // Resident blocks per SM: by threads, by shared memory, and at most 4 so that each thread
  // may hold the next tile in registers (64 registers at 4 x 256 threads); 5 with gathers.
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int most = gathers ? policy.gather_blocks_per_sm : policy.max_blocks_per_sm;
  const int blocks_per_sm = tuning.min_blocks > 0 ? tuning.min_blocks
                                                 : std::max(1, std::min({t.max_threads_per_sm / tuning.block, by_smem, most}));
  const int max_grid = t.sm_count * blocks_per_sm;

  CudaTypes& types = k.types();
  std::vector<Arg> args = element_args(g, acc);
  args.push_back({Arg::Kind::Scratch, 0, "carry_segment", ScalarType::I64});
  args.push_back({Arg::Kind::Scratch, 1, "carry_value", acc});
  args.push_back({Arg::Kind::Scratch, 2, "head_value", acc});
  if (after_short) args.push_back({Arg::Kind::Scratch, 3, "deferred", ScalarType::U32});
  args.push_back({Arg::Kind::Ticket, 0, "ticket", ScalarType::U32});
  if (after_short) args.push_back({Arg::Kind::Ticket, 2, "any_deferred", ScalarType::U32});
  args.push_back({Arg::Kind::InvalidFlag, g.offsets->check, "offsets_invalid", ScalarType::U32});

  SourceWriter w;
  std::vector<std::string> constants = {
      "constexpr int kBlock = " + std::to_string(tuning.block) + ";",
      "constexpr int kItems = " + std::to_string(tuning.items) + ";  // merge items (elements + segment ends) per thread per tile",
      "constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector load in tiles with no segment end",
      "constexpr int kMinBlocks = " + std::to_string(blocks_per_sm) + ";  // resident blocks per SM (the grid is sized for them)"};
  if (after_short)
    constants.push_back("constexpr long long kShortAverage = " + std::to_string(kShortSegment) +
                        ";  // the short pass ran when n <= this x segments");
  emit_constants(w, constants);
  w.line("extern \"C\" __global__ void __launch_bounds__(kBlock, kMinBlocks) " + name + "(");
  emit_kernel_parameters(w, types, args);
  k.emit_functions(w);
  // offset_at(s): offsets[s] (any integral map of the offsets' inputs), clamped to [0, n].
  emit_offset_at(w, types, op, g.offsets->leaves, "reduce_by_offsets flags decreasing ones");
  w.line("const auto value_at = [&](const long long i) -> " + k.acc() + " { return " + k.element_at("i") + "; };");
  w.comment(vector_tiles ? "A tile with no segment end: vector loads into registers when every input is aligned."
                         : "Every tile is staged: vector loads would not fit the tile (kItems % kVec != 0, or tuple inputs).");
  w.line("const bool vectors_aligned = ff::segmented::vectors_aligned<kVec>(" + k.input_list() + ");");
  w.line("const auto vector_at = [&](const long long i, " + k.acc() + "* v) { ff::segmented::vector_elements<kVec>(element, i, v" +
         k.input_pointers() + "); };");
  if (after_short) {
    w.comment("Only the segments the short-segment pass left (their bits in `deferred`): the kernel returns at once\n"
              "when there is none, and skips the tiles that hold none. Every segment when the pass did not run\n"
              "(the segments average more than kShortAverage elements).");
    w.line("const bool every = n > kShortAverage * (offsets_count - 1);");
  }
  w.line("ff::segmented::reduce_by_offsets<kBlock, kItems, kVec>(offsets_count - 1, value_at, vector_at, vectors_aligned, offset_at,");
  w.line("                                                       combine, identity, out, carry_segment, carry_value, head_value,");
  w.line(std::string("                                                       ticket, offsets_invalid") +
         (after_short ? ", ff::segmented::DeferredSegments{deferred, any_deferred, every});" : ");"));
  w.close();

  KernelSpec out;
  out.name = name;
  out.block = tuning.block;
  out.max_grid = max_grid;
  out.items_per_block_step = tuning.tile();
  out.tuning = {{"block", tuning.block}, {"items", tuning.items}, {"min_blocks", tuning.min_blocks}};
  out.args = args;
  out.summary = "segmented reduce, merge path (load-balanced): block " + std::to_string(tuning.block) + ", " +
                std::to_string(tuning.items) + " items per thread, tiles of " + std::to_string(tuning.tile()) +
                " items (elements + segment ends), " + std::to_string(smem) + " bytes of shared memory, " +
                (vector_tiles ? std::to_string(vec) + "-element vector loads in tiles with no segment end"
                              : std::string("every tile staged")) +
                ", the next tile prefetched into registers, grid <= " +
                std::to_string(max_grid) + " (" + std::to_string(blocks_per_sm) + " x " + std::to_string(t.sm_count) +
                " SMs), each block a contiguous range of tiles" +
                (after_short ? "; only the segments the short pass left, tiles without one skipped" : "");
  out.why = "segment lengths are known only on the device: splitting elements and segment ends evenly is fast for "
            "one huge segment, random lengths and millions of tiny or empty segments alike, and keeps element order" +
            std::string(op.monoid.is_commutative() ? "" : " (the monoid is non-commutative)");
  out.source = segmented_source(name, g, out.summary + "\n" + kClampNote, types, w);
  return out;
}

}  // namespace

std::vector<KernelSpec> emit_segmented_reduce(const KernelContext& c) {
  KernelContext g = c;
  g.reduces = {FusedReduce{c.op, c.op->values, Expr(), -1}};
  std::vector<KernelSpec> kernels;
  const bool after_short = c.policies().segmented.short_pass;  // off (segmented_short=0): the merge path alone
  if (after_short) kernels.push_back(emit_short_pass(g));
  kernels.push_back(emit_merge_path(g, after_short));
  return kernels;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class SegmentedReduce final : public RegisteredStrategy {
 public:
  SegmentedReduce() : RegisteredStrategy("segmented reduce", "segmented_reduce") {}
  Applies applies(const KernelContext&) const override {
    return {true, "the merge path balances elements and segment ends over the blocks (short segments first, a thread each, where the policy has the short pass)"};
  }
  TuningValues tuning(const Policies& p) const override {
    const SegmentedPolicy& s = p.segmented;
    return {{"block", s.block}, {"max_items", s.max_items}, {"shared_budget", static_cast<std::int64_t>(s.shared_budget)},
            {"max_blocks_per_sm", s.max_blocks_per_sm}, {"short_pass", s.short_pass ? 1 : 0}, {"short_block", s.short_block},
            {"gather_items", s.gather_items}, {"gather_blocks_per_sm", s.gather_blocks_per_sm}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_segmented_reduce(g); }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::SegmentedReduce, first, static_cast<int>(kernels.size()), g.offsets->domain, 0, INT64_MAX,
             0, false}};
  }
};

}  // namespace

const RegisteredStrategy& segmented_reduce_strategy() {
  static const SegmentedReduce s;
  return s;
}

}  // namespace fuseflow::codegen
