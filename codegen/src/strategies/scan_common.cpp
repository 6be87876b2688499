// Pieces every scan strategy shares: the signature, the combine / element / epilogue
// lambdas, and one tile's journey: a coalesced load into shared memory (in step k,
// thread t loads element k * kBlock + t), a blocked arrangement in registers (thread t
// owns the kItems consecutive elements t * kItems ...), the thread's sequential scan,
// and the store back through shared memory, coalesced, with the epilogue applied.
#include <algorithm>
#include <functional>
#include <set>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

bool scan_stages_can_share(const ScanGroup& g) {
  for (const auto& o : g.outputs)
    if (o.kind() != ExprKind::Result) return false;  // an epilogue reads the input stage at the store
  return true;
}

ScanTiling scan_tiling(const ScanGroup& g, bool shared_stages) {
  const ScanPolicy& p = g.policy;
  ScanTiling t;
  if (p.tile) {  // PlanOptions::scan_tile (FUSEFLOW_SCAN_TILE), for tuning studies
    t.block = p.tile->block;
    t.items = p.tile->items;
    t.min_blocks = p.tile->min_blocks;
    return t;
  }
  std::size_t in_bytes = 0;
  for (const auto& in : g.leaves.inputs) in_bytes += in.type().size();
  const std::size_t value_bytes = g.op->monoid.type().size();
  const std::size_t widest = std::max(in_bytes, value_bytes);
  const bool pieces = g.op->kind == OpKind::SegmentedScan || g.op->kind == OpKind::ScanByKey;
  if (pieces && value_bytes <= 4 && in_bytes <= 8) {
    // Segmented scans and scans by key of 4-byte values scan (value, head flag) pieces: 8
    // warps with registers for 5 blocks per SM beat 6 warps x 22 (by offsets) and 6 x 17
    // (by key) at 2^28 (bench/RESULTS.md, sixth run). Not reduce_by_key (no gain
    // measured), nor wider values (the 8-byte pairs of a linear recurrence spill under
    // launch bounds, as in the plain scan).
    t.block = p.pieces.block;
    t.items = p.pieces.items;
    t.min_blocks = p.pieces.min_blocks;
  } else if (widest <= 8) {
    // Measured on the H100 at 2^28 (bench/RESULTS.md, the FUSEFLOW_SCAN_TILE sweep): 6 warps
    // x 22 items beat 256 x 16 by 6% on 4-byte sums and by 17% on 8-byte linear-recurrence
    // pairs (bigger tiles: fewer look-backs and barriers per byte).
    t.block = p.narrow.block;
    t.items = p.narrow.items;
    t.min_blocks = p.narrow.min_blocks;
    // A plain look-back scan of 4-byte inputs and values: registers for 7 blocks per SM
    // (bench/RESULTS.md, fifth run: 949 us against 991 for the f32 sum at 2^28). Not for
    // 8-byte ones (the linear recurrence's pairs spill there: 1336 us against 873), nor
    // with reductions folded in (more registers live; not measured).
    if (widest <= 4 && shared_stages && g.reduces.empty()) t.min_blocks = p.narrow_min_blocks;
  } else {
    t.block = p.wide_block;
    t.items = static_cast<int>(
        std::clamp<std::size_t>(p.thread_bytes / widest, 1, static_cast<std::size_t>(p.wide_max_items)));
  }
  // Shared stages hold the widest of the two at a time; separate ones both.
  const std::size_t slot_bytes = shared_stages && scan_stages_can_share(g) ? widest : in_bytes + value_bytes;
  auto stage = [&] { return static_cast<std::size_t>(shared::stage_slots(t.tile())) * slot_bytes; };
  while (t.items > 1 && stage() > p.max_stage_bytes) --t.items;
  return t;
}

