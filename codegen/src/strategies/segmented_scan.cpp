// Segmented scans (segmented_scan by offsets, scan_by_key) and reduce_by_key, any monoid:
// ONE pass with decoupled look-back, over "pieces" (ff::segmented::Piece in
// <fuseflow/segmented_scan.cuh>). Each element is lifted to (value, head), head saying
// that a segment starts there, and pieces combine as (a, ha) . (b, hb) = (hb ? b : a . b,
// ha + hb): an associative operator, so the tiles, block scan and deterministic look-back
// of the plain scan carry open segments across threads and tiles in element order.
// Non-commutative monoids stay exact, floats give the same bits on every run, and no
// segment-length distribution (one huge segment, millions of tiny or empty ones) costs
// more than another: the work is per element.
//
// The algorithm is segmented_scan.cuh's (ff::segmented::scan_tile, reduce_by_key_tile);
// this file writes the kernel's functors and one call:
//  - the tile's functors over its input stages, as the plain look-back scan's
//    (scan_tile.cpp: load, staged_element, store with the epilogues);
//  - the segment heads: by offsets, offset_at (segment_offsets.cpp) for
//    ff::segmented::OffsetHeads (two 128-way warp searches per tile, flag bytes in shared
//    memory); by key, key_at and same_key (C++ ==, field by field for tuples) for
//    ff::segmented::KeyHeads (a head where the key changes);
//  - reduce_by_key's run_head (a head writes its run's key and the previous run's value)
//    and last_run (element n - 1 writes the last run's value and each output's count).
#include <optional>

#include "../array_ops.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

namespace {

// "a == b" for keys of type t, field by field for tuples.
std::string keys_equal(const Type& t, const std::string& a, const std::string& b) {
  if (t.is_scalar()) return a + " == " + b;
  std::string s;
  for (std::size_t f = 0; f < t.fields().size(); ++f) {
    const std::string field = ".f" + std::to_string(f);
    s += (s.empty() ? "" : " && ") + keys_equal(t.fields()[f], a + field, b + field);
  }
  return s;
}

bool counts_heads(const KernelContext& g) { return g.op->kind == OpKind::ReduceByKey; }

std::string kernel_name(const KernelContext& g) {
  const OpNode& op = *g.op;
  std::string types = short_type_name(op.monoid.type());
  if (op.keys.valid()) types = short_type_name(op.keys.type()) + "_" + types;
  const bool exclusive = op.kind != OpKind::ReduceByKey && op.scan_kind == ScanKind::Exclusive;
  return std::string("ff_") + op_name(op.kind) + "_" + types + "_" + sanitize(op.monoid.name()) +
         (exclusive ? "_exclusive" : "");
}

// The three kernels: one signature, the functors, one call of the tile template.
class SegmentedScanEmitter {
 public:
  SegmentedScanEmitter(const KernelContext& g, const SegmentOffsets* offsets)
      : g_(g), offsets_(offsets), counts_(counts_heads(g)), k_(g, kernel_name(g), scan_tiling(g, !counts_heads(g))) {}

  KernelSpec emit() {
    SourceWriter w;
    k_.emit_tile_constants(w);
    std::vector<Arg> extra;
    if (offsets_) extra = offsets_args(offsets_->leaves, offsets_->domain);
    for (std::size_t j = 0; counts_ && j < g_.outputs.size(); ++j)
      extra.push_back({Arg::Kind::OutputCount, g_.output_ids[j], "count" + std::to_string(g_.output_ids[j]),
                       ScalarType::U64});
    for (const Arg& a : lookback_args(segmented_piece_type(g_))) extra.push_back(a);
    if (offsets_) extra.push_back({Arg::Kind::InvalidFlag, offsets_->check, "offsets_invalid", ScalarType::U32});
    const std::vector<Arg> args = k_.args(true, true, extra);
    k_.open_kernel(w, args);
    k_.emit_functions(w, true, !counts_);
    k_.emit_tile_functors(w, !counts_);
    std::string heads;
    if (offsets_) {
      emit_offset_at(w, k_.types(), *g_.op, offsets_->leaves, "the tiles check the pairs of neighbours");
      heads = "ff::segmented::offset_heads<kBlock, kTile>(offset_at, offsets_count, offsets_invalid)";
    } else {
      emit_key_functors(w);
      heads = "ff::segmented::key_heads(staged_key, key_before, same_key)";
    }
    w.line();
    if (counts_) {
      emit_run_functors(w);
      const std::optional<RunStages> runs = run_stages();
      std::string keys = "ff::segmented::kRunsUnstaged", values = "0";
      if (runs) {
        w.comment("The two-phase scatter of a tile of more runs than threads:\n" + runs->why + ".");
        w.line("constexpr int kRunKeyStage = " + runs->keys + ";");
        w.line("constexpr int kRunValueStage = " + runs->values + ";");
        keys = "kRunKeyStage";
        values = "kRunValueStage";
      }
      w.line("ff::segmented::reduce_by_key_tile<kBlock, kItems, kInputStageBytes, " + keys + ", " + values + ">(");
      w.line("    n, tile_counter, tile_status, epoch, combine, identity, load, staged_element,");
      w.line("    " + heads + ", staged_key, store_key, store_value, last_run);");
    } else {
      // The input and scanned stages share one buffer where no epilogue reads an input.
      w.line(std::string("ff::segmented::scan_tile<kBlock, kItems, kInputStageBytes, ") +
             (k_.stages_can_share() ? "true" : "false") + ", kInclusive>(");
      w.line("    n, tile_counter, tile_status, epoch, combine, identity, load, staged_element,");
      w.line("    " + heads + ", store);");
    }
    w.close();

    KernelSpec out;
    out.name = k_.name();
    out.strategy = Strategy::Lookback;
    out.block = k_.tiling().block;
    out.max_grid = 0;  // one block per tile: the grid grows with n
    out.any_grid = false;
    out.items_per_block_step = k_.tiling().tile();
    out.tuning = {{"block", k_.tiling().block}, {"items", k_.tiling().items}, {"min_blocks", k_.tiling().min_blocks}};
    out.args = args;
    out.summary = summary();
    out.why = why();
    std::string comment = "strategy: " + out.summary;
    if (offsets_)
      comment += "\nElements before offsets[0] or at or after the last offset belong to no segment: the identity. "
                 "Offsets are clamped to [0, n] and must be non-decreasing; offsets outside [0, n] or decreasing "
                 "are flagged in offsets_invalid and reported by the runtime after the run.";
    out.source = k_.assemble(comment, w.str(), {"fuseflow/segmented_scan.cuh"});
    return out;
  }

