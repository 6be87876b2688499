#include "bindings.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {
namespace {

std::string describe(const Expr& leaf) {
  return (leaf.kind() == ExprKind::Input ? "input '" : "parameter '") + leaf.node().name + "'";
}

std::string describe_output(const Program& program, std::size_t i) {
  return "output " + std::to_string(i) + " (" + to_string(program.outputs()[i]) + ")";
}

// {result, array}: the program's array result is written into the caller's memory.
void bind_output(const Program& program, const Expr& result, const Binding& b, std::vector<DeviceBytes>& outputs) {
  bool found = false;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    if (o.get() != result.get()) continue;
    found = true;
    if (program.output_is_scalar(i))
      throw GraphError("run: " + describe_output(program, i) +
                       " is a scalar, which comes back to the host; only array results can be bound to device memory");
    if (!b.is_array())
      throw GraphError("run: " + describe_output(program, i) + " is an array but was bound to the scalar " +
                       b.scalar().to_string());
    if (b.type() != o.type())
      throw GraphError("run: " + describe_output(program, i) + " holds " + o.type().name() +
                       " but was bound to an array of " + b.type().name());
    outputs[i] = b.bytes();
  }
  if (!found)
    throw GraphError("run: only inputs, parameters and results of this program can be bound, not " + to_string(result));
}

bool overlap(const DeviceBytes& a, const DeviceBytes& b) {
  return a.size_bytes() && b.size_bytes() && a.ptr < b.ptr + b.size_bytes() && b.ptr < a.ptr + a.size_bytes();
}

bool reads_input(const codegen::KernelSpec& k, std::size_t input, bool as_table = false) {
  return std::any_of(k.args.begin(), k.args.end(), [&](const codegen::Arg& a) {
    const bool kind = as_table ? a.kind == codegen::Arg::Kind::Table
                               : a.kind == codegen::Arg::Kind::Input || a.kind == codegen::Arg::Kind::Table;
    return kind && static_cast<std::size_t>(a.index) == input;
  });
}

// Also as an intermediate that lives in the output (a sort's result a later stage reads).
bool writes_output(const codegen::Plan& plan, const codegen::KernelSpec& k, std::size_t output) {
  return std::any_of(k.args.begin(), k.args.end(), [&](const codegen::Arg& a) {
    if (a.kind == codegen::Arg::Kind::Intermediate)
      return plan.intermediates.at(static_cast<std::size_t>(a.index)).output == static_cast<int>(output);
    return a.kind == codegen::Arg::Kind::Output && static_cast<std::size_t>(a.index) == output;
  });
}

}  // namespace

namespace detail {

BoundLeaves bind_leaves(const Program& program, const Bindings& bindings) {
  BoundLeaves out;
  bind_leaves(program, bindings, out);
  return out;
}

void bind_leaves(const Program& program, const Bindings& bindings, BoundLeaves& out) {
  // Linear scans, no maps: a run binds a handful of leaves, and this runs every time.
  out.input_lengths.clear();
  out.input_ptrs.clear();
  out.params.resize(program.params().size());  // assigned in place below: no Value made or freed per run
  out.outputs.assign(program.outputs().size(), DeviceBytes{});
  std::size_t leaves = 0;  // bindings of inputs and parameters
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const auto& [leaf, binding] = bindings[i];
    if (!leaf.valid()) throw GraphError("run: a binding names an empty ff::Expr");
    const bool is_leaf = leaf.kind() == ExprKind::Input || leaf.kind() == ExprKind::Param;
    for (std::size_t j = 0; j < i; ++j)
      if (bindings[j].first.get() == leaf.get())
        throw GraphError(is_leaf ? "run: " + describe(leaf) + " is bound twice"
                                 : "run: the result " + to_string(leaf) + " is bound twice");
    if (is_leaf) {
      ++leaves;
      continue;
    }
    bind_output(program, leaf, binding, out.outputs);
  }
  auto find = [&](const Expr& e) -> const Binding* {
    for (const auto& [leaf, binding] : bindings)
      if (leaf.get() == e.get()) return &binding;
    return nullptr;
  };
  out.input_lengths.reserve(program.inputs().size());
  out.input_ptrs.reserve(program.inputs().size());
  for (const auto& in : program.inputs()) {
    const Binding* found = find(in);
    if (!found) throw GraphError("run: " + describe(in) + " is not bound");
    const Binding& b = *found;
    if (!b.is_array()) throw GraphError("run: " + describe(in) + " is an array but was bound to the scalar " + b.scalar().to_string());
    if (b.type() != in.type())
      throw GraphError("run: " + describe(in) + " holds " + in.type().name() + " but was bound to an array of " + b.type().name());
    auto len = static_cast<std::int64_t>(b.bytes().count);
    if (in.node().length >= 0 && in.node().length != len)
      throw GraphError("run: " + describe(in) + " was declared with " + std::to_string(in.node().length) +
                       " elements but was bound to " + std::to_string(len));
    out.input_lengths.push_back(len);
    out.input_ptrs.push_back(b.bytes().ptr);
  }
  for (std::size_t i = 0; i < program.params().size(); ++i) {
    const Expr& pa = program.params()[i];
    const Binding* found = find(pa);
    if (!found) throw GraphError("run: " + describe(pa) + " is not bound");
    const Binding& b = *found;
    if (b.is_array()) throw GraphError("run: " + describe(pa) + " is a scalar but was bound to an array");
    if (!b.type().is_scalar()) throw GraphError("run: " + describe(pa) + " needs a scalar, got " + b.type().name());
    const Value& v = b.scalar();
    if (v.type() == pa.type()) out.params[i] = v;  // the common case: no conversion
    else out.params[i] = v.cast(pa.type().scalar());
  }
  // Each leaf bound once, and every input and parameter found bound: a leaf binding more
  // than those is one the program does not read, most likely a leaf of another program.
  if (leaves != program.inputs().size() + program.params().size()) {
    auto used = [&](const Expr& leaf) {
      for (const auto& e : program.inputs())
        if (e.get() == leaf.get()) return true;
      for (const auto& e : program.params())
        if (e.get() == leaf.get()) return true;
      return false;
    };
    for (const auto& [leaf, binding] : bindings)
      if ((leaf.kind() == ExprKind::Input || leaf.kind() == ExprKind::Param) && !used(leaf))
        throw GraphError("run: " + describe(leaf) + " is bound but not used by this program");
  }
}

