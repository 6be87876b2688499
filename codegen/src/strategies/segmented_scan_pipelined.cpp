// Segmented scans (segmented_scan by offsets, scan_by_key) and reduce_by_key on sm_90 and
// later: the pipelined scan's ring (scan_pipelined.cpp) over the (value, head) pieces of
// segmented_scan.cpp, from the scan policy's staged_from elements; below that, and where it
// does not apply, the one-tile-per-block look-back kernel (segmented_scan.cpp), which is
// also this strategy's first kernel. The algorithm is segmented_scan_pipeline.cuh's; this
// file writes the ring's shape, the kernel and its roles' calls, and the registry's view;
// the functors the roles call are segmented_scan_pipelined_roles.cpp's.
#include <algorithm>
#include <string>

#include "../array_ops.hpp"
#include "segmented_scan_pipelined.hpp"

namespace fuseflow::codegen {

namespace {

// The ring's shape: the plain pipelined scan's bytes of stages, split among the inputs
// (each tile a whole number of rounds of 128 elements per scanner warp).
struct PieceRing {
  int tile = 0, stages = 0, warps = 0, inputs = 0;
  std::size_t stage_bytes() const {
    return static_cast<std::size_t>(stages) * static_cast<std::size_t>(inputs) * (static_cast<std::size_t>(tile) + 4) * 4;
  }
  std::size_t static_bytes(bool offsets) const {
    // The ring's control (barriers, pieces, the look-back's stash), the heads' bitmask.
    return 8192 + static_cast<std::size_t>(stages) * (tile / 32) * 4 * (offsets ? 1 : 0);
  }
};

PieceRing piece_ring(const KernelContext& g) {
  const ScanPolicy& p = g.policies().scan;
  PieceRing r;
  r.inputs = static_cast<int>(std::max<std::size_t>(1, g.leaves.inputs.size()));
  r.stages = p.pipe_stages;
  r.warps = p.pipe_warps;
  const int round = 128 * r.warps;
  r.tile = std::max(round, p.pipe_tile / r.inputs / round * round);
  return r;
}

std::string kernel_name(const KernelContext& g) {
  const OpNode& op = *g.op;
  std::string types = short_type_name(op.monoid.type());
  if (op.keys.valid()) types = short_type_name(op.keys.type()) + "_" + types;
  return std::string("ff_") + op_name(op.kind) + "_" + types + "_" + sanitize(op.monoid.name()) +
         (op.kind != OpKind::ReduceByKey && op.scan_kind == ScanKind::Exclusive ? "_exclusive" : "") + "_pipelined";
}

bool pipelined_segmented_scan_applies(const KernelContext& g) {
  const Target& target = g.target();
  const ScanPolicy& p = g.policies().scan;
  if (p.tile || !p.pipeline || !p.segmented_pipeline || target.cc_major < 9) return false;
  if (g.op->kind != OpKind::SegmentedScan && g.op->kind != OpKind::ScanByKey && g.op->kind != OpKind::ReduceByKey)
    return false;
  const auto& inputs = g.leaves.inputs;
  if (inputs.empty() || inputs.size() > 2 || g.op->monoid.type().size() != 4 || !g.reduces.empty() || g.mask.valid())
    return false;
  for (const auto& in : inputs)
    if (in.type().size() != 4) return false;
  const PieceRing r = piece_ring(g);
  if (r.tile % (128 * r.warps) != 0) return false;
  return r.stage_bytes() + r.static_bytes(g.offsets.has_value()) <= target.shared_per_block_optin;
}

KernelSpec emit_segmented_scan_pipelined(const KernelContext& g, const SegmentOffsets* offsets) {
  const Target& target = g.target();
  const PieceRing ring = piece_ring(g);
  ScanTiling tiling;  // only the launch bounds: one block per SM
  tiling.block = (3 + ring.warps) * 32;
  tiling.min_blocks = 1;
  ScanKernelWriter k(g, kernel_name(g), tiling);
  const std::string t = k.acc();
  const bool counts = g.op->kind == OpKind::ReduceByKey;  // pieces count their heads: runs are numbered
  const std::string heads_type = counts ? "long long" : "bool";
  const std::string piece = "ff::segmented::Piece<" + t + ", " + heads_type + ">";
  const std::size_t inputs = g.leaves.inputs.size();

  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kTile = " + std::to_string(ring.tile) + ";  // elements per tile");
  w.line("constexpr int kInputs = " + std::to_string(inputs) + ";  // inputs staged per tile, each in its own region");
  w.line("constexpr int kStages = " + std::to_string(ring.stages) + ";  // tiles a block holds at once (" +
         std::to_string(ring.stage_bytes() / 1024) + " KB of shared memory)");
  w.line("constexpr int kScanWarps = " + std::to_string(ring.warps) +
         ";  // scanner warps, each scans kTile / kScanWarps elements of a tile");
  w.line("constexpr int kBlock = (3 + kScanWarps) * 32;  // producer, reducer, look-back, scanners");
  w.line("constexpr int kMinBlocks = 1;  // one block per SM: the stages take most of its shared memory");
  w.line("}  // namespace");
  w.line();
  std::vector<Arg> extra;
  if (offsets) extra = offsets_args(offsets->leaves, offsets->domain);
  for (std::size_t j = 0; counts && j < g.outputs.size(); ++j)
    extra.push_back({Arg::Kind::OutputCount, g.output_ids[j], "count" + std::to_string(g.output_ids[j]), ScalarType::U64});
  for (const Arg& a : lookback_args(segmented_piece_type(g))) extra.push_back(a);
  if (offsets) extra.push_back({Arg::Kind::InvalidFlag, offsets->check, "offsets_invalid", ScalarType::U32});
  const std::vector<Arg> args = k.args(true, true, extra);
  k.open_kernel(w, args);
  k.emit_functions(w, true, !counts);
  w.line("const auto pieces = [&](const " + piece + "& a, const " + piece + "& b) { return ff::segmented::combine_pieces(a, b, combine); };");
  w.line("const " + piece + " no_piece = {identity, " + (counts ? "0" : "false") + "};");
  w.line();
  w.comment("The ring: kStages stages of kInputs regions (dynamic shared memory), the word before each\n"
            "region holding that input's element before the tile; the barriers, tile ids and pieces\n"
            "that pass between the roles.");
  w.line("extern __shared__ __align__(128) unsigned stage_words[];");
  w.line("__shared__ ff::segmented::PiecePipeline<" + t + ", kStages, kScanWarps" + (counts ? ", long long" : "") +
         "> pipeline;");
  if (offsets) w.line("__shared__ unsigned head_words[kStages * (kTile / 32)];  // the producer's segment heads, per stage");
  w.line("const long long tiles = (n + kTile - 1) / kTile;");
  w.line("if (threadIdx.x == 0) ff::segmented::piece_pipeline_init(pipeline);");
  w.line("__syncthreads();");
  w.line("const int warp = threadIdx.x / 32;");
  const PieceKernel piece_kernel{g, k, offsets};
  emit_piece_heads_functors(w, piece_kernel);
  emit_piece_producer(w, piece_kernel);
  w.comment("Status entries carry the launch's epoch (scan.cuh): nothing clears them between launches.");
  w.line("const ff::ScanTileStatus<" + piece + "> status(tile_status, tiles, epoch);");
  w.open("if (warp == 2)");
  w.comment("Look-back: each tile's exclusive piece (deterministic, scan.cuh), then each segment's carry.");
  w.line("ff::look_back_tiles(pipeline, status, pieces, no_piece);");
  w.line("return;");
  w.close();

  emit_piece_lift(w, piece_kernel);

  w.open("if (warp == 1)");
  w.comment("Reducer: each segment's piece and the tile's, published at once (pieces do not commute:\n"
            "each round of 128 elements is folded across the warp in order).");
  w.line("ff::segmented::reduce_piece_tiles<kTile>(pipeline, n, status, lift, combine, identity);");
  w.line("return;");
  w.close();

  if (counts) emit_piece_run_writers(w, piece_kernel);
  else emit_piece_scanners(w, piece_kernel);
  w.close();

  KernelSpec out;
  out.name = k.name();
  out.strategy = Strategy::Lookback;
  out.block = tiling.block;
  out.max_grid = target.sm_count;  // persistent: one block per SM
  out.any_grid = false;            // the schedule sizes the grid: min(tiles, SMs)
  out.items_per_block_step = ring.tile;
  out.tuning = {{"tile", ring.tile}, {"stages", ring.stages}, {"scan_warps", ring.warps}};
  out.shared_bytes = ring.stage_bytes();
  out.args = args;
  out.summary = std::string(op_name(g.op->kind)) + ", pipelined look-back over (value, head " + (counts ? "count" : "flag") + ") pieces (sm_90): one "
                "block per SM, tiles of " + std::to_string(ring.tile) + " elements in a ring of " +
                std::to_string(ring.stages) + " shared-memory stages of " + std::to_string(inputs) + " input" +
                (inputs == 1 ? "" : "s") + " filled by the bulk copy engine; warps: producer, reducer, look-back, " +
                std::to_string(ring.warps) + " scanners; deterministic look-back; segment heads " +
                (offsets ? "marked by the producer from the offsets (two 32-way warp searches per tile)"
                         : "where the key changes (the key before each tile staged beside it)") +
                (counts ? "; each head writes its run's key and the previous run's value, the last element the run count"
                        : "");
  out.why = "instead of the kernel before it from " + std::to_string(g.policies().scan.staged_from) +
            " elements: the look-back's waits overlap the next tiles' loads";
  std::string comment = "strategy: " + out.summary;
  if (offsets)
    comment += "\nElements before offsets[0] or at or after the last offset belong to no segment: the identity. "
               "Offsets are clamped to [0, n] and must be non-decreasing; offsets outside [0, n] or decreasing "
               "are flagged in offsets_invalid and reported by the runtime after the run.";
  out.source = k.assemble(comment, w.str(), {"fuseflow/segmented_scan_pipeline.cuh"});
  return out;
}

}  // namespace
}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
// The two strategies on the ring of pieces: the same conditions and tuning, other kernels.
class PiecesPipelined : public RegisteredStrategy {
 public:
  // `ops`: what the ring takes, for the message that it does not apply; `heads`: what the
  // pieces hold besides the value.
  PiecesPipelined(const char* name, const char* family, const char* ops, const char* heads)
      : RegisteredStrategy(name, family), ops_(ops), heads_(heads) {}
  Applies applies(const KernelContext& g) const override {
    if (!pipelined_segmented_scan_applies(g))
      return {false, std::string("pipelined needs sm_90 or later, ") + ops_ +
                         " of one or two 4-byte inputs, 4-byte values, no mask, no scan_tile option, the scan pipeline "
                         "on and the opt-in plan option segmented_pipeline"};
    return {true, std::string("sm_90, 4-byte inputs and values: look-back tiles of (value, ") + heads_ +
                      ") pieces, and from " + std::to_string(g.policies().scan.staged_from) +
                      " elements the pipelined kernel"};
  }
  TuningValues tuning(const Policies& p) const override {
    return pipelined_tuning(p.scan, p.scan.pieces.block, p.scan.pieces.items, p.scan.pieces.min_blocks);
  }

