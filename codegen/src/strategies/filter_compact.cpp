// Filter as a program output (stream compaction), one pass (DESIGN.md "Strategies:
// Filter"). One block per tile; a block takes its tile id from an atomic counter, so
// every predecessor of a tile is already running (no deadlock whatever order blocks are
// scheduled in). Each warp owns a contiguous part of the tile and loads it in rows, one
// coalesced 16-byte vector load per lane and row (element-wise loads for the last tile
// and for misaligned inputs), evaluates the predicate (with the map before the filter
// fused in) on each element and ranks the survivors in input order with one ballot per
// element of a row (compact.cuh, WarpRanks); each survivor's value goes to its rank in
// the warp's part of a shared-memory tile. The warps' counts give the tile's count and
// each warp's offset in it; the tile's first output position comes from scan.cuh's
// deterministic look-back (tile_exclusive_prefix) over the tiles' survivor counts, as
// 64-bit integers. Each warp then writes its
// survivors to consecutive positions (coalesced), each output's map applied on the way
// (filter -> map), and the last tile writes the total count to the device. Stable:
// survivors keep their input order. Reads n elements, writes the survivors.
#include <algorithm>
#include <set>
#include <string>

#include "../compact_context.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

// The tile (CompactPolicy): 512 threads; each loads 128 bytes of inputs per tile (at most
// 32 elements), in vector loads of 16 bytes, but 8 bytes of 1-byte elements (a row's
// ballots and flags then fit the registers of the resident blocks asked for). Large tiles
// (16384 4-byte elements): the look-back makes the tiles' prefixes a chain that advances a
// few dozen tiles per round trip through L2, so fewer, larger tiles keep that chain well
// ahead of the memory traffic at large n; the survivors' stage takes up to 64 KB of
// dynamic shared memory. Resident blocks per SM asked of the compiler: 2 x 512 threads
// keep enough loads in flight while a block waits on the look-back; a thread's loads are
// <= 128 bytes, so the 64 registers this leaves hold them without spilling.

namespace {

// keep(inputs..., i) and value(inputs..., i): the predicate and the value of element i;
// epilogue_j(kept, at): output j of the survivor written at position `at` (filter -> map;
// index() is the position among the survivors).
void emit_compact_functions(SourceWriter& w, CudaTypes& types, const CompactGroup& g,
                            const std::vector<std::string>& names) {
  const ReduceGroup& l = g.leaves;
  const std::string value_type = types.name(g.value.type());
  std::string params;
  for (std::size_t j = 0; j < l.inputs.size(); ++j) params += "const " + types.name(l.inputs[j].type()) + " " + names[j] + ", ";
  params += "const long long i";
  // Inputs by their parameter names (names[j]); only scalar results remain after the
  // planner substituted the filters.
  auto leaf_of = [&](const Expr& leaf) { return elementwise_leaf(l, names, leaf, "a filter"); };
  w.open("const auto keep = [&](" + params + ") -> bool");
  {
    ExprEmitter e(w, types, leaf_of);
    w.line("return " + e.emit(g.keep) + ";");
  }
  w.close("};");
  w.open("const auto value = [&](" + params + ") -> " + value_type);
  {
    ExprEmitter e(w, types, leaf_of);
    w.line("return " + e.emit(g.value) + ";");
  }
  w.close("};");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const Expr& o = g.outputs[j];
    if (o.kind() == ExprKind::Result) continue;  // the filter's result itself: stored as it is
    w.open("const auto epilogue" + std::to_string(j) + " = [&](const " + value_type + " kept, const long long at) -> " +
           types.name(o.type()));
    ExprEmitter e(w, types, [&](const Expr& leaf) -> std::string {
      if (leaf.kind() == ExprKind::Result && leaf.node().op == g.op) return "kept";
      if (leaf.kind() == ExprKind::Index) return "at";
      return leaf_of(leaf);
    });
    w.line("return " + e.emit(o) + ";");
    w.close("};");
  }
}

