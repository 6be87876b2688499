// Segmented scans (segmented_scan by offsets, scan_by_key) on sm_90 and later: the
// pipelined scan's ring (scan_pipelined.cpp) over the (value, head flag) pieces of
// segmented_scan.cpp, from the scan policy's staged_from elements; below that, and where it
// does not apply, the one-tile-per-block look-back kernel (segmented_scan.cpp), which is
// also this strategy's first kernel. The algorithm is segmented_scan_pipeline.cuh's; this
// file writes the kernel's functors and the roles' calls:
//  - lift(s, e, i, count, v, heads): the values and head bits of tile elements e .. e + 3
//    of stage s, read from the stage as 16-byte quads, one per input; by key a head where
//    key_at changes (the key of the element before the tile is staged beside it); by
//    offsets a head where the producer's bitmask says so, and the identity, as its own
//    head, outside [offsets[0], offsets[count - 1]);
//  - store4 / store1: every output, its epilogue applied to the staged inputs.
#include <algorithm>
#include <string>

#include "../array_ops.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

namespace {

std::string keys_equal_fields(const Type& t, const std::string& a, const std::string& b) {
  if (t.is_scalar()) return a + " == " + b;
  std::string s;
  for (std::size_t f = 0; f < t.fields().size(); ++f) {
    const std::string field = ".f" + std::to_string(f);
    s += (s.empty() ? "" : " && ") + keys_equal_fields(t.fields()[f], a + field, b + field);
  }
  return s;
}

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

// reduce_by_key's writers, in the scanners' places: run_head (a head writes its run's key
// and the previous run's value), last_run (element n - 1 writes the last run's value and
// each output's count). Outputs: keys (result index 0) and values (index 1).
template <typename StagePtrs>
void emit_run_writers(SourceWriter& w, const KernelContext& g, ScanKernelWriter& k, const StagePtrs& stage_ptrs) {
  const std::string t = k.acc();
  std::string staged;
  for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j) staged += "stage_" + k.input_name(j) + "[e], ";
  w.comment("Writers: warp 3 + s takes segment s of every tile. A head starts run `run`: its key, and\n"
            "the value of the run before it.");
  w.open("const auto run_head = [&](const int s, const int e, const long long i, const long long run, const " + t +
         "& previous)");
  bool keys = false;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) keys = keys || g.outputs[j].node().index == 0;
  if (keys) stage_ptrs(w);
  else w.line("(void)s, (void)e, (void)i;");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string out = "out" + std::to_string(g.output_ids[j]);
    if (g.outputs[j].node().index == 0) w.line(out + "[run] = key_at(" + staged + "i);");
    else w.line("if (run > 0) " + out + "[run - 1] = previous;");
  }
  w.close("};");
  w.comment("Element n - 1: the last run's value and the number of runs.");
  w.open("const auto last_run = [&](const long long runs, const " + t + "& value)");
  bool values = false;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) values = values || g.outputs[j].node().index == 1;
  if (!values) w.line("(void)value;");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const std::string id = std::to_string(g.output_ids[j]);
    if (g.outputs[j].node().index == 1) w.line("out" + id + "[runs - 1] = value;");
    w.line("*count" + id + " = runs;");
  }
  w.close("};");
  w.line("ff::segmented::run_piece_tiles<kTile>(pipeline, warp - 3, n, lift, combine, identity, run_head, last_run);");
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
  // The stage of each input, as its own type.
  const auto stage_ptrs = [&](SourceWriter& to) {
    for (std::size_t j = 0; j < inputs; ++j) {
      const std::string in = k.types().name(g.leaves.inputs[j].type());
      to.line("const " + in + "* const stage_" + k.input_name(j) + " = reinterpret_cast<const " + in +
              "*>(ff::segmented::stage_input<kTile, kInputs>(stage_words, s, " + std::to_string(j) + "));");
    }
  };
  const auto staged = [&](const std::string& e, const std::string& i) {
    std::string s;
    for (std::size_t j = 0; j < inputs; ++j) s += "stage_" + k.input_name(j) + "[" + e + "], ";
    return s + i;
  };
  if (offsets) {
    emit_offset_at(w, k.types(), *g.op, offsets->leaves, "the producer checks the pairs of neighbours");
  } else {
    const std::string key = k.types().name(g.op->keys.type());
    k.emit_map_function(w, "key_at", g.op->keys);
    w.line("const auto same_key = [](const " + key + "& a, const " + key + "& b) -> bool { return " +
           keys_equal_fields(g.op->keys.type(), "a", "b") + "; };");
  }
  w.open("if (warp == 0)");
  w.comment("Producer: tile ids from the counter, each input's tile copied into the next free stage" +
            std::string(offsets ? ", the tile's\nsegment heads marked from the offsets." : "."));
  std::string ins;
  for (std::size_t j = 0; j < inputs; ++j)
    ins += std::string(j ? ", " : "") + "reinterpret_cast<const unsigned*>(in_" + k.input_name(j) + ")";
  w.line("const unsigned* const in[kInputs] = {" + ins + "};");
  if (offsets) {
    w.line("const ff::segmented::PipelinedOffsetHeads<kTile, decltype(offset_at)> heads{offset_at, offsets_count, "
           "offsets_invalid, head_words, n};");
    w.line("ff::segmented::produce_piece_tiles<kTile, kInputs>(pipeline, stage_words, in, n, tiles, tile_counter, heads);");
  } else {
    w.line("ff::segmented::produce_piece_tiles<kTile, kInputs>(pipeline, stage_words, in, n, tiles, tile_counter,");
    w.line("                                                   [](int, long long, long long) {});");
  }
  w.line("return;");
  w.close();
  w.comment("Status entries carry the launch's epoch (scan.cuh): nothing clears them between launches.");
  w.line("const ff::ScanTileStatus<" + piece + "> status(tile_status, tiles, epoch);");
  w.open("if (warp == 2)");
  w.comment("Look-back: each tile's exclusive piece (deterministic, scan.cuh), then each segment's carry.");
  w.line("ff::look_back_tiles(pipeline, status, pieces, no_piece);");
  w.line("return;");
  w.close();

  // lift: values and heads of four tile elements.
  if (offsets) {
    w.comment("Elements outside [first, last) belong to no segment: each is a head of the identity.");
    w.line("const long long first = offset_at(0), last = offset_at(offsets_count - 1);");
  }
  w.comment("Tile elements e .. e + 3 of stage s (global index i), the first `count` before n: their values\n"
            "and head bits (the others: the identity, no head).");
  w.open("const auto lift = [&](const int s, const int e, const long long i, const int count, " + t +
         " (&v)[4], unsigned& heads)");
  stage_ptrs(w);
  for (std::size_t j = 0; j < inputs; ++j) {
    const std::string in = k.types().name(g.leaves.inputs[j].type());
    w.line("const ff::Quad<" + in + "> q_" + k.input_name(j) + " = *reinterpret_cast<const ff::Quad<" + in +
           ">*>(stage_" + k.input_name(j) + " + e);");
  }
  std::string quad_call;
  for (std::size_t j = 0; j < inputs; ++j) quad_call += "q_" + k.input_name(j) + ".e[k], ";
  if (offsets) {
    w.line("const unsigned bits = head_words[s * (kTile / 32) + e / 32] >> (e % 32) & 0xfu;");
    w.line("heads = 0u;");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < 4; ++k)");
    w.line("const bool inside = k < count && i + k >= first && i + k < last;");
    w.line("v[k] = inside ? element(" + quad_call + "i + k) : identity;");
    w.line("if ((bits >> k & 1u) || (k < count && !inside)) heads |= 1u << k;");
    w.close();
  } else {
    w.line("auto previous = key_at(" + staged("e - 1", "i - 1") + ");  // word -1: the element before the tile");
    w.line("heads = 0u;");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < 4; ++k)");
    w.line("v[k] = k < count ? element(" + quad_call + "i + k) : identity;");
    w.line("const auto key = key_at(" + quad_call + "i + k);");
    w.line("if (k < count && (i + k == 0 || !same_key(previous, key))) heads |= 1u << k;");
    w.line("previous = key;");
    w.close();
  }
  w.close("};");

  w.open("if (warp == 1)");
  w.comment("Reducer: each segment's piece and the tile's, published at once (pieces do not commute:\n"
            "each round of 128 elements is folded across the warp in order).");
  w.line("ff::segmented::reduce_piece_tiles<kTile>(pipeline, n, status, lift, combine, identity);");
  w.line("return;");
  w.close();

  if (counts) {
    emit_run_writers(w, g, k, stage_ptrs);
  } else {
    w.comment("Scanners: warp 3 + s scans segment s of every tile and stores it, the epilogue applied to\n"
              "each element on the way; four consecutive elements per lane, one 16-byte store where\n"
              "the output is 4-byte and aligned.");
    QuadStores stores;
    bool reads_inputs = false;
    for (std::size_t j = 0; j < g.outputs.size(); ++j) {
      const bool scan_itself = g.outputs[j].kind() == ExprKind::Result;
      reads_inputs = reads_inputs || !scan_itself;
      stores.add("out" + std::to_string(g.output_ids[j]), [&](const std::string& k_index, const std::string& plus) {
        return scan_itself ? "scanned" + k_index
                           : "epilogue" + std::to_string(j) + "(scanned" + k_index + ", " + staged("e" + plus, "i" + plus) + ")";
      });
    }
    for (const auto& l : stores.quads) w.line(l);
    w.open("const auto store4 = [&](const int s, const int e, const long long i, const " + t + " (&scanned)[4])");
    if (reads_inputs) stage_ptrs(w);
    else w.line("(void)s, (void)e;");
    for (const auto& l : stores.four) w.line(l);
    w.close("};");
    w.open("const auto store1 = [&](const int s, const int e, const long long i, const " + t + " scanned)");
    if (reads_inputs) stage_ptrs(w);
    else w.line("(void)s, (void)e;");
    for (const auto& l : stores.one) w.line(l);
    w.close("};");
    w.line(std::string("ff::segmented::scan_piece_tiles<kTile, ") + (k.inclusive() ? "true" : "false") +
           ">(pipeline, warp - 3, n, lift, combine, identity, store4, store1);");
  }
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
