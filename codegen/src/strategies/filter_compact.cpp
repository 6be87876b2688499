// Filter as a program output (stream compaction), one pass: compact.cuh's compact_tile
// (one block per tile; warp ballots rank the survivors, a look-back over the tiles'
// survivor counts places them; stable), and on sm_90 the pipelined compaction
// (scan_pipeline.cuh, compact_tiles). The emitters write the predicate, the value, the
// loads of the inputs, the stores of the outputs and the count, and one call.
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

namespace {

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

KernelSpec emit_filter_compact(const CompactGroup& g, const Target& target) {
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
  w.line("}  // namespace");
  w.line();
  open_elementwise_kernel(w, types, name, tiling.block, args, l, tiling.min_blocks);

  emit_compact_functions(w, types, g, names);
  w.comment("The lane's rows of inputs (registers): element k of row r is element\n"
            "warp_base + (r * 32 + lane) * kVec + k (compact.cuh, compact_tile).");
  std::string aligned, loaded;
  for (std::size_t j = 0; j < names.size(); ++j) {
    w.line("ff::Vec<" + types.name(l.inputs[j].type()) + ", kVec> " + names[j] + "_v[kRows];");
    aligned += (j ? " | " : "") + std::string("ff::misalignment<kVec>(in_") + names[j] + ")";
    loaded += names[j] + "_v[r].v[k], ";
  }
  loaded += "i";
  if (tiling.vec > 1) {
    w.line("const auto aligned = [&]() { return (" + (aligned.empty() ? std::string("0") : aligned) + ") == 0; };");
    w.open("const auto load_row = [&](const int r, const long long at)");
    for (const auto& n : names) w.line(n + "_v[r] = ff::load_vec<kVec>(in_" + n + " + at);");
    w.close("};");
  } else {
    w.line("const auto aligned = [] { return false; };  // kVec 1: element by element only");
    w.line("const auto load_row = [](const int, const long long) {};");
  }
  w.open("const auto load = [&](const int r, const int k, const long long i)");
  for (const auto& n : names) w.line(n + "_v[r].v[k] = in_" + n + "[i];");
  w.close("};");
  w.line("const auto keep_at = [&](const int r, const int k, const long long i) { return keep(" + loaded + "); };");
  w.line("const auto value_at = [&](const int r, const int k, const long long i) { return value(" + loaded + "); };");
  w.open("const auto count = [&](const unsigned long long total)");
  for (const auto& o : outs) w.line("*" + o + "_count = total;");
  w.close("};");
  w.open("const auto store = [&](const long long at, const " + value_type + " kept)");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) w.line(store_survivor(g, outs, j));
  w.close("};");
  w.comment("Warp w's survivors in order, from w * kWarpTile: kTile elements of dynamic shared memory.");
  w.line("extern __shared__ __align__(16) unsigned char stage[];");
  w.line("ff::compact_tile<kBlock, kVec, kRows>(reinterpret_cast<" + value_type +
         "*>(stage), n, tile_counter, tile_status, epoch, aligned,");
  w.line("                                      load_row, load, keep_at, value_at, count, store);");
  w.close();

  KernelSpec k;
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
