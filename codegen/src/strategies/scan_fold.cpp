// Reductions folded into a scan's pass (DESIGN.md, fusion rules: "several reduces (and a
// scan's total) over the same inputs: one kernel, one pass"). The scan kernel already
// holds each tile's inputs in shared memory; every thread folds its kItems consecutive
// elements into one accumulator (a field per reduction, each with its own map and
// monoid), the block combines the threads in thread order, and the tile's fold is written
// to tile_folds[tile]. The last tile to finish (atomic ticket) combines the folds in tile
// order. Left operands always cover lower indices and the order is fixed, so the results
// are the same bits on every run and right for non-commutative monoids, with no change to
// the look-back (whose status carries the scan's value only).
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
  if (in_epilogue && leaf.kind() == ExprKind::Result && leaf.node().op == g_.op) return "scanned";
  return elementwise_leaf(g_.leaves, input_names_, leaf,
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

  std::string params;
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
  w.line("__shared__ " + t + " fold_warp_totals[kBlock / 32];");
}

void ScanKernelWriter::emit_tile_fold(SourceWriter& w) {
  if (g_.reduces.empty()) return;
  const std::string t = types_.name(fold_type());
  w.comment("Fused reductions: thread t folds its elements t * kItems ... in order (none past n)\n"
            "from the input stages, the block combines the threads in thread order, and the tile's\n"
            "fold waits in tile_folds for the last tile.");
  w.line("{");
  w.indent();
  w.line(t + " folded = fold_identity;");
  w.line("#pragma unroll");
  w.open("for (int k = 0; k < kItems; ++k)");
  w.line("const int s = threadIdx.x * kItems + k;");
  w.line("const long long i = base + s;");
  w.line("if (i < n) folded = fold_combine(folded, fold_element(" + element_call("slot(s)", "i") + "));");
  w.close();
  w.line("const " + t + " tile_fold = ff::block_reduce<kBlock>(folded, fold_combine, fold_identity, fold_warp_totals);");
  w.line("if (threadIdx.x == 0) tile_folds[tile] = tile_fold;");
  w.close();
}

void ScanKernelWriter::emit_fold_finish(SourceWriter& w) {
  if (g_.reduces.empty()) return;
  const bool several = g_.reduces.size() > 1;
  w.comment("The last tile to finish combines the tiles' folds in tile order (a fixed order: the\n"
            "same bits on every run, and right for non-commutative monoids) and stores the results.");
  w.open("if (ff::take_last_block_ticket(ticket))");
  w.line("const " + types_.name(fold_type()) +
         " total = ff::combine_partials<kBlock>(tile_folds, gridDim.x, fold_combine, fold_identity, fold_warp_totals);");
  w.open("if (threadIdx.x == 0)");
  for (std::size_t j = 0; j < g_.reduces.size(); ++j)
    w.line("*reduced" + std::to_string(g_.reduces[j].output_slot) + " = total" + (several ? ".f" + std::to_string(j) : "") + ";");
  w.close();
  w.close();
}

std::string ScanKernelWriter::fold_summary() const {
  if (g_.reduces.empty()) return "";
  std::string names;
  for (const auto& r : g_.reduces) names += (names.empty() ? "" : ", ") + r.op->monoid.name();
  return ", " + std::to_string(g_.reduces.size()) + (g_.reduces.size() == 1 ? " reduction" : " reductions") +
         " folded into the same pass (" + names + "; per-tile folds combined in tile order by the last tile)";
}

}  // namespace fuseflow::codegen
