// Reduce, any monoid: "tree" (the course's multi-pass reduction, kept for study; the
// algorithm in ff::reduce::tree_first and ff::reduce::tree_level, <fuseflow/reduce.cuh>):
// a launch per level of the tree, each block reducing kBlock elements (then partials) in
// thread order, until one block is left, which writes the result. Order-preserving.
#include "../kernel_context.hpp"

namespace fuseflow::codegen {

std::vector<KernelSpec> emit_reduce_tree(const KernelContext& g) {
  const int kBlock = g.policies().reduce.block;
  const std::vector<std::string> constants = {"constexpr int kBlock = " + std::to_string(kBlock) + ";"};
  const std::string header = "tree (multi-pass, order-preserving), block " + std::to_string(kBlock) + ", ";
  std::vector<KernelSpec> out;
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "tree_first"), ReduceKernelWriter::Partials::PerBlock);
    const std::string body = k.body(kBlock, constants, "ff::reduce::tree_first<kBlock>(n, element, combine, identity, store, partials" +
                                                           k.input_pointers() + ");");
    KernelSpec first = k.spec(Strategy::Tree, kBlock, header + "first level: the inputs, with the map fused", body);
    first.summary = "tree (multi-pass, order-preserving): block " + std::to_string(kBlock) +
                    ", one element per thread per level, a launch per level";
    first.tuning = {{"block", kBlock}};
    first.why = "strategy tree was asked for (kept to reproduce the course's measurements)";
    out.push_back(std::move(first));
  }
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "tree_level"), ReduceKernelWriter::Partials::None);
    SourceWriter w;
    emit_constants(w, constants);
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
    k.emit_store(w);
    w.line();
    w.line("ff::reduce::tree_level<kBlock>(n, combine, identity, store, partials, in);");
    w.close();
    KernelSpec level = k.spec(Strategy::Tree, kBlock, header + "later levels: blocks of partials", w.str());
    level.summary = "tree level: blocks of " + std::to_string(kBlock) + " partials";
    level.args = args;
    out.push_back(std::move(level));
  }
  for (KernelSpec& k : out) {  // one block per kBlock elements
    k.max_grid = 0x7fffffff;
    k.items_per_block_step = kBlock;
    k.any_grid = false;
  }
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceTree final : public RegisteredStrategy {
 public:
  ReduceTree() : RegisteredStrategy("reduce tree", "reduce", Strategy::Tree) {}
  Applies applies(const KernelContext&) const override {
    return {true, "a launch per level keeps index order, right for every monoid"};
  }
  TuningValues tuning(const Policies& p) const override { return {{"block", p.reduce.block}}; }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_reduce_tree(g); }
  // The first level, then the second kernel over the partials until one block is left.
  std::vector<StepSpec> schedule(const KernelContext&, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::Tree, first, 2}};
  }
};

}  // namespace

const RegisteredStrategy& reduce_tree_strategy() {
  static const ReduceTree s;
  return s;
}

}  // namespace fuseflow::codegen
