#pragma once
// The code generator's view of a device: what the Runtime plans for (its executor, explain,
// check_bindings), and what a tool compiling kernels ahead for it must plan for too.
#include "fuseflow/codegen/target.hpp"
#include "fuseflow/runtime/device.hpp"

namespace fuseflow {

inline codegen::Target device_target(const DeviceProperties& props) {
  codegen::Target target;
  target.cc_major = props.cc_major;
  target.cc_minor = props.cc_minor;
  target.sm_count = props.sm_count;
  target.max_threads_per_sm = props.max_threads_per_sm;
  target.shared_per_block_optin = props.shared_memory_per_block_optin;
  return target;
}

}  // namespace fuseflow
