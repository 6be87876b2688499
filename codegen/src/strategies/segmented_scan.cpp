// Segmented scans (segmented_scan by offsets, scan_by_key) and reduce_by_key, any monoid:
// ONE pass with decoupled look-back, over "pieces" (ff::segmented::Piece in
// <fuseflow/segmented_scan.cuh>). Each element is lifted to (value, head), head saying
// that a segment starts there, and pieces combine as (a, ha) . (b, hb) = (hb ? b : a . b,
// ha + hb): an associative operator, so the tiles, block scan and deterministic look-back
// of the plain scan (ScanKernelWriter, as scan_lookback.cpp uses them) carry open segments
// across threads and tiles in element order. Non-commutative monoids stay exact, floats
// give the same bits on every run, and no segment-length distribution (one huge segment,
// millions of tiny or empty ones) costs more than another: the work is per element.
//
// Segment heads, found inside the tile, with no pass of their own:
//  - by offsets: warps 0 and 1 find the tile's offsets (the first at or after the tile's
//    start and end) with 32-way warp searches (ff::segmented::warp_lower_bound, log32 of
//    the offset count dependent reads, issued beside the tile's loads), and the block marks
//    them in a bitmask in shared memory. Elements before offsets[0] or at or after the last
//    offset belong to no segment: each is a head of its own holding the identity, so its
//    scan is the identity, as the reference defines it.
//  - by key: element i is a head when i == 0 or its key differs from the key of element
//    i - 1 (C++ ==, field by field for tuples); the thread owning a tile's first element
//    evaluates the key of the element before the tile from global memory.
// reduce_by_key counts heads instead of flagging them: the heads up to element i, less
// one, number its run. A head writes its run's key and the previous run's value (the
// running value just before it); the thread holding element n - 1 writes the last run's
// value and the number of runs (each output's device-written count).
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

// The three kernels: one signature, the same tile of pieces, then either the scan's
// stores or reduce_by_key's runs.
class SegmentedScanEmitter {
 public:
  SegmentedScanEmitter(const KernelContext& g, const SegmentOffsets* offsets)
      : g_(g), offsets_(offsets), counts_(counts_heads(g)), k_(g, kernel_name(g), scan_tiling(g, !counts_heads(g))) {}

