#pragma once
// Per-row programs: segmented reductions over ff::rows(x, c) offsets and element-wise
// outputs that broadcast their results (per-row softmax, centring rows). When a row fits a
// block, the whole program is one kernel (strategies/rows.cpp) reading each row once.
#include <cstdint>
#include <optional>
#include <string>

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
// The per-row kernel of the context's outputs over the program's row reductions.
KernelSpec emit_rows(const KernelContext& g);

// rows_plan.cpp: when the program has a broadcast or ff::rows offsets, plans it as one
// per-row kernel and returns true (false for every other program). GraphError saying what
// does not fit a per-row program (the general path, a segmented reduction's kernels then a
// map reading each element's segment, is not built yet).
bool plan_rows_program(const Program& program, const Policies& policies, const Target& target, Plan& plan);

}  // namespace fuseflow::codegen
