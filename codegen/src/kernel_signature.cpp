#include <algorithm>

#include "kernel_context.hpp"

namespace fuseflow::codegen {

std::vector<Arg> elementwise_args(const KernelContext& c, std::vector<std::string>& names) {
  const Leaves& g = c.leaves;
  std::vector<Arg> args;
  for (std::size_t j = 0; j < g.inputs.size(); ++j) {
    std::string n = sanitize(g.inputs[j].node().name);
    while (std::find(names.begin(), names.end(), n) != names.end()) n += "_";
    names.push_back(n);
    args.push_back({Arg::Kind::Input, g.input_ids[j], "in_" + n, g.inputs[j].type()});
  }
  args.push_back({Arg::Kind::Length, 0, "n", ScalarType::I64});
  for (std::size_t j = 0; j < g.params.size(); ++j)
    args.push_back({Arg::Kind::Param, g.param_ids[j], "p_" + sanitize(g.params[j].node().name), g.params[j].type()});
  for (int s : g.scalars_read)
    args.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), c.slot_type(s)});
  append_table_args(args, c.leaves);
  // Per-segment results read through broadcasts: Scratch index -1 until the broadcast
  // strategy numbers them (strategies/broadcast.cpp), or the program output holding them.
  for (const BroadcastRead& b : g.broadcasts)
    args.push_back({b.output >= 0 ? Arg::Kind::Output : Arg::Kind::Scratch, b.output, "seg" + std::to_string(b.op_index),
                    b.type});
  return args;
}

void append_table_args(std::vector<Arg>& args, const Leaves& g) {
  std::vector<std::string> names;
  for (std::size_t j = 0; j < g.tables.size(); ++j) {
    const std::string name = table_name(g.tables[j]);
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw GraphError("codegen: two inputs read by gather or shift have the same C name " + name +
                       " (input '" + g.tables[j].node().name + "'); rename one");
    names.push_back(name);
    args.push_back({Arg::Kind::Table, g.table_ids[j], name, g.tables[j].type()});
    args.push_back({Arg::Kind::TableLength, g.table_ids[j], name + "_n", ScalarType::I64});
  }
  if (g.checked_gather) args.push_back({Arg::Kind::InvalidFlag, kGatherFlag, "gather_invalid", ScalarType::U32});
}

std::string kernel_source(const std::string& name, const std::string& program_text, const std::string& strategy,
                          const std::vector<std::string>& includes, const CudaTypes& types, const std::string& body) {
  SourceWriter head;
  head.line("// fuseflow kernel " + name);
  head.line("//");
  head.comment(program_text);
  head.line("//");
  head.comment(strategy);
  for (const auto& h : includes) head.line("#include <fuseflow/" + h + ">");
  head.line();
  const std::string defs = types.definitions();
  return head.str() + (defs.empty() ? "" : defs + "\n") + body;
}

std::string arg_declaration(CudaTypes& types, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Input:
    case Arg::Kind::Table:
    case Arg::Kind::Scalar: return "const " + types.name(a.type) + "* __restrict__ " + a.name;
    case Arg::Kind::Length:
    case Arg::Kind::TableLength:
    case Arg::Kind::IntermediateLength: return "const long long " + a.name;
    case Arg::Kind::Param: return "const " + types.name(a.type) + " " + a.name;
    case Arg::Kind::Output:
    case Arg::Kind::OutputCount:
    case Arg::Kind::ScalarOutput:
    case Arg::Kind::Scratch:
    case Arg::Kind::Intermediate:
    case Arg::Kind::IntermediateCount: return types.name(a.type) + "* __restrict__ " + a.name;
    case Arg::Kind::Ticket:
    case Arg::Kind::InvalidFlag: return "unsigned int* __restrict__ " + a.name;
    case Arg::Kind::TileStatus: return "void* __restrict__ " + a.name;
    case Arg::Kind::Epoch: return "const unsigned int " + a.name;
  }
  throw InternalError("codegen: kernel argument " + a.name + " has an unknown kind " +
                      std::to_string(static_cast<int>(a.kind)));
}

void emit_kernel_parameters(SourceWriter& w, CudaTypes& types, const std::vector<Arg>& args) {
  for (std::size_t i = 0; i < args.size(); ++i)
    w.line("    " + arg_declaration(types, args[i]) + (i + 1 < args.size() ? "," : ") {"));
  w.indent();
}

std::vector<Arg> lookback_args(const Type& status_type) {
  return {{Arg::Kind::Ticket, kTicketTileCounter, "tile_counter", ScalarType::U32},
          {Arg::Kind::TileStatus, 0, "tile_status", status_type},
          {Arg::Kind::Epoch, 0, "epoch", ScalarType::U32}};
}

void open_elementwise_kernel(SourceWriter& w, CudaTypes& types, const std::string& name, int block,
                             const std::vector<Arg>& args, const KernelContext& g, int min_blocks) {
  const std::string bounds = std::to_string(block) + (min_blocks > 0 ? ", " + std::to_string(min_blocks) : "");
  w.line("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + name + "(");
  emit_kernel_parameters(w, types, args);
  for (int s : g.leaves.scalars_read)
    w.line("const " + types.name(g.slot_type(s)) + " r" + std::to_string(s) + " = *s" +
           std::to_string(s) + ";");
}

std::string elementwise_leaf(const KernelContext& g, const std::vector<std::string>& inputs, const Expr& leaf,
                             const std::string& what) {
  switch (leaf.kind()) {
    case ExprKind::Input:
      for (std::size_t j = 0; j < g.leaves.inputs.size(); ++j)
        if (same_node(g.leaves.inputs[j], leaf)) return inputs[j];
      break;
    case ExprKind::Index: return "i";
    case ExprKind::Param: return "p_" + sanitize(leaf.node().name);
    case ExprKind::Result:  // a reduction's result, read from its scalar slot
      if (leaf.node().op->scalar_output) return "r" + std::to_string(g.slot_of(leaf.node().op.get()));
      break;
    case ExprKind::Broadcast:  // its segment's result: the segment by a binary search over the offsets
      for (const BroadcastRead& b : g.leaves.broadcasts)
        if (b.op == leaf.args()[0].node().op.get() && g.offsets && g.offsets->leaves.inputs.size() == 1)
          return "seg" + std::to_string(b.op_index) + "[ff::rows::segment_of(off_" +
                 sanitize(g.offsets->leaves.inputs[0].node().name) + ", offsets_count - 1, i)]";
      break;
    default: break;
  }
  // The planner listed the leaves from these expressions and rejected the others.
  throw InternalError("codegen: unexpected leaf in " + what + ": " + to_string(leaf));
}

}  // namespace fuseflow::codegen
