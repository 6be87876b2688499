// Reduce, commutative operator: "chunked" (Brent's lemma). A fixed grid of about
// (SM count x resident blocks per SM) blocks; each thread folds a grid-strided sequence of
// 16-byte vector loads into several independent accumulators (one per vector lane, so
// the loads and combines of different lanes overlap), applying the fused map per
// element; then warp shuffles, shared memory across warps, one partial per block, and
// the last block combines the partials in block order. One launch, no atomics on values.
#include <algorithm>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

namespace {

// Loads vector `at` of every input into `<input><tag>` and folds lane k into acc[k].
void emit_vector_step(SourceWriter& w, ReduceKernelWriter& k, const std::vector<std::pair<std::string, std::string>>& steps) {
  const auto& inputs = k.group().inputs;
  for (const auto& [at, tag] : steps)
    for (std::size_t j = 0; j < inputs.size(); ++j)
      w.line("const ff::Vec<" + k.types().name(inputs[j].type()) + ", kVec> " + k.input_name(j) + tag +
             " = ff::load_vec<kVec>(in_" + k.input_name(j) + " + " + at + " * kVec);");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kVec; ++k)");
  for (const auto& [at, tag] : steps) {
    std::vector<std::string> vals;
    for (std::size_t j = 0; j < inputs.size(); ++j) vals.push_back(k.input_name(j) + tag + ".v[k]");
    w.line("acc[k] = combine(acc[k], " + k.element_call(vals, at + " * kVec + k") + ");");
  }
  w.close();
}

std::vector<std::string> indexed(ReduceKernelWriter& k, const std::string& index) {
  std::vector<std::string> vals;
  for (std::size_t j = 0; j < k.group().inputs.size(); ++j) vals.push_back("in_" + k.input_name(j) + "[" + index + "]");
  return vals;
}
}  // namespace

Kernel emit_reduce_chunked(const ReduceGroup& g, const ReducePolicy& policy, const Target& t) {
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
  w.line();
  w.line(k.acc() + " acc[kVec];");
  w.line("#pragma unroll");
  w.line("for (int k = 0; k < kVec; ++k) acc[k] = identity;");
  w.line("const long long threads = (long long)gridDim.x * kBlock;");
  w.line("const long long first = (long long)blockIdx.x * kBlock + threadIdx.x;");
  if (vec > 1) {
    std::string misaligned;
    for (std::size_t j = 0; j < g.inputs.size(); ++j)
      misaligned += (j ? " | " : "") + std::string("ff::misalignment<kVec>(in_") + k.input_name(j) + ")";
    w.comment("Vector loads need every input aligned to a whole vector. Any pointer is accepted:\n"
              "a misaligned one takes the element-wise loop instead.");
    w.open("if ((" + misaligned + ") == 0)");
    w.line("const long long vectors = n / kVec;");
    w.line("long long v = first;");
    w.comment(std::to_string(kUnroll) + " independent vector loads per input in flight per iteration.");
    w.open("for (; v + threads < vectors; v += 2 * threads)");
    w.line("const long long v2 = v + threads;");
    emit_vector_step(w, k, {{"v", "_a"}, {"v2", "_b"}});
    w.close();
    w.open("if (v < vectors)");
    emit_vector_step(w, k, {{"v", "_c"}});
    w.close();
    w.comment("The last n % kVec elements, one per thread.");
    w.line("const long long tail = vectors * kVec + first;");
    w.line("if (tail < n) acc[0] = combine(acc[0], " + k.element_call(indexed(k, "tail"), "tail") + ");");
    w.close("} else {");
    w.indent();
  }
  w.open("for (long long i = first; i < n; i += threads)");
  w.line("acc[0] = combine(acc[0], " + k.element_call(indexed(k, "i"), "i") + ");");
  w.close();
  if (vec > 1) w.close();
  w.line(k.acc() + " value = acc[0];");
  w.line("#pragma unroll");
  w.line("for (int k = 1; k < kVec; ++k) value = combine(value, acc[k]);");
  k.emit_finish(w, "value", false);
  w.close();

  Kernel out;
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
  out.source = k.assemble("strategy: " + out.summary, w.str());
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
