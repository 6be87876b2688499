// Planning of per-row programs (rows.hpp): a program with a per-segment broadcast or
// ff::rows offsets is planned here, before the other passes, as one kernel when it has the
// per-row shape: its ops are segmented reductions over one ff::rows(x, c) (a reduction may
// read earlier ones' broadcasts, as softmax's row sum reads the row max), its outputs
// element-wise expressions of the inputs, parameters, index() and those broadcasts, and a
// row fits a block. Otherwise, the general path (plan_broadcast_program): segmented
// reductions over one offsets input, each through the segmented reduce's kernels into a
// buffer of per-segment results, then one map of the outputs that finds each element's
// segment (strategies/broadcast.cpp). What fits neither is refused with a GraphError
// naming what does not fit; the CPU reference evaluates them all.
#include <algorithm>
#include <set>

#include "kernel_context.hpp"
#include "rows.hpp"
#include "strategy.hpp"

namespace fuseflow::codegen {

namespace {

bool has_rows_nodes(const Expr& e, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return false;
  if (e.kind() == ExprKind::Broadcast) return e.args()[0].kind() == ExprKind::Result;  // not stage 2's (stages.cpp)
  if (e.kind() == ExprKind::Rows) return true;
  for (const auto& a : e.args())
    if (has_rows_nodes(a, seen)) return true;
  return false;
}

// Why the program is not a per-row program (caught by plan_rows_program, which then tries
// the general path).
[[noreturn]] void refuse(const std::string& why) { throw GraphError(why); }

// An element-wise expression of a per-row kernel: inputs, parameters, constants, index()
// and broadcasts of the program's row reductions; no other op's result, no table read,
// no row offsets as values.
void check_element_expr(const Expr& e, const std::string& where, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  switch (e.kind()) {
    case ExprKind::Broadcast: return;  // its result is the row's register
    case ExprKind::Rows: refuse("the row offsets " + to_string(e) + " read as values in " + where);
    case ExprKind::Result:
      refuse(std::string("the result of ") + op_name(e.node().op->kind) + " read in " + where +
             " (a per-row program reads its reductions through ff::broadcast)");
    case ExprKind::Gather:
    case ExprKind::Shift: refuse(to_string(e) + " (a read at other positions) in " + where);
    default: break;
  }
  for (const auto& a : e.args()) check_element_expr(a, where, seen);
}

}  // namespace

namespace {

// The per-row shape's checks: a GraphError saying what does not fit, or the rows.
const Expr& check_per_row(const Program& program, const Policies& policies) {
  const Expr* rows = nullptr;
  for (const auto& op : program.ops()) {
    if (op->kind != OpKind::SegmentedReduce)
      refuse(std::string(op_name(op->kind)) + " in a program with a broadcast or ff::rows offsets");
    if (op->offsets.kind() != ExprKind::Rows)
      refuse("segmented_reduce over offsets " + to_string(op->offsets) + " (not ff::rows(x, c)) in a program with a broadcast");
    if (rows && to_string(*rows) != to_string(op->offsets))
      refuse("segmented reductions over two row shapes, " + to_string(*rows) + " and " + to_string(op->offsets));
    rows = &op->offsets;
    std::set<const ExprNode*> checked;
    check_element_expr(op->values, "the values of a segmented_reduce", checked);
  }
  if (!rows) refuse("ff::rows offsets used by no segmented_reduce");
  const std::int64_t columns = rows->node().length;
  if (!rows_tuning(columns, policies.rows))
    refuse("rows of " + std::to_string(columns) + " elements do not fit a block (at most " +
           std::to_string(static_cast<std::int64_t>(policies.rows.max_block) * policies.rows.max_items) + ")");
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    const std::string where = "output " + std::to_string(i) + " (" + to_string(o) + ")";
    if (o.kind() == ExprKind::Result)
      refuse("a per-row result as " + where + " is not written by the per-row kernel yet; output a broadcast of it");
    if (!is_array(o)) refuse(where + " is not an array");
    std::set<const ExprNode*> checked;
    check_element_expr(o, where, checked);
  }
  return *rows;
}

}  // namespace

