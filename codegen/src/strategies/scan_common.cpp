// Pieces every scan strategy shares: the signature and the combine / element / epilogue
// lambdas (the tiling: scan_tiling.cpp). The tile's algorithm (load, blocked scan, store)
// is scan_tile.cuh's; scan_tile.cpp writes the functors it takes.
#include <algorithm>
#include <functional>
#include <set>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

bool compacts_survivors(const KernelContext& g) { return g.op->kind == OpKind::Scan && g.mask.valid(); }

bool stores_scan_itself(const KernelContext& g, const Expr& o) {
  if (o.kind() == ExprKind::Result) return true;
  // A scan of a filter's result: the value field of its (value, count) pairs.
  return compacts_survivors(g) && o.kind() == ExprKind::Get && o.node().index == 0 &&
         o.args()[0].kind() == ExprKind::Result && o.args()[0].node().op == g.op;
}

std::string scan_kernel_name(const KernelContext& g, const char* strategy) {
  const Monoid& m = g.op->monoid;
  // The count of survivors before each element, for reductions over index() among them.
  if (g.folds_scanned) return std::string("ff_scan_") + strategy + "_survivor_positions";
  // A scan of a filter's result is named after its value type, not its (value, count) pairs.
  if (compacts_survivors(g))
    return std::string("ff_scan_") + strategy + "_survivors_" + short_type_name(m.type().fields()[0]) + "_" +
           sanitize(m.name()) + (g.op->scan_kind == ScanKind::Exclusive ? "_exclusive" : "");
  return std::string("ff_scan_") + strategy + "_" + short_type_name(m.type()) + "_" + sanitize(m.name()) +
         (g.op->scan_kind == ScanKind::Exclusive ? "_exclusive" : "");
}

std::size_t lookback_status_bytes(std::size_t value_bytes, std::int64_t tiles) {
  // Per tile and per group of 32 tiles, one 64-bit word (flag + 32-bit chunk) per 4 bytes
  // of value: the layout scan.cuh reads, from shared_constants.cuh.
  return static_cast<std::size_t>(shared::scan_status_bytes(value_bytes, static_cast<unsigned long long>(tiles)));
}

ScanKernelWriter::ScanKernelWriter(const KernelContext& g, std::string kernel_name, ScanTiling tiling)
    : g_(g), name_(std::move(kernel_name)), tiling_(tiling) {
  std::set<std::string> used;
  for (const auto& in : g.leaves.inputs) {
    std::string n = sanitize(in.node().name);
    while (!used.insert(n).second) n += "_";
    input_names_.push_back(n);
  }
}

std::vector<Arg> ScanKernelWriter::args(bool with_inputs, bool with_outputs, const std::vector<Arg>& extra) const {
  const Leaves& l = g_.leaves;
  std::vector<Arg> a;
  if (with_inputs)
    for (std::size_t j = 0; j < l.inputs.size(); ++j)
      a.push_back({Arg::Kind::Input, l.input_ids[j], "in_" + input_names_[j], l.inputs[j].type()});
  a.push_back({Arg::Kind::Length, 0, "n", ScalarType::I64});
  if (with_inputs) {
    for (std::size_t j = 0; j < l.params.size(); ++j)
      a.push_back({Arg::Kind::Param, l.param_ids[j], "p_" + sanitize(l.params[j].node().name), l.params[j].type()});
    for (int s : l.scalars_read)
      a.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), g_.slot_type(s)});
    append_table_args(a, l);
  }
  if (with_outputs)
    for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
      const std::string out = "out" + std::to_string(g_.output_ids[j]);
      a.push_back({Arg::Kind::Output, g_.output_ids[j], out, g_.outputs[j].type()});
      // The survivors' scan: as many elements as survivors, a count the kernel writes.
      if (compacts_survivors(g_)) a.push_back({Arg::Kind::OutputCount, g_.output_ids[j], out + "_count", ScalarType::U64});
    }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void ScanKernelWriter::open_kernel(SourceWriter& w, const std::vector<Arg>& a) {
  w.line(std::string("extern \"C\" __global__ void __launch_bounds__(") +
         (tiling_.min_blocks > 0 ? "kBlock, kMinBlocks" : "kBlock") + ") " + name_ + "(");
  emit_kernel_parameters(w, types_, a);
}

