// Scan, any monoid, sm_90 and later: the pipelined look-back scan (scan_pipeline.cuh). A
// persistent block per SM whose warps have roles: a producer brings tiles into a ring of
// shared-memory stages with the bulk copy engine, a reducer publishes each tile's
// aggregate as soon as its data lands, a look-back warp finds each tile's prefix, and
// scanner warps scan and store. The look-back's waits overlap the next tiles' loads, which
// a one-tile-per-block scan cannot do. Same deterministic look-back as the plain kernel.
#include <algorithm>
#include <cstdint>
#include <string>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

// The ring's shape is ScanPolicy's pipe_tile, pipe_stages and pipe_warps. Measured on the
// H100 (bench/RESULTS.md, ninth run; prototype sweeps of tiles 4096 .. 16384, 3 .. 12
// stages, 4 .. 16 scanners, f32 sum): tiles of 12288 elements, 4 stages (192 KB of shared
// memory, one block per SM), 8 scanner warps: 764 us at 2^28 against 793 for 8192 x 6 and
// 780 for 16384 x 3 (CUB 875), 56.8 us at 2^24 (CUB 63.3).

void emit_pipeline_ring(SourceWriter& w, int tile, int stages, int warps, const std::string& warps_are) {
  w.line("constexpr int kTile = " + std::to_string(tile) + ";  // elements per tile");
  w.line("constexpr int kStages = " + std::to_string(stages) + ";  // tiles a block holds at once (" +
         std::to_string(stages * tile * 4 / 1024) + " KB of shared memory)");
  w.line("constexpr int kScanWarps = " + std::to_string(warps) + ";  // " + warps_are +
         " kTile / kScanWarps elements of a tile");
}

bool pipelined_scan_applies(const KernelContext& g) {
  const Target& target = g.target();
  if (g.policies().scan.tile) return false;  // a study picks its one tile
  // Without the pipeline (sm_80, or PlanOptions::scan_pipeline off) the staged tile instead.
  if (!g.policies().scan.pipeline) return false;
  const auto& inputs = g.leaves.inputs;
  const std::size_t stages = static_cast<std::size_t>(g.policies().scan.pipe_stages) * g.policies().scan.pipe_tile * 4;
  return target.cc_major >= 9 && g.op->kind == OpKind::Scan && inputs.size() == 1 && inputs[0].type().size() == 4 &&
         g.op->monoid.type().size() == 4 && g.reduces.empty() && !g.mask.valid() &&
         stages + 4096 <= target.shared_per_block_optin;
}

void QuadStores::add(const std::string& o,
                     const std::function<std::string(const std::string&, const std::string&)>& value) {
  quads.push_back("const bool quads_" + o + " = ff::aligned16(" + o + ");");
  four.push_back("ff::store_four(" + o + " + i, quads_" + o + ",");
  four.push_back("               " + value("[0]", "") + ", " + value("[1]", " + 1") + ",");
  four.push_back("               " + value("[2]", " + 2") + ", " + value("[3]", " + 3") + ");");
  one.push_back(o + "[i] = " + value("", "") + ";");
}

std::vector<std::pair<std::string, std::int64_t>> pipelined_tuning(const ScanPolicy& s, int block, int items,
                                                                   int min_blocks) {
  return {{"block", block},         {"items", items},          {"min_blocks", min_blocks},
          {"tile", s.pipe_tile},    {"stages", s.pipe_stages}, {"scan_warps", s.pipe_warps},
          {"staged_from", s.staged_from}};
}