bool plan_rows_program(const Program& program, const Policies& policies, const Target& target, Plan& plan) {
  std::set<const ExprNode*> seen;
  bool any = false;
  for (const auto& o : program.outputs()) any = any || has_rows_nodes(o, seen);
  for (const auto& op : program.ops())
    for (const Expr* e : {&op->values, &op->predicate, &op->offsets, &op->keys}) any = any || has_rows_nodes(*e, seen);
  if (!any) return false;

  const Expr* rows = nullptr;
  std::string misfit;
  try {
    rows = &check_per_row(program, policies);
  } catch (const GraphError& e) {
    misfit = e.what();
  }
  if (!rows) {  // the general path, or a GraphError saying what fits neither
    plan_broadcast_program(program, policies, target, misfit, plan);
    return true;
  }

  const PlanContext context{program, to_string(program), {}, {}, policies, target};
  KernelContext g = context_in(context);
  std::vector<Expr> reads;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    g.outputs.push_back(o);
    g.output_ids.push_back(static_cast<int>(i));
    plan.output_scalar.push_back(-1);
    reads.push_back(o);
  }
  for (const auto& op : program.ops()) reads.push_back(op->values);
  reads.push_back(*rows);  // its x has the rows' length
  g.leaves = leaves_in(context, reads);
  if (g.leaves.inputs.empty()) refuse("codegen: a per-row program that reads no input array");
  plan_with_registry("rows", g, Strategy::Automatic, plan);
  return true;
}

// ---- The per-row kernel's shape and expressions (strategies/rows.cpp) ----

std::optional<RowsTuning> rows_tuning(std::int64_t columns, const RowsPolicy& p) {
  if (columns <= 0) return std::nullopt;
  const auto block_for = [&](int items) { return ((columns + items - 1) / items + 31) / 32 * 32; };
  int items = std::max(1, columns > p.long_row ? p.long_items : p.items);
  while (block_for(items) > p.max_block && items < p.max_items) items = std::min(items * 2, p.max_items);
  if (block_for(items) > p.max_block) return std::nullopt;
  return RowsTuning{static_cast<int>(block_for(items)), items};
}

namespace {

// Whether `e` contains the node `target` (a broadcast's own expression included: its
// reduction's values are not the element's, but the search is only for sharing).
bool contains(const Expr& e, const ExprNode* target, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return false;
  if (e.get() == target) return true;
  for (const auto& a : e.args())
    if (contains(a, target, seen)) return true;
  return false;
}

}  // namespace

// Reduction r's values are kept per element (vals<r>[kItems]) when they are computed (not a
// plain read) and a later reduction or an output reads the same expression: softmax's
// exp(x - max) is computed once per element, for the row sum, and divided from the
// registers (twice the expf was 30% of the kernel's instructions).
bool keep_values(const std::vector<std::shared_ptr<const OpNode>>& ops, std::size_t r, const std::vector<Expr>& outputs) {
  const Expr& v = ops[r]->values;
  switch (v.kind()) {
    case ExprKind::Input:
    case ExprKind::Constant:
    case ExprKind::Param:
    case ExprKind::Index:
    case ExprKind::Broadcast: return false;
    default: break;
  }
  std::set<const ExprNode*> seen;
  for (std::size_t q = r + 1; q < ops.size(); ++q)
    if (contains(ops[q]->values, v.get(), seen)) return true;
  for (const auto& o : outputs)
    if (contains(o, v.get(), seen)) return true;
  return false;
}

// Float divisions by a row result (softmax's y = e / sum): the divisor is the same for the
// whole row, so the kernel takes its reciprocal once per row and multiplies per element
// (div.rn.f32 is about ten instructions and a branch to its slow path, per element).
void division_by_row(const Expr& e, std::vector<Expr>& found, std::set<const ExprNode*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second || e.kind() == ExprKind::Broadcast) return;
  if (e.kind() == ExprKind::Binary && e.node().binary == BinaryOp::Div && e.args()[1].kind() == ExprKind::Broadcast &&
      e.type().is_scalar() && (e.type().scalar() == ScalarType::F32 || e.type().scalar() == ScalarType::F64) &&
      e.args()[1].type() == e.type())
    found.push_back(e);
  for (const auto& a : e.args()) division_by_row(a, found, seen);
}

}  // namespace fuseflow::codegen
