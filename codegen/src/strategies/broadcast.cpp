// The general per-segment broadcast (rows.hpp, planned by broadcast_plan.cpp): segmented
// reductions over one offsets input, any segment lengths (empty, one element, longer than
// a block), and element-wise outputs that read ff::broadcast of their results. No host
// round-trip, one step of kernels on the stream:
//  1. each segmented reduction in program order, through the segmented reduce's own
//     kernels (strategies/segmented_reduce.cpp: the short pass, the merge path), writing
//     its per-segment results into a scratch buffer (or the program output, when the
//     result is one); a reduction whose values read an earlier one's broadcast (softmax's
//     row sum of exp(x - rowmax)) finds each element's segment by a binary search over the
//     offsets (ff::rows::segment_of, <fuseflow/rows.cuh>);
//  2. the map of the outputs (ff::broadcast::for_each_element, <fuseflow/broadcast.cuh>):
//     each thread finds its elements' segments from the offsets (a binary search, then
//     forward) and reads seg<r>[segment] for each broadcast.
#include <algorithm>

#include "../array_ops.hpp"
#include "../rows.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {

constexpr int kMapBlock = 256;
constexpr int kMapItems = 8;  // elements per thread per step, 32 apart

// Numbers the Scratch arguments elementwise_args left at -1 (the broadcasts' buffers) after
// the kernel's own, and makes `out` a Scratch argument when the reduction is no program output.
void number_scratch(KernelSpec& k, bool out_is_scratch) {
  int next = 0;
  for (const Arg& a : k.args)
    if (a.kind == Arg::Kind::Scratch && a.index >= 0) next = std::max(next, a.index + 1);
  for (Arg& a : k.args) {
    if (a.kind == Arg::Kind::Scratch && a.index < 0) a.index = next++;
    if (out_is_scratch && a.kind == Arg::Kind::Output && a.name == "out") {
      a.kind = Arg::Kind::Scratch;
      a.index = next++;
    }
  }
}

std::string offsets_name(const SegmentOffsets& o) { return sanitize(o.leaves.inputs.at(0).node().name); }

// The offsets `op` reduces over, among the context's.
const SegmentOffsets& offsets_of(const KernelContext& g, const OpNode& op) {
  if (same_node(g.offsets->leaves.inputs.at(0), op.offsets)) return *g.offsets;
  for (const SegmentOffsets& o : g.more_offsets)
    if (same_node(o.leaves.inputs.at(0), op.offsets)) return o;
  throw InternalError("codegen: the broadcast map has no offsets " + to_string(op.offsets));
}

// The map of a program without element-wise outputs (the segmented reductions of stage 1,
// passes/stages.cpp, whose broadcasts later kernels read): only the offsets' check, one block.
KernelSpec check_only(KernelSpec& k, SourceWriter& w, CudaTypes& types, const KernelContext& g) {
  w.close();
  k.strategy = Strategy::Automatic;
  k.block = kMapBlock;
  k.max_grid = 1;
  k.items_per_block_step = kMapBlock * kMapItems;
  k.tuning = {{"block", kMapBlock}};
  k.summary = "broadcast offsets check: one thread checks each offsets input covers the n elements (first 0, last n)";
  k.why = "later kernels read each element's segment through a broadcast, which needs every element in a segment";
  k.source = kernel_source(k.name, g.program_text(), "strategy: " + k.summary, {"broadcast.cuh"}, types, w.str());
  return k;
}

