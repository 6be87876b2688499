// Pieces every reduce strategy shares: the accumulator (one field per fused reduction),
// the combine, element and store lambdas, and the kernel signature. The algorithms are
// templates in <fuseflow/reduce.cuh>, which the kernels call with these.
#include <algorithm>
#include <cctype>
#include <set>

#include "../kernel_context.hpp"

namespace fuseflow::codegen {

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

int vector_load_width(const KernelContext& g) {
  std::size_t widest = 0;
  for (const auto& in : g.leaves.inputs) {
    if (!in.type().is_scalar()) return 1;
    widest = std::max(widest, in.type().size());
  }
  return widest == 0 ? 1 : static_cast<int>(16 / widest);
}

void emit_constants(SourceWriter& w, const std::vector<std::string>& lines) {
  w.line("namespace {");
  for (const auto& l : lines) w.line(l);
  w.line("}  // namespace");
  w.line();
}

std::string reduce_kernel_name(const KernelContext& g, const char* strategy) {
  std::string s = std::string("ff_reduce_") + strategy;
  for (std::size_t i = 0; i < g.reduces.size() && i < 3; ++i) {
    const Monoid& m = g.reduces[i].op->monoid;
    s += "_" + short_type_name(m.type()) + "_" + sanitize(m.name());
  }
  if (g.reduces.size() > 3) s += "_and_" + std::to_string(g.reduces.size() - 3) + "_more";
  return s;
}

ReduceKernelWriter::ReduceKernelWriter(const KernelContext& g, std::string kernel_name, Partials partials)
    : g_(g), name_(std::move(kernel_name)), partials_(partials) {
  if (g.reduces.size() == 1) {
    acc_type_ = g.reduces[0].op->monoid.type();
  } else {
    std::vector<Type> fields;
    for (const auto& r : g.reduces) fields.push_back(r.op->monoid.type());
    acc_type_ = Type::tuple(fields);
  }
  std::set<std::string> used;
  for (const auto& in : g.leaves.inputs) {
    std::string n = sanitize(in.node().name);
    while (!used.insert(n).second) n += "_";
    input_names_.push_back(n);
  }
}

std::vector<Arg> ReduceKernelWriter::args() const {
  std::vector<Arg> a;
  const Leaves& l = g_.leaves;
  for (std::size_t j = 0; j < l.inputs.size(); ++j)
    a.push_back({Arg::Kind::Input, l.input_ids[j], "in_" + input_names_[j], l.inputs[j].type()});
  a.push_back({Arg::Kind::Length, 0, "n", ScalarType::I64});
  for (std::size_t j = 0; j < l.params.size(); ++j)
    a.push_back({Arg::Kind::Param, l.param_ids[j], "p_" + sanitize(l.params[j].node().name), l.params[j].type()});
  for (int s : l.scalars_read) a.push_back({Arg::Kind::Scalar, s, "s" + std::to_string(s), g_.slot_type(s)});
  append_table_args(a, l);
  for (const auto& r : g_.reduces)
    a.push_back({Arg::Kind::ScalarOutput, r.output_slot, "out" + std::to_string(r.output_slot), r.op->monoid.type()});
  append_epilogue_args(g_, a);
  if (partials_ != Partials::None) a.push_back({Arg::Kind::Scratch, 0, "partials", acc_type_});
  if (partials_ == Partials::LastBlockCombines) a.push_back({Arg::Kind::Ticket, 0, "ticket", ScalarType::U32});
  return a;
}

void ReduceKernelWriter::open_kernel(SourceWriter& w, int block) {
  w.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + name_ + "(");
  emit_kernel_parameters(w, types_, args());
}

void emit_fused_monoid(SourceWriter& w, CudaTypes& types, const std::vector<FusedReduce>& reduces,
                       const std::string& acc, const std::string& identity, const std::string& combine) {
  const bool fused = reduces.size() > 1;
  std::vector<Value> ids;
  for (const auto& r : reduces) ids.push_back(r.op->monoid.identity());
  w.line("const " + acc + " " + identity + " = " + types.literal(fused ? Value::tuple(ids) : ids[0]) + ";");

  // combine(a, b): a covers lower indices than b.
  w.open("const auto " + combine + " = [](const " + acc + "& a, const " + acc + "& b) -> " + acc);
  std::vector<std::string> parts;
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    std::string fa = fused ? "a.f" + std::to_string(j) : "a";
    std::string fb = fused ? "b.f" + std::to_string(j) : "b";
    ExprEmitter e(w, types, [&](const Expr& leaf) { return leaf.node().index == 0 ? fa : fb; },
                  fused ? "m" + std::to_string(j) + "_" : "v");
    parts.push_back(e.emit(reduces[j].op->monoid.combine()));
  }
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
  w.line("return " + (fused ? acc + "{" + joined + "}" : parts[0]) + ";");
  w.close("};");
}

