// Reduce, commutative operator: "chunked" (Brent's lemma; the algorithm in
// ff::reduce::chunked, <fuseflow/reduce.cuh>): a fixed grid of about (SM count x resident
// blocks per SM) blocks, each thread folding a grid-strided sequence of 16-byte vector
// loads into one accumulator per vector lane, then one partial per block, combined in
// block order by the last block. Here: the vector width, the grid, the fused functors.

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

KernelSpec emit_reduce_chunked(const KernelContext& g) {
  const ReducePolicy& policy = g.policies().reduce;
  const Target& t = g.target();
  const int kBlock = policy.block;
  const int kUnroll = policy.chunked_unroll;  // vector loads in flight per input per thread per iteration
  ReduceKernelWriter k(g, reduce_kernel_name(g, "chunked"));
  const int vec = vector_load_width(g);
  const int blocks_per_sm = t.max_threads_per_sm / kBlock;
  const int max_grid = t.sm_count * blocks_per_sm;

  const std::string body =
      k.body(kBlock,
             {"constexpr int kBlock = " + std::to_string(kBlock) + ";",
              "constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector load"},
             "ff::reduce::chunked<kBlock, kVec>(n, element, combine, identity, store, partials, ticket" +
                 k.input_pointers() + ");");
  KernelSpec out = k.spec(Strategy::Chunked, kBlock,
                          "chunked (commutative, Brent): block " + std::to_string(kBlock) + ", grid <= " +
                              std::to_string(max_grid) + " (" + std::to_string(blocks_per_sm) + " x " +
                              std::to_string(t.sm_count) + " SMs), " + std::to_string(vec) +
                              " elements per vector load, " + std::to_string(kUnroll) + " loads in flight, " +
                              std::to_string(vec) + " accumulators",
                          body);
  out.max_grid = max_grid;
  out.items_per_block_step = kBlock * vec * kUnroll;
  out.tuning = {{"block", kBlock}, {"vec", vec}, {"unroll", kUnroll}};
  out.why = "every monoid is commutative: elements may be combined in any order, so each thread strides through "
            "memory with wide loads";
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceChunked final : public OnePassStrategy {
 public:
  ReduceChunked() : OnePassStrategy("reduce chunked", "reduce", Strategy::Chunked) {}
  Applies applies(const KernelContext& g) const override {
    for (const auto& r : g.reduces)
      if (!r.op->monoid.is_commutative())
        return {false, "needs a commutative monoid; " + r.op->monoid.name() + " is non-commutative (use staged or automatic)"};
    return {true, "every monoid is commutative, so elements may be combined in any order"};
  }
  TuningValues tuning(const Policies& p) const override {
    return {{"block", p.reduce.block}, {"unroll", p.reduce.chunked_unroll}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_reduce_chunked(g)}; }
};

}  // namespace

const RegisteredStrategy& reduce_chunked_strategy() {
  static const ReduceChunked s;
  return s;
}

}  // namespace fuseflow::codegen
