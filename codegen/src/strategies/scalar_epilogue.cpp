// Scalar epilogues (scalar_epilogue.hpp): an output that is an expression of reductions'
// results, computed on the device. Inside a reduce kernel, its store(total) lambda (run
// by one thread of the last block, after the final combine) evaluates it from the totals
// and the earlier results; otherwise the one-thread kernel here runs after every other
// kernel of the plan and reads every result from its slot.
#include <algorithm>

#include "../kernel_context.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {

bool has_arg(const std::vector<Arg>& args, Arg::Kind kind, int index) {
  return std::any_of(args.begin(), args.end(), [&](const Arg& a) { return a.kind == kind && a.index == index; });
}

// The reduction of `g` writing `slot`, or -1.
int own_reduction(const KernelContext& g, int slot) {
  for (std::size_t j = 0; j < g.reduces.size(); ++j)
    if (g.reduces[j].output_slot == slot) return static_cast<int>(j);
  return -1;
}

std::string epilogue_leaf(const Expr& leaf, const std::map<const OpNode*, int>& slot_of,
                          const std::function<std::string(int)>& slot_value) {
  if (leaf.kind() == ExprKind::Param) return "p_" + sanitize(leaf.node().name);
  if (leaf.kind() == ExprKind::Result && leaf.node().op->scalar_output)
    return slot_value(slot_of.at(leaf.node().op.get()));
  // is_scalar_epilogue admits no other leaf.
  throw InternalError("codegen: unexpected leaf in a scalar epilogue: " + to_string(leaf));
}

}  // namespace

void append_epilogue_args(const KernelContext& g, std::vector<Arg>& args) {
  for (const ScalarEpilogue& ep : g.epilogues) {
    for (int slot : ep.slots_read)
      if (own_reduction(g, slot) < 0 && !has_arg(args, Arg::Kind::Scalar, slot))
        args.push_back({Arg::Kind::Scalar, slot, "s" + std::to_string(slot), g.slot_type(slot)});
    for (std::size_t j = 0; j < ep.params.size(); ++j)
      if (!has_arg(args, Arg::Kind::Param, ep.param_ids[j]))
        args.push_back({Arg::Kind::Param, ep.param_ids[j], "p_" + sanitize(ep.params[j].node().name), ep.params[j].type()});
  }
  for (const ScalarEpilogue& ep : g.epilogues)
    args.push_back({Arg::Kind::ScalarOutput, ep.slot, "out" + std::to_string(ep.slot), ep.expr.type()});
}

void emit_epilogue_stores(SourceWriter& w, CudaTypes& types, const KernelContext& g, const std::string& total) {
  if (g.epilogues.empty()) return;
  w.line("// Scalar epilogues: outputs computed from the totals (and earlier results).");
  const bool fused = g.reduces.size() > 1;
  const auto slot_value = [&](int slot) {
    const int j = own_reduction(g, slot);
    const bool read = std::find(g.leaves.scalars_read.begin(), g.leaves.scalars_read.end(), slot) != g.leaves.scalars_read.end();
    if (j < 0) return (read ? "r" : "(*s") + std::to_string(slot) + (read ? "" : ")");
    return total + (fused ? ".f" + std::to_string(j) : "");
  };
  ExprEmitter e(w, types, [&](const Expr& leaf) { return epilogue_leaf(leaf, g.plan->slot_of, slot_value); }, "e");
  for (const ScalarEpilogue& ep : g.epilogues) w.line("*out" + std::to_string(ep.slot) + " = " + e.emit(ep.expr) + ";");
}

namespace {

// `g`'s epilogues (no reductions of its own), by one thread after every other kernel.
KernelSpec emit_epilogue(const KernelContext& g) {
  CudaTypes types;
  std::vector<int> slots;
  std::vector<Arg> args;
  for (const ScalarEpilogue& ep : g.epilogues) {
    for (int s : ep.slots_read)
      if (std::find(slots.begin(), slots.end(), s) == slots.end()) slots.push_back(s);
  }
  std::sort(slots.begin(), slots.end());
  for (int s : slots)
    args.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), g.slot_type(s)});
  std::vector<std::pair<int, Expr>> params;
  for (const ScalarEpilogue& ep : g.epilogues)
    for (std::size_t j = 0; j < ep.params.size(); ++j)
      if (std::none_of(params.begin(), params.end(), [&](const auto& p) { return p.first == ep.param_ids[j]; }))
        params.push_back({ep.param_ids[j], ep.params[j]});
  std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, p] : params)
    args.push_back({Arg::Kind::Param, id, "p_" + sanitize(p.node().name), p.type()});
  std::string name = "ff_epilogue";
  for (const ScalarEpilogue& ep : g.epilogues) {
    args.push_back({Arg::Kind::ScalarOutput, ep.slot, "out" + std::to_string(ep.slot), ep.expr.type()});
    name += "_" + short_type_name(ep.expr.type());
  }

  SourceWriter w;
  w.line("extern \"C\" __global__ void __launch_bounds__(1) " + name + "(");
  emit_kernel_parameters(w, types, args);
  for (int s : slots)
    w.line("const " + types.name(g.slot_type(s)) + " r" + std::to_string(s) + " = *s" +
           std::to_string(s) + ";");
  ExprEmitter e(w, types, [&](const Expr& leaf) {
    return epilogue_leaf(leaf, g.plan->slot_of, [](int slot) { return "r" + std::to_string(slot); });
  });
  for (const ScalarEpilogue& ep : g.epilogues) w.line("*out" + std::to_string(ep.slot) + " = " + e.emit(ep.expr) + ";");
  w.close();

  KernelSpec k;
  k.name = name;
  k.block = 1;
  k.max_grid = 1;
  k.items_per_block_step = 1;
  k.any_grid = false;
  k.args = args;
  k.summary = "scalar epilogue: one thread, after every other kernel";
  k.why = "outputs computed from reductions' results whose last kernel does not end in one block holding the totals "
          "(atomic or tree reductions, reductions folded into a scan)";
  k.source = kernel_source(name, g.program_text(), "strategy: " + k.summary, {}, types, w.str());
  return k;
}

class ScalarEpilogueKernel final : public OnePassStrategy {  // also for n = 0: the reductions' identities
 public:
  ScalarEpilogueKernel() : OnePassStrategy("scalar epilogue", "epilogue") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one thread reads the results from their slots once every kernel is done"};
  }
  TuningValues tuning(const Policies&) const override { return {}; }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_epilogue(g)}; }
};

}  // namespace

const RegisteredStrategy& scalar_epilogue_strategy() {
  static const ScalarEpilogueKernel s;
  return s;
}

void emit_epilogue_kernel(const std::vector<ScalarEpilogue>& epilogues, const PlanContext& c, Plan& plan) {
  KernelContext g = context_in(c);
  g.epilogues = epilogues;
  plan_with_registry("epilogue", g, Strategy::Automatic, plan);
}

}  // namespace fuseflow::codegen