KernelSpec emit_broadcast_map(const KernelContext& g) {
  const Target& t = g.target();
  CudaTypes types;
  std::vector<std::string> names;
  std::vector<Arg> args = elementwise_args(g, names);
  for (const Arg& a : offsets_args(g.offsets->leaves, g.offsets->domain)) args.push_back(a);
  args.push_back({Arg::Kind::InvalidFlag, g.offsets->check, "offsets_invalid", ScalarType::U32});
  for (const SegmentOffsets& o : g.more_offsets) {  // each further offsets: its pointer, count and flag
    args.push_back({Arg::Kind::Input, o.leaves.input_ids.at(0), "off_" + offsets_name(o), o.leaves.inputs.at(0).type()});
    args.push_back({Arg::Kind::Length, o.domain, "offsets_count_" + offsets_name(o), ScalarType::I64});
    args.push_back({Arg::Kind::InvalidFlag, o.check, "offsets_invalid_" + offsets_name(o), ScalarType::U32});
  }
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    args.push_back({Arg::Kind::Output, g.output_ids[j], "out" + std::to_string(g.output_ids[j]), g.outputs[j].type()});
  KernelSpec k;
  k.name = g.outputs.empty() ? "ff_broadcast_check_offsets" : "ff_broadcast_map";
  for (const auto& o : g.outputs) k.name += "_" + short_type_name(o.type());
  k.args = args;
  number_scratch(k, false);
  const std::string off = "off_" + offsets_name(*g.offsets);

  SourceWriter w;
  emit_constants(w, {"constexpr int kBlock = " + std::to_string(kMapBlock) + ";",
                     "constexpr int kItems = " + std::to_string(kMapItems) +
                         ";  // elements per thread per step, 32 apart (a warp: 32 x kItems consecutive)"});
  open_elementwise_kernel(w, types, k.name, kMapBlock, k.args, g);
  w.line("const long long segments = offsets_count - 1;");
  w.line("ff::broadcast::check_offsets(" + off + ", segments, n, offsets_invalid);");
  for (const SegmentOffsets& o : g.more_offsets) {
    const std::string q = offsets_name(o);
    w.line("const long long segments_" + q + " = offsets_count_" + q + " - 1;");
    w.line("ff::broadcast::check_offsets(off_" + q + ", segments_" + q + ", n, offsets_invalid_" + q + ");");
    if (!g.outputs.empty())
      w.line("long long s_" + q + " = 0;  // the segment by " + q + ": forward with the thread's elements, which come in order");
  }
  if (g.outputs.empty()) return check_only(k, w, types, g);  // stage 1 of a staged program (passes/stages.cpp)
  w.comment("Each element i with its segment s (<fuseflow/broadcast.cuh>: 32 x kItems consecutive elements a warp).");
  w.open("ff::broadcast::for_each_element<kBlock, kItems>(" + off + ", segments, n, [&](const long long i, const long long s)");
  for (const SegmentOffsets& o : g.more_offsets) {
    const std::string q = offsets_name(o);
    w.line("s_" + q + " = ff::rows::segment_from(off_" + q + ", segments_" + q + ", s_" + q + ", i);");
  }
  ExprEmitter e(w, types, [&](const Expr& leaf) -> std::string {
    if (leaf.kind() == ExprKind::Input)
      for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j)
        if (same_node(g.leaves.inputs[j], leaf)) return "in_" + names[j] + "[i]";
    if (leaf.kind() == ExprKind::Broadcast)
      for (const BroadcastRead& b : g.leaves.broadcasts)
        if (b.op == leaf.args()[0].node().op.get())
          return "seg" + std::to_string(b.op_index) +
                 (&offsets_of(g, *b.op) == &*g.offsets ? "[s]" : "[s_" + offsets_name(offsets_of(g, *b.op)) + "]");
    return elementwise_leaf(g, names, leaf, "a broadcast map");
  });
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    w.line("out" + std::to_string(g.output_ids[j]) + "[i] = " + e.emit(g.outputs[j]) + ";");
  w.close("});");
  w.close();

  k.strategy = Strategy::Automatic;
  k.block = kMapBlock;
  k.max_grid = t.sm_count * std::max(1, t.max_threads_per_sm / kMapBlock);
  k.items_per_block_step = kMapBlock * kMapItems;
  k.tuning = {{"block", kMapBlock}, {"items", kMapItems}};
  k.summary = "broadcast map: block " + std::to_string(kMapBlock) + ", " + std::to_string(kMapItems) +
              " elements per thread per step (32 apart), each thread's segment by a binary search over the offsets "
              "then forward (a gallop), grid-strided, grid <= " + std::to_string(k.max_grid);
  k.why = "outputs read ff::broadcast of segmented reductions over offsets only the device knows: each element "
          "reads its segment's result, found from the offsets";
  k.source = kernel_source(k.name, g.program_text(), "strategy: " + k.summary, {"broadcast.cuh"}, types, w.str());
  return k;
}

}  // namespace

std::vector<KernelSpec> emit_broadcast(const KernelContext& g) {
  const Program& p = g.plan->program;
  std::vector<KernelSpec> kernels;
  for (const auto& op : p.ops()) {
    KernelContext c = context_in(*g.plan);
    c.op = op;
    const int output = result_output(p, *op);
    c.output_ids = {output};
    c.leaves = leaves_of(*g.plan, {op->values}, "segmented_reduce");
    c.leaves.broadcasts = broadcasts_in(p, {op->values});
    c.offsets = offsets_of(g, *op);
    for (KernelSpec& k : emit_segmented_reduce(c)) {
      number_scratch(k, output < 0);
      if (!c.leaves.broadcasts.empty()) {  // ff::rows::segment_of in its element values
        const std::string include = "#include <fuseflow/segmented.cuh>\n";
        const auto at = k.source.find(include);
        if (at == std::string::npos)
          throw InternalError("codegen: the segmented reduce kernel " + k.name + " does not include segmented.cuh");
        k.source.insert(at + include.size(), "#include <fuseflow/rows.cuh>  // ff::rows::segment_of: broadcasts\n");
      }
      k.why += "; in a broadcast program, its per-segment results " +
               std::string(output < 0 ? "stay on the device (scratch) for the kernels after it" : "are also read by the kernels after it");
      kernels.push_back(std::move(k));
    }
  }
  kernels.push_back(emit_broadcast_map(g));
  return kernels;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
namespace fuseflow::codegen {

namespace {
class Broadcast final : public RegisteredStrategy {
 public:
  Broadcast() : RegisteredStrategy("broadcast segments", "broadcast") {}
  Applies applies(const KernelContext&) const override {
    return {true, "segmented reductions into per-segment buffers, then a map that finds each element's segment "
                  "from the offsets: any segment lengths"};
  }
  TuningValues tuning(const Policies& p) const override {
    return {{"map_block", kMapBlock}, {"map_items", kMapItems}, {"segmented_block", p.segmented.block},
            {"short_pass", p.segmented.short_pass ? 1 : 0}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return emit_broadcast(g); }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    return {{StepSpec::Kind::Broadcast, first, static_cast<int>(kernels.size()), g.offsets->domain, 0, INT64_MAX,
             static_cast<std::int64_t>(g.plan->program.ops().size()), true}};
  }
};
}  // namespace

const RegisteredStrategy& broadcast_strategy() {
  static const Broadcast s;
  return s;
}

}  // namespace fuseflow::codegen
