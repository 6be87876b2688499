#pragma once
// Stream compaction: a filter whose compacted array is a program output. The planner
// (filter_plan.cpp) groups the outputs over one filter's result (the result itself, or
// maps of it) into one kernel: its context's op is the filter, its value the filter's
// element value (nested filters substituted), its mask the keep predicate (the filter's
// and those of nested filters), its outputs those over the filter's result. The emitter
// (strategies/filter_compact.cpp) writes the survivors in order, each output's map
// applied to them on the way (filter -> map), and the survivor count to the device: the
// output's length is known on the device only (OutputShape::counted).
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "array_ops.hpp"
#include "kernel_context.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

// Tuning constants of the compaction kernel, chosen from the element sizes: each thread
// holds kRows vector loads of kVec elements of every input per tile.
struct CompactTiling {
  int block = 512;
  int min_blocks = 1;  // resident blocks per SM the registers must allow (__launch_bounds__)
  int vec = 1;   // elements per vector load
  int rows = 1;  // vector loads per thread and input
  int items() const { return vec * rows; }
  int tile() const { return block * items(); }
};
CompactTiling compact_tiling(const KernelContext& g);

KernelSpec emit_filter_compact(const KernelContext& g);
// The pipelined compaction (scan_pipeline.cuh, compact_tiles): where it applies (sm_90 or
// later, one 4-byte scalar input, a value of at most 4 bytes per survivor, since survivors
// are compacted over their inputs in the stage; no filter_tile option, the policy's
// pipeline on) it is the filter's second kernel, launched from the compact policy's staged_from
// elements like the pipelined scan.
bool pipelined_compact_applies(const KernelContext& g);

// Shared by the two compaction emitters (filter_compact.cpp): keep(inputs..., i) and
// value(inputs..., i), the predicate and the value of element i, and epilogue_j(kept, at)
// for each output that maps the survivors; the kernel's arguments (the elementwise ones,
// each output with its device-written count, the look-back's), with the inputs' names
// and the outputs' in `names` and `outs`.
void emit_compact_functions(SourceWriter& w, CudaTypes& types, const KernelContext& g,
                            const std::vector<std::string>& names);
std::vector<Arg> compact_args(const KernelContext& g, std::vector<std::string>& names, std::vector<std::string>& outs);
KernelSpec emit_filter_compact_pipelined(const KernelContext& g);

// The filter whose result program output `output` is, or maps (possibly with parameters,
// reductions' results and index(), the position among the survivors); nullptr when it
// reads no filter's result. GraphError when it also reads an input array or another
// array result (their lengths differ from the survivors').
std::shared_ptr<const OpNode> compacted_filter(const Expr& output);

// Plans the program outputs `output_ids` (each over a filter's result): one kernel per
// filter, its schedule step, and the outputs' counted shapes.
void plan_filters(const PlanContext& c, const std::vector<int>& output_ids, Plan& plan);

}  // namespace fuseflow::codegen
