#pragma once
// Checking what a run binds against its program, before anything touches the device:
// Runtime::run and check_bindings share these, so the errors a test sees without a GPU
// are the ones a run gives.
#include <cstdint>
#include <vector>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/execute.hpp"

namespace fuseflow::detail {

struct BoundLeaves {
  std::vector<std::int64_t> input_lengths;  // per program input, in Program::inputs() order
  std::vector<CUdeviceptr> input_ptrs;
  std::vector<Value> params;  // per program parameter, converted to its type
};

// Every input bound once to an array of its type (and declared length), every parameter
// once to a scalar, nothing else bound. Throws GraphError naming the input or parameter.
BoundLeaves bind_leaves(const Program& program, const Bindings& bindings);

// The length of each input domain of the plan (inputs of one domain have one length; an
// empty domain has length 0). Throws GraphError naming two inputs that disagree.
std::vector<std::int64_t> domain_lengths(const Program& program, const codegen::Plan& plan,
                                         const std::vector<std::int64_t>& input_lengths);

// After a run whose kernel flagged the offsets of `op` (a segmented op) invalid: downloads
// them, evaluates them with the CPU reference and throws its GraphError, so the device and
// the reference report bad offsets in the same words. n is the values' count.
[[noreturn]] void throw_invalid_offsets(const Program& program, const OpNode& op, const BoundLeaves& leaves,
                                        std::int64_t n, DeviceContext& context);

}  // namespace fuseflow::detail