// The arguments of a compaction kernel: the elementwise ones, each output with its
// device-written count, the look-back's tile counter, status and epoch.
std::vector<Arg> compact_args(const CompactGroup& g, std::vector<std::string>& names, std::vector<std::string>& outs) {
  std::vector<Arg> args = elementwise_args(g.leaves, names);
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    outs.push_back("out" + std::to_string(g.output_ids[j]));
    args.push_back({Arg::Kind::Output, g.output_ids[j], outs.back(), g.outputs[j].type()});
    args.push_back({Arg::Kind::OutputCount, g.output_ids[j], outs.back() + "_count", ScalarType::U64});
  }
  for (const Arg& a : lookback_args(ScalarType::U64)) args.push_back(a);
  return args;
}

// The store of one survivor to every output, the map after the filter applied on the way.
std::string store_survivor(const CompactGroup& g, const std::vector<std::string>& outs, std::size_t j) {
  return outs[j] + "[at] = " +
         (g.outputs[j].kind() == ExprKind::Result ? "kept" : "epilogue" + std::to_string(j) + "(kept, at)") + ";";
}

}  // namespace

CompactTiling compact_tiling(const CompactGroup& g, const Target& target) {
  std::size_t in_bytes = 0, widest = 0;
  bool scalars = true;
  for (const auto& in : g.leaves.inputs) {
    in_bytes += in.type().size();
    widest = std::max(widest, in.type().size());
    scalars = scalars && in.type().is_scalar();
  }
  const CompactPolicy& p = g.policy;
  CompactTiling t;
  t.block = p.block;
  t.min_blocks = p.min_blocks;
  t.vec = scalars && widest > 0 ? std::min(p.max_vec, static_cast<int>(16 / widest)) : 1;
  const int items = static_cast<int>(std::clamp<std::size_t>(p.thread_bytes / std::max<std::size_t>(in_bytes, 1), 1,
                                                             static_cast<std::size_t>(p.max_items)));
  t.rows = std::max(1, items / t.vec);
  const std::size_t value_bytes = g.value.type().size();
  const std::size_t stage_limit = std::min<std::size_t>(p.max_stage_bytes, target.shared_per_block_optin / 2);
  if (p.tile) {  // PlanOptions::filter_tile (FUSEFLOW_FILTER_TILE): block x rows [x min blocks]
    t.block = p.tile->block;
    t.rows = p.tile->items;
    if (p.tile->min_blocks > 0) t.min_blocks = p.tile->min_blocks;
    if (static_cast<std::size_t>(t.tile()) * value_bytes > stage_limit)
      throw ConfigError("filter_tile (FUSEFLOW_FILTER_TILE): tiles of " + std::to_string(t.tile()) + " elements of " +
                       g.value.type().name() + " need more than the " + std::to_string(stage_limit) +
                       " bytes of shared memory a block may have");
    return t;
  }
  while (static_cast<std::size_t>(t.tile()) * value_bytes > stage_limit) {
    if (t.rows > 1) --t.rows;
    else if (t.vec > 1) t.vec /= 2;
    else if (t.block > 32) t.block /= 2;
    else throw GraphError("filter: elements of " + g.value.type().name() + " are too large to compact in shared memory");
  }
  return t;
}

