// Reduce, commutative operator: "chunked" (Brent's lemma; the algorithm in
// ff::reduce::chunked, <fuseflow/reduce.cuh>): a fixed grid of about (SM count x resident
// blocks per SM) blocks, each thread folding a grid-strided sequence of 16-byte vector
// loads into one accumulator per vector lane, then one partial per block, combined in
// block order by the last block. Here: the vector width, the grid, the fused functors.

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

KernelSpec emit_reduce_chunked(const ReduceGroup& g, const ReducePolicy& policy, const Target& t) {
  const int kBlock = policy.block;
  const int kUnroll = policy.chunked_unroll;  // vector loads in flight per input per thread per iteration
  ReduceKernelWriter k(g, reduce_kernel_name(g, "chunked"));
  const int vec = vector_load_width(g);
  const int blocks_per_sm = t.max_threads_per_sm / kBlock;
  const int max_grid = t.sm_count * blocks_per_sm;

  SourceWriter w;
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(kBlock) + ";");
  w.line("constexpr int kVec = " + std::to_string(vec) + ";  // elements per vector load");
  w.line("}  // namespace");
  w.line();
  k.open_kernel(w, kBlock);
  k.emit_functions(w);
  k.emit_store(w);
  w.line();
  w.line("ff::reduce::chunked<kBlock, kVec>(n, element, combine, identity, store, partials, ticket" + k.input_pointers() +
         ");");
  w.close();

  KernelSpec out;
  out.name = k.name();
  out.strategy = Strategy::Chunked;
  out.block = kBlock;
  out.max_grid = max_grid;
  out.items_per_block_step = kBlock * vec * kUnroll;
  out.tuning = {{"block", kBlock}, {"vec", vec}, {"unroll", kUnroll}};
  out.args = k.args();
  out.summary = "chunked (commutative, Brent): block " + std::to_string(kBlock) + ", grid <= " +
                std::to_string(max_grid) + " (" + std::to_string(blocks_per_sm) + " x " + std::to_string(t.sm_count) +
                " SMs), " + std::to_string(vec) + " elements per vector load, " + std::to_string(kUnroll) +
                " loads in flight, " + std::to_string(vec) + " accumulators";
  out.why = "every monoid is commutative: elements may be combined in any order, so each thread strides through "
            "memory with wide loads";
  out.source = k.assemble("strategy: " + out.summary, w.str(), "reduce.cuh");
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceChunked final : public StrategyFor<ReduceGroup> {
 public:
  const char* name() const override { return "reduce chunked"; }
  const char* family() const override { return "reduce"; }
  Strategy forced_by() const override { return Strategy::Chunked; }
  Applies applies(const ReduceGroup& g, const Target&) const override {
    for (const auto& r : g.reduces)
      if (!r.op->monoid.is_commutative())
        return {false, "needs a commutative monoid; " + r.op->monoid.name() + " is non-commutative (use staged or automatic)"};
    return {true, "every monoid is commutative, so elements may be combined in any order"};
  }
  TuningValues tuning(const Policies& p) const override {
    return {{"block", p.reduce.block}, {"unroll", p.reduce.chunked_unroll}};
  }
  std::vector<KernelSpec> emit(const ReduceGroup& g, const Policies& p, const Target& t) const override {
    return {emit_reduce_chunked(g, p.reduce, t)};
  }
  std::vector<StepSpec> schedule(const ReduceGroup&, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::OnePass, first}};
  }
};

}  // namespace

const RegisteredStrategy& reduce_chunked_strategy() {
  static const ReduceChunked s;
  return s;
}

}  // namespace fuseflow::codegen
