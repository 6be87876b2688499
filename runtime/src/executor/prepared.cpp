// Preparing a program: its plan for this device and options, made once per structure
// (program_key), its kernels compiled or fetched and loaded, its scalar and flag buffers.
#include <algorithm>

#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "device_target.hpp"
#include "prepared.hpp"

namespace fuseflow {

namespace {

const std::vector<Header>& embedded_headers() {
  static const std::vector<Header> headers = [] {
    std::vector<Header> out;
    for (const auto& h : codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return headers;
}

// What decides whether two programs can share a plan and its kernels: the program's
// textual form (to_string: inputs and parameters by name and type in a fixed order, ops,
// constants, custom monoids in full; never node addresses, never parameter values, which
// are bound per run), the device's architecture and SM count, and the plan options. The
// plan does not depend on binding lengths (they reach the kernels as arguments), so they
// are not in the key. Names are part of the text, and harmless: the frontend refuses two
// leaves of one name in a program, so names identify leaves.
std::string program_key(const Program& program, const DeviceProperties& props, const codegen::PlanOptions& options) {
  return "target sm_" + std::to_string(props.cc_major) + std::to_string(props.cc_minor) + " x" +
         std::to_string(props.sm_count) + "\noptions " + options.key() + "\n" + to_string(program);
}

}  // namespace

namespace detail {

std::shared_ptr<PreparedProgram> prepare(Runtime& rt, Executor& ex, const Program& program,
                                         const std::shared_ptr<DeviceContext>& context) {
  const DeviceProperties& props = rt.properties();
  const codegen::PlanOptions& options = *rt.options().plan;
  std::vector<const ExprNode*> outputs;
  for (const Expr& o : program.outputs()) outputs.push_back(o.get());
  const Executor::KnownProgram* known = ex.keys.find(outputs);
  if (!known) known = &ex.keys.insert(outputs, {program, program_key(program, props, options)}, 1);
  const std::string& key = known->key;  // valid until ex.keys changes, which prepare does not do below
  if (std::shared_ptr<PreparedProgram>* found = ex.programs.find(key)) return *found;
  auto p = std::make_shared<PreparedProgram>(context);
  const codegen::Target target = device_target(props);
  p->plan = codegen::plan(program, target, options);
  p->range_name = p->plan.kernels.empty() ? "fuseflow run" : "fuseflow run " + p->plan.kernels.front().name;
  CompileOptions compile = rt.compile_options();
  if (p->plan.scalar_bytes) p->scalars = context->allocate(p->plan.scalar_bytes);
  if (!p->plan.checked_offsets.empty())
    p->invalid_flags = context->allocate(p->plan.checked_offsets.size() * sizeof(unsigned));
  for (const auto& op : p->plan.checked_offsets) {
    const auto& ops = program.ops();
    const auto at = std::find(ops.begin(), ops.end(), op);
    if (at == ops.end()) throw InternalError("prepare: a checked op of the plan is not among the program's ops");
    p->checked_op_index.push_back(static_cast<std::size_t>(at - ops.begin()));
  }
  DeviceContext::Scope scope(*context);
  for (const auto& k : p->plan.kernels) {
    p->kernels.push_back(rt.load_kernel(k.source, k.name, compile, embedded_headers()));
    // Only a kernel that strides over its domain (any_grid) is launched with the resident
    // grid; the others (one block per tile) skip the occupancy query, which for more than
    // 48 KB of dynamic shared memory needs the kernel's opt-in first (Runtime::launch).
    int per_sm = 0;
    if (k.any_grid)
      rt.check(driver_api()->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->kernels.back().function(), k.block,
                                                                         k.shared_bytes),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    p->resident_grid.push_back(std::max(1, per_sm) * props.sm_count);
  }
  const std::size_t bytes = p->bytes() + key.size();
  return ex.programs.insert(key, std::move(p), bytes);
}

}  // namespace detail

}  // namespace fuseflow
