#pragma once
// Stream compaction: a filter whose compacted array is a program output. The planner
// (filter_plan.cpp) groups the outputs over one filter's result (the result itself, or
// maps of it) into one kernel; the emitter (strategies/filter_compact.cpp) writes the
// survivors in order, each output's map applied to them on the way (filter -> map), and
// the survivor count to the device: the output's length is known on the device only
// (OutputShape::counted).
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "array_ops.hpp"
#include "kernel_context.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

struct CompactGroup {
  std::shared_ptr<const OpNode> op;  // the filter
  Expr value;                   // the filter's element value, nested filters substituted
  Expr keep;                    // bool per element: its predicate and those of nested filters
  std::vector<Expr> outputs;    // program outputs over the filter's result (maps of it are epilogues)
  std::vector<int> output_ids;  // their program output numbers
  ReduceGroup leaves;           // inputs, parameters and scalar slots the kernel reads
  CompactPolicy policy;         // the target's policy, the caller's options applied
};

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
CompactTiling compact_tiling(const CompactGroup& g, const Target& t);

KernelSpec emit_filter_compact(const CompactGroup& g, const Target& t);
// The pipelined compaction (scan_pipeline.cuh, compact_tiles): where it applies (sm_90 or
// later, one 4-byte scalar input, a value of at most 4 bytes per survivor, since survivors
// are compacted over their inputs in the stage; no filter_tile option, the policy's
// pipeline on) it is the filter's second kernel, launched from g.policy.staged_from
// elements like the pipelined scan.
bool pipelined_compact_applies(const CompactGroup& g, const Target& t);

// Shared by the two compaction emitters (filter_compact.cpp): keep(inputs..., i) and
// value(inputs..., i), the predicate and the value of element i, and epilogue_j(kept, at)
// for each output that maps the survivors; the kernel's arguments (the elementwise ones,
// each output with its device-written count, the look-back's), with the inputs' names
// and the outputs' in `names` and `outs`.
void emit_compact_functions(SourceWriter& w, CudaTypes& types, const CompactGroup& g,
                            const std::vector<std::string>& names);
std::vector<Arg> compact_args(const CompactGroup& g, std::vector<std::string>& names, std::vector<std::string>& outs);
KernelSpec emit_filter_compact_pipelined(const CompactGroup& g, const Target& t);

// The filter whose result program output `output` is, or maps (possibly with parameters,
// reductions' results and index(), the position among the survivors); nullptr when it
// reads no filter's result. GraphError when it also reads an input array or another
// array result (their lengths differ from the survivors').
std::shared_ptr<const OpNode> compacted_filter(const Expr& output);

// Plans the program outputs `output_ids` (each over a filter's result): one kernel per
// filter, its schedule step, and the outputs' counted shapes.
void plan_filters(const PlanContext& c, const std::vector<int>& output_ids, const Target& t, Plan& plan);

}  // namespace fuseflow::codegen