  KernelSpec emit() {
    SourceWriter w;
    k_.emit_constants(w, true, {"// Windows of 32 group aggregates (pieces) the look-back may keep in piece_stash.",
                                "constexpr int kStashWindows = 4;"});
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
    if (offsets_) {
      emit_offset_at(w, k_.types(), *g_.op, offsets_->leaves, "the tiles check the pairs of neighbours");
    } else {
      k_.emit_map_function(w, "key_at", g_.op->keys);
      const std::string key = k_.types().name(g_.op->keys.type());
      w.line("const auto same_key = [](const " + key + "& a, const " + key + "& b) -> bool { return " +
             keys_equal(g_.op->keys.type(), "a", "b") + "; };");
    }
    w.comment(std::string("A piece of the sequence: the combination of its elements since its last segment head, and ") +
              (counts_ ? "how many heads it holds." : "whether it holds one."));
    w.line("using Piece = ff::segmented::Piece<" + k_.acc() + ", " + heads_type() + ">;");
    w.line("const auto combine_pieces = [&](const Piece& a, const Piece& b) -> Piece {");
    w.line("  return ff::segmented::combine_pieces(a, b, combine);");
    w.line("};");
    w.line("const Piece no_piece = {identity, " + std::string(counts_ ? "0" : "false") + "};");
    w.line();
    // The scans' input and scanned stages share one buffer (every read of the input stage is
    // in emit_items, before the block scan's barriers); reduce_by_key has no scanned stage.
    k_.emit_shared(w, !counts_, !counts_, "Piece");
    w.line("__shared__ Piece piece_stash[kStashWindows * 32];");
    if (offsets_) {
      w.line("__shared__ unsigned int head_words[kTile / 32];  // bit s % 32 of word s / 32: a segment starts at element s");
      w.line("__shared__ long long tile_offsets[2];  // the offsets in this tile are those numbered [tile_offsets[0], tile_offsets[1])");
    }
    k_.emit_tile_id(w, "Piece");
    if (offsets_) emit_offset_search(w);
    emit_tile_load(w);
    if (offsets_) emit_offset_marks(w);
    emit_items(w);
    k_.emit_look_back(w, "Piece", "combine_pieces", "no_piece", "piece_stash");
    if (counts_) emit_runs(w);
    else k_.emit_tile_store(w, "combine_pieces(tile_prefix, thread_prefix).value", true, "(heads >> k & 1u)");
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
  std::string heads_type() const { return counts_ ? "long long" : "bool"; }
  // Element k of this thread's items as a piece.
  std::string piece_of(const std::string& k) const {
    const std::string bit = k == "0" ? "(heads & 1u)" : "(heads >> " + k + " & 1u)";
    return "Piece{items[" + k + "], " + (counts_ ? "(long long)" + bit : bit + " != 0") + "}";
  }

  void emit_offset_search(SourceWriter& w) {
    w.comment("Segment heads from the offsets. Warp 0 finds the first offset at or after the tile's start,\n"
              "warp 1 the first at or after its end (32-way searches), while the block clears the bitmask.");
    w.line("for (int j = threadIdx.x; j < kTile / 32; j += kBlock) head_words[j] = 0u;");
    w.open("if (threadIdx.x < 64)");
    w.line("const long long s = ff::segmented::warp_lower_bound(offsets_count, base + threadIdx.x / 32 * kTile, offset_at);");
    w.line("if (threadIdx.x % 32 == 0) tile_offsets[threadIdx.x / 32] = s;");
    w.close();
  }

  void emit_tile_load(SourceWriter& w) {
    w.open("if (base + kTile <= n)");
    w.comment("A full tile (every tile but the last): no bounds checks.");
    k_.emit_load_loop(w, false);
    w.close("} else {");
    w.indent();
    k_.emit_load_loop(w, true);
    w.close();
  }

  void emit_offset_marks(SourceWriter& w) {
    w.open("for (long long s = tile_offsets[0] + threadIdx.x; s < tile_offsets[1]; s += kBlock)");
    w.line("const long long at = offset_at(s) - base;");
    w.line("if (at >= 0 && at < kTile) atomicOr(&head_words[at / 32], 1u << (at % 32));");
    w.close();
    w.line("__syncthreads();");
    w.line("const long long first = offset_at(0), last = offset_at(offsets_count - 1);");
    w.comment("Decreasing offsets: tile t checks the pairs (s, s + 1) for s in [t * kTile, (t + 1) * kTile),\n"
              "the last tile every pair from there on, so every pair is checked once.");
    w.line("const long long pairs_end = base + kTile < n && base + kTile < offsets_count - 1 ? base + kTile : offsets_count - 1;");
    w.open("for (long long s = base + threadIdx.x; s < pairs_end; s += kBlock)");
    w.line("if (offset_at(s) > offset_at(s + 1)) *offsets_invalid = 1u;");
    w.close();
  }

  // items[k] and bit k of `heads` for this thread's elements, then its piece thread_total.
  void emit_items(SourceWriter& w) {
    const std::string acc = k_.acc();
    w.comment("Blocked: thread t owns tile elements t * kItems ... t * kItems + kItems - 1; bit k of\n"
              "`heads` says that its element k starts a segment.");
    w.line(acc + " items[kItems];");
    w.line("unsigned int heads = 0u;");
    if (offsets_) {
      w.line("const int item0 = threadIdx.x * kItems;");
      w.comment("This thread's kItems (<= 32) bits of the bitmask, from the one or two words holding them.");
      w.line("heads = (unsigned int)((((unsigned long long)head_words[(item0 + kItems - 1) / 32] << 32) |");
      w.line("                        head_words[item0 / 32]) >> (item0 % 32));");
      w.line("if (kItems < 32) heads &= (1u << (kItems % 32)) - 1u;");
      w.open("if (base + item0 >= first && base + item0 + kItems <= last)");
      w.comment("Every element of the thread inside [first, last): no check per element.");
      w.line("#pragma unroll");
      w.line("for (int k = 0; k < kItems; ++k) items[k] = element(" +
             k_.element_call("slot(item0 + k)", "base + item0 + k") + ");");
      w.close("} else {");
      w.indent();
      w.line("#pragma unroll");
      w.open("for (int k = 0; k < kItems; ++k)");
      w.line("const int s = item0 + k;");
      w.line("const long long i = base + s;");
      w.comment("Outside [first, last) (past n too) an element belongs to no segment: a head of the identity.");
      w.line("const bool inside = i >= first && i < last;");
      w.line("items[k] = inside ? element(" + k_.element_call("slot(s)", "i") + ") : identity;");
      w.line("if (!inside) heads |= 1u << k;");
      w.close();
      w.close();
    } else {
      const std::string key = k_.types().name(g_.op->keys.type());
      w.line("const int item0 = threadIdx.x * kItems;");
      w.comment("The key of the element before this thread's first: staged, or before the tile (global memory).");
      w.line(key + " previous_key = {};");
      w.line("if (base + item0 > 0 && base + item0 <= n)");
      w.line("  previous_key = threadIdx.x > 0 ? key_at(" + k_.element_call("slot(item0 - 1)", "base + item0 - 1") + ")");
      w.line("                                 : key_at(" + global_call("base - 1") + ");");
      w.open("if (base + item0 > 0 && base + item0 + kItems <= n)");
      w.comment("Every element of the thread before n and none of them element 0: no check per element.");
      w.line("#pragma unroll");
      w.open("for (int k = 0; k < kItems; ++k)");
      w.line("items[k] = element(" + k_.element_call("slot(item0 + k)", "base + item0 + k") + ");");
      w.line("const " + key + " key = key_at(" + k_.element_call("slot(item0 + k)", "base + item0 + k") + ");");
      w.line("if (!same_key(previous_key, key)) heads |= 1u << k;");
      w.line("previous_key = key;");
      w.close();
      w.close("} else {");
      w.indent();
      w.line("#pragma unroll");
      w.open("for (int k = 0; k < kItems; ++k)");
      w.line("const int s = item0 + k;");
      w.line("const long long i = base + s;");
      w.line("items[k] = identity;");
      w.open("if (i < n)");
      w.line("items[k] = element(" + k_.element_call("slot(s)", "i") + ");");
      w.line("const " + key + " key = key_at(" + k_.element_call("slot(s)", "i") + ");");
      w.line("if (i == 0 || !same_key(previous_key, key)) heads |= 1u << k;");
      w.line("previous_key = key;");
      w.close();
      w.close();
      w.close();
    }
    w.line("Piece thread_total = " + piece_of("0") + ";");
    w.line("#pragma unroll");
    w.line("for (int k = 1; k < kItems; ++k) thread_total = combine_pieces(thread_total, " + piece_of("k") + ");");
  }

  // "in_a[index], in_b[index], index": the inputs of element `index`, read from global memory.
  std::string global_call(const std::string& index) const {
    std::string s;
    for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j) s += "in_" + k_.input_name(j) + "[" + index + "], ";
    return s + index;
  }

