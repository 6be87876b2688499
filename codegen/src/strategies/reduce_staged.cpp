// Reduce, any monoid, order preserved: "staged" (chunked coalesced staging, the
// algorithm in ff::reduce::staged, <fuseflow/reduce.cuh>): warps stage tiles of
// 32 x kItems elements coalesced into padded shared memory, each lane folds its
// consecutive elements in order, and warps and blocks are combined in index order, so
// non-commutative monoids are exact. Here: the tile size from the inputs' width, the
// grid from the shared memory it takes, and the fused functors.
#include <algorithm>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

KernelSpec emit_reduce_staged(const KernelContext& g) {
  const ReducePolicy& policy = g.policies().reduce;
  const Target& t = g.target();
  const int kBlock = policy.block;
  const int kWarps = kBlock / 32;
  ReduceKernelWriter k(g, reduce_kernel_name(g, "staged"));
  std::size_t in_bytes = 0;
  for (const auto& in : g.leaves.inputs) in_bytes += in.type().size();
  const int items = static_cast<int>(std::clamp<std::size_t>(policy.staged_lane_bytes / std::max<std::size_t>(in_bytes, 1), 1,
                                                             static_cast<std::size_t>(policy.staged_max_items)));
  const int warp_tile = 32 * items;
  const std::size_t smem = static_cast<std::size_t>(kWarps) * (warp_tile + warp_tile / 32) * in_bytes;
  const int by_threads = t.max_threads_per_sm / kBlock;
  const int by_smem = static_cast<int>(std::max<std::size_t>(1, t.shared_per_block_optin / (smem + 1024)));
  const int blocks_per_sm = std::max(1, std::min(by_threads, by_smem));
  const int max_grid = t.sm_count * blocks_per_sm;

  const std::string body =
      k.body(kBlock,
             {"constexpr int kBlock = " + std::to_string(kBlock) + ";",
              "constexpr int kItems = " + std::to_string(items) + ";  // consecutive elements per lane per tile"},
             "ff::reduce::staged<kBlock, kItems>(n, element, combine, identity, store, partials, ticket" +
                 k.input_pointers() + ");");
  KernelSpec out = k.spec(Strategy::Staged, kBlock,
                          "staged (order-preserving): block " + std::to_string(kBlock) + ", warp tiles of " +
                              std::to_string(warp_tile) + " elements (" + std::to_string(items) + " per lane), " +
                              std::to_string(smem) + " bytes of shared memory per block, grid <= " +
                              std::to_string(max_grid) + " (" + std::to_string(blocks_per_sm) + " x " +
                              std::to_string(t.sm_count) + " SMs)",
                          body);
  out.max_grid = max_grid;
  out.items_per_block_step = kWarps * warp_tile;
  out.tuning = {{"block", kBlock}, {"items", items}};
  bool all_commutative = true;
  for (const auto& r : g.reduces) all_commutative = all_commutative && r.op->monoid.is_commutative();
  out.why = all_commutative ? "strategy staged was asked for"
                            : "a monoid is non-commutative: elements must be combined in index order";
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceStaged final : public OnePassStrategy {
 public:
  ReduceStaged() : OnePassStrategy("reduce staged", "reduce", Strategy::Staged) {}
  Applies applies(const KernelContext& g) const override {
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
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_reduce_staged(g)}; }
};

}  // namespace

const RegisteredStrategy& reduce_staged_strategy() {
  static const ReduceStaged s;
  return s;
}

}  // namespace fuseflow::codegen
