// Reduce, any monoid: "tree" (the course's multi-pass reduction, kept for study). Pass 1:
// block b reduces elements b * kBlock ... b * kBlock + kBlock - 1 (one per thread, the
// fused map applied) in thread order and writes one partial; every later pass reduces
// blocks of kBlock partials the same way, one level of the tree per launch, until one
// block is left, which writes the result. Order-preserving, so any monoid is exact; it
// reads each level back from memory and pays a launch per level, which is what the
// chunked and staged strategies avoid.
#include "../kernel_context.hpp"

namespace fuseflow::codegen {

namespace {

std::string header(int block, const std::string& level) {
  return "strategy: tree (multi-pass, order-preserving), block " + std::to_string(block) + ", " + level;
}

void emit_block_constant(SourceWriter& w, int block) {
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(block) + ";");
  w.line("}  // namespace");
  w.line();
}

// Every level ends alike: the block's value in thread order becomes its partial, and
// the last level (a single block) writes the result.
void emit_level_finish(SourceWriter& w, ReduceKernelWriter& k) {
  w.line("__shared__ " + k.acc() + " warp_partials[kBlock / 32];");
  w.line("value = ff::block_reduce<kBlock>(value, combine, identity, warp_partials);");
  w.line("if (threadIdx.x == 0) ff::store_global_words(partials + blockIdx.x, value);");
  w.open("if (gridDim.x == 1 && threadIdx.x == 0)");
  k.emit_output_stores(w, "value");
  w.close();
}
}  // namespace

std::vector<Kernel> emit_reduce_tree(const ReduceGroup& g, const ReducePolicy& policy, const Target& t) {
  const int kBlock = policy.block;
  (void)t;
  std::vector<Kernel> out;
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "tree_first"), ReduceKernelWriter::Partials::PerBlock);
    SourceWriter w;
    emit_block_constant(w, kBlock);
    k.open_kernel(w, kBlock);
    k.emit_functions(w);
    w.line("const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;");
    std::vector<std::string> vals;
    for (std::size_t j = 0; j < g.inputs.size(); ++j) vals.push_back("in_" + k.input_name(j) + "[i]");
    w.line(k.acc() + " value = i < n ? " + k.element_call(vals, "i") + " : identity;");
    emit_level_finish(w, k);
    w.close();
    Kernel first;
    first.name = k.name();
    first.strategy = Strategy::Tree;
    first.block = kBlock;
    first.max_grid = 0x7fffffff;
    first.items_per_block_step = kBlock;
    first.tuning = {{"block", kBlock}};
  first.any_grid = false;  // one block per kBlock elements
    first.args = k.args();
    first.summary = "tree (multi-pass, order-preserving): block " + std::to_string(kBlock) +
                    ", one element per thread per level, a launch per level";
    first.why = "strategy tree was asked for (kept to reproduce the course's measurements)";
    first.source = k.assemble(header(kBlock, "first level: the inputs, with the map fused"), w.str());
    out.push_back(std::move(first));
  }
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "tree_level"), ReduceKernelWriter::Partials::None);
    SourceWriter w;
    emit_block_constant(w, kBlock);
    std::vector<Arg> args = {{Arg::Kind::Scratch, 0, "in", k.acc_type()}, {Arg::Kind::Length, 0, "n", ScalarType::I64}};
    for (const auto& r : g.reduces)
      args.push_back({Arg::Kind::ScalarOutput, r.output_slot, "out" + std::to_string(r.output_slot), r.op->monoid.type()});
    args.push_back({Arg::Kind::Scratch, 1, "partials", k.acc_type()});
    w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) + ") " + k.name() + "(");
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      std::string decl = a.kind == Arg::Kind::Length ? "const long long n"
                         : a.name == "in"            ? "const " + k.acc() + "* __restrict__ in"
                                                     : k.types().name(a.type) + "* __restrict__ " + a.name;
      w.line("    " + decl + (i + 1 < args.size() ? "," : ") {"));
    }
    w.indent();
    k.emit_combine(w);
    w.line("const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;");
    w.line(k.acc() + " value = i < n ? in[i] : identity;");
    emit_level_finish(w, k);
    w.close();
    Kernel level;
    level.name = k.name();
    level.strategy = Strategy::Tree;
    level.block = kBlock;
    level.max_grid = 0x7fffffff;
    level.items_per_block_step = kBlock;
  level.any_grid = false;
    level.args = args;
    level.summary = "tree level: blocks of " + std::to_string(kBlock) + " partials";
    level.source = k.assemble(header(kBlock, "later levels: blocks of partials"), w.str());
    out.push_back(std::move(level));
  }
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceTree final : public StrategyFor<ReduceGroup> {
 public:
  const char* name() const override { return "reduce tree"; }
  const char* family() const override { return "reduce"; }
  Strategy forced_by() const override { return Strategy::Tree; }
  Applies applies(const ReduceGroup&, const Target&) const override {
    return {true, "a launch per level keeps index order, right for every monoid"};
  }
  TuningValues tuning(const Policies& p) const override { return {{"block", p.reduce.block}}; }
  std::vector<KernelSpec> emit(const ReduceGroup& g, const Policies& p, const Target& t) const override {
    return emit_reduce_tree(g, p.reduce, t);
  }
  // The first level, then the second kernel over the partials until one block is left.
  std::vector<StepSpec> schedule(const ReduceGroup&, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::Tree, first, 2}};
  }
};

}  // namespace

const RegisteredStrategy& reduce_tree_strategy() {
  static const ReduceTree s;
  return s;
}

}  // namespace fuseflow::codegen