  void emit_runs(SourceWriter& w) {
    w.comment("Runs: the heads up to element i, less one, number its run. A head writes its run's key and\n"
              "completes the run before it; element n - 1 completes the last run and writes the counts.");
    w.line("const Piece before = combine_pieces(tile_prefix, thread_prefix);");
    w.line(k_.acc() + " running = before.value;");
    w.line("long long runs = before.heads;  // runs started before this element");
    const auto emit_element = [&](bool checked) {
      w.line("#pragma unroll");
      w.open("for (int k = 0; k < kItems; ++k)");
      w.line("const int s = item0 + k;");
      w.line("const long long i = base + s;");
      if (checked) w.line("if (i >= n) break;");
      w.line("const bool head = heads >> k & 1u;");
      w.open("if (head)");
      for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
        const std::string out = "out" + std::to_string(g_.output_ids[j]);
        if (g_.outputs[j].node().index == 0)
          w.line(out + "[runs] = key_at(" + k_.element_call("slot(s)", "i") + ");");
        else
          w.line("if (runs > 0) " + out + "[runs - 1] = running;");
      }
      w.line("++runs;");
      w.close();
      w.line("running = combine(head ? identity : running, items[k]);");
    };
    w.open("if (base + item0 + kItems < n)");
    w.comment("No element of the thread is element n - 1 or past it: no check per element.");
    emit_element(false);
    w.close();
    w.close("} else {");
    w.indent();
    emit_element(true);
    w.open("if (i == n - 1)");
    for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
      const std::string id = std::to_string(g_.output_ids[j]);
      if (g_.outputs[j].node().index == 1) w.line("out" + id + "[runs - 1] = running;");
      w.line("*count" + id + " = runs;");
    }
    w.close();
    w.close();
    w.close();
  }

  std::string summary() const {
    const ScanTiling& t = k_.tiling();
    std::string s = std::string(op_name(g_.op->kind)) + ", single pass with decoupled look-back over (value, " +
                    (counts_ ? "head count" : "head flag") + ") pieces: block " + std::to_string(t.block) + ", " +
                    std::to_string(t.items) + " items per thread, tiles of " + std::to_string(t.tile()) +
                    " elements, one block per tile, deterministic look-back; segment heads ";
    if (offsets_) return s + "from the offsets in each tile (two 32-way warp searches, a bitmask in shared memory)";
    s += "where the key changes (the key before each tile read from global memory)";
    if (counts_) s += "; each head writes its run's key and the previous run's value, the last element the run count";
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

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
TuningValues pieces_tuning(const Policies& p) {
  return {{"block", p.scan.pieces.block}, {"items", p.scan.pieces.items}, {"min_blocks", p.scan.pieces.min_blocks}};
}

// segmented_scan (heads from offsets, their own input domain) and scan_by_key.
class SegmentedScan final : public RegisteredStrategy {
 public:
  SegmentedScan() : RegisteredStrategy("segmented scan", "segmented_scan") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one look-back pass over (value, head) pieces"};
  }
  TuningValues tuning(const Policies& p) const override { return pieces_tuning(p); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return {emit_segmented_scan(g, g.offsets ? &*g.offsets : nullptr, g.target())};
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    StepSpec step = lookback_step(first, 1, segmented_piece_type(g));
    if (g.offsets) step.domain = g.offsets->domain;  // a GraphError for empty offsets
    return {step};
  }
};

class ReduceByKey final : public RegisteredStrategy {
 public:
  ReduceByKey() : RegisteredStrategy("reduce by key", "reduce_by_key") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one look-back pass over (value, head count) pieces writes each run's key and total"};
  }
  TuningValues tuning(const Policies& p) const override { return pieces_tuning(p); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_reduce_by_key(g, g.target())}; }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {lookback_step(first, 1, segmented_piece_type(g))};
  }
};

}  // namespace

const RegisteredStrategy& segmented_scan_strategy() {
  static const SegmentedScan s;
  return s;
}
const RegisteredStrategy& reduce_by_key_strategy() {
  static const ReduceByKey s;
  return s;
}

}  // namespace fuseflow::codegen
