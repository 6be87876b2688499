// Reduce, any monoid, order preserved: "staged" (chunked coalesced staging). The array
// is split into warp tiles of 32 x kItems elements; every warp of the grid owns a
// contiguous range of tiles (quotient/remainder split, as in the persistent-blocks
// paper), numbered so that a block's warps, and the blocks, follow each other in index
// order. A warp loads its tile coalesced (in step k, lane l reads element k * 32 + l)
// into its own slice of shared memory, then lane l folds its kItems consecutive elements
// in order, applying the fused map; a warp reduce (shuffles, left operand = lower lanes)
// gives the tile's value, folded into the warp's running value. Only __syncwarp guards a
// tile: warps never wait for each other until the end, where the warps' values are
// combined in warp order and the blocks' partials in block order by the last block.
// Left operands always cover lower indices, so non-commutative monoids (maximum segment
// sum, matrix products) are exact.
#include <algorithm>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

Kernel emit_reduce_staged(const ReduceGroup& g, const ReducePolicy& policy, const Target& t) {
  const int kBlock = policy.block;
  const int kWarps = kBlock / 32;
  ReduceKernelWriter k(g, reduce_kernel_name(g, "staged"));
  std::size_t in_bytes = 0;
  for (const auto& in : g.inputs) in_bytes += in.type().size();
  const int items = static_cast<int>(std::clamp<std::size_t>(policy.staged_lane_bytes / std::max<std::size_t>(in_bytes, 1), 1,
                                                             static_cast<std::size_t>(policy.staged_max_items)));
  const int warp_tile = 32 * items;
  const std::size_t smem = static_cast<std::size_t>(kWarps) * (warp_tile + warp_tile / 32) * in_bytes;
  const int by_threads = t.max_threads_per_sm / kBlock;
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(by_threads, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;

  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";");
  w.line("constexpr int kWarps = kBlock / 32;");
  w.line("constexpr int kItems = " + std::to_string(items) + ";  // consecutive elements per lane per tile");
  w.line("constexpr int kWarpTile = 32 * kItems;");
  w.line("// Shared-memory slot of tile element s: one slot of padding per 32 elements, so lane l");
  w.line("// reading element l * kItems + k does not collide with its neighbours' banks.");
  w.line("__device__ __forceinline__ int slot(int s) { return s + s / 32; }");
  w.line("}  // namespace");
  w.line();
  k.open_kernel(w, kBlock);
  k.emit_functions(w);
  w.line();
  for (std::size_t j = 0; j < g.inputs.size(); ++j)
    w.line("__shared__ " + k.types().name(g.inputs[j].type()) + " stage_" + k.input_name(j) +
           "[kWarps][kWarpTile + kWarpTile / 32];");
  w.line("const int lane = threadIdx.x % 32;");
  w.line("const int warp = threadIdx.x / 32;");
  w.comment("This warp's contiguous range of tiles: the first tiles % warps warps take one more.");
  w.line("const long long tiles = (n + kWarpTile - 1) / kWarpTile;");
  w.line("const long long warps = (long long)gridDim.x * kWarps;");
  w.line("const long long me = (long long)blockIdx.x * kWarps + warp;");
  w.line("const long long share = tiles / warps;");
  w.line("const long long extra = tiles % warps;");
  w.line("const long long begin = me * share + min(me, extra);");
  w.line("const long long end = begin + share + (me < extra ? 1 : 0);");
  w.line(k.acc() + " running = identity;  // the warp's value so far, in lane 0");
  w.open("for (long long t = begin; t < end; ++t)");
  w.line("const long long base = t * kWarpTile;");
  w.line(k.acc() + " value;");
  // One tile: a full one needs no bounds checks and starts the fold from its first
  // element; the last, partial tile checks every index and starts from the identity.
  auto tile = [&](bool full) {
    w.comment("Coalesced: in step k, lane l loads element base + k * 32 + l.");
    w.line("#pragma unroll");
    w.open("for (int k = 0; k < kItems; ++k)");
    w.line("const int s = k * 32 + lane;");
    std::string store;
    for (std::size_t j = 0; j < g.inputs.size(); ++j)
      store += (j ? " " : "") + std::string("stage_") + k.input_name(j) + "[warp][slot(s)] = in_" + k.input_name(j) + "[base + s];";
    w.line(full ? store : "if (base + s < n) { " + store + " }");
    w.close();
    w.line("__syncwarp();");
    w.comment("Lane l folds elements l * kItems ... l * kItems + kItems - 1, in order.");
    auto at = [&](const std::string& s_expr) {
      std::vector<std::string> vals;
      for (std::size_t j = 0; j < g.inputs.size(); ++j) vals.push_back("stage_" + k.input_name(j) + "[warp][slot(" + s_expr + ")]");
      return k.element_call(vals, "base + " + s_expr);
    };
    if (full) {
      w.line("value = " + at("lane * kItems") + ";");
      w.line("#pragma unroll");
      w.line("for (int k = 1; k < kItems; ++k) value = combine(value, " + at("lane * kItems + k") + ");");
    } else {
      w.line("value = identity;");
      w.line("#pragma unroll");
      w.open("for (int k = 0; k < kItems; ++k)");
      w.line("const int s = lane * kItems + k;");
      w.line("if (base + s < n) value = combine(value, " + at("s") + ");");
      w.close();
    }
  };
  w.open("if (base + kWarpTile <= n)");
  tile(true);
  w.close("} else {");
  w.indent();
  tile(false);
  w.close();
  w.line("__syncwarp();  // the stage is overwritten by the next tile");
  w.line("value = ff::warp_reduce(value, combine);");
  w.line("if (lane == 0) running = combine(running, value);");
  w.close();
  k.emit_finish(w, "running", true);
  w.close();

  Kernel out;
  out.name = k.name();
  out.strategy = Strategy::Staged;
  out.block = kBlock;
  out.max_grid = max_grid;
  out.items_per_block_step = kWarps * warp_tile;
  out.tuning = {{"block", kBlock}, {"items", items}};
  out.args = k.args();
  out.summary = "staged (order-preserving): block " + std::to_string(kBlock) + ", warp tiles of " +
                std::to_string(warp_tile) + " elements (" + std::to_string(items) + " per lane), " +
                std::to_string(smem) + " bytes of shared memory per block, grid <= " + std::to_string(max_grid) +
                " (" + std::to_string(blocks_per_sm) + " x " + std::to_string(t.sm_count) + " SMs)";
  bool all_commutative = true;
  for (const auto& r : g.reduces) all_commutative = all_commutative && r.op->monoid.is_commutative();
  out.why = all_commutative ? "strategy staged was asked for"
                            : "a monoid is non-commutative: elements must be combined in index order";
  out.source = k.assemble("strategy: " + out.summary, w.str());
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceStaged final : public StrategyFor<ReduceGroup> {
 public:
  const char* name() const override { return "reduce staged"; }
  const char* family() const override { return "reduce"; }
  Strategy forced_by() const override { return Strategy::Staged; }
  Applies applies(const ReduceGroup& g, const Target&) const override {
    for (const auto& r : g.reduces)
      if (!r.op->monoid.is_commutative())
        return {true, r.op->monoid.name() + " is non-commutative: staged combines elements in index order"};
    return {true, "it keeps index order, which is right for every monoid"};
  }
  TuningValues tuning(const Policies& p) const override {
    return {{"block", p.reduce.block},
            {"lane_bytes", static_cast<std::int64_t>(p.reduce.staged_lane_bytes)},
            {"max_items", p.reduce.staged_max_items}};
  }
  std::vector<KernelSpec> emit(const ReduceGroup& g, const Policies& p, const Target& t) const override {
    return {emit_reduce_staged(g, p.reduce, t)};
  }
  std::vector<StepSpec> schedule(const ReduceGroup&, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::OnePass, first}};
  }
};

}  // namespace

const RegisteredStrategy& reduce_staged_strategy() {
  static const ReduceStaged s;
  return s;
}

}  // namespace fuseflow::codegen