 private:
  // key_at (the key of element i), staged_key (from the tile's stages), key_before (from
  // global memory: the element before a tile) and same_key.
  void emit_key_functors(SourceWriter& w) {
    const std::string key = k_.types().name(g_.op->keys.type());
    k_.emit_map_function(w, "key_at", g_.op->keys);
    w.open("const auto staged_key = [&](unsigned char* stages, const int slot, const long long i) -> " + key);
    w.line("return key_at(" + k_.staged_call("slot", "i") + ");");
    w.close("};");
    std::string global;
    for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j) global += "in_" + k_.input_name(j) + "[i], ";
    w.open("const auto key_before = [&](const long long i) -> " + key);
    w.line("return key_at(" + global + "i);");
    w.close("};");
    w.line("const auto same_key = [](const " + key + "& a, const " + key + "& b) -> bool { return " +
           keys_equal(g_.op->keys.type(), "a", "b") + "; };");
  }

  // reduce_by_key's outputs: keys (result index 0) and values (index 1).
  void emit_run_functors(SourceWriter& w) {
    const std::string acc = k_.acc();
    const std::string key = k_.types().name(g_.op->keys.type());
    std::string keys, values;
    for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
      const std::string out = "out" + std::to_string(g_.output_ids[j]);
      if (g_.outputs[j].node().index == 0) keys += out + "[run] = key; ";
      else values += out + "[run] = value; ";
    }
    w.comment("Run `run`'s key, and its value.");
    w.line("const auto store_key = [&](const long long run, const " + key + "& key) { " +
           (keys.empty() ? "(void)run, (void)key; " : keys) + "};");
    w.line("const auto store_value = [&](const long long run, const " + acc + "& value) { " +
           (values.empty() ? "(void)run, (void)value; " : values) + "};");
    w.comment("Element n - 1: the last run's value and the number of runs.");
    w.open("const auto last_run = [&](const long long runs, const " + acc + "& value)");
    w.line("store_value(runs - 1, value);");
    for (std::size_t j = 0; j < g_.outputs.size(); ++j) w.line("*count" + std::to_string(g_.output_ids[j]) + " = runs;");
    w.close("};");
  }

  std::optional<RunStages> run_stages() const {
    if (!counts_ || !g_.policies().scan.stage_runs) return std::nullopt;
    std::vector<std::string> names;
    for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j) names.push_back(k_.input_name(j));
    return reduce_by_key_run_stages(g_, k_.tiling(), names);
  }

  std::string summary() const {
    const ScanTiling& t = k_.tiling();
    std::string s = std::string(op_name(g_.op->kind)) + ", single pass with decoupled look-back over (value, " +
                    (counts_ ? "head count" : "head flag") + ") pieces: block " + std::to_string(t.block) + ", " +
                    std::to_string(t.items) + " items per thread, tiles of " + std::to_string(t.tile()) +
                    " elements, one block per tile, deterministic look-back; segment heads ";
    if (offsets_) return s + "from the offsets in each tile (two 128-way warp searches, flag bytes in shared memory)";
    s += "where the key changes (the key before each tile read from global memory)";
    if (counts_ && run_stages())
      s += "; a tile of more runs than threads stages its runs' keys and values in shared memory and writes them "
           "coalesced (two-phase scatter), one of fewer has each head write its run's key and the previous run's value; "
           "the last element writes the run count";
    else if (counts_) s += "; each head writes its run's key and the previous run's value, the last element the run count";
    return s;
  }

  std::string why() const {
    std::string s = "segment lengths are known only on the device: a scan of (value, head) pieces costs the same per "
                    "element for any segment lengths, in one pass, and keeps element order";
    if (!g_.op->monoid.is_commutative()) s += " (the monoid is non-commutative)";
    return s;
  }

  const KernelContext& g_;
  const SegmentOffsets* offsets_;
  bool counts_;
  ScanKernelWriter k_;
};

}  // namespace

Type segmented_piece_type(const KernelContext& g) {
  return Type::tuple({g.op->monoid.type(), counts_heads(g) ? ScalarType::I64 : ScalarType::Bool});
}

KernelSpec emit_segmented_scan(const KernelContext& g, const SegmentOffsets* offsets, const Target& /*one block per tile*/) {
  return SegmentedScanEmitter(g, offsets).emit();
}

KernelSpec emit_reduce_by_key(const KernelContext& g, const Target& /*one block per tile*/) {
  return SegmentedScanEmitter(g, nullptr).emit();
}

}  // namespace fuseflow::codegen
