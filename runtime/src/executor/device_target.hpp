#pragma once
// The executor's name for the public fuseflow::device_target.
#include "fuseflow/runtime/device_target.hpp"

namespace fuseflow::detail {
using fuseflow::device_target;
}  // namespace fuseflow::detail