std::optional<ScanTiling> staged_scan_tiling(const ScanGroup& g) {
  if (g.policy.tile) return std::nullopt;  // a study picks its one tile
  const auto& inputs = g.leaves.inputs;
  if (g.op->kind != OpKind::Scan || inputs.size() != 1 || inputs[0].type().size() != 4 ||
      g.op->monoid.type().size() != 4 || !scan_stages_can_share(g) || !g.reduces.empty())
    return std::nullopt;
  // Measured on the H100 (bench/RESULTS.md, seventh run; f32 sum): 4 warps x 88 elements
  // from the stage, 4 blocks per SM, take 883 us at 2^28 against 948 for 192 x 22 in
  // registers (CUB 873), 449 against 478 at 2^27, 124 against 126 at 2^25, the same at
  // 2^24 (67.6 against 68.1) and 11.6 against 11.1 at 2^20. 88 keeps the stage (46464
  // bytes) under the 48 KB of static shared memory.
  ScanTiling t;
  t.block = g.policy.staged.block;
  t.items = g.policy.staged.items;
  t.min_blocks = g.policy.staged.min_blocks;
  t.staged = true;
  return t;
}

std::string scan_kernel_name(const ScanGroup& g, const char* strategy) {
  const Monoid& m = g.op->monoid;
  return std::string("ff_scan_") + strategy + "_" + short_type_name(m.type()) + "_" + sanitize(m.name()) +
         (g.op->scan_kind == ScanKind::Exclusive ? "_exclusive" : "");
}

std::size_t lookback_status_bytes(std::size_t value_bytes, std::int64_t tiles) {
  // Per tile and per group of 32 tiles, one 64-bit word (flag + 32-bit chunk) per 4 bytes
  // of value: the layout scan.cuh reads, from shared_constants.cuh.
  return static_cast<std::size_t>(shared::scan_status_bytes(value_bytes, static_cast<unsigned long long>(tiles)));
}

ScanKernelWriter::ScanKernelWriter(const ScanGroup& g, std::string kernel_name, ScanTiling tiling)
    : g_(g), name_(std::move(kernel_name)), tiling_(tiling) {
  std::set<std::string> used;
  for (const auto& in : g.leaves.inputs) {
    std::string n = sanitize(in.node().name);
    while (!used.insert(n).second) n += "_";
    input_names_.push_back(n);
  }
}

std::vector<Arg> ScanKernelWriter::args(bool with_inputs, bool with_outputs, const std::vector<Arg>& extra) const {
  const ReduceGroup& l = g_.leaves;
  std::vector<Arg> a;
  if (with_inputs)
    for (std::size_t j = 0; j < l.inputs.size(); ++j)
      a.push_back({Arg::Kind::Input, l.input_ids[j], "in_" + input_names_[j], l.inputs[j].type()});
  a.push_back({Arg::Kind::Length, 0, "n", ScalarType::I64});
  if (with_inputs) {
    for (std::size_t j = 0; j < l.params.size(); ++j)
      a.push_back({Arg::Kind::Param, l.param_ids[j], "p_" + sanitize(l.params[j].node().name), l.params[j].type()});
    for (int s : l.scalars_read)
      a.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), l.slot_types[static_cast<std::size_t>(s)]});
  }
  if (with_outputs)
    for (std::size_t j = 0; j < g_.outputs.size(); ++j)
      a.push_back({Arg::Kind::Output, g_.output_ids[j], "out" + std::to_string(g_.output_ids[j]), g_.outputs[j].type()});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void ScanKernelWriter::open_kernel(SourceWriter& w, const std::vector<Arg>& a) {
  w.line(std::string("extern \"C\" __global__ void __launch_bounds__(") +
         (tiling_.min_blocks > 0 ? "kBlock, kMinBlocks" : "kBlock") + ") " + name_ + "(");
  emit_kernel_parameters(w, types_, a);
}

void ScanKernelWriter::emit_constants(SourceWriter& w, bool tiled, const std::vector<std::string>& more) {
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(tiling_.block) + ";");
  if (tiling_.min_blocks > 0)
    w.line("constexpr int kMinBlocks = " + std::to_string(tiling_.min_blocks) + ";  // resident blocks per SM to fit");
  if (!tiled) {
    w.line("}  // namespace");
    w.line();
    return;
  }
  w.line("constexpr int kItems = " + std::to_string(tiling_.items) + ";  // consecutive elements per thread");
  w.line("constexpr int kTile = kBlock * kItems;");
  w.line("// Shared-memory slot of tile element s: one slot of padding per 32 elements, so thread t");
  w.line("// reading element t * kItems + k does not collide with its neighbours' banks.");
  w.line("__device__ __forceinline__ int slot(int s) { return s + s / 32; }");
  for (const auto& l : more) w.line(l);
  w.line("}  // namespace");
  w.line();
}

