// Planning of the ops whose result has its own length (histogram, segmented_reduce;
// reduce_by_key in segmented_plan.cpp) or is not element-wise (counting_sort): their
// leaves, the domains of their inputs (a segmented op's offsets have their own length),
// the length of their output, and the schedule step that sizes their grid.
#include "array_ops.hpp"
#include "schedule.hpp"
#include "strategy.hpp"

#include <algorithm>
#include <set>

namespace fuseflow::codegen {

namespace {

[[noreturn]] void unsupported(const std::string& what) {
  throw GraphError("codegen: " + what + " is not supported by this version of fuseflow's code generator yet");
}

// Inputs, parameters and scalar results an element-wise expression reads. An array
// result of another op cannot be read element-wise by these kernels.
void collect(const Expr& e, const std::string& op, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& inputs,
             std::set<const ExprNode*>& params, std::set<const OpNode*>& scalars) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) inputs.insert(e.get());
  if (e.kind() == ExprKind::Param) params.insert(e.get());
  if (e.kind() == ExprKind::Result) {
    if (!e.node().op->scalar_output)
      unsupported(std::string("the array result of ") + op_name(e.node().op->kind) + " inside " + op);
    scalars.insert(e.node().op.get());
  }
  for (const auto& a : table_free_args(e)) collect(a, op, seen, inputs, params, scalars);
}

}  // namespace

Leaves leaves_of(const PlanContext& c, const std::vector<Expr>& exprs, const std::string& op) {
  std::set<const ExprNode*> seen, inputs, params;
  std::set<const OpNode*> scalars;
  for (const auto& e : exprs) collect(e, op, seen, inputs, params, scalars);
  Leaves g;
  for (std::size_t i = 0; i < c.program.inputs().size(); ++i)
    if (inputs.count(c.program.inputs()[i].get())) {
      g.inputs.push_back(c.program.inputs()[i]);
      g.input_ids.push_back(static_cast<int>(i));
    }
  for (std::size_t i = 0; i < c.program.params().size(); ++i)
    if (params.count(c.program.params()[i].get())) {
      g.params.push_back(c.program.params()[i]);
      g.param_ids.push_back(static_cast<int>(i));
    }
  for (const auto* s : scalars) g.scalars_read.push_back(c.slot_of.at(s));
  std::sort(g.scalars_read.begin(), g.scalars_read.end());
  fill_tables(g, c.program, exprs);
  return g;
}

Leaves offsets_leaves(const PlanContext& c, const OpNode& op) {
  Leaves offsets = leaves_of(c, {op.offsets}, op_name(op.kind));
  if (!offsets.params.empty() || !offsets.scalars_read.empty())
    unsupported(std::string(op_name(op.kind)) + " offsets that read a parameter or a reduction's result");
  return offsets;
}

namespace {

// The inputs the program reads as elements (everything but segmented ops' offsets).
void element_inputs(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) out.insert(e.get());
  for (const auto& a : table_free_args(e)) element_inputs(a, seen, out);
}

}  // namespace

int offsets_domain(const PlanContext& c, const Leaves& offsets, const std::string& who, Plan& plan) {
  std::set<const ExprNode*> seen, elements;
  for (const auto& op : c.program.ops())
    for (const Expr* e : {&op->values, &op->predicate, &op->keys}) element_inputs(*e, seen, elements);
  for (const auto& o : c.program.outputs())
    if (o.kind() != ExprKind::Result) element_inputs(o, seen, elements);
  for (const auto& in : offsets.inputs)
    if (elements.count(in.get()))
      throw GraphError(who + ": input '" + in.node().name +
                       "' is read both as offsets and as elements; the two have different lengths, so bind the "
                       "offsets to an input of their own");
  if (plan.input_domain.empty()) plan.input_domain.assign(c.program.inputs().size(), 0);
  int d = 0;
  for (int id : offsets.input_ids) d = std::max(d, plan.input_domain[static_cast<std::size_t>(id)]);
  if (d == 0) d = plan.domains++;
  for (int id : offsets.input_ids) plan.input_domain[static_cast<std::size_t>(id)] = d;
  return d;
}