std::vector<std::int64_t> domain_lengths(const Program& program, const codegen::Plan& plan, const BoundLeaves& bound) {
  std::vector<std::int64_t> lengths;
  domain_lengths(program, plan, bound, lengths);
  return lengths;
}

namespace {

// The length a fill of a parameter's length has: the parameter's value, a whole number of
// at least 0 and at most 2^62 (no device holds more).
std::int64_t param_length(const Program& program, const codegen::Plan& plan, const BoundLeaves& bound) {
  const auto i = static_cast<std::size_t>(plan.fill_length_param);
  const Expr& p = program.params().at(i);
  const Value& v = bound.params.at(i);
  const std::int64_t n = v.as_int();  // a u64 above 2^63 - 1 reads as negative
  const bool is_unsigned = v.type().is_unsigned_integer();
  const std::string held = "run: " + describe(p) + " is the length of a fill or iota and holds " +
                           (is_unsigned ? std::to_string(static_cast<std::uint64_t>(n)) : std::to_string(n));
  if (n < 0 && !is_unsigned) throw GraphError(held + "; a length must be at least 0");
  if (n < 0 || n > (std::int64_t{1} << 62)) throw GraphError(held + "; a length must be at most 2^62");
  return n;
}

}  // namespace

void domain_lengths(const Program& program, const codegen::Plan& plan, const BoundLeaves& bound,
                    std::vector<std::int64_t>& lengths) {
  const std::vector<std::int64_t>& input_lengths = bound.input_lengths;
  // Domain 0's length is n, the elements' count; other domains are segmented ops' offsets.
  auto domain = [&](std::size_t i) {
    return static_cast<std::size_t>(plan.input_domain.empty() ? 0 : plan.input_domain[i]);
  };
  lengths.assign(static_cast<std::size_t>(plan.domains), -1);
  for (std::size_t i = 0; i < input_lengths.size(); ++i) {
    const std::size_t d = domain(i);
    if (lengths[d] >= 0 && input_lengths[i] != lengths[d]) {
      std::size_t first = 0;  // the input that set the domain's length, named in the error
      while (domain(first) != d) ++first;
      throw GraphError("run: arrays of different lengths: " + describe(program.inputs()[first]) + " has " +
                       std::to_string(lengths[d]) + " elements, " + describe(program.inputs()[i]) + " has " +
                       std::to_string(input_lengths[i]));
    }
    lengths[d] = input_lengths[i];
  }
  if (plan.fill_length >= 0) {  // ff::fill / ff::iota fix the elements' length
    if (lengths[0] >= 0 && lengths[0] != plan.fill_length) {
      std::size_t first = 0;
      while (domain(first) != 0) ++first;
      throw GraphError("run: arrays of different lengths: a fill or iota of the program has " +
                       std::to_string(plan.fill_length) + " elements, " + describe(program.inputs()[first]) + " has " +
                       std::to_string(lengths[0]));
    }
    lengths[0] = plan.fill_length;
  }
  if (plan.fill_length_param >= 0) {  // a fill of a parameter's length: the bound value
    const std::int64_t n = param_length(program, plan, bound);
    if (lengths[0] >= 0 && lengths[0] != n) {
      const bool fill = plan.fill_length >= 0;
      std::size_t first = 0;
      while (!fill && domain(first) != 0) ++first;
      throw GraphError("run: arrays of different lengths: " + describe(program.params()[static_cast<std::size_t>(plan.fill_length_param)]) +
                       " (the length of a fill or iota) holds " + std::to_string(n) + ", " +
                       (fill ? std::string("a fill or iota of the program has") : describe(program.inputs()[first]) + " has") +
                       " " + std::to_string(lengths[0]) + " elements");
    }
    lengths[0] = n;
  }
  for (auto& l : lengths) l = std::max<std::int64_t>(l, 0);
}

