// The text of the segmented scans' tiles (segmented_scan.cpp, by offsets and by key, and
// reduce_by_key): their shared stages, coalesced loads and stores, the register scan that
// restarts at segment heads, the tile id and the look-back over pieces. The plain scans
// call scan_tile.cuh's templates instead; these pieces move into segmented_scan.cuh when
// the segmented scan does the same.
#include <functional>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

void ScanKernelWriter::emit_shared(SourceWriter& w, bool stores, bool share_stages,
                                   const std::string& warp_total_type) {
  const std::size_t inputs = g_.leaves.inputs.size();
  if (stores && share_stages && stages_can_share()) {
    // One buffer, two lives: the input stages until the tile is in registers, then the
    // scanned stage (and the look-back's stash). The caller puts a barrier in between.
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
  emit_register_scan(w, restart);
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

}  // namespace fuseflow::codegen
