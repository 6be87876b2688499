#pragma once
// The code generator's view of this Runtime's device (what a plan is made for), and
// planning with the Runtime's PlanOptions.
#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/device.hpp"

namespace fuseflow::detail {

inline codegen::Target device_target(const DeviceProperties& props) {
  codegen::Target target;
  target.cc_major = props.cc_major;
  target.cc_minor = props.cc_minor;
  target.sm_count = props.sm_count;
  target.max_threads_per_sm = props.max_threads_per_sm;
  target.shared_per_block_optin = props.shared_memory_per_block_optin;
  return target;
}

// codegen::plan with the caller's PlanOptions where codegen takes them (issue 19's
// refactor adds the parameter); before that, codegen reads the same variables itself.
// Once both are merged this is `codegen::plan(program, target, options)`.
template <class P>
codegen::Plan plan_with_options(const P& program, const codegen::Target& target, const codegen::PlanOptions& options) {
  if constexpr (requires { codegen::plan(program, target, options); })
    return codegen::plan(program, target, options);
  else
    return codegen::plan(program, target);
}

}  // namespace fuseflow::detail