std::string ScanKernelWriter::element_params() {
  const ReduceGroup& l = g_.leaves;
  std::string params;
  for (std::size_t j = 0; j < l.inputs.size(); ++j)
    params += "const " + types_.name(l.inputs[j].type()) + " " + input_names_[j] + ", ";
  return params + "const long long i";
}

void ScanKernelWriter::emit_functions(SourceWriter& w, bool elements, bool epilogues) {
  const ReduceGroup& l = g_.leaves;
  const Monoid& m = g_.op->monoid;
  const std::string t = acc();
  if (elements)
    for (int s : l.scalars_read)
      w.line("const " + types_.name(l.slot_types[static_cast<std::size_t>(s)]) + " r" + std::to_string(s) + " = *s" +
             std::to_string(s) + ";");
  w.line("const " + t + " identity = " + types_.literal(m.identity()) + ";");
  // combine(a, b): a covers lower indices than b.
  w.open("const auto combine = [](const " + t + "& a, const " + t + "& b) -> " + t);
  {
    ExprEmitter e(w, types_, [](const Expr& leaf) { return leaf.node().index == 0 ? "a" : "b"; });
    w.line("return " + e.emit(m.combine()) + ";");
  }
  w.close("};");
  if (!elements) return;

  const std::string params = element_params();
  auto leaf_of = [this](const Expr& leaf) { return leaf_name(leaf, true); };
  // element(inputs..., i): the prologue map's value of element i.
  w.open("const auto element = [&](" + params + ") -> " + t);
  {
    ExprEmitter e(w, types_, leaf_of);
    std::string v = e.emit(g_.value);
    // filter -> scan: a dropped element contributes the identity.
    if (g_.mask.valid()) v = "(" + e.emit(g_.mask) + " ? " + v + " : identity)";
    w.line("return " + v + ";");
  }
  w.close("};");
  // epilogue_j(scanned, inputs..., i): output j from the scan's element i.
  for (std::size_t j = 0; epilogues && j < g_.outputs.size(); ++j) {
    const Expr& o = g_.outputs[j];
    if (o.kind() == ExprKind::Result) continue;  // the scan itself: stored as it is
    w.open("const auto epilogue" + std::to_string(j) + " = [&](const " + t + " scanned, " + params + ") -> " +
           types_.name(o.type()));
    ExprEmitter e(w, types_, leaf_of);
    w.line("return " + e.emit(o) + ";");
    w.close("};");
  }
}

void ScanKernelWriter::emit_map_function(SourceWriter& w, const std::string& name, const Expr& e) {
  w.open("const auto " + name + " = [&](" + element_params() + ") -> " + types_.name(e.type()));
  ExprEmitter emitter(w, types_, [this](const Expr& x) { return leaf_name(x, false); });
  w.line("return " + emitter.emit(e) + ";");
  w.close("};");
}

bool ScanKernelWriter::stages_can_share() const { return scan_stages_can_share(g_); }