std::size_t output_length(const codegen::Plan& plan, std::size_t i, const std::vector<std::int64_t>& lengths) {
  return static_cast<std::size_t>(plan.output_shapes.empty() ? lengths.at(0) : plan.output_shapes[i].length(lengths));
}

void check_output_bindings(const Program& program, const codegen::Plan& plan, const BoundLeaves& leaves,
                           const std::vector<std::int64_t>& lengths) {
  const std::size_t outputs = program.outputs().size();
  if (std::none_of(leaves.outputs.begin(), leaves.outputs.end(),
                   [](const DeviceBytes& o) { return o.element_size != 0; }))
    return;  // nothing bound to the caller's memory (most runs)
  for (std::size_t i = 0; i < outputs; ++i) {
    if (!leaves.output_bound(i)) continue;
    const std::size_t want = output_length(plan, i, lengths);
    if (leaves.outputs[i].count != want)
      throw GraphError("run: " + describe_output(program, i) + " has " + std::to_string(want) +
                       " elements but was bound to an array of " + std::to_string(leaves.outputs[i].count));
  }
  for (std::size_t i = 0; i < outputs; ++i)
    for (std::size_t j = i + 1; j < outputs; ++j)
      if (leaves.output_bound(i) && leaves.output_bound(j) && overlap(leaves.outputs[i], leaves.outputs[j]))
        throw GraphError("run: outputs " + std::to_string(i) + " and " + std::to_string(j) +
                         " are bound to overlapping memory; each output needs memory of its own");
  std::optional<codegen::Schedule> schedule;
  for (std::size_t i = 0; i < outputs; ++i) {
    if (!leaves.output_bound(i)) continue;
    const DeviceBytes& out = leaves.outputs[i];
    for (std::size_t k = 0; k < program.inputs().size(); ++k) {
      const DeviceBytes in{leaves.input_ptrs[k], static_cast<std::size_t>(leaves.input_lengths[k]),
                           program.inputs()[k].type().size()};
      if (!overlap(out, in)) continue;
      const std::string what = "run: " + describe_output(program, i) + " is bound to memory";
      const std::string input = describe(program.inputs()[k]);
      if (out.ptr != in.ptr || out.count != in.count || out.element_size != in.element_size)
        throw GraphError(what + " that partly overlaps " + input +
                         "; an output may share memory with an input only exactly (the same address, element size "
                         "and length), to be written in place");
      // In place: the launch that writes the output reads the input only tile by tile, and
      // nothing after it reads the input.
      if (!schedule) schedule = plan.schedule(lengths);
      const auto& launches = schedule->launches;
      auto writer = std::find_if(launches.begin(), launches.end(), [&](const codegen::Launch& l) {
        return writes_output(plan, plan.kernels[static_cast<std::size_t>(l.kernel)], i);
      });
      if (writer == launches.end()) continue;  // nothing to write (no elements)
      const codegen::KernelSpec& w = plan.kernels[static_cast<std::size_t>(writer->kernel)];
      // A gather or shift reads other tiles' elements: not in place.
      if (reads_input(w, k) && (!w.in_place || reads_input(w, k, true)))
        throw GraphError(what + " of " + input + ", which its kernel " + w.name +
                         " reads while it writes the output; only a scan writes over its input (in place): bind "
                         "a separate array");
      for (auto l = writer + 1; l != launches.end(); ++l) {
        const codegen::KernelSpec& later = plan.kernels[static_cast<std::size_t>(l->kernel)];
        if (l->kernel != writer->kernel && reads_input(later, k))
          throw GraphError(what + " of " + input + ", which kernel " + later.name + " reads after " + w.name +
                           " has written the output there: bind a separate array");
      }
    }
  }
}

