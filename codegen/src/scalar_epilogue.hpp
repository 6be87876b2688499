#pragma once
// Scalar epilogues: program outputs that are expressions of reductions' results (and
// parameters), such as log-sum-exp's `m + log(reduce(exp(x - m), plus))`. Each gets a
// scalar slot of its own and is computed on the device once the reductions it reads are
// done: by the last block of the program's last reduce kernel, right after its final
// combine (strategies chunked and staged, whose last block holds the totals), or else by
// a one-thread kernel after every other kernel (atomic and tree reductions, reductions
// folded into a scan). Never on the host: the run copies the slot back like a reduction's.
#include <map>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan.hpp"

namespace fuseflow::codegen {

class SourceWriter;
class CudaTypes;
struct KernelContext;
struct PlanContext;

struct ScalarEpilogue {
  Expr expr;                    // the output's expression (no array leaf)
  int output = 0;               // program output number
  int slot = 0;                 // the scalar slot it is written to
  std::vector<int> slots_read;  // the reductions' slots it reads, ascending
  std::vector<Expr> params;     // the parameters it reads, in program order
  std::vector<int> param_ids;
};

// Hooks of the reduce kernel writer (KernelContext::epilogues, empty for most kernels): the
// kernel arguments the group's epilogues add after its reductions' outputs (the slots and
// parameters they read that the kernel does not already take, and their own slots), and
// their stores, after the reductions' own inside store(total).
void append_epilogue_args(const KernelContext& g, std::vector<Arg>& args);
void emit_epilogue_stores(SourceWriter& w, CudaTypes& types, const KernelContext& g, const std::string& total);

// The kernel computing `epilogues` after every other kernel of the plan: one thread
// reading the scalar slots. Appends the kernel and its step.
void emit_epilogue_kernel(const std::vector<ScalarEpilogue>& epilogues, const PlanContext& c, Plan& plan);

}  // namespace fuseflow::codegen
