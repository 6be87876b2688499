// The scans' passes. A program output over a scan's result (the scan itself, or a map of
// it) is written by the scan's kernel: the scan's input map is inlined into its loads
// (prologue), and the output's map is the epilogue applied before the store. One kernel
// per scan writes every output that reads it. Scans run after the reductions, so their
// maps may read reductions' results; a reduction over the scan's inputs whose result
// nothing before the scan needs is folded into the scan kernel's pass instead
// (fold_reductions_into_scans). Segmented scans (segmented_scan, scan_by_key) are planned
// alike, by segmented_plan.cpp. A scan of a filter's result scans the compacted survivors
// (the CPU reference's definition): one pass over all n elements of (value, 1) where the
// predicate holds and the identity (identity, 0) where not, so each element's scan carries
// the survivors' scan and their count before it; a survivor's is stored at that count, its
// position among the survivors (survivors_scan). A compaction and a scan in one pass, in
// order (any monoid); its outputs are counted like a filter's. Outputs over the same
// survivors (the filter's result, maps of it) join its kernel (adopt_filter_outputs).
#include <algorithm>
#include <functional>
#include <map>

#include "../scan_context.hpp"
#include "fuseflow/frontend/filter_lift.hpp"
#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

void collect_scans(const Expr& e, std::set<const OpNode*>& scans, std::set<const ExprNode*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result && is_scan(e.node().op->kind)) scans.insert(e.node().op.get());
  for (const auto& a : e.args()) collect_scans(a, scans, seen);
}

// The leaves the scan kernel reads: its map, its outputs' epilogues and the maps of the
// reductions folded into it.
void fill_scan_leaves(KernelContext& g) {
  std::vector<Expr> exprs = {g.value};
  if (g.mask.valid()) exprs.push_back(g.mask);
  if (g.op->keys.valid()) exprs.push_back(g.op->keys);  // scan_by_key
  exprs.insert(exprs.end(), g.outputs.begin(), g.outputs.end());
  for (const auto& r : g.reduces) {
    exprs.push_back(r.value);
    if (r.mask.valid()) exprs.push_back(r.mask);
  }
  g.leaves = leaves_in(*g.plan, exprs);
}

// `combine` over the value fields of (value, count) operands a and b.
Expr on_values(const Expr& combine, const Expr& a, const Expr& b) {
  if (combine.kind() == ExprKind::Operand) return Expr::get(combine.node().index == 0 ? a : b, 0);
  if (combine.args().empty()) return combine;
  std::vector<Expr> args;
  for (const auto& x : combine.args()) args.push_back(on_values(x, a, b));
  return combine.with_args(std::move(args));
}

// The (value, survivor count) monoid over `m`: (a, ca) . (b, cb) = (a . b, ca + cb), the
// identity (identity, 0); commutative when `m` is, and named after it.
Monoid counted_monoid(const Monoid& m) {
  const Type pair = Type::tuple({m.type(), ScalarType::U64});
  const Expr a = Expr::operand(0, pair), b = Expr::operand(1, pair);
  const Expr combine = Expr::make_tuple({on_values(m.combine(), a, b), Expr::get(a, 1) + Expr::get(b, 1)});
  return Monoid::custom(m.name(), pair, combine, Value::tuple({m.identity(), Value::from_uint(ScalarType::U64, 0)}),
                        m.is_commutative());
}

// index() among the survivors, from the (value, survivor count) pair `pair` of a survivor:
// the survivors before it (an inclusive scan's count includes the survivor itself).
Expr survivor_position(const Expr& pair, ScanKind kind) {
  Expr count = Expr::cast(ScalarType::I64, Expr::get(pair, 1));
  if (kind == ScanKind::Inclusive) count = count - Expr::constant(Value::from_int(ScalarType::I64, 1));
  return count;
}

}  // namespace

// A scan of a filter's result (g.mask: the survivors' predicate): the scan becomes one of
// (value, 1) pairs over the counted monoid, a dropped element the identity (identity, 0),
// so element i's scan is (the survivors' scan, the survivors up to i). The outputs read the
// value field; index() in them is the survivor's position, the count of survivors before
// it. The store (scan_tile.cpp) writes survivors only, at that position.
void survivors_scan(KernelContext& g) {
  const OpNode& user = *g.op;
  auto op = std::make_shared<OpNode>(user);
  op->monoid = counted_monoid(user.monoid);
  op->values = Expr::make_tuple({g.value, Expr::constant(Value::from_uint(ScalarType::U64, 1))});
  op->output_types = {op->monoid.type()};
  g.value = op->values;
  const Expr pair = Expr::result(op, 0, op->monoid.type());
  const Expr value = Expr::get(pair, 0), position = survivor_position(pair, user.scan_kind);
  for (auto& o : g.outputs)
    o = substitute(o, [&](const Expr& e) {
      if (e.kind() == ExprKind::Result && e.node().op.get() == &user) return value;
      return e.kind() == ExprKind::Index ? position : Expr();
    });
  g.op = std::move(op);
}