Kernel emit_filter_compact(const CompactGroup& g, const Target& target) {
  const CompactTiling tiling = compact_tiling(g, target);
  const std::size_t stage_bytes = static_cast<std::size_t>(tiling.tile()) * g.value.type().size();
  const ReduceGroup& l = g.leaves;
  CudaTypes types;
  const std::string value_type = types.name(g.value.type());

  std::vector<std::string> names, outs;
  const std::vector<Arg> args = compact_args(g, names, outs);

  const std::string name = "ff_filter_compact_" + short_type_name(g.value.type());
  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(tiling.block) + ";");
  w.line("constexpr int kVec = " + std::to_string(tiling.vec) + ";  // elements per vector load");
  w.line("constexpr int kRows = " + std::to_string(tiling.rows) + ";  // vector loads per thread and input per tile");
  w.line("constexpr int kWarpTile = 32 * kRows * kVec;  // a warp's consecutive elements of the tile");
  w.line("constexpr int kTile = kBlock / 32 * kWarpTile;");
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, tiling.block, args, l, tiling.min_blocks);

  emit_compact_functions(w, types, g, names);
  w.line();
  w.comment("Warp w's survivors in order, from w * kWarpTile: kTile elements of dynamic shared memory.");
  w.line("extern __shared__ __align__(16) unsigned char stage[];");
  w.line(value_type + "* const survivors = reinterpret_cast<" + value_type + "*>(stage);");
  w.line("__shared__ unsigned int warp_counts[kBlock / 32];");
  w.line("__shared__ unsigned int tile_id;");
  w.line("__shared__ unsigned long long tile_offset;");
  w.comment("Dynamic tile id: tiles are numbered in the order their blocks start.");
  w.line("if (threadIdx.x == 0) tile_id = ff::draw_tile_id(tile_counter);");
  w.line("__syncthreads();");
  w.line("const long long tile = tile_id;");
  w.line("const long long base = tile * kTile;");
  w.line("const int lane = threadIdx.x % 32;");
  w.line("const int warp = threadIdx.x / 32;");
  w.line("const long long warp_base = base + (long long)warp * kWarpTile;");

  // Loads: element k of row r of this lane is warp_base + (r * 32 + lane) * kVec + k.
  const std::string element_index = "const long long i = warp_base + (r * 32 + lane) * kVec + k;";
  w.comment("Warp w owns the kWarpTile elements from warp_base, in rows: in row r, lane l holds the\n"
            "kVec elements from warp_base + (r * 32 + l) * kVec.");
  for (std::size_t j = 0; j < l.inputs.size(); ++j)
    w.line("ff::Vec<" + types.name(l.inputs[j].type()) + ", kVec> " + names[j] + "_v[kRows];");
  auto checked_loads = [&] {
    w.line("#pragma unroll");
    w.open("for (int r = 0; r < kRows; ++r)");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < kVec; ++k)");
    w.line(element_index);
    w.open("if (i < n)");
    for (std::size_t j = 0; j < l.inputs.size(); ++j) w.line(names[j] + "_v[r].v[k] = in_" + names[j] + "[i];");
    w.close();
    w.close();
    w.close();
  };
  if (tiling.vec > 1) {
    std::string aligned;
    for (std::size_t j = 0; j < names.size(); ++j)
      aligned += (j ? " | " : "") + std::string("ff::misalignment<kVec>(in_") + names[j] + ")";
    w.open("if (base + kTile <= n && (" + aligned + ") == 0)");
    w.comment("A full tile of aligned inputs (every tile but the last): one coalesced vector load\n"
              "per lane, row and input, no bounds checks.");
    w.line("#pragma unroll");
    w.open("for (int r = 0; r < kRows; ++r)");
    for (std::size_t j = 0; j < l.inputs.size(); ++j)
      w.line(names[j] + "_v[r] = ff::load_vec<kVec>(in_" + names[j] + " + warp_base + (r * 32 + lane) * kVec);");
    w.close();
    w.close("} else {");
    w.indent();
    checked_loads();
    w.close();
  } else {
    checked_loads();
  }

  std::string loaded;
  for (const auto& n : names) loaded += n + "_v[r].v[k], ";
  loaded += "i";
  w.comment("Each survivor's rank among the warp's survivors, in input order (a ballot per element\n"
            "of a row), and its value stored at that rank in the warp's part of the shared tile.");
  w.line("ff::WarpRanks<kVec> ranks;");
  w.line("#pragma unroll");
  w.open("for (int r = 0; r < kRows; ++r)");
  w.line("bool flags[kVec];");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kVec; ++k)");
  w.line(element_index);
  w.line("flags[k] = i < n && keep(" + loaded + ");");
  w.close();
  w.line("unsigned int rank = ranks.rank_row(flags);  // of this lane's first survivor in the row");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kVec; ++k)");
  w.line(element_index);
  w.line("if (flags[k]) survivors[warp * kWarpTile + rank++] = value(" + loaded + ");");
  w.close();
  w.close();
  w.line("if (lane == 0) warp_counts[warp] = ranks.kept;");
  w.line("__syncthreads();");
  w.comment("This warp's survivors start at warp_offset in the tile, which has tile_count.");
  w.line("unsigned int warp_offset = 0, tile_count = 0;");
  w.line("#pragma unroll");
  w.open("for (int v = 0; v < kBlock / 32; ++v)");
  w.line("if (v == warp) warp_offset = tile_count;");
  w.line("tile_count += warp_counts[v];");
  w.close();
  w.line();
  w.comment("The tile's first output position: the survivors of all earlier tiles, from scan.cuh's\n"
            "look-back over the tiles' counts (tile_exclusive_prefix: warp 0 publishes the tile's\n"
            "count and folds its predecessors' in one fixed order). The grid has one block per\n"
            "tile, so gridDim.x is the tile count (1 when n is 0). No stash: sums of counts reach\n"
            "a group prefix within one window. The last tile writes the total count.");
  w.open("if (warp == 0)");
  w.line("const ff::ScanTileStatus<unsigned long long> status(tile_status, gridDim.x, epoch);");
  w.line("const auto plus = [](const unsigned long long a, const unsigned long long b) { return a + b; };");
  w.line("const unsigned long long exclusive =");
  w.line("    ff::tile_exclusive_prefix(status, tile, (unsigned long long)tile_count, plus, 0ull,");
  w.line("                              static_cast<unsigned long long*>(nullptr), 0);");
  w.open("if (lane == 0)");
  w.line("tile_offset = exclusive;");
  w.open("if (base + kTile >= n)");
  for (const auto& o : outs) w.line("*" + o + "_count = exclusive + tile_count;");
  w.close();
  w.close();
  w.close();
  w.line("__syncthreads();");
  w.line();
  w.comment("Coalesced stores: each warp writes its survivors to consecutive positions, the map\n"
            "after the filter applied to each on the way.");
  w.line("const unsigned int mine = warp_counts[warp];");
  w.line("const long long first = (long long)(tile_offset + warp_offset);");
  w.open("for (unsigned int s = lane; s < mine; s += 32)");
  w.line("const long long at = first + s;");
  w.line("const " + value_type + " kept = survivors[warp * kWarpTile + s];");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) w.line(store_survivor(g, outs, j));
  w.close();
  w.close();

  Kernel k;
  k.name = name;
  k.block = tiling.block;
  k.shared_bytes = stage_bytes;
  k.max_grid = 0;  // one block per tile: the grid grows with n
  k.any_grid = false;
  k.items_per_block_step = tiling.tile();
  k.tuning = {{"block", tiling.block}, {"vec", tiling.vec}, {"rows", tiling.rows}, {"min_blocks", tiling.min_blocks}};
  k.args = args;
  k.summary = "compact (single pass, stable): block " + std::to_string(tiling.block) + " (" +
              std::to_string(tiling.min_blocks) + " resident per SM), " +
              std::to_string(tiling.items()) + " elements per thread (" + std::to_string(tiling.rows) + " rows of " +
              std::to_string(tiling.vec) + "-element vector loads), tiles of " + std::to_string(tiling.tile()) +
              " elements, one block per tile; survivors ranked by warp ballots and compacted in shared memory (" +
              std::to_string(stage_bytes) + " bytes), tile offsets by decoupled look-back over survivor counts, count written by the last tile";
  k.why = "a filter's compacted array is a program output: one pass reads n elements and writes the survivors";
  k.source = kernel_source(name, l.program_text, "strategy: " + k.summary, {"compact.cuh"}, types, w.str());
  return k;
}


