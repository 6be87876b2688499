// Reductions folded into a scan's pass: the functors of scan_tile.cuh's TileFold (its
// comment says how the tiles' folds are combined), one accumulator field per reduction,
// each with its own map and monoid.
#include "../scan_context.hpp"

namespace fuseflow::codegen {

Type ScanKernelWriter::fold_type() const {
  if (g_.reduces.size() == 1) return g_.reduces[0].op->monoid.type();
  std::vector<Type> fields;
  for (const auto& r : g_.reduces) fields.push_back(r.op->monoid.type());
  return Type::tuple(fields);
}

std::vector<Arg> ScanKernelWriter::fold_args() const {
  if (g_.reduces.empty()) return {};
  std::vector<Arg> a;
  for (const auto& r : g_.reduces)
    a.push_back({Arg::Kind::ScalarOutput, r.output_slot, "reduced" + std::to_string(r.output_slot), r.op->monoid.type()});
  a.push_back({Arg::Kind::Scratch, 0, "tile_folds", fold_type()});
  a.push_back({Arg::Kind::Ticket, kTicketLastBlock, "ticket", ScalarType::U32});
  return a;
}

std::string ScanKernelWriter::leaf_name(const Expr& leaf, bool in_epilogue) const {
  if ((in_epilogue || g_.folds_scanned) && leaf.kind() == ExprKind::Result && leaf.node().op == g_.op) return "scanned";
  return elementwise_leaf(g_, input_names_, leaf,
                          in_epilogue ? "a scan's map" : "a reduction fused into a scan");
}

void ScanKernelWriter::emit_fold_functions(SourceWriter& w) {
  if (g_.reduces.empty()) return;
  const bool several = g_.reduces.size() > 1;
  const std::string t = types_.name(fold_type());
  w.comment("Reductions fused into this pass, one accumulator field each:");
  for (std::size_t j = 0; j < g_.reduces.size(); ++j)
    w.comment("  " + (several ? ".f" + std::to_string(j) + ": " : "") + to_string(g_.reduces[j].op->values) + " folded with " +
              g_.reduces[j].op->monoid.name() + " into result slot " + std::to_string(g_.reduces[j].output_slot));
  emit_fused_monoid(w, types_, g_.reduces, t, "fold_identity", "fold_combine");

  // After the scan (folds_scanned), each element's fold reads its scanned value too.
  std::string params = g_.folds_scanned ? "const " + acc() + " scanned, " : "";
  for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j)
    params += "const " + types_.name(g_.leaves.inputs[j].type()) + " " + input_names_[j] + ", ";
  w.open("const auto fold_element = [&](" + params + "const long long i) -> " + t);
  {
    ExprEmitter e(w, types_, [this](const Expr& leaf) { return leaf_name(leaf, false); });
    std::string joined;
    for (std::size_t j = 0; j < g_.reduces.size(); ++j) {
      const FusedReduce& r = g_.reduces[j];
      std::string v = e.emit(r.value);
      // filter -> reduce: a dropped element contributes the identity.
      if (r.mask.valid()) v = "(" + e.emit(r.mask) + " ? " + v + " : fold_identity" + (several ? ".f" + std::to_string(j) : "") + ")";
      joined += (j ? ", " : "") + v;
    }
    w.line("return " + (several ? t + "{" + joined + "}" : joined) + ";");
  }
  w.close("};");
  std::string stores;
  for (std::size_t j = 0; j < g_.reduces.size(); ++j)
    stores += "*reduced" + std::to_string(g_.reduces[j].output_slot) + " = total" +
              (several ? ".f" + std::to_string(j) : "") + "; ";
  if (g_.folds_scanned) {
    w.line("const auto fold = ff::scanned_tile_fold(");
    w.line("    tile_folds, ticket, fold_identity, fold_combine,");
    w.line("    [&](unsigned char* stages, const " + acc() + "* scanned, const int slot, const long long i) {");
    w.line("      return fold_element(scanned[slot], " + staged_call("slot", "i") + ");");
    w.line("    },");
  } else {
    w.line("const auto fold = ff::tile_fold(");
    w.line("    tile_folds, ticket, fold_identity, fold_combine,");
    w.line("    [&](unsigned char* stages, const int slot, const long long i) { return fold_element(" +
           staged_call("slot", "i") + "); },");
  }
  w.line("    [&](const " + t + "& total) { " + stores + "});");
}

std::string ScanKernelWriter::fold_summary() const {
  if (g_.reduces.empty()) return "";
  std::string names;
  for (const auto& r : g_.reduces) names += (names.empty() ? "" : ", ") + r.op->monoid.name();
  return ", " + std::to_string(g_.reduces.size()) + (g_.reduces.size() == 1 ? " reduction" : " reductions") +
         " folded into the same pass (" + names + "; per-tile folds combined in tile order by the last tile)";
}

}  // namespace fuseflow::codegen
