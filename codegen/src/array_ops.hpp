#pragma once
// Ops whose result is an array of its own length, not of the elements' length: a
// histogram (one count per bin) and a segmented reduction by offsets (one value per
// segment). Each such program output gets its own kernel, planned after the program's
// reductions (so its maps may read their results) and before the element-wise outputs.
#include <map>
#include <string>
#include <vector>

#include "kernel_context.hpp"

namespace fuseflow::codegen {

// What the planner knows that these ops need.
struct ArrayOpContext {
  const Program& program;
  std::string program_text;
  std::vector<Type> slot_types;          // type of every scalar slot
  std::map<const OpNode*, int> slot_of;  // slot of every reduction
};

// Whether program output `e` is the result of such an op.
bool is_array_op(const Expr& e);

// Plans program output `output` (the result of `op`): appends its kernels and schedule
// step, and sets its output shape and its inputs' domains.
void plan_array_op(const ArrayOpContext& c, const std::shared_ptr<const OpNode>& op, int output, const Target& t, Plan& plan);

// The emitters. `leaves` lists the inputs, parameters and scalar results the op's
// element-wise expressions read; for segmented_reduce, `offsets` lists the offsets'.
Kernel emit_histogram(const OpNode& op, const ReduceGroup& leaves, int output, const Target& t);
// `check` is the index of its offsets_invalid flag (Plan::checked_offsets).
Kernel emit_segmented_reduce(const std::shared_ptr<const OpNode>& op, const ReduceGroup& leaves, const ReduceGroup& offsets, int offsets_domain,
                             int output, int check, const Target& t);

// Tuning of the segmented reduction, shared by its emitter and its schedule step.
struct SegmentedTuning {
  int block = 256;
  int items = 8;  // merge items (elements + segment ends) per thread per tile
  int tile() const { return block * items; }
};
SegmentedTuning segmented_tuning(const Type& acc);

}  // namespace fuseflow::codegen
