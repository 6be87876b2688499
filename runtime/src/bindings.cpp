#include "bindings.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {
namespace {

std::string describe(const Expr& leaf) {
  return (leaf.kind() == ExprKind::Input ? "input '" : "parameter '") + leaf.node().name + "'";
}

}  // namespace

namespace detail {

BoundLeaves bind_leaves(const Program& program, const Bindings& bindings) {
  std::map<const ExprNode*, const Binding*> bound;
  for (const auto& [leaf, binding] : bindings) {
    if (!leaf.valid()) throw GraphError("run: a binding names an empty ff::Expr");
    if (leaf.kind() != ExprKind::Input && leaf.kind() != ExprKind::Param)
      throw GraphError("run: only inputs and parameters can be bound, not " + to_string(leaf));
    if (!bound.emplace(leaf.get(), &binding).second) throw GraphError("run: " + describe(leaf) + " is bound twice");
  }
  BoundLeaves out;
  for (const auto& in : program.inputs()) {
    auto it = bound.find(in.get());
    if (it == bound.end()) throw GraphError("run: " + describe(in) + " is not bound");
    const Binding& b = *it->second;
    if (!b.is_array()) throw GraphError("run: " + describe(in) + " is an array but was bound to the scalar " + b.scalar().to_string());
    if (b.type() != in.type())
      throw GraphError("run: " + describe(in) + " holds " + in.type().name() + " but was bound to an array of " + b.type().name());
    auto len = static_cast<std::int64_t>(b.bytes().count);
    if (in.node().length >= 0 && in.node().length != len)
      throw GraphError("run: " + describe(in) + " was declared with " + std::to_string(in.node().length) +
                       " elements but was bound to " + std::to_string(len));
    out.input_lengths.push_back(len);
    out.input_ptrs.push_back(b.bytes().ptr);
    bound.erase(it);
  }
  for (const auto& pa : program.params()) {
    auto it = bound.find(pa.get());
    if (it == bound.end()) throw GraphError("run: " + describe(pa) + " is not bound");
    const Binding& b = *it->second;
    if (b.is_array()) throw GraphError("run: " + describe(pa) + " is a scalar but was bound to an array");
    if (!b.type().is_scalar()) throw GraphError("run: " + describe(pa) + " needs a scalar, got " + b.type().name());
    out.params.push_back(b.scalar().cast(pa.type().scalar()));
    bound.erase(it);
  }
  // What is left was bound but is not read: most likely a leaf of another program.
  for (const auto& [leaf, binding] : bindings)
    if (bound.count(leaf.get())) throw GraphError("run: " + describe(leaf) + " is bound but not used by this program");
  return out;
}

std::vector<std::int64_t> domain_lengths(const Program& program, const codegen::Plan& plan,
                                         const std::vector<std::int64_t>& input_lengths) {
  // Domain 0's length is n, the elements' count; other domains are segmented ops' offsets.
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(plan.domains), -1);
  std::vector<std::string> first_input(lengths.size());
  for (std::size_t i = 0; i < input_lengths.size(); ++i) {
    auto d = static_cast<std::size_t>(plan.input_domain.empty() ? 0 : plan.input_domain[i]);
    const std::string who = describe(program.inputs()[i]);
    if (lengths[d] >= 0 && input_lengths[i] != lengths[d])
      throw GraphError("run: arrays of different lengths: " + first_input[d] + " has " + std::to_string(lengths[d]) +
                       " elements, " + who + " has " + std::to_string(input_lengths[i]));
    if (lengths[d] < 0) first_input[d] = who;
    lengths[d] = input_lengths[i];
  }
  for (auto& l : lengths) l = std::max<std::int64_t>(l, 0);
  return lengths;
}

void throw_invalid_offsets(const Program& program, const OpNode& op, const BoundLeaves& leaves, std::int64_t n,
                           DeviceContext& context) {
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
  segment_bounds(name, values.type().scalar(), values.data(), values.size(), static_cast<std::size_t>(n));
  throw GraphError(name + ": the device flagged the offsets as invalid but the CPU reference accepts them");
}

}  // namespace detail

void check_bindings(const Program& program, const Bindings& bindings) {
  const detail::BoundLeaves leaves = detail::bind_leaves(program, bindings);
  detail::domain_lengths(program, codegen::plan(program, codegen::Target::preset("sm_90")), leaves.input_lengths);
}

}  // namespace fuseflow
