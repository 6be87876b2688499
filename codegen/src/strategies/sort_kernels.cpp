// The pieces the sort kernels share (sort_kernel_parts.hpp) and the registry blocks'
// helpers (sort_kernels.hpp). The kernels themselves: sort_pass_kernels.cpp (one
// counting-sort pass: tile counts, their scan, the scatter) and onesweep_kernels.cpp.
#include "sort_kernel_parts.hpp"

namespace fuseflow::codegen {

namespace {

// The scatter's arguments after what it reads: the program outputs, or the next pass's
// scratch keys_out, values_out.
void add_write_args(const OpNode& op, const std::vector<SortOutput>& outputs, const SortPass& pass,
                    std::vector<Arg>& args) {
  if (pass.to_scratch) {
    args.push_back({Arg::Kind::Scratch, 0, "keys_out", op.keys.type()});
    if (op.values.valid()) args.push_back({Arg::Kind::Scratch, 0, "values_out", op.values.type()});
  } else {
    for (const auto& o : outputs)
      args.push_back({Arg::Kind::Output, o.program_output, "out" + std::to_string(o.program_output),
                      op.output_types[static_cast<std::size_t>(o.result)]});
  }
}

}  // namespace

namespace sort_parts {  // sort_kernel_parts.hpp says what each does

void emit_element_function(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                           const std::vector<std::string>& names, const std::string& fn, const Expr& e,
                           const std::string& array) {
  w.open("const auto " + fn + " = [&](const long long i) -> " + types.name(e.type()));
  if (!array.empty()) {
    w.line("return " + array + "[i];");
    return w.close("};");
  }
  std::vector<std::string> loads;
  for (const auto& n : names) loads.push_back("in_" + n + "[i]");
  ExprEmitter emitter(w, types,
                      [&](const Expr& leaf) { return elementwise_leaf(g, loads, leaf, "a counting sort's keys or values"); });
  w.line("return " + emitter.emit(e) + ";");
  w.close("};");
}

std::string source(const std::string& name, const KernelContext& g, const std::string& summary, const std::string& note,
                   const CudaTypes& types, const SourceWriter& body, const SortPass& pass) {
  return kernel_source(name, g.program_text(), "strategy: " + summary + (note.empty() ? "" : "\n" + note),
                       {pass.onesweep ? "onesweep.cuh" : pass.by_functor ? "radix_sort.cuh" : "counting_sort.cuh"}, types, body.str());
}

KernelSpec tile_kernel(const std::string& name, int block, int tile, int items, std::vector<Arg> args,
                       const SortPass& pass) {
  int scratch = 0;
  for (Arg& a : args)
    if (a.kind == Arg::Kind::Scratch) a.index = scratch++;
  KernelSpec k;
  k.name = name;
  k.block = block;
  k.max_grid = 0;
  k.any_grid = false;
  k.items_per_block_step = tile;
  k.tuning = {{"block", block}, {"items", items}};
  k.args = std::move(args);
  k.why = pass.why;
  return k;
}

std::vector<Arg> read_args(const OpNode& op, const KernelContext& g, const SortPass& pass, bool values,
                           std::vector<std::string>& names) {
  if (!pass.from_scratch) return elementwise_args(g, names);
  std::vector<Arg> args = {{Arg::Kind::Length, 0, "n", ScalarType::I64},
                           {Arg::Kind::Scratch, 0, "keys_in", op.keys.type()}};
  if (values) args.push_back({Arg::Kind::Scratch, 0, "values_in", op.values.type()});
  return args;
}

std::vector<Arg> scatter_args(const OpNode& op, const KernelContext& g, const std::vector<SortOutput>& outputs,
                              const SortPass& pass, std::vector<std::string>& names) {
  std::vector<Arg> args = read_args(op, g, pass, op.values.valid(), names);
  add_write_args(op, outputs, pass, args);
  return args;
}

std::vector<std::string> tile_constants(int block, int items, const SortPass& pass) {
  std::vector<std::string> constants = {"constexpr int kBlock = " + std::to_string(block) + ";",
                                        "constexpr int kItems = " + std::to_string(items) +
                                            ";  // elements per thread per tile"};
  constants.insert(constants.end(), pass.bin_constants.begin(), pass.bin_constants.end());
  return constants;
}

std::string emit_scatter_functors(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                                  const std::vector<std::string>& names, const OpNode& op,
                                  const std::vector<SortOutput>& outputs, const SortPass& pass) {
  const bool with_values = op.values.valid();
  emit_element_function(w, types, g, names, "key_at", op.keys, pass.from_scratch ? "keys_in" : "");
  if (with_values) emit_element_function(w, types, g, names, "value_at", op.values, pass.from_scratch ? "values_in" : "");
  const auto store = [&](int r, const std::string& fn, const std::string& type) {
    std::vector<std::string> targets;
    if (pass.to_scratch) targets.push_back(r == 0 ? "keys_out" : "values_out");
    for (const auto& o : outputs)
      if (!pass.to_scratch && o.result == r) targets.push_back("out" + std::to_string(o.program_output));
    if (targets.empty()) return std::string("ff::sort::Discard{}");
    w.open("const auto " + fn + " = [&](const unsigned long long p, const " + type + "& v)");
    for (const auto& t : targets) w.line(t + "[p] = v;");
    w.close("};");
    return fn;
  };
  const std::string store_key = store(0, "store_key", types.name(op.keys.type()));
  const std::string store_value =
      with_values ? store(1, "store_value", types.name(op.values.type())) : "ff::sort::Discard{}";
  return std::string("key_at, ") + (with_values ? "value_at" : "ff::sort::NoValues{}") + ", " + store_key + ", " +
         store_value;
}

}  // namespace sort_parts

KernelContext keys_context(const KernelContext& g) {
  KernelContext keys = g;
  keys.leaves = g.key_leaves;
  return keys;
}

std::vector<SortOutput> sort_outputs(const KernelContext& g) {
  std::vector<SortOutput> outputs;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) outputs.push_back({g.output_ids[j], g.outputs[j].node().index});
  return outputs;
}

std::vector<std::pair<std::string, std::int64_t>> sort_tuning_values(const SortPolicy& s) {
  return {{"thread_bytes", static_cast<std::int64_t>(s.thread_bytes)}, {"max_items", s.max_items},
          {"copies_budget", static_cast<std::int64_t>(s.copies_budget)}, {"max_copies", s.max_copies},
          {"scan_block", s.scan_block}, {"scan_items", s.scan_items}};
}

}  // namespace fuseflow::codegen