namespace {

// The program's bound inputs copied to the host and its parameters, for the CPU reference
// to say what the device flagged.
HostBindings host_bindings(const Program& program, const BoundLeaves& leaves, DeviceContext& context) {
  HostBindings host;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const Expr& in = program.inputs()[i];
    HostArray data(in.type(), static_cast<std::size_t>(leaves.input_lengths.at(i)));
    context.copy_to_host(data.data(), leaves.input_ptrs.at(i), data.size() * in.type().size());
    host.bind(in, std::move(data));
  }
  for (std::size_t i = 0; i < program.params().size(); ++i) host.bind(program.params()[i], leaves.params.at(i));
  return host;
}

// The CPU reference's error for the whole program on the bound inputs (the offsets of a
// segmented op over a filter's result index the survivors, a count only the reference
// knows here), or `otherwise` where it finds none.
[[noreturn]] void throw_reference_error(const Program& program, const BoundLeaves& leaves, DeviceContext& context,
                                        const std::string& otherwise) {
  const HostBindings host = host_bindings(program, leaves, context);
  (void)evaluate(program, host);
  throw GraphError(otherwise);
}

bool reads_filter(const Expr& values) {
  for (const Expr& leaf : array_leaves(values))
    if (leaf.kind() == ExprKind::Result && leaf.node().op->kind == OpKind::Filter) return true;
  return false;
}

}  // namespace

void throw_invalid_offsets(const Program& program, const OpNode& op, const BoundLeaves& leaves, std::int64_t n,
                           DeviceContext& context) {
  if (reads_filter(op.values))
    throw_reference_error(program, leaves, context,
                          std::string(op_name(op.kind)) + ": the device flagged the offsets (which index the survivors of a "
                          "filter) as invalid but the CPU reference accepts them");
  const Program offsets(op.offsets);
  HostBindings host;
  for (const Expr& in : offsets.inputs()) {
    const auto at = std::find_if(program.inputs().begin(), program.inputs().end(),
                                 [&](const Expr& e) { return e.get() == in.get(); });
    const auto i = static_cast<std::size_t>(at - program.inputs().begin());
    HostArray data(in.type(), static_cast<std::size_t>(leaves.input_lengths.at(i)));
    context.copy_to_host(data.data(), leaves.input_ptrs.at(i), data.size() * in.type().size());
    host.bind(in, std::move(data));
  }
  const HostArray values = evaluate(offsets, host).at(0).array;
  const std::string name = op_name(op.kind);
  const std::vector<std::size_t> bounds =
      segment_bounds(name, values.type().scalar(), values.data(), values.size(), static_cast<std::size_t>(n));
  if (bounds.front() != 0 || bounds.back() != static_cast<std::size_t>(n))  // flagged by a broadcast's map
    throw GraphError("broadcast: the offsets " + to_string(op.offsets) + " of " + name + " cover elements [" +
                     std::to_string(bounds.front()) + ", " + std::to_string(bounds.back()) + ") of " +
                     std::to_string(n) + "; a broadcast needs every element in a segment: offsets[0] = 0 and the "
                     "last offset = n (" + std::to_string(n) + "), here offsets[0] = " + std::to_string(bounds.front()) +
                     " and the last offset = " + std::to_string(bounds.back()));
  throw GraphError(name + ": the device flagged the offsets as invalid but the CPU reference accepts them");
}

void throw_invalid_gather(const Program& program, const BoundLeaves& leaves, DeviceContext& context) {
  const HostBindings host = host_bindings(program, leaves, context);
  try {
    (void)evaluate(program, host);
  } catch (const GraphError& e) {
    if (std::string(e.what()).find("gather") != std::string::npos) throw;
    throw GraphError(std::string("gather: an index is outside its table (the device flagged it); the CPU reference "
                                 "could not find where: ") + e.what());
  }
  throw GraphError("gather: the device flagged an index outside its table but the CPU reference finds none "
                   "(a gather under a filter's predicate is evaluated for every element: use gather_unchecked "
                   "with an index the predicate keeps inside the table)");
}

}  // namespace detail

void check_bindings(const Program& program, const Bindings& bindings) {
  const detail::BoundLeaves leaves = detail::bind_leaves(program, bindings);
  const codegen::Plan plan = codegen::plan(program, codegen::Target::preset("sm_90"));
  detail::check_output_bindings(program, plan, leaves, detail::domain_lengths(program, plan, leaves));
}

}  // namespace fuseflow
