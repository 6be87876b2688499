// Filter as a program output (stream compaction), one pass: compact.cuh's compact_tile
// (one block per tile; warp ballots rank the survivors, a look-back over the tiles'
// survivor counts places them; stable), and on sm_90 the pipelined compaction
// (scan_pipeline.cuh, compact_tiles). The emitters write the predicate, the value, the
// loads of the inputs, the stores of the outputs and the count, and one call.
#include <string>

#include "../compact_context.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

namespace {

// The store of one survivor to every output, the map after the filter applied on the way.
std::string store_survivor(const KernelContext& g, const std::vector<std::string>& outs, std::size_t j) {
  return outs[j] + "[at] = " +
         (g.outputs[j].kind() == ExprKind::Result ? "kept" : "epilogue" + std::to_string(j) + "(kept, at)") + ";";
}

}  // namespace

KernelSpec emit_filter_compact(const KernelContext& g) {
  const CompactTiling tiling = compact_tiling(g);
  const std::size_t stage_bytes = static_cast<std::size_t>(tiling.tile()) * g.value.type().size();
  const Leaves& l = g.leaves;
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
  open_elementwise_kernel(w, types, name, tiling.block, args, g, tiling.min_blocks);

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
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {"compact.cuh"}, types, w.str());
  return k;
}


}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
// One block per tile (at least one: n = 0 writes the count 0), 64-bit counts in the
// look-back status.
class FilterCompact : public RegisteredStrategy {
 public:
  FilterCompact(const char* name = "filter compact") : RegisteredStrategy(name, "filter") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one pass reads n elements and writes the survivors in order (decoupled look-back of the counts)"};
  }
  TuningValues tuning(const Policies& p) const override {
    const CompactPolicy& c = p.compact;
    return {{"block", c.block},       {"min_blocks", c.min_blocks}, {"thread_bytes", static_cast<std::int64_t>(c.thread_bytes)},
            {"max_items", c.max_items}, {"max_vec", c.max_vec}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_filter_compact(g)}; }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {lookback_step(first, static_cast<int>(kernels.size()), ScalarType::U64, g.policies().compact.staged_from, true)};
  }
};

// The same with the pipelined kernel from policy.staged_from elements.
class FilterCompactPipelined final : public FilterCompact {
 public:
  FilterCompactPipelined() : FilterCompact("filter compact pipelined") {}
  Applies applies(const KernelContext& g) const override {
    if (!pipelined_compact_applies(g))
      return {false, "pipelined needs sm_90 or later and the compact pipeline on (see pipelined_compact_applies)"};
    return {true, "sm_90: compaction tiles, and from " + std::to_string(g.policies().compact.staged_from) +
                      " elements the pipelined kernel"};
  }
  TuningValues tuning(const Policies& p) const override {
    TuningValues v = FilterCompact::tuning(p);
    const CompactPolicy& c = p.compact;
    v.insert(v.end(), {{"tile", c.pipe_tile}, {"stages", c.pipe_stages}, {"warps", c.pipe_warps},
                       {"depth", c.pipe_depth}, {"staged_from", c.staged_from}});
    return v;
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return {emit_filter_compact(g), emit_filter_compact_pipelined(g)};
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