void ScanKernelWriter::emit_shared(SourceWriter& w, bool stores, bool share_stages,
                                   const std::string& warp_total_type) {
  const std::size_t inputs = g_.leaves.inputs.size();
  if (stores && share_stages && stages_can_share()) {
    // One buffer, two lives: the input stages until the tile is in registers, then the
    // scanned stage (and the look-back's stash). The caller puts a barrier in between.
    if (tiling_.staged)
      w.comment("The input stage and the scanned stage share one buffer: a thread writes each scanned\n"
                "value over its own input element once it has read it (the two are the same size),\n"
                "after the block scan's barriers. Half the shared memory, so more tiles fit on an SM.");
    else
      w.comment("The input stages and the scanned stage share one buffer: the inputs are dead once the\n"
                "tile is in registers, and the block scan's barriers come before the first write of a\n"
                "scanned value. Half the shared memory, so more tiles fit on an SM.");
    w.line("constexpr int kStageSlots = kTile + kTile / 32;");
    // Each input stage starts on a 16-byte boundary.
    std::string input_bytes, offset;
    for (std::size_t j = 0; j < inputs; ++j) {
      const std::string t = types_.name(g_.leaves.inputs[j].type());
      w.line("constexpr int kStageBytes_" + input_names_[j] + " = (kStageSlots * sizeof(" + t + ") + 15) / 16 * 16;");
      input_bytes += (j ? " + " : "") + std::string("kStageBytes_") + input_names_[j];
    }
    w.line("constexpr int kInputStageBytes = " + (inputs ? input_bytes : std::string("0")) + ";");
    w.line("constexpr int kScannedStageBytes = kStageSlots * sizeof(" + acc() + ");");
    w.line("__shared__ __align__(16) unsigned char");
    w.line("    stage_storage[kInputStageBytes > kScannedStageBytes ? kInputStageBytes : kScannedStageBytes];");
    for (std::size_t j = 0; j < inputs; ++j) {
      const std::string t = types_.name(g_.leaves.inputs[j].type());
      w.line(t + "* const stage_" + input_names_[j] + " = reinterpret_cast<" + t + "*>(stage_storage" +
             (offset.empty() ? "" : " + " + offset) + ");");
      offset += (offset.empty() ? "" : " + ") + std::string("kStageBytes_") + input_names_[j];
    }
    w.line(acc() + "* const scanned_stage = reinterpret_cast<" + acc() + "*>(stage_storage);");
  } else {
    for (std::size_t j = 0; j < inputs; ++j)
      w.line("__shared__ " + types_.name(g_.leaves.inputs[j].type()) + " stage_" + input_names_[j] +
             "[kTile + kTile / 32];");
    if (stores) w.line("__shared__ " + acc() + " scanned_stage[kTile + kTile / 32];");
  }
  w.line("__shared__ " + (warp_total_type.empty() ? acc() : warp_total_type) + " warp_totals[kBlock / 32];");
}

void ScanKernelWriter::emit_load_loop(SourceWriter& w, bool checked) {
  w.comment("Coalesced: in step k, thread t loads element base + k * kBlock + t.");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = k * kBlock + threadIdx.x;");
  w.line("const long long i = base + s;");
  if (checked) w.open("if (i < n)");
  for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j)
    w.line("stage_" + input_names_[j] + "[slot(s)] = in_" + input_names_[j] + "[i];");
  if (checked) w.close();
  w.close();
  w.line("__syncthreads();");
}

void ScanKernelWriter::emit_tile_load(SourceWriter& w) { emit_load_loop(w, true); }

std::string ScanKernelWriter::element_call(const std::string& slot, const std::string& index) const {
  std::string s;
  for (const auto& n : input_names_) s += "stage_" + n + "[" + slot + "], ";
  return s + index;
}

void ScanKernelWriter::emit_items_loop(SourceWriter& w, bool checked) {
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = threadIdx.x * kItems + k;");
  w.line("const long long i = base + s;");
  w.line(checked ? "items[k] = i < n ? element(" + element_call("slot(s)", "i") + ") : identity;"
                 : "items[k] = element(" + element_call("slot(s)", "i") + ");");
  w.close();
}

void ScanKernelWriter::emit_thread_items(SourceWriter& w) {
  w.comment("Blocked: thread t owns tile elements t * kItems ... t * kItems + kItems - 1; past n\n"
            "they are the identity, so the tile's total is right in the last tile too.");
  w.line(acc() + " items[kItems];");
  emit_items_loop(w, true);
  w.line(acc() + " thread_total = items[0];");
  w.line("#pragma unroll");
  w.line("for (int k = 1; k < kItems; ++k) thread_total = combine(thread_total, items[k]);");
}