void adopt_filter_outputs(const Program& program, std::vector<KernelContext>& groups, std::vector<int>& output_ids) {
  std::vector<int> left;
  for (int id : output_ids) {
    // The output with index() (the position among the survivors) a placeholder leaf, its
    // filters resolved: the survivors' value and predicate at element i. (A memo of its own:
    // it is keyed by node address, and the rewritten nodes die with it.)
    const Expr placeholder = Expr::param("survivor_position", ScalarType::I64);
    const Expr o = substitute(program.outputs()[static_cast<std::size_t>(id)],
                              [&](const Expr& e) { return e.kind() == ExprKind::Index ? placeholder : Expr(); });
    Expr mask;
    FilterMemo resolved;
    const Expr value = resolve_filters(o, mask, resolved);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KernelContext& s) {
      return compacts_survivors(s) && same_structure(s.mask, mask);
    });
    if (g == groups.end()) {
      left.push_back(id);
      continue;
    }
    const Expr position = survivor_position(Expr::result(g->op, 0, g->op->monoid.type()), g->op->scan_kind);
    g->outputs.push_back(substitute(value, [&](const Expr& e) { return same_node(e, placeholder) ? position : Expr(); }));
    g->output_ids.push_back(id);
  }
  output_ids = std::move(left);
}

bool is_scan(OpKind k) { return k == OpKind::Scan || k == OpKind::SegmentedScan || k == OpKind::ScanByKey; }

const OpNode* scan_of(const Expr& output) {
  std::set<const OpNode*> scans;
  std::set<const ExprNode*> seen;
  collect_scans(output, scans, seen);
  if (scans.size() > 1) unsupported("an output that combines the results of several scans");
  return scans.empty() ? nullptr : *scans.begin();
}

std::vector<KernelContext> group_scans(const PlanContext& c, const std::vector<int>& output_ids, FilterMemo& memo) {
  const Program& program = c.program;
  std::vector<KernelContext> groups;
  for (int id : output_ids) {
    const Expr& o = program.outputs()[static_cast<std::size_t>(id)];
    const OpNode* op = scan_of(o);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KernelContext& x) { return x.op.get() == op; });
    if (g == groups.end()) {
      KernelContext fresh = context_in(c);
      for (const auto& p : program.ops())
        if (p.get() == op) fresh.op = p;
      groups.push_back(std::move(fresh));
      g = groups.end() - 1;
    }
    g->outputs.push_back(o);
    g->output_ids.push_back(id);
  }
  for (auto& g : groups) {
    g.value = resolve_filters(g.op->values, g.mask, memo);
    if (!g.mask.valid()) continue;
    if (g.op->kind != OpKind::Scan)
      throw GraphError(std::string("codegen: a ") + op_name(g.op->kind) + " of a filter's result (over the compacted "
                       "survivors) is not supported in one program yet; run the filter first (its result is a device "
                       "array) and pass that to " + op_name(g.op->kind));
    if (g.op->strategy == Strategy::ReduceThenScan)
      throw GraphError("codegen: a scan of a filter's result is one look-back pass that compacts as it scans; "
                       "strategy reduce_then_scan does not apply to it, leave the strategy automatic");
    survivors_scan(g);
  }
  return groups;
}

void emit_scans(const std::vector<KernelContext>& groups, Plan& plan) {
  for (const auto& g : groups) {
    const std::size_t at = plan.kernels.size();
    if (compacts_survivors(g)) {  // as long as the survivors: a count the kernel writes
      if (plan.output_shapes.empty()) plan.output_shapes.resize(g.plan->program.outputs().size());
      for (int id : g.output_ids) plan.output_shapes[static_cast<std::size_t>(id)].counted = true;
    }
    if (g.op->kind != OpKind::Scan)  // segmented_scan, scan_by_key: segmented_plan.cpp
      plan_segmented_scan(g, plan);
    else  // the registry: look-back (pipelined or staged for large n), or reduce_then_scan when asked
      plan_with_registry("scan", g, g.op->strategy, plan);
    // A plain scan's second kernel (for large n) applies the epilogue too.
    const std::string& last = plan.kernels.back().name;
    const bool two_lookbacks =
        g.op->kind == OpKind::Scan && g.op->strategy != Strategy::ReduceThenScan && plan.kernels.size() - at == 2;
    const std::string epilogue_of =
        two_lookbacks ? plan.kernels[at].name + "'s (and " + last + "'s)" : last + "'s";
    if (compacts_survivors(g)) {
      std::string ids;
      for (int id : g.output_ids) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      plan.notes.push_back("filter -> scan: " + last + " scans (value, survivor count) pairs over all n elements, "
                           "a dropped element the identity, and writes outputs " + ids + " (maps applied on the way) "
                           "at each survivor's position among the survivors: the compaction and the scan in one pass");
    } else {
      for (const auto& o : g.outputs)
        if (!stores_scan_itself(g, o))
          plan.notes.push_back("scan -> map: the map is " + epilogue_of + " epilogue, applied before the store");
    }
    if (g.folds_scanned)
      plan.notes.push_back("index() among a filter's survivors: " + last + " counts the survivors before each "
                           "element (an exclusive scan) and folds the reduction over them after the scan, in one pass");
    for (const auto& r : g.reduces)
      plan.notes.push_back("scan + reduction: " + to_string(r.op->values) + " folded with " + r.op->monoid.name() + " in " +
                           last + "'s pass over the input (read once), per-tile folds combined in tile order");
  }
}