 private:
  const char* ops_;
  const char* heads_;
};
class SegmentedScanPipelined final : public PiecesPipelined {
 public:
  SegmentedScanPipelined()
      : PiecesPipelined("segmented scan pipelined", "segmented_scan", "a segmented scan or scan_by_key", "head flag") {}
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    const SegmentOffsets* offsets = g.offsets ? &*g.offsets : nullptr;
    return {emit_segmented_scan(g, offsets, g.target()), emit_segmented_scan_pipelined(g, offsets)};
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    StepSpec step = lookback_step(first, static_cast<int>(kernels.size()), segmented_piece_type(g),
                                  g.policies().scan.staged_from);
    if (g.offsets) step.domain = g.offsets->domain;  // a GraphError for empty offsets
    return {step};
  }
};
class ReduceByKeyPipelined final : public PiecesPipelined {
 public:
  ReduceByKeyPipelined() : PiecesPipelined("reduce by key pipelined", "reduce_by_key", "a reduce_by_key", "head count") {}
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return {emit_reduce_by_key(g, g.target()), emit_segmented_scan_pipelined(g, nullptr)};
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {lookback_step(first, static_cast<int>(kernels.size()), segmented_piece_type(g), g.policies().scan.staged_from)};
  }
};
}  // namespace

const RegisteredStrategy& segmented_scan_pipelined_strategy() {
  static const SegmentedScanPipelined s;
  return s;
}
const RegisteredStrategy& reduce_by_key_pipelined_strategy() {
  static const ReduceByKeyPipelined s;
  return s;
}

}  // namespace fuseflow::codegen
