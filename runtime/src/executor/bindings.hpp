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
  // Per program output: the caller's memory it is written into ({output, array} bindings),
  // or nothing (ptr 0, element_size 0): the run allocates it.
  std::vector<DeviceBytes> outputs;
  bool output_bound(std::size_t i) const { return outputs.at(i).element_size != 0; }
};

// Every input bound once to an array of its type (and declared length), every parameter
// once to a scalar, array outputs at most once to an array of their element type, nothing
// else bound. Throws GraphError naming the input, parameter or output. The second form
// fills `out`, reusing its vectors (a run's steady state allocates nothing here).
BoundLeaves bind_leaves(const Program& program, const Bindings& bindings);
void bind_leaves(const Program& program, const Bindings& bindings, BoundLeaves& out);

// The length of each input domain of the plan (inputs of one domain have one length; an
// empty domain has length 0; a fill of a parameter's length sets domain 0's from the bound
// parameter). Throws GraphError naming two inputs that disagree, or the parameter when its
// value is negative or too large. The second form writes them into `out`, reusing its storage.
std::vector<std::int64_t> domain_lengths(const Program& program, const codegen::Plan& plan, const BoundLeaves& bound);
void domain_lengths(const Program& program, const codegen::Plan& plan, const BoundLeaves& bound,
                    std::vector<std::int64_t>& out);

// The outputs bound to the caller's memory, once the lengths are known: each has exactly
// its output's element count, overlaps no other output, and overlaps an input only as an
// exact alias (same address and bytes) that the plan can write in place: the kernel
// writing the output reads that input tile by tile (KernelSpec::in_place) and no later kernel
// reads it. Throws GraphError naming the output and what is wrong.
void check_output_bindings(const Program& program, const codegen::Plan& plan, const BoundLeaves& leaves,
                           const std::vector<std::int64_t>& lengths);
// The element count of program output i (an array) for these domain lengths.
std::size_t output_length(const codegen::Plan& plan, std::size_t i, const std::vector<std::int64_t>& lengths);

// After a run whose kernel flagged the offsets of `op` (a segmented op) invalid: downloads
// them, evaluates them with the CPU reference and throws its GraphError, so the device and
// the reference report bad offsets in the same words. n is the values' count.
[[noreturn]] void throw_invalid_offsets(const Program& program, const OpNode& op, const BoundLeaves& leaves,
                                        std::int64_t n, DeviceContext& context);

// After a run whose kernels flagged a gather's index outside its table: downloads the
// inputs, runs the program with the CPU reference and throws its GraphError, which names
// the first bad position and its index.
[[noreturn]] void throw_invalid_gather(const Program& program, const BoundLeaves& leaves, DeviceContext& context);

}  // namespace fuseflow::detail
