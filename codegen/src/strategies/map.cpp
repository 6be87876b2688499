// Element-wise arrays: one grid-strided kernel evaluates every array output of the
// program (maps of inputs, possibly reading reductions' results from device slots).
#include "../kernel_context.hpp"

namespace fuseflow::codegen {

KernelSpec emit_map(const KernelContext& g) {
  const std::vector<Expr>& outputs = g.outputs;
  const std::vector<int>& output_ids = g.output_ids;
  const Target& t = g.target();
  const int kBlock = g.policies().map.block;
  const int blocks_per_sm = t.max_threads_per_sm / kBlock;
  CudaTypes types;
  std::vector<std::string> in_names;
  std::vector<Arg> args = elementwise_args(g, in_names);
  std::vector<std::string> loads;  // input j of element i
  for (const auto& n : in_names) loads.push_back("in_" + n + "[i]");
  for (std::size_t j = 0; j < outputs.size(); ++j)
    args.push_back({Arg::Kind::Output, output_ids[j], "out" + std::to_string(output_ids[j]), outputs[j].type()});

  std::string name = "ff_map";
  for (const auto& o : outputs) name += "_" + short_type_name(o.type());
  SourceWriter w;
  open_elementwise_kernel(w, types, name, kBlock, args, g);
  w.open("for (long long i = (long long)blockIdx.x * " + std::to_string(kBlock) +
         " + threadIdx.x; i < n; i += (long long)gridDim.x * " + std::to_string(kBlock) + ")");
  ExprEmitter e(w, types, [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a map"); });
  for (std::size_t j = 0; j < outputs.size(); ++j)
    w.line("out" + std::to_string(output_ids[j]) + "[i] = " + e.emit(outputs[j]) + ";");
  w.close();
  w.close();

  KernelSpec k;
  k.name = name;
  k.strategy = Strategy::Automatic;
  k.block = kBlock;
  k.max_grid = t.sm_count * blocks_per_sm;
  k.items_per_block_step = kBlock;
  k.tuning = {{"block", kBlock}};
  k.args = args;
  k.summary = "element-wise map: block " + std::to_string(kBlock) + ", grid-strided, grid <= " + std::to_string(k.max_grid);
  k.why = "array outputs are element-wise maps of the inputs";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {}, types, w.str());
  return k;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class Map final : public OnePassStrategy {
 public:
  Map() : OnePassStrategy("map", "map") {}
  Applies applies(const KernelContext&) const override { return {true, "element-wise outputs: one grid-strided pass"}; }
  TuningValues tuning(const Policies& p) const override { return {{"block", p.map.block}}; }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_map(g)}; }
};

}  // namespace

const RegisteredStrategy& map_strategy() {
  static const Map s;
  return s;
}

}  // namespace fuseflow::codegen