void ScanKernelWriter::emit_constants(SourceWriter& w, bool tiled, const std::vector<std::string>& more) {
  w.line("namespace {");
  w.line("constexpr int kBlock = " + std::to_string(tiling_.block) + ";");
  if (tiling_.min_blocks > 0)
    w.line("constexpr int kMinBlocks = " + std::to_string(tiling_.min_blocks) + ";  // resident blocks per SM to fit");
  if (!tiled) {
    w.line("}  // namespace");
    w.line();
    return;
  }
  w.line("constexpr int kItems = " + std::to_string(tiling_.items) + ";  // consecutive elements per thread");
  w.line("constexpr int kTile = kBlock * kItems;");
  w.line("// Shared-memory slot of tile element s: one slot of padding per 32 elements, so thread t");
  w.line("// reading element t * kItems + k does not collide with its neighbours' banks.");
  w.line("__device__ __forceinline__ int slot(int s) { return s + s / 32; }");
  for (const auto& l : more) w.line(l);
  w.line("}  // namespace");
  w.line();
}

std::string ScanKernelWriter::element_params() {
  const Leaves& l = g_.leaves;
  std::string params;
  for (std::size_t j = 0; j < l.inputs.size(); ++j)
    params += "const " + types_.name(l.inputs[j].type()) + " " + input_names_[j] + ", ";
  return params + "const long long i";
}

void ScanKernelWriter::emit_functions(SourceWriter& w, bool elements, bool epilogues) {
  const Leaves& l = g_.leaves;
  const Monoid& m = g_.op->monoid;
  const std::string t = acc();
  if (elements)
    for (int s : l.scalars_read)
      w.line("const " + types_.name(g_.slot_type(s)) + " r" + std::to_string(s) + " = *s" +
             std::to_string(s) + ";");
  w.line("const " + t + " identity = " + types_.literal(m.identity()) + ";");
  // combine(a, b): a covers lower indices than b.
  w.open("const auto combine = [](const " + t + "& a, const " + t + "& b) -> " + t);
  {
    ExprEmitter e(w, types_, [](const Expr& leaf) { return leaf.node().index == 0 ? "a" : "b"; });
    w.line("return " + e.emit(m.combine()) + ";");
  }
  w.close("};");
  if (!elements) return;

  const std::string params = element_params();
  auto leaf_of = [this](const Expr& leaf) { return leaf_name(leaf, true); };
  // element(inputs..., i): the prologue map's value of element i.
  w.open("const auto element = [&](" + params + ") -> " + t);
  {
    ExprEmitter e(w, types_, leaf_of);
    std::string v = e.emit(g_.value);
    // filter -> scan: a dropped element contributes the identity (and no survivor to the count).
    if (g_.mask.valid()) v = "(" + e.emit(g_.mask) + " ? " + v + " : identity)";
    w.line("return " + v + ";");
  }
  w.close("};");
  // epilogue_j(scanned, inputs..., i): output j from the scan's element i.
  for (std::size_t j = 0; epilogues && j < g_.outputs.size(); ++j) {
    const Expr& o = g_.outputs[j];
    if (stores_scan_itself(g_, o)) continue;  // the scan itself: stored as it is
    w.open("const auto epilogue" + std::to_string(j) + " = [&](const " + t + " scanned, " + params + ") -> " +
           types_.name(o.type()));
    ExprEmitter e(w, types_, leaf_of);
    w.line("return " + e.emit(o) + ";");
    w.close("};");
  }
  // keep(inputs..., i): a scan of a filter's result stores the survivors only.
  if (epilogues && compacts_survivors(g_)) emit_map_function(w, "keep", g_.mask);
}

void ScanKernelWriter::emit_map_function(SourceWriter& w, const std::string& name, const Expr& e) {
  w.open("const auto " + name + " = [&](" + element_params() + ") -> " + types_.name(e.type()));
  ExprEmitter emitter(w, types_, [this](const Expr& x) { return leaf_name(x, false); });
  w.line("return " + emitter.emit(e) + ";");
  w.close("};");
}

bool ScanKernelWriter::stages_can_share() const { return scan_stages_can_share(g_); }

std::string ScanKernelWriter::element_call(const std::string& slot, const std::string& index) const {
  std::string s;
  for (const auto& n : input_names_) s += "stage_" + n + "[" + slot + "], ";
  return s + index;
}

std::string ScanKernelWriter::assemble(const std::string& strategy_comment, const std::string& body,
                                       const std::vector<std::string>& more_includes) {
  SourceWriter w;
  w.line("// fuseflow kernel " + name_);
  w.line("//");
  w.comment(g_.program_text());
  w.line("//");
  w.comment(strategy_comment);
  w.line("#include <fuseflow/scan.cuh>");
  for (const auto& h : more_includes) w.line("#include <" + h + ">");
  w.line();
  std::string defs = types_.definitions();
  return w.str() + (defs.empty() ? "" : defs + "\n") + body;
}

}  // namespace fuseflow::codegen
