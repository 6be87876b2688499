// The offsets of a segmented op (segmented_reduce, segmented_scan) as every emitter reads
// them: one argument per input the offsets expression reads, the length of their domain
// (offsets_count), and offset_at(s), clamped to [0, n] so that bad offsets never read or
// write out of bounds, and flagged in offsets_invalid (Arg::Kind::InvalidFlag, which each
// emitter adds), which the runtime reports after the run.
#include "../array_ops.hpp"

namespace fuseflow::codegen {

namespace {
std::string offsets_input_name(const Expr& input) { return "off_" + sanitize(input.node().name); }
}  // namespace

std::vector<Arg> offsets_args(const Leaves& offsets, int domain) {
  std::vector<Arg> args;
  for (std::size_t j = 0; j < offsets.inputs.size(); ++j)
    args.push_back({Arg::Kind::Input, offsets.input_ids[j], offsets_input_name(offsets.inputs[j]), offsets.inputs[j].type()});
  args.push_back({Arg::Kind::Length, domain, "offsets_count", ScalarType::I64});
  // Tables the offsets gather from (in a later stage, the count of a filter's survivors
  // that the offsets index: passes/stage_feeds.cpp).
  for (std::size_t j = 0; j < offsets.tables.size(); ++j) {
    args.push_back({Arg::Kind::Table, offsets.table_ids[j], table_name(offsets.tables[j]), offsets.tables[j].type()});
    args.push_back({Arg::Kind::TableLength, offsets.table_ids[j], table_name(offsets.tables[j]) + "_n", ScalarType::I64});
  }
  return args;
}

void emit_offset_at(SourceWriter& w, CudaTypes& types, const OpNode& op, const Leaves& offsets,
                    const std::string& note, const std::string& flag) {
  w.line("// Offsets outside [0, n] are clamped, so nothing is read out of bounds, and flagged: the runtime");
  w.line("// reports them after the run (" + note + ").");
  w.open("const auto offset_at = [&](const long long i) -> long long");
  ExprEmitter e(w, types, [&](const Expr& leaf) -> std::string {
    if (leaf.kind() == ExprKind::Index) return "i";
    for (const auto& in : offsets.inputs)
      if (same_node(in, leaf)) return offsets_input_name(in) + "[i]";
    // offsets_leaves listed them and rejected parameters and results.
    throw InternalError(std::string("codegen: unexpected leaf in ") + op_name(op.kind) + "'s offsets: " +
                        to_string(leaf));
  }, "o");
  w.line("const long long offset = (long long)" + e.emit(op.offsets) + ";");
  w.line("if (offset < 0 || offset > n) " + flag + ";");
  w.line("return offset < 0 ? 0 : (offset > n ? n : offset);");
  w.close("};");
}

}  // namespace fuseflow::codegen
