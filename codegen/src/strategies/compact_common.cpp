// What the two compaction emitters (filter_compact.cpp, filter_compact_pipelined.cpp)
// share: the compaction kernel's tile shape, the fused predicate, value and epilogues, and
// the kernel's arguments.
#include <algorithm>
#include <string>

#include "../compact_context.hpp"
#include "../scan_context.hpp"

namespace fuseflow::codegen {

// The tile (CompactPolicy): 512 threads; each loads 128 bytes of inputs per tile (at most
// 32 elements), in vector loads of 16 bytes, but 8 bytes of 1-byte elements (a row's
// ballots and flags then fit the registers of the resident blocks asked for). Large tiles
// (16384 4-byte elements): the look-back makes the tiles' prefixes a chain that advances a
// few dozen tiles per round trip through L2, so fewer, larger tiles keep that chain well
// ahead of the memory traffic at large n; the survivors' stage takes up to 64 KB of
// dynamic shared memory. Resident blocks per SM asked of the compiler: 2 x 512 threads
// keep enough loads in flight while a block waits on the look-back; a thread's loads are
// <= 128 bytes, so the 64 registers this leaves hold them without spilling.

// keep(inputs..., i) and value(inputs..., i): the predicate and the value of element i;
// epilogue_j(kept, at): output j of the survivor written at position `at` (filter -> map;
// index() is the position among the survivors).
void emit_compact_functions(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                            const std::vector<std::string>& names) {
  const Leaves& l = g.leaves;
  const std::string value_type = types.name(g.value.type());
  std::string params;
  for (std::size_t j = 0; j < l.inputs.size(); ++j) params += "const " + types.name(l.inputs[j].type()) + " " + names[j] + ", ";
  params += "const long long i";
  // Inputs by their parameter names (names[j]); only scalar results remain after the
  // planner substituted the filters.
  auto leaf_of = [&](const Expr& leaf) { return elementwise_leaf(g, names, leaf, "a filter"); };
  w.open("const auto keep = [&](" + params + ") -> bool");
  {
    ExprEmitter e(w, types, leaf_of);
    w.line("return " + e.emit(g.mask) + ";");
  }
  w.close("};");
  w.open("const auto value = [&](" + params + ") -> " + value_type);
  {
    ExprEmitter e(w, types, leaf_of);
    w.line("return " + e.emit(g.value) + ";");
  }
  w.close("};");
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const Expr& o = g.outputs[j];
    if (o.kind() == ExprKind::Result) continue;  // the filter's result itself: stored as it is
    w.open("const auto epilogue" + std::to_string(j) + " = [&](const " + value_type + " kept, const long long at) -> " +
           types.name(o.type()));
    ExprEmitter e(w, types, [&](const Expr& leaf) -> std::string {
      if (leaf.kind() == ExprKind::Result && leaf.node().op == g.op) return "kept";
      if (leaf.kind() == ExprKind::Index) return "at";
      return leaf_of(leaf);
    });
    w.line("return " + e.emit(o) + ";");
    w.close("};");
  }
}

// The arguments of a compaction kernel: the elementwise ones, each output with its
// device-written count, the look-back's tile counter, status and epoch.
std::vector<Arg> compact_args(const KernelContext& g, std::vector<std::string>& names, std::vector<std::string>& outs) {
  std::vector<Arg> args = elementwise_args(g, names);
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    outs.push_back("out" + std::to_string(g.output_ids[j]));
    args.push_back({Arg::Kind::Output, g.output_ids[j], outs.back(), g.outputs[j].type()});
    args.push_back({Arg::Kind::OutputCount, g.output_ids[j], outs.back() + "_count", ScalarType::U64});
  }
  for (const Arg& a : lookback_args(ScalarType::U64)) args.push_back(a);
  return args;
}


CompactTiling compact_tiling(const KernelContext& g) {
  const Target& target = g.target();
  std::size_t in_bytes = 0, widest = 0;
  bool scalars = true;
  for (const auto& in : g.leaves.inputs) {
    in_bytes += in.type().size();
    widest = std::max(widest, in.type().size());
    scalars = scalars && in.type().is_scalar();
  }
  const CompactPolicy& p = g.policies().compact;
  CompactTiling t;
  t.block = p.block;
  t.min_blocks = p.min_blocks;
  t.vec = scalars && widest > 0 ? std::min(p.max_vec, static_cast<int>(16 / widest)) : 1;
  const int items = static_cast<int>(std::clamp<std::size_t>(p.thread_bytes / std::max<std::size_t>(in_bytes, 1), 1,
                                                             static_cast<std::size_t>(p.max_items)));
  t.rows = std::max(1, items / t.vec);
  const std::size_t value_bytes = g.value.type().size();
  const std::size_t stage_limit = std::min<std::size_t>(p.max_stage_bytes, target.shared_per_block_optin / 2);
  if (p.tile) {  // PlanOptions::filter_tile (FUSEFLOW_FILTER_TILE): block x rows [x min blocks]
    t.block = p.tile->block;
    t.rows = p.tile->items;
    if (p.tile->min_blocks > 0) t.min_blocks = p.tile->min_blocks;
    if (static_cast<std::size_t>(t.tile()) * value_bytes > stage_limit)
      throw ConfigError("filter_tile (FUSEFLOW_FILTER_TILE): tiles of " + std::to_string(t.tile()) + " elements of " +
                       g.value.type().name() + " need more than the " + std::to_string(stage_limit) +
                       " bytes of shared memory a block may have");
    return t;
  }
  while (static_cast<std::size_t>(t.tile()) * value_bytes > stage_limit) {
    if (t.rows > 1) --t.rows;
    else if (t.vec > 1) t.vec /= 2;
    else if (t.block > 32) t.block /= 2;
    else throw GraphError("filter: elements of " + g.value.type().name() + " are too large to compact in shared memory");
  }
  return t;
}

}  // namespace fuseflow::codegen