namespace {
// The pipelined compaction (scan_pipeline.cuh, compact_tiles): the pipelined scan's ring
// and producer, the look-back warp over survivor counts, and compacting warps that rank
// and compact their segment of a stage in place, then write it pipe_depth tiles later.
// CompactPolicy: tiles of 13312 in 4 stages (208 KB), pass 2 two tiles behind: the
// fastest shape of the tenth run's study (bench/RESULTS.md; 12288 x 4, 16384 x 3 and
// 10240 x 5 were 1-5% slower at 2^28, a one-tile delay 4-20%).

// The store of one survivor to output j in the pipelined kernel: a streaming store
// (__stcs: written once, not kept in the caches) for the scalar types it has.
std::string stream_survivor(const CompactGroup& g, CudaTypes& types, const std::vector<std::string>& outs,
                            std::size_t j) {
  const Type t = g.outputs[j].type();
  const std::string v = g.outputs[j].kind() == ExprKind::Result ? "kept" : "epilogue" + std::to_string(j) + "(kept, at)";
  if (!t.is_scalar() || t.is_bool()) return outs[j] + "[at] = " + v + ";";
  return "__stcs(" + outs[j] + " + at, static_cast<" + types.name(t) + ">(" + v + "));";
}
}  // namespace

bool pipelined_compact_applies(const CompactGroup& g, const Target& target) {
  const CompactPolicy& p = g.policy;
  if (p.tile) return false;       // a study picks its one tile
  if (!p.pipeline) return false;  // sm_80, or PlanOptions::scan_pipeline off: the one kernel
  const auto& inputs = g.leaves.inputs;
  const std::size_t stages = static_cast<std::size_t>(p.pipe_stages) * p.pipe_tile * 4;
  return target.cc_major >= 9 && inputs.size() == 1 && inputs[0].type().size() == 4 && inputs[0].type().is_scalar() &&
         g.value.type().size() <= 4 && stages + p.pipe_static_bytes <= target.shared_per_block_optin;
}