// The segmented reduce's launches: with s segments (s + 1 offsets), the short-segment pass
// over s segments when they average at most kShortSegment elements (n <= kShortSegment x
// s: the merge path's kernel makes the same test, and takes every segment when it fails),
// then the merge path over n + s items (elements + segment ends); nothing without
// segments. The two share the mask of segments the first leaves to the second.
void segmented_reduce_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  const bool short_pass = step.kernels == 2;
  const int first = step.kernel, merge_index = step.kernel + step.kernels - 1;
  const KernelSpec& merge = plan.kernels.at(static_cast<std::size_t>(merge_index));
  const std::int64_t count = b.length(step.domain);
  if (count < 1) throw GraphError("segmented_reduce: the offsets are empty; s segments need s + 1 offsets");
  const std::int64_t segments = count - 1;
  if (segments == 0) return;
  Launch m;
  m.kernel = merge_index;
  m.n = n;
  m.grid = grid_for(n + segments, merge.items_per_block_step, merge.max_grid);
  const LaunchExtents extents{m.grid, 0, n, segments};
  for (std::size_t j = 0; j < merge.scratch.size(); ++j)  // the per-block carries (not the mask)
    if (merge.scratch[j].name != "deferred") m.scratch.push_back(allocate_scratch(b, merge, j, extents));
  if (short_pass && n <= kShortSegment * segments) {
    const KernelSpec& s = plan.kernels.at(static_cast<std::size_t>(first));
    const std::size_t mask = allocate_scratch(b, s, 0, extents);
    m.scratch.push_back(mask);
    b.launch({first, n, grid_for(segments, s.items_per_block_step, s.max_grid), {mask}});
  } else if (short_pass) {
    m.scratch.push_back(0);  // the mask, which the merge path does not read then
  }
  b.launch(std::move(m));
}

bool is_array_op(const Expr& e) {
  if (e.kind() != ExprKind::Result) return false;
  OpKind k = e.node().op->kind;
  return k == OpKind::Histogram || k == OpKind::SegmentedReduce || k == OpKind::CountingSort ||
         k == OpKind::ReduceByKey;
}

void plan_array_op(const PlanContext& c, const std::shared_ptr<const OpNode>& node, int output, Plan& plan) {
  const OpNode& op = *node;
  if (plan.output_shapes.empty()) plan.output_shapes.resize(c.program.outputs().size());
  if (op.kind == OpKind::ReduceByKey) return plan_reduce_by_key(c, node, plan);  // segmented_plan.cpp
  OutputShape& shape = plan.output_shapes[static_cast<std::size_t>(output)];
  KernelContext g = context_in(c);
  g.op = node;
  if (op.kind == OpKind::Histogram) {
    g.outputs = {c.program.outputs()[static_cast<std::size_t>(output)]};
    g.output_ids = {output};
    // A histogram is order-free: a filter feeding it is a mask, its dropped elements binned nowhere.
    // index() beside a filter's result: the survivors' positions, from a scan before it
    // (histogram_positions.cpp), read through a placeholder input.
    FilterMemo memo;
    Expr mask, weights_mask;
    const bool positions = reads_survivor_index(op);
    const Expr position = positions ? survivor_position_input() : Expr();
    g.key = resolve_filters(with_survivor_position(op.keys, position), mask, memo);
    if (op.values.valid()) g.value = resolve_filters(with_survivor_position(op.values, position), weights_mask, memo);
    if (weights_mask.valid() && !(mask.valid() && same_node(mask, weights_mask)))  // the same filter: one mask
      mask = mask.valid() ? (mask && weights_mask) : weights_mask;
    const Expr kept = mask;
    if (mask.valid()) g.key = Expr::select(mask, Expr::cast(ScalarType::I64, g.key), Expr(-1LL));
    g.leaves = leaves_of(c, {g.key, g.value}, "histogram");
    const int k = positions ? plan_survivor_positions(c, kept, position, g, plan) : -1;
    const int first = plan_with_registry("histogram", g, op.strategy, plan);
    if (positions) bind_survivor_positions(plan, first, k);
    shape.fixed = op.bins;
    shape.zeroed = true;  // the kernel adds its counts into it
    return;
  }
  if (op.kind == OpKind::CountingSort) {
    // One plan for all of the op's outputs (keys and values), made at its first.
    for (std::size_t i = 0; i < c.program.outputs().size(); ++i) {
      const Expr& o = c.program.outputs()[i];
      if (o.kind() == ExprKind::Result && o.node().op == node) {
        g.outputs.push_back(o);
        g.output_ids.push_back(static_cast<int>(i));
      }
    }
    if (g.output_ids.front() != output) return;
    g.key_leaves = leaves_of(c, {op.keys}, "counting_sort");
    g.leaves = leaves_of(c, {op.keys, op.values}, "counting_sort");
    plan_with_registry("counting_sort", g, op.strategy, plan);
    return;
  }
  g.outputs = {c.program.outputs()[static_cast<std::size_t>(output)]};
  g.output_ids = {output};
  g.leaves = leaves_of(c, {op.values}, "segmented_reduce");
  g.offsets = SegmentOffsets{offsets_leaves(c, op), 0, static_cast<int>(plan.checked_offsets.size())};
  g.offsets->domain = offsets_domain(c, g.offsets->leaves, "segmented_reduce", plan);
  plan.checked_offsets.push_back(node);
  plan_with_registry("segmented_reduce", g, op.strategy, plan);
  shape.domain = g.offsets->domain;
  shape.less = 1;
}

std::int64_t OutputShape::length(const std::vector<std::int64_t>& lengths) const {
  if (fixed >= 0) return fixed;
  return std::max<std::int64_t>(0, lengths.at(static_cast<std::size_t>(domain)) - less);
}

}  // namespace fuseflow::codegen