// The staged tile's thread total: its elements folded straight from the input stage.
void ScanKernelWriter::emit_staged_total(SourceWriter& w, bool checked) {
  w.line("const int item0 = threadIdx.x * kItems;");
  w.line(std::string("thread_total = ") + (checked ? "base + item0 < n ? " : "") + "element(" +
         element_call("slot(item0)", "base + item0") + ")" + (checked ? " : identity;" : ";"));
  w.line("#pragma unroll");
  w.open("for (int k = 1; k < kItems; ++k)");
  w.line("const int s = item0 + k;");
  w.line("const long long i = base + s;");
  w.line(std::string(checked ? "if (i < n) " : "") + "thread_total = combine(thread_total, element(" +
         element_call("slot(s)", "i") + "));");
  w.close();
}

void ScanKernelWriter::emit_full_or_last(SourceWriter& w, const std::function<void(bool checked)>& body,
                                         const std::string& full_comment) {
  w.open("if (base + kTile <= n)");
  if (!full_comment.empty()) w.comment(full_comment);
  body(false);
  w.close("} else {");
  w.indent();
  body(true);
  w.close();
}

void ScanKernelWriter::emit_tile_load_and_items(SourceWriter& w, bool full_fast_path) {
  const bool staged = tiling_.staged;
  if (!full_fast_path && !staged) {
    emit_tile_load(w);
    emit_thread_items(w);
    return;
  }
  if (staged) {
    w.comment("Blocked: thread t owns tile elements t * kItems ... t * kItems + kItems - 1. They stay\n"
              "in the stage, read twice (for the thread's total here, for its scan at the store), so\n"
              "a tile holds more elements than registers would. Past n they count as the identity.");
    w.line(acc() + " thread_total;");
  } else {
    w.comment("Blocked: thread t owns tile elements t * kItems ... t * kItems + kItems - 1; past n\n"
              "they are the identity, so the tile's total is right in the last tile too.");
    w.line(acc() + " items[kItems];");
  }
  emit_full_or_last(w, [&](bool checked) {
    emit_load_loop(w, checked);
    if (staged) emit_staged_total(w, checked);
    else emit_items_loop(w, checked);
  }, "A full tile (every tile but the last): no bounds checks.");
  if (staged) return;
  w.line(acc() + " thread_total = items[0];");
  w.line("#pragma unroll");
  w.line("for (int k = 1; k < kItems; ++k) thread_total = combine(thread_total, items[k]);");
}

void ScanKernelWriter::emit_store_loop(SourceWriter& w, bool checked) {
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = k * kBlock + threadIdx.x;");
  w.line("const long long i = base + s;");
  if (checked) w.open("if (i < n)");
  for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
    std::string out = "out" + std::to_string(g_.output_ids[j]) + "[i] = ";
    if (g_.outputs[j].kind() == ExprKind::Result)
      w.line(out + "scanned_stage[slot(s)];");
    else
      w.line(out + "epilogue" + std::to_string(j) + "(scanned_stage[slot(s)], " + element_call("slot(s)", "i") + ");");
  }
  if (checked) w.close();
  w.close();
}

// The staged tile's scan: each element read from the input stage, the running value
// written over it in the scanned stage (the same slot: the stages share one buffer).
void ScanKernelWriter::emit_staged_scan(SourceWriter& w, bool checked) {
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = threadIdx.x * kItems + k;");
  w.line("const long long i = base + s;");
  if (checked) w.open("if (i < n)");
  w.line("const " + acc() + " x = element(" + element_call("slot(s)", "i") + ");");
  if (inclusive()) {
    w.line("running = combine(running, x);");
    w.line("scanned_stage[slot(s)] = running;");
  } else {
    w.line("scanned_stage[slot(s)] = running;");
    w.line("running = combine(running, x);");
  }
  if (checked) w.close();
  w.close();
}