KernelSpec emit_scan_pipelined(const KernelContext& g) {
  const Target& target = g.target();
  const int kTile = g.policies().scan.pipe_tile, kStages = g.policies().scan.pipe_stages, kScanWarps = g.policies().scan.pipe_warps;
  ScanTiling tiling;  // only the launch bounds: one block per SM
  tiling.block = (3 + kScanWarps) * 32;
  tiling.min_blocks = 1;
  ScanKernelWriter k(g, scan_kernel_name(g, "pipelined"), tiling);
  const Type& type = g.op->monoid.type();
  const std::string t = k.acc();
  const std::string in = k.types().name(g.leaves.inputs[0].type());
  const std::string x = "in_" + k.input_name(0);
  const bool commutative = g.op->monoid.is_commutative();

  SourceWriter w;
  w.line("namespace {");
  emit_pipeline_ring(w, kTile, kStages, kScanWarps, "scanner warps, each scans");
  w.line("constexpr int kBlock = (3 + kScanWarps) * 32;  // producer, reducer, look-back, scanners");
  w.line("constexpr int kMinBlocks = 1;  // one block per SM: the stages take most of its shared memory");
  w.line("}  // namespace");
  w.line();
  const std::vector<Arg> args = k.args(true, true, lookback_args(type));
  k.open_kernel(w, args);
  k.emit_functions(w, true, true);
  w.line();
  w.comment("The ring: kStages input stages (dynamic shared memory) and the barriers, tile ids,\n"
            "aggregates and carries that pass between the roles.");
  w.line("extern __shared__ __align__(128) unsigned char stage_storage[];");
  w.line(in + "* const stages = reinterpret_cast<" + in + "*>(stage_storage);");
  w.line("__shared__ ff::ScanPipeline<" + t + ", kStages, kScanWarps> pipeline;");
  w.line("const long long tiles = (n + kTile - 1) / kTile;");
  w.line("if (threadIdx.x == 0) ff::pipeline_init(pipeline);");
  w.line("__syncthreads();");
  w.line("const int warp = threadIdx.x / 32;");
  w.open("if (warp == 0)");
  w.comment("Producer: tile ids from the counter, each tile's input copied into the next free stage.");
  w.line("ff::produce_tiles<kTile>(pipeline, stages, " + x + ", n, tiles, tile_counter);");
  w.line("return;");
  w.close();
  w.comment("Status entries carry the launch's epoch (scan.cuh): nothing clears them between launches.");
  w.line("const ff::ScanTileStatus<" + t + "> status(tile_status, tiles, epoch);");
  w.open("if (warp == 1)");
  w.comment(commutative ? "Reducer: each segment's total and the tile's aggregate, published at once (a commutative\n"
                          "monoid: each lane folds its own elements, then the lanes)."
                        : "Reducer: each segment's total and the tile's aggregate, published at once (the monoid\n"
                          "is not commutative: each round of 128 elements is folded across the warp in order).");
  w.line(std::string("ff::reduce_tiles<kTile, ") + (commutative ? "true" : "false") +
         ">(pipeline, stages, n, status, element, combine, identity);");
  w.line("return;");
  w.close();
  w.open("if (warp == 2)");
  w.comment("Look-back: each tile's exclusive prefix (deterministic, scan.cuh), then each segment's carry.");
  w.line("ff::look_back_tiles(pipeline, status, combine, identity);");
  w.line("return;");
  w.close();
  w.comment("Scanners: warp 3 + s scans segment s of every tile and stores it, the epilogue applied to\n"
            "each element on the way; four consecutive elements per lane, one 16-byte store where\n"
            "the output is 4-byte and aligned.");
  QuadStores stores;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const bool scan_itself = g.outputs[j].kind() == ExprKind::Result;
    stores.add("out" + std::to_string(g.output_ids[j]), [&](const std::string& k_index, const std::string& plus) {
      return scan_itself ? "scanned" + k_index
                         : "epilogue" + std::to_string(j) + "(scanned" + k_index + ", x" + k_index + ", i" + plus + ")";
    });
  }
  for (const auto& l : stores.quads) w.line(l);
  w.open("const auto store4 = [&](const long long i, const " + t + " (&scanned)[4], const " + in + " (&x)[4])");
  for (const auto& l : stores.four) w.line(l);
  w.close("};");
  w.open("const auto store1 = [&](const long long i, const " + t + " scanned, const " + in + " x)");
  for (const auto& l : stores.one) w.line(l);
  w.close("};");
  w.line(std::string("ff::scan_tiles<kTile, ") + (k.inclusive() ? "true" : "false") +
         ">(pipeline, stages, warp - 3, n, element, combine, identity, store4, store1);");
  w.close();

  KernelSpec out;
  out.name = k.name();
  out.strategy = Strategy::Lookback;
  out.block = tiling.block;
  out.max_grid = target.sm_count;  // persistent: one block per SM
  out.any_grid = false;            // the schedule sizes the grid: min(tiles, SMs)
  out.in_place = true;             // a tile's input is in its stage before any of its outputs is stored
  out.items_per_block_step = kTile;
  out.tuning = {{"tile", kTile}, {"stages", kStages}, {"scan_warps", kScanWarps}};
  out.shared_bytes = static_cast<std::size_t>(kStages) * kTile * 4;
  out.args = args;
  out.summary = "pipelined look-back (sm_90): one block per SM, tiles of " + std::to_string(kTile) + " elements in a ring of " +
                std::to_string(kStages) + " shared-memory stages filled by the bulk copy engine; warps: producer, reducer, "
                "look-back, " + std::to_string(kScanWarps) + " scanners; deterministic look-back";
  out.why = "instead of the kernel before it from " + std::to_string(g.policies().scan.staged_from) +
            " elements: the look-back's waits overlap the next tiles' loads";
  out.source = k.assemble("strategy: " + out.summary, w.str(), {"fuseflow/scan_pipeline.cuh"});
  return out;
}

}  // namespace fuseflow::codegen
