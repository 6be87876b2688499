// HostArray and HostBindings: host data in the device's layout, and what a program's
// inputs and parameters are bound to for the CPU reference evaluator.
#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {

namespace {
void require_element_type(const Type& array_type, const Value& v, const std::string& what) {
  if (v.type() != array_type)
    throw GraphError(what + ": the array holds " + array_type.name() + ", the value " + v.to_string() +
                     " is " + v.type().name());
}
}  // namespace

HostArray HostArray::from_values(const Type& t, const std::vector<Value>& values) {
  HostArray a(t, values.size());
  for (std::size_t i = 0; i < values.size(); ++i) a.set(i, values[i]);
  return a;
}

void HostArray::set(std::size_t i, const Value& v) {
  if (i >= size_)
    throw GraphError("HostArray::set: index " + std::to_string(i) + " is out of range for an array of " +
                     std::to_string(size_) + " elements");
  require_element_type(type_, v, "HostArray::set");
  v.to_bytes(bytes_.data() + i * type_.size());
}

void HostArray::push_back(const Value& v) {
  require_element_type(type_, v, "HostArray::push_back");
  bytes_.resize(bytes_.size() + type_.size());
  ++size_;
  v.to_bytes(bytes_.data() + (size_ - 1) * type_.size());
}

HostBindings& HostBindings::bind(const Expr& input, HostArray data) {
  if (!input.valid() || input.kind() != ExprKind::Input)
    throw GraphError("bind: an array binds to an ff::input, not to " +
                     (input.valid() ? fuseflow::to_string(input) : std::string("an empty ff::Expr")));
  const ExprNode& n = input.node();
  if (data.type() != n.type)
    throw GraphError("bind: input '" + n.name + "' holds " + n.type.name() + " but the array holds " +
                     data.type().name());
  if (n.length >= 0 && data.size() != static_cast<std::size_t>(n.length))
    throw GraphError("bind: input '" + n.name + "' was declared with " + std::to_string(n.length) +
                     " elements, the array has " + std::to_string(data.size()));
  arrays_.insert_or_assign(input.get(), std::move(data));
  return *this;
}

HostBindings& HostBindings::bind(const Expr& param, const Value& v) {
  if (!param.valid() || param.kind() != ExprKind::Param)
    throw GraphError("bind: a value binds to an ff::param, not to " +
                     (param.valid() ? fuseflow::to_string(param) : std::string("an empty ff::Expr")));
  const ExprNode& n = param.node();
  if (v.type() != n.type)
    throw GraphError("bind: parameter '" + n.name + "' is " + n.type.name() + " but the value " + v.to_string() +
                     " is " + v.type().name() + " (convert it first)");
  params_.insert_or_assign(param.get(), v);
  return *this;
}

const HostArray* HostBindings::array(const Expr& input) const {
  auto it = arrays_.find(input.get());
  return it == arrays_.end() ? nullptr : &it->second;
}

const Value* HostBindings::param(const Expr& param) const {
  auto it = params_.find(param.get());
  return it == params_.end() ? nullptr : &it->second;
}

}  // namespace fuseflow