// The thread's scan of its items in registers into the scanned stage; with `restart`, a
// segment head starts again from the identity.
void ScanKernelWriter::emit_register_scan(SourceWriter& w, const std::string& restart) {
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = threadIdx.x * kItems + k;");
  if (!restart.empty()) {
    w.comment("A segment head starts again from the identity.");
    w.line("const " + acc() + " before = " + restart + " ? identity : running;");
    w.line("running = combine(before, items[k]);");
    w.line(std::string("scanned_stage[slot(s)] = ") + (inclusive() ? "running;" : "before;"));
  } else if (inclusive()) {
    w.line("running = combine(running, items[k]);");
    w.line("scanned_stage[slot(s)] = running;");
  } else {
    w.line("scanned_stage[slot(s)] = running;");
    w.line("running = combine(running, items[k]);");
  }
  w.close();
}

void ScanKernelWriter::emit_tile_store(SourceWriter& w, const std::string& seed, bool full_fast_path,
                                       const std::string& restart) {
  w.comment(inclusive() ? "The thread's inclusive scan, seeded with everything before its first element."
                        : "The thread's exclusive scan, seeded with everything before its first element:\n"
                          "element i gets the combination of the elements before it (the identity at 0).");
  w.line(acc() + " running = " + seed + ";");
  if (tiling_.staged) {
    w.comment("Each scanned value is written over the input element it was read from.");
    emit_full_or_last(w, [&](bool checked) { emit_staged_scan(w, checked); });
  } else {
    emit_register_scan(w, restart);
  }
  w.line("__syncthreads();");
  w.comment("Coalesced stores, the epilogue applied to each element before it is written.");
  if (full_fast_path) emit_full_or_last(w, [&](bool checked) { emit_store_loop(w, checked); });
  else emit_store_loop(w, true);
}

void ScanKernelWriter::emit_tile_id(SourceWriter& w, const std::string& prefix_type) {
  w.line("__shared__ unsigned int tile_id;");
  w.line("__shared__ " + prefix_type + " tile_prefix;");
  w.comment("Dynamic tile id: tiles are numbered in the order their blocks start.");
  w.line("if (threadIdx.x == 0) tile_id = ff::draw_tile_id(tile_counter);");
  w.line("__syncthreads();");
  w.line("const long long tile = tile_id;");
  w.line("const long long base = tile * kTile;");
}

void ScanKernelWriter::emit_look_back(SourceWriter& w, const std::string& type, const std::string& combine,
                                      const std::string& identity, const std::string& stash) {
  w.line(type + " tile_total;");
  w.line("const " + type + " thread_prefix = ff::block_exclusive_scan<kBlock>(thread_total, " + combine + ", " +
         identity + ", warp_totals, tile_total);");
  w.line();
  w.comment("Look-back (scan.cuh, tile_exclusive_prefix): warp 0 publishes the tile's aggregate and\n"
            "finds its exclusive prefix, Q(g) . (A(32g) . ... . A(tile-1)) over groups of 32 tiles:\n"
            "one fixed form folded left to right, so float results are the same bits on every run.\n"
            "Status entries carry a flag and the launch's epoch in every 64-bit word: no fences,\n"
            "and entries other launches left read as unpublished, so nothing clears the status\n"
            "between launches. `" + stash + "` holds the look-back's windows of group aggregates.");
  w.line("const ff::ScanTileStatus<" + type + "> status(tile_status, (n + kTile - 1) / kTile, epoch);");
  w.open("if (threadIdx.x < 32)");
  w.line("const " + type + " exclusive = ff::tile_exclusive_prefix(status, tile, tile_total, " + combine + ", " +
         identity + ", " + stash + ", kStashWindows);");
  w.line("if (threadIdx.x == 0) tile_prefix = exclusive;");
  w.close();
  w.line("__syncthreads();");
}

std::string ScanKernelWriter::assemble(const std::string& strategy_comment, const std::string& body,
                                       const std::vector<std::string>& more_includes) {
  SourceWriter w;
  w.line("// fuseflow kernel " + name_);
  w.line("//");
  w.comment(g_.leaves.program_text);
  w.line("//");
  w.comment(strategy_comment);
  w.line("#include <fuseflow/scan.cuh>");
  for (const auto& h : more_includes) w.line("#include <" + h + ">");
  w.line();
  std::string defs = types_.definitions();
  return w.str() + (defs.empty() ? "" : defs + "\n") + body;
}

}  // namespace fuseflow::codegen
