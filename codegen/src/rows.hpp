#pragma once
// Per-row programs: segmented reductions over ff::rows(x, c) offsets and element-wise
// outputs that broadcast their results (per-row softmax, centring rows). When a row fits a
// block, the whole program is one kernel (strategies/rows.cpp) reading each row once.
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan.hpp"
#include "policy.hpp"

namespace fuseflow::codegen {

struct KernelContext;

// How a block holds a row of `columns` elements: kBlock threads of kItems each.
struct RowsTuning {
  int block = 32;
  int items = 1;
};
// The policy's shape for rows of `columns` elements, or nothing when they do not fit a
// block (more than max_block x max_items).
std::optional<RowsTuning> rows_tuning(std::int64_t columns, const RowsPolicy& policy);
// Whether reduction r's values are kept per element in registers: they are computed (not a
// plain read) and a later reduction or an output reads the same expression.
bool keep_values(const std::vector<std::shared_ptr<const OpNode>>& ops, std::size_t r, const std::vector<Expr>& outputs);
// Appends to `found` the float divisions in `e` whose divisor is a broadcast (a row result).
void division_by_row(const Expr& e, std::vector<Expr>& found, std::set<const ExprNode*>& seen);
// The per-row kernel of the context's outputs over the program's row reductions.
KernelSpec emit_rows(const KernelContext& g);

// rows_plan.cpp: when the program has a broadcast or ff::rows offsets, plans it as one
// per-row kernel, or else on the general path (plan_broadcast_program), and returns true
// (false for every other program).
bool plan_rows_program(const Program& program, const Policies& policies, const Target& target, Plan& plan);

// broadcast_plan.cpp: the general path, segmented reductions over one offsets input and a
// map of the outputs reading their broadcasts (strategies/broadcast.cpp); `misfit` says why
// the program is not a per-row one. GraphError naming what fits neither.
void plan_broadcast_program(const Program& program, const Policies& policies, const Target& target,
                            const std::string& misfit, Plan& plan);

// broadcast_plan.cpp: the program output that is `op`'s result, or -1; the broadcasts
// `exprs` read (each reduction once, in order of appearance). strategies/broadcast.cpp: the
// kernels of a broadcast program (each reduction's segmented reduce kernels, then the map of g.outputs).
struct BroadcastRead;
int result_output(const Program& p, const OpNode& op);
std::vector<BroadcastRead> broadcasts_in(const Program& p, const std::vector<Expr>& exprs);
std::vector<KernelSpec> emit_broadcast(const KernelContext& g);

}  // namespace fuseflow::codegen