void plan_position_scans(const PlanContext& c, std::vector<PlannedReduce>& reduces, std::vector<KernelContext>& groups) {
  for (auto& r : reduces) {
    if (!r.survivor_position.valid()) continue;
    // Its result comes after the reductions and the scans before it: none of them may read it.
    auto refuse_reader = [&](const std::vector<Expr>& exprs, const std::string& reader) {
      std::set<const ExprNode*> seen, inputs, params;
      std::set<const OpNode*> scalars;
      for (const auto& e : exprs) collect_leaves(e, seen, inputs, params, scalars);
      if (scalars.count(r.fused.op.get()))
        throw GraphError("codegen: " + reader + " reads the result of a reduction over index() among a filter's "
                         "survivors, which a scan's pass computes after the other reductions and scans; that is not "
                         "supported in one program yet");
    };
    for (const auto& other : reduces) refuse_reader({other.fused.value, other.fused.mask}, to_string(other.fused.op->values));
    for (const auto& scan : groups) {
      std::vector<Expr> exprs = scan.outputs;
      exprs.push_back(scan.value);
      exprs.push_back(scan.mask);
      refuse_reader(exprs, "the scan " + to_string(scan.op->values));
    }
    // The scan: survivors before each element (exclusive), a count per element.
    const std::shared_ptr<OpNode> op = survivor_count_scan(r.fused.mask, ScalarType::U64);
    KernelContext g = context_in(c);
    g.op = op;
    g.value = op->values;
    g.folds_scanned = true;
    const Expr position = Expr::cast(ScalarType::I64, Expr::result(op, 0, ScalarType::U64));
    r.fused.value = substitute(r.fused.value,
                               [&](const Expr& e) { return same_node(e, r.survivor_position) ? position : Expr(); });
    g.reduces.push_back(r.fused);
    r.folded_into_scan = true;
    groups.push_back(std::move(g));
  }
}

// A reduction is folded into a look-back scan's kernel when that reads every input the
// reduction reads (one pass serves both), the reduction's strategy is automatic, and its
// result is needed only after the scans: no reduction or scan reads it (those run before
// or in the scan kernel), and it reads no result of another folded reduction. Array
// outputs and array ops, which may read it, run after the scans.
void fold_reductions_into_scans(std::vector<PlannedReduce>& reduces, std::vector<KernelContext>& groups) {
  if (groups.empty()) return;
  std::set<const OpNode*> read_by_reductions;
  std::vector<std::set<const ExprNode*>> inputs_of(reduces.size());
  std::vector<std::set<const OpNode*>> scalars_of(reduces.size());
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    std::set<const ExprNode*> seen, params;
    collect_leaves(reduces[j].fused.value, seen, inputs_of[j], params, scalars_of[j]);
    collect_leaves(reduces[j].fused.mask, seen, inputs_of[j], params, scalars_of[j]);
    read_by_reductions.insert(scalars_of[j].begin(), scalars_of[j].end());
  }
  std::set<const OpNode*> read_by_scans, folded;
  for (auto& g : groups) {
    fill_scan_leaves(g);
    for (const auto& [op, slot] : g.plan->slot_of)
      if (std::count(g.leaves.scalars_read.begin(), g.leaves.scalars_read.end(), slot)) read_by_scans.insert(op);
  }
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    PlannedReduce& r = reduces[j];
    const OpNode* op = r.fused.op.get();
    if (r.folded_into_scan) continue;  // plan_position_scans
    if (r.strategy != Strategy::Automatic || inputs_of[j].empty() || read_by_reductions.count(op) ||
        read_by_scans.count(op))
      continue;
    if (std::any_of(scalars_of[j].begin(), scalars_of[j].end(), [&](const OpNode* d) { return folded.count(d) > 0; }))
      continue;
    for (auto& g : groups) {
      if (g.op->kind != OpKind::Scan || g.op->strategy == Strategy::ReduceThenScan) continue;
      std::set<const ExprNode*> scan_inputs;
      for (const auto& in : g.leaves.inputs) scan_inputs.insert(in.get());
      if (!std::includes(scan_inputs.begin(), scan_inputs.end(), inputs_of[j].begin(), inputs_of[j].end())) continue;
      g.reduces.push_back(r.fused);
      fill_scan_leaves(g);
      r.folded_into_scan = true;
      folded.insert(op);
      break;
    }
  }
}
}  // namespace fuseflow::codegen