Kernel emit_filter_compact_pipelined(const CompactGroup& g, const Target& target) {
  const int kPipeTile = g.policy.pipe_tile, kPipeStages = g.policy.pipe_stages, kPipeWarps = g.policy.pipe_warps,
            kPipeDepth = g.policy.pipe_depth;
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
  open_elementwise_kernel(w, types, name, block, args, g.leaves, 1);
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

  Kernel k;
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
  k.why = "instead of the kernel before it from " + std::to_string(g.policy.staged_from) +
          " elements: the look-back's waits overlap the next tiles' loads and ranking";
  k.source = kernel_source(name, g.leaves.program_text, "strategy: " + k.summary, {"scan_pipeline.cuh"}, types, w.str());
  return k;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
// One block per tile (at least one: n = 0 writes the count 0), 64-bit counts in the
// look-back status.
class FilterCompact : public StrategyFor<CompactGroup> {
 public:
  const char* name() const override { return "filter compact"; }
  const char* family() const override { return "filter"; }
  Applies applies(const CompactGroup&, const Target&) const override {
    return {true, "one pass reads n elements and writes the survivors in order (decoupled look-back of the counts)"};
  }
  TuningValues tuning(const Policies& p) const override {
    const CompactPolicy& c = p.compact;
    return {{"block", c.block},       {"min_blocks", c.min_blocks}, {"thread_bytes", static_cast<std::int64_t>(c.thread_bytes)},
            {"max_items", c.max_items}, {"max_vec", c.max_vec}};
  }
  std::vector<KernelSpec> emit(const CompactGroup& g, const Policies&, const Target& t) const override {
    return {emit_filter_compact(g, t)};
  }
  std::vector<StepSpec> schedule(const CompactGroup& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {lookback_step(first, static_cast<int>(kernels.size()), ScalarType::U64, g.policy.staged_from, true)};
  }
};

// The same with the pipelined kernel from policy.staged_from elements.
class FilterCompactPipelined final : public FilterCompact {
 public:
  const char* name() const override { return "filter compact pipelined"; }
  Applies applies(const CompactGroup& g, const Target& t) const override {
    if (!pipelined_compact_applies(g, t))
      return {false, "pipelined needs sm_90 or later and the compact pipeline on (see pipelined_compact_applies)"};
    return {true, "sm_90: compaction tiles, and from " + std::to_string(g.policy.staged_from) +
                      " elements the pipelined kernel"};
  }
  TuningValues tuning(const Policies& p) const override {
    TuningValues v = FilterCompact::tuning(p);
    const CompactPolicy& c = p.compact;
    v.insert(v.end(), {{"tile", c.pipe_tile}, {"stages", c.pipe_stages}, {"warps", c.pipe_warps},
                       {"depth", c.pipe_depth}, {"staged_from", c.staged_from}});
    return v;
  }
  std::vector<KernelSpec> emit(const CompactGroup& g, const Policies&, const Target& t) const override {
    return {emit_filter_compact(g, t), emit_filter_compact_pipelined(g, t)};
  }
};

}  // namespace

const RegisteredStrategy& filter_compact_pipelined_strategy() {
  static const FilterCompactPipelined s;
  return s;
}
const RegisteredStrategy& filter_compact_strategy() {
  static const FilterCompact s;
  return s;
}

}  // namespace fuseflow::codegen
