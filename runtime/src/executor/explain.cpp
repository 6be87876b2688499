// Runtime::explain: the plan of a program for this Runtime's device and options and, given
// bindings, the launches a run with those sizes makes; Runtime::check_bindings: a run's
// binding checks against that plan. Nothing is compiled or launched.
#include <sstream>

#include "fuseflow/runtime/runtime.hpp"
#include "bindings.hpp"
#include "device_target.hpp"

namespace fuseflow {

std::string Runtime::explain(const Program& program, const Bindings& bindings) {
  const codegen::Target target = detail::device_target(properties_);
  const codegen::PlanOptions& plan_options = *options_.plan;
  std::ostringstream out;
  out << "device " << properties_.ordinal << ": " << properties_.name << " (" << properties_.arch() << ", "
      << properties_.sm_count << " SMs)\n";
  out << codegen::explain(program, target, plan_options);
  if (bindings.empty()) return out.str();
  const detail::BoundLeaves bound = detail::bind_leaves(program, bindings);
  const codegen::Plan plan = codegen::plan(program, target, plan_options);
  const std::vector<std::int64_t> lengths = detail::domain_lengths(program, plan, bound);
  const codegen::Schedule schedule = plan.schedule(lengths);
  out << "a run with n = " << lengths.at(0) << ": " << schedule.launches.size() << " launch"
      << (schedule.launches.size() == 1 ? "" : "es") << ", " << schedule.scratch_bytes << " bytes of scratch\n";
  for (const codegen::Launch& launch : schedule.launches) {
    const codegen::KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(launch.kernel));
    out << "  " << k.name << ": grid " << launch.grid << (k.any_grid ? " (at most; lowered to the resident grid)" : "")
        << " x " << k.block << " threads, " << k.shared_bytes << " bytes of dynamic shared memory, n = " << launch.n;
    if (launch.status_bytes) out << ", " << launch.status_bytes << " bytes of look-back status";
    out << "\n";
  }
  return out.str();
}

void Runtime::check_bindings(const Program& program, const Bindings& bindings) {
  const detail::BoundLeaves bound = detail::bind_leaves(program, bindings);
  const codegen::Plan plan = codegen::plan(program, detail::device_target(properties_), *options_.plan);
  detail::check_output_bindings(program, plan, bound, detail::domain_lengths(program, plan, bound));
}

}  // namespace fuseflow