void ReduceKernelWriter::emit_combine(SourceWriter& w) { emit_fused_monoid(w, types_, g_.reduces, acc(), "identity", "combine"); }

void ReduceKernelWriter::emit_element(SourceWriter& w) {
  const bool fused = g_.reduces.size() > 1;
  std::string acc_name = acc();
  // Results of earlier kernels, read once per thread.
  for (int s : g_.leaves.scalars_read)
    w.line("const " + types_.name(g_.slot_type(s)) + " r" + std::to_string(s) + " = *s" +
           std::to_string(s) + ";");
  // element(inputs..., i): the fused map's contribution of element i.
  std::string sig = "const auto element = [&](";
  for (std::size_t j = 0; j < g_.leaves.inputs.size(); ++j)
    sig += "const " + types_.name(g_.leaves.inputs[j].type()) + " " + input_names_[j] + ", ";
  sig += "const long long i) -> " + acc_name;
  w.open(sig);
  ExprEmitter e(w, types_,
                [&](const Expr& leaf) { return elementwise_leaf(g_, input_names_, leaf, "a reduction's map"); });
  std::vector<std::string> parts;
  for (std::size_t j = 0; j < g_.reduces.size(); ++j) {
    const auto& r = g_.reduces[j];
    std::string v = e.emit(r.value);
    if (r.mask.valid()) {
      // filter -> reduce: a dropped element contributes the identity.
      std::string m = e.emit(r.mask);
      std::string id = fused ? "identity.f" + std::to_string(j) : "identity";
      v = "(" + m + " ? " + v + " : " + id + ")";
    }
    parts.push_back(v);
  }
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
  w.line("return " + (fused ? acc_name + "{" + joined + "}" : parts[0]) + ";");
  w.close("};");
}

std::string ReduceKernelWriter::element_call(const std::vector<std::string>& input_values,
                                             const std::string& index_expr) const {
  std::string s = "element(";
  for (const auto& v : input_values) s += v + ", ";
  return s + index_expr + ")";
}

std::string ReduceKernelWriter::element_at(const std::string& index) const {
  std::vector<std::string> loads;
  for (const auto& name : input_names_) loads.push_back("in_" + name + "[" + index + "]");
  return element_call(loads, index);
}

void ReduceKernelWriter::emit_store(SourceWriter& w) {
  w.open("const auto store = [&](const " + acc() + "& total)");
  emit_output_stores(w, "total");
  emit_epilogue_stores(w, types_, g_, "total");
  w.close("};");
}

std::string ReduceKernelWriter::input_list() const {
  std::string s;
  for (const auto& name : input_names_) s += (s.empty() ? "in_" : ", in_") + name;
  return s;
}

void ReduceKernelWriter::emit_output_stores(SourceWriter& w, const std::string& total) {
  const bool fused = g_.reduces.size() > 1;
  for (std::size_t j = 0; j < g_.reduces.size(); ++j)
    w.line("*out" + std::to_string(g_.reduces[j].output_slot) + " = " + total + (fused ? ".f" + std::to_string(j) : "") + ";");
}

std::string ReduceKernelWriter::body(int block, const std::vector<std::string>& constants, const std::string& call) {
  SourceWriter w;
  emit_constants(w, constants);
  open_kernel(w, block);
  emit_functions(w);
  emit_store(w);
  w.line();
  w.line(call);
  w.close();
  return w.str();
}

KernelSpec ReduceKernelWriter::spec(Strategy strategy, int block, const std::string& summary, const std::string& body) {
  KernelSpec out;
  out.name = name_;
  out.strategy = strategy;
  out.block = block;
  out.args = args();
  out.summary = summary;
  out.source = assemble("strategy: " + summary, body, "reduce.cuh");
  return out;
}

std::string ReduceKernelWriter::assemble(const std::string& strategy_comment, const std::string& body,
                                         const std::string& include) {
  return kernel_source(name_, g_.program_text(), strategy_comment, {include}, types_, body);
}

}  // namespace fuseflow::codegen
