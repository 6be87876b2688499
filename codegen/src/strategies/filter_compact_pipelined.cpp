// Filter as a program output on sm_90, for large n: the pipelined compaction
// (scan_pipeline.cuh, compact_tiles): the pipelined scan's ring and producer, the
// look-back warp over survivor counts, and compacting warps that rank and compact their
// segment of a stage in place, then write it pipe_depth tiles later. The emitter writes
// the predicate, the value, the stores and the count, and the roles' calls.
#include <string>

#include "../compact_context.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

namespace {
// CompactPolicy: tiles of 13312 in 4 stages (208 KB), pass 2 two tiles behind: the
// fastest shape of the tenth run's study (bench/RESULTS.md; 12288 x 4, 16384 x 3 and
// 10240 x 5 were 1-5% slower at 2^28, a one-tile delay 4-20%).

// The store of one survivor to output j in the pipelined kernel: a streaming store
// (__stcs: written once, not kept in the caches) for the scalar types it has.
std::string stream_survivor(const KernelContext& g, CudaTypes& types, const std::vector<std::string>& outs,
                            std::size_t j) {
  const Type t = g.outputs[j].type();
  const std::string v = g.outputs[j].kind() == ExprKind::Result ? "kept" : "epilogue" + std::to_string(j) + "(kept, at)";
  if (!t.is_scalar() || t.is_bool()) return outs[j] + "[at] = " + v + ";";
  return "__stcs(" + outs[j] + " + at, static_cast<" + types.name(t) + ">(" + v + "));";
}
}  // namespace

bool pipelined_compact_applies(const KernelContext& g) {
  const Target& target = g.target();
  const CompactPolicy& p = g.policies().compact;
  if (p.tile) return false;       // a study picks its one tile
  if (!p.pipeline) return false;  // sm_80, or PlanOptions::scan_pipeline off: the one kernel
  const auto& inputs = g.leaves.inputs;
  const std::size_t stages = static_cast<std::size_t>(p.pipe_stages) * p.pipe_tile * 4;
  return target.cc_major >= 9 && inputs.size() == 1 && inputs[0].type().size() == 4 && inputs[0].type().is_scalar() &&
         g.value.type().size() <= 4 && stages + p.pipe_static_bytes <= target.shared_per_block_optin;
}

KernelSpec emit_filter_compact_pipelined(const KernelContext& g) {
  const Target& target = g.target();
  const int kPipeTile = g.policies().compact.pipe_tile, kPipeStages = g.policies().compact.pipe_stages, kPipeWarps = g.policies().compact.pipe_warps,
            kPipeDepth = g.policies().compact.pipe_depth;
  CudaTypes types;
  const std::string value_type = types.name(g.value.type());
  const std::string in = types.name(g.leaves.inputs[0].type());
  std::vector<std::string> names, outs;
  const std::vector<Arg> args = compact_args(g, names, outs);
  const int block = (2 + kPipeWarps) * 32;

  const std::string name = "ff_filter_compact_pipelined_" + short_type_name(g.value.type());
  SourceWriter w;
  w.line("namespace {");
  emit_pipeline_ring(w, kPipeTile, kPipeStages, kPipeWarps, "compacting warps, each takes");
  w.line("constexpr int kDepth = " + std::to_string(kPipeDepth) +
         ";  // a warp writes a tile's survivors out after ranking the next kDepth tiles");
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, block, args, g, 1);
  emit_compact_functions(w, types, g, names);
  w.line();
  w.comment("The ring: kStages input stages (dynamic shared memory) and the barriers, tile ids,\n"
            "survivor counts and output positions that pass between the roles; `arrived` counts\n"
            "the compacting warps done with each stage's tile.");
  w.line("extern __shared__ __align__(128) unsigned char stage_storage[];");
  w.line(in + "* const stages = reinterpret_cast<" + in + "*>(stage_storage);");
  w.line("__shared__ ff::ScanPipeline<unsigned long long, kStages, kScanWarps> pipeline;");
  w.line("__shared__ unsigned int arrived[kStages];");
  w.line("const long long tiles = (n + kTile - 1) / kTile;");
  w.open("if (threadIdx.x == 0)");
  w.line("for (int s = 0; s < kStages; ++s) arrived[s] = 0;");
  w.line("ff::pipeline_init(pipeline, kScanWarps);  // every compacting warp arrives on `reduced`");
  w.close();
  w.line("__syncthreads();");
  w.line("const int warp = threadIdx.x / 32;");
  w.open("if (warp == 0)");
  w.comment("Producer: tile ids from the counter, each tile's input copied into the next free stage.");
  w.line("ff::produce_tiles<kTile>(pipeline, stages, in_" + names[0] + ", n, tiles, tile_counter);");
  w.line("return;");
  w.close();
  w.comment("Survivor counts are 64-bit; status entries carry the launch's epoch (scan.cuh).");
  w.line("const ff::ScanTileStatus<unsigned long long> status(tile_status, tiles, epoch);");
  w.open("if (warp == 1)");
  w.comment("Look-back: each tile's first output position, then each segment's; the last tile\n"
            "writes the total count.");
  w.line("const auto plus = [](const unsigned long long a, const unsigned long long b) { return a + b; };");
  w.open("const auto finish = [&](const long long tile, const unsigned long long before, const unsigned long long count)");
  w.open("if ((tile + 1) * kTile >= n)");
  for (const auto& o : outs) w.line("*" + o + "_count = before + count;");
  w.close();
  w.close("};");
  w.line("ff::look_back_tiles(pipeline, status, plus, 0ull, finish);");
  w.line("return;");
  w.close();
  w.comment("Compacting warps: warp 2 + s ranks the survivors of segment s of every tile and\n"
            "compacts them in place (the last to finish publishes the tile's count), then writes\n"
            "them out in order, the map after the filter applied to each on the way.");
  w.open("const auto store = [&](const long long at, const " + value_type + " kept)");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) w.line(stream_survivor(g, types, outs, j));
  w.close("};");
  w.line("ff::compact_tiles<kTile, kDepth, " + in + ", " + value_type +
         ">(pipeline, stages, arrived, warp - 2, n, status, keep, value, store);");
  w.close();

  KernelSpec k;
  k.name = name;
  k.block = block;
  k.shared_bytes = static_cast<std::size_t>(kPipeStages) * kPipeTile * 4;
  k.max_grid = target.sm_count;  // persistent: one block per SM
  k.any_grid = false;
  k.items_per_block_step = kPipeTile;
  k.tuning = {{"tile", kPipeTile}, {"stages", kPipeStages}, {"warps", kPipeWarps}, {"depth", kPipeDepth}};
  k.args = args;
  k.summary = "pipelined compaction (sm_90, stable): one block per SM, tiles of " + std::to_string(kPipeTile) +
              " elements in a ring of " + std::to_string(kPipeStages) +
              " shared-memory stages filled by the bulk copy engine; warps: producer, look-back, " +
              std::to_string(kPipeWarps) + " compacting warps (survivors ranked by ballots and compacted in place, "
              "the tile's count published by the last, written out " + std::to_string(kPipeDepth) +
              " tiles later); count written by the last tile";
  k.why = "instead of the kernel before it from " + std::to_string(g.policies().compact.staged_from) +
          " elements: the look-back's waits overlap the next tiles' loads and ranking";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {"scan_pipeline.cuh"}, types, w.str());
  return k;
}

}  // namespace fuseflow::codegen
