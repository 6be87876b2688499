// The planner: program -> kernels. Maps are inlined into the reduction that consumes
// them (the emitters evaluate the expression on each loaded element); a reduction of a
// filter's result becomes a masked reduction (a filter's result as a program output is a
// compaction: filter_plan.cpp); reductions that do not depend on each other
// share one kernel and one pass over the inputs; a reduction used by a later map splits
// the program there, its result staying on the device in a scalar slot; array outputs are
// computed by a final element-wise kernel.
#include <algorithm>
#include <map>
#include <set>

#include "array_ops.hpp"
#include "compact_context.hpp"
#include "policy.hpp"
#include "kernel_context.hpp"
#include "scan_context.hpp"

namespace fuseflow::codegen {

Kernel emit_map(const std::vector<Expr>& outputs, const std::vector<int>& output_ids, const ReduceGroup& leaves,
                const Target& t);

namespace {

[[noreturn]] void unsupported(const std::string& what) {
  throw GraphError("codegen: " + what + " is not supported by this version of fuseflow's code generator yet");
}

// Filter resolution (see resolve_filters): a node's substitute is memoised with the
// predicates of the filters substituted below it, so every use of a shared filtered
// expression gets its mask.
void add_conjuncts(std::vector<Expr>& to, const std::vector<Expr>& from) {
  for (const auto& c : from)
    if (std::none_of(to.begin(), to.end(), [&](const Expr& t) { return same_node(t, c); })) to.push_back(c);
}
bool reads_index(const Expr& e) {
  if (e.kind() == ExprKind::Index) return true;
  return std::any_of(e.args().begin(), e.args().end(), [](const Expr& a) { return reads_index(a); });
}
const ResolvedFilters& resolve(const Expr& e, FilterMemo& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  ResolvedFilters r{e, {}, false};
  if (e.kind() == ExprKind::Result && !e.node().op->scalar_output) {
    const OpNode& op = *e.node().op;
    if (op.kind != OpKind::Filter) unsupported(std::string("using the array result of ") + op_name(op.kind) + " in a map");
    const ResolvedFilters& predicate = resolve(op.predicate, memo);
    add_conjuncts(r.conjuncts, predicate.conjuncts);
    add_conjuncts(r.conjuncts, {predicate.expr});
    const ResolvedFilters& values = resolve(op.values, memo);
    add_conjuncts(r.conjuncts, values.conjuncts);
    r.expr = values.expr;
    r.filtered = true;
  } else if (!e.args().empty()) {
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : e.args()) {
      const ResolvedFilters& arg = resolve(a, memo);
      add_conjuncts(r.conjuncts, arg.conjuncts);
      r.filtered = r.filtered || arg.filtered;
      args.push_back(arg.expr);
      changed = changed || !same_node(args.back(), a);
    }
    // index() means the position in the array the expression maps over: among a filter's
    // survivors when it maps a filter's result, which a masked (uncompacted) kernel does not know.
    if (r.filtered && reads_index(e))
      throw GraphError("codegen: " + to_string(e) +
                       " reads index() beside a filter's result, where it means the position among the survivors; "
                       "that is not supported yet: zip the index before filtering, filter(zip(x, index()), p)");
    if (changed) r.expr = e.with_args(std::move(args));
  }
  return memo.emplace(e.get(), std::move(r)).first->second;
}
}  // namespace

Expr resolve_filters(const Expr& e, Expr& mask, FilterMemo& memo) {
  const ResolvedFilters& r = resolve(e, memo);
  for (const auto& c : r.conjuncts) mask = mask.valid() ? (mask && c) : c;
  return r.expr;
}

namespace {

// Leaves of an expression: inputs, parameters and scalar results it reads.
void collect_leaves(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& inputs,
                    std::set<const ExprNode*>& params, std::set<const OpNode*>& scalars) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) inputs.insert(e.get());
  if (e.kind() == ExprKind::Param) params.insert(e.get());
  if (e.kind() == ExprKind::Result && e.node().op->scalar_output) scalars.insert(e.node().op.get());
  for (const auto& a : e.args()) collect_leaves(a, seen, inputs, params, scalars);
}

struct PlannedReduce {
  FusedReduce fused;
  int stage = 0;
  Strategy strategy = Strategy::Automatic;
  bool folded_into_scan = false;  // computed by a scan's kernel (fold_reductions_into_scans)
};

}  // namespace

void fill_leaves(ReduceGroup& g, const Program& p, const std::vector<Expr>& exprs, const std::map<const OpNode*, int>& slot_of) {
  std::set<const ExprNode*> seen, inputs, params;
  std::set<const OpNode*> scalars;
  for (const auto& e : exprs) collect_leaves(e, seen, inputs, params, scalars);
  for (std::size_t i = 0; i < p.inputs().size(); ++i)
    if (inputs.count(p.inputs()[i].get())) {
      g.inputs.push_back(p.inputs()[i]);
      g.input_ids.push_back(static_cast<int>(i));
    }
  for (std::size_t i = 0; i < p.params().size(); ++i)
    if (params.count(p.params()[i].get())) {
      g.params.push_back(p.params()[i]);
      g.param_ids.push_back(static_cast<int>(i));
    }
  for (const auto* op : scalars) g.scalars_read.push_back(slot_of.at(op));
  std::sort(g.scalars_read.begin(), g.scalars_read.end());
}

namespace {

// ---- scans ---------------------------------------------------------------------------
// A program output over a scan's result (the scan itself, or a map of it) is written by
// the scan's kernel: the scan's input map is inlined into its loads (prologue), and the
// output's map is the epilogue applied before the store. One kernel per scan writes every
// output that reads it. Scans run after the reductions, so their maps may read
// reductions' results; a reduction over the scan's inputs whose result nothing before the
// scan needs is folded into the scan kernel's pass instead (fold_reductions_into_scans).
// Segmented scans (segmented_scan, scan_by_key) are planned alike, by segmented_plan.cpp.
// A scan of a filter's result is rejected: by definition (the CPU reference) it scans the
// compacted survivors, whose count only the compaction kernel knows, on the device; a
// masked scan over all n elements is scan(select(p, x, identity)).

bool is_scan(OpKind k) { return k == OpKind::Scan || k == OpKind::SegmentedScan || k == OpKind::ScanByKey; }

void collect_scans(const Expr& e, std::set<const OpNode*>& scans, std::set<const ExprNode*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result && is_scan(e.node().op->kind)) scans.insert(e.node().op.get());
  for (const auto& a : e.args()) collect_scans(a, scans, seen);
}

const OpNode* scan_of(const Expr& output) {
  std::set<const OpNode*> scans;
  std::set<const ExprNode*> seen;
  collect_scans(output, scans, seen);
  if (scans.size() > 1) unsupported("an output that combines the results of several scans");
  return scans.empty() ? nullptr : *scans.begin();
}

std::vector<ScanGroup> group_scans(const Program& program, const std::vector<int>& output_ids, const ReduceGroup& context,
                                   const ScanPolicy& policy, FilterMemo& memo) {
  std::vector<ScanGroup> groups;
  for (int id : output_ids) {
    const Expr& o = program.outputs()[static_cast<std::size_t>(id)];
    const OpNode* op = scan_of(o);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ScanGroup& x) { return x.op.get() == op; });
    if (g == groups.end()) {
      ScanGroup fresh;
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
    if (g.mask.valid())
      throw GraphError("codegen: a scan of a filter's result (the prefixes of the compacted survivors) is not "
                       "supported in one program yet; run the filter first (its result is a device array) and scan "
                       "that, or for a masked scan over all n elements write scan(select(p, x, identity))");
    g.leaves.program_text = context.program_text;
    g.leaves.slot_types = context.slot_types;
    g.leaves.slot_of = context.slot_of;
    g.policy = policy;
  }
  return groups;
}

// The leaves the scan kernel reads: its map, its outputs' epilogues and the maps of the
// reductions folded into it.
void fill_scan_leaves(ScanGroup& g, const Program& program) {
  g.leaves.inputs.clear();
  g.leaves.input_ids.clear();
  g.leaves.params.clear();
  g.leaves.param_ids.clear();
  g.leaves.scalars_read.clear();
  std::vector<Expr> exprs = {g.value};
  if (g.mask.valid()) exprs.push_back(g.mask);
  if (g.op->keys.valid()) exprs.push_back(g.op->keys);  // scan_by_key
  exprs.insert(exprs.end(), g.outputs.begin(), g.outputs.end());
  for (const auto& r : g.reduces) {
    exprs.push_back(r.value);
    if (r.mask.valid()) exprs.push_back(r.mask);
  }
  fill_leaves(g.leaves, program, exprs, g.leaves.slot_of);
}

void emit_scans(std::vector<ScanGroup>& groups, const Program& program, const ReduceGroup& context,
                const Policies& policies, const Target& target, Plan& plan) {
  for (auto& g : groups) {
    const int at = static_cast<int>(plan.kernels.size());
    const Type& t = g.op->monoid.type();
    std::vector<Kernel> ks;
    if (g.op->kind != OpKind::Scan) {  // segmented_scan, scan_by_key: segmented_plan.cpp
      ks.push_back(plan_segmented_scan({program, context.program_text, context.slot_types, context.slot_of, policies}, g, target, plan));
    } else if (g.op->strategy == Strategy::ReduceThenScan) {
      ks = emit_scan_reduce_then_scan(g, target);
      plan.steps.push_back({StepSpec::Kind::ReduceThenScan, at, 3, -1, t.size(), INT64_MAX, 0, false});
    } else {
      ks.push_back(emit_scan_lookback(g, target, scan_tiling(g, true)));
      // Large scans take a second kernel of the same scan where one applies: the pipelined
      // scan on sm_90 and later, else the staged tile.
      if (pipelined_scan_applies(g, target))
        ks.push_back(emit_scan_pipelined(g, target));
      else if (const std::optional<ScanTiling> staged = staged_scan_tiling(g))
        ks.push_back(emit_scan_lookback(g, target, *staged));
      plan.steps.push_back(lookback_step(at, static_cast<int>(ks.size()), t, g.policy.staged_from));
    }
    // A plain scan's second kernel (for large n) applies the epilogue too.
    const bool two_lookbacks = g.op->kind == OpKind::Scan && g.op->strategy != Strategy::ReduceThenScan && ks.size() == 2;
    const std::string epilogue_of = two_lookbacks ? ks[0].name + "'s (and " + ks[1].name + "'s)" : ks.back().name + "'s";
    for (const auto& o : g.outputs)
      if (o.kind() != ExprKind::Result)
        plan.notes.push_back("scan -> map: the map is " + epilogue_of + " epilogue, applied before the store");
    for (const auto& r : g.reduces)
      plan.notes.push_back("scan + reduction: " + to_string(r.op->values) + " folded with " + r.op->monoid.name() + " in " +
                           ks.back().name + "'s pass over the input (read once), per-tile folds combined in tile order");
    for (auto& k : ks) plan.kernels.push_back(std::move(k));
  }
}

// A reduction is folded into a look-back scan's kernel when that reads every input the
// reduction reads (one pass serves both), the reduction's strategy is automatic, and its
// result is needed only after the scans: no reduction or scan reads it (those run before
// or in the scan kernel), and it reads no result of another folded reduction. Array
// outputs and array ops, which may read it, run after the scans.
void fold_reductions_into_scans(std::vector<PlannedReduce>& reduces, std::vector<ScanGroup>& groups,
                                const Program& program) {
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
    fill_scan_leaves(g, program);
    for (const auto& [op, slot] : g.leaves.slot_of)
      if (std::count(g.leaves.scalars_read.begin(), g.leaves.scalars_read.end(), slot)) read_by_scans.insert(op);
  }
  for (std::size_t j = 0; j < reduces.size(); ++j) {
    PlannedReduce& r = reduces[j];
    const OpNode* op = r.fused.op.get();
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
      fill_scan_leaves(g, program);
      r.folded_into_scan = true;
      folded.insert(op);
      break;
    }
  }
}
// ---- end of scans --------------------------------------------------------------------

}  // namespace

Plan plan(const Program& program, const Target& target, const PlanOptions& options) {
  validate(options);
  const Policies policies = policies_for(target, options);
  Plan plan;
  std::map<const OpNode*, int> slot_of;
  std::vector<PlannedReduce> reduces;
  FilterMemo memo;

  for (const auto& op : program.ops()) {
    if (op->kind == OpKind::Filter) continue;  // fused into its consumers below
    if (is_scan(op->kind)) continue;           // group_scans, emit_scans
    if (op->kind == OpKind::Histogram || op->kind == OpKind::SegmentedReduce || op->kind == OpKind::CountingSort ||
        op->kind == OpKind::ReduceByKey)
      continue;  // plan_array_op
    if (op->kind != OpKind::Reduce) unsupported(op_name(op->kind));
    PlannedReduce r;
    Expr mask;
    r.fused.op = op;
    r.fused.value = resolve_filters(op->values, mask, memo);
    r.fused.mask = mask;
    r.fused.output_slot = static_cast<int>(plan.scalars.size());
    // A reduction runs after every reduction whose result its map reads, also through a
    // filter it consumes (the filter's values and predicate are substituted in by now).
    std::set<const ExprNode*> seen, inputs, params;
    std::set<const OpNode*> scalars;
    collect_leaves(r.fused.value, seen, inputs, params, scalars);
    collect_leaves(r.fused.mask, seen, inputs, params, scalars);
    for (const auto* dep : scalars)
      for (const auto& other : reduces)
        if (other.fused.op.get() == dep) r.stage = std::max(r.stage, other.stage + 1);
    r.strategy = op->strategy;
    slot_of[op.get()] = r.fused.output_slot;
    std::size_t size = op->monoid.type().size(), align = op->monoid.type().alignment();
    std::size_t offset = (plan.scalar_bytes + align - 1) / align * align;
    plan.scalars.push_back({op->monoid.type(), offset});
    plan.scalar_bytes = offset + size;
    reduces.push_back(std::move(r));
  }
  std::vector<Type> slot_types;
  for (const auto& s : plan.scalars) slot_types.push_back(s.type);

  // Outputs: reductions read their slot; arrays are computed by the final map kernel.
  std::vector<Expr> array_outputs;
  std::vector<int> array_output_ids;
  std::vector<int> scan_output_ids;
  std::vector<int> array_op_output_ids;
  std::vector<int> filter_output_ids;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    if (o.kind() == ExprKind::Result && o.node().op->scalar_output) {
      plan.output_scalar.push_back(slot_of.at(o.node().op.get()));
    } else {
      plan.output_scalar.push_back(-1);
      if (is_array_op(o)) {
        array_op_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      if (compacted_filter(o)) {  // a filter's compacted array, or a map of it: plan_filters
        filter_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      if (scan_of(o)) {
        scan_output_ids.push_back(static_cast<int>(i));
        continue;
      }
      Expr mask;
      array_outputs.push_back(resolve_filters(o, mask, memo));
      array_output_ids.push_back(static_cast<int>(i));
    }
  }

  const std::string text = to_string(program);
  ReduceGroup scan_context;
  scan_context.program_text = text;
  scan_context.slot_types = slot_types;
  scan_context.slot_of = slot_of;
  std::vector<ScanGroup> scans = group_scans(program, scan_output_ids, scan_context, policies.scan, memo);
  fold_reductions_into_scans(reduces, scans, program);

  int stages = 0;
  for (const auto& r : reduces)
    if (!r.folded_into_scan) stages = std::max(stages, r.stage + 1);
  for (int stage = 0; stage < stages; ++stage) {
    // Automatic reductions of one stage share a kernel: chunked when every monoid is
    // commutative, else staged (which keeps order and is right for every monoid).
    std::map<Strategy, std::vector<const PlannedReduce*>> groups;
    bool all_commutative = true;
    for (const auto& r : reduces)
      if (r.stage == stage && r.strategy == Strategy::Automatic && !r.folded_into_scan)
        all_commutative = all_commutative && r.fused.op->monoid.is_commutative();
    for (const auto& r : reduces) {
      if (r.stage != stage || r.folded_into_scan) continue;
      Strategy s = r.strategy;
      if (s == Strategy::Automatic) s = all_commutative ? Strategy::Chunked : Strategy::Staged;
      groups[s].push_back(&r);
    }
    for (const auto& [strategy, members] : groups) {
      ReduceGroup g;
      g.strategy = strategy;
      g.program_text = text;
      g.slot_types = slot_types;
      g.slot_of = slot_of;
      std::vector<Expr> exprs;
      for (const auto* r : members) {
        g.reduces.push_back(r->fused);
        exprs.push_back(r->fused.value);
        if (r->fused.mask.valid()) exprs.push_back(r->fused.mask);
      }
      fill_leaves(g, program, exprs, slot_of);
      if (g.inputs.empty()) unsupported("a reduction that reads no input array");
      const int at = static_cast<int>(plan.kernels.size());
      if (strategy == Strategy::Tree) {
        std::vector<Kernel> ks = emit_reduce_tree(g, target);
        plan.steps.push_back({StepSpec::Kind::Tree, at, 2});
        for (auto& k : ks) plan.kernels.push_back(std::move(k));
        continue;
      }
      if (strategy == Strategy::Atomic) {
        // One atomic kernel per reduction: each needs its own atomic on its own result.
        for (const auto& r : g.reduces) {
          ReduceGroup single = g;
          single.reduces = {r};
          std::vector<Kernel> ks = emit_reduce_atomic(single, target);
          for (auto& k : ks) {
            plan.steps.push_back({StepSpec::Kind::OnePass, static_cast<int>(plan.kernels.size())});
            plan.kernels.push_back(std::move(k));
          }
        }
        continue;
      }
      Kernel k = strategy == Strategy::Chunked ? emit_reduce_chunked(g, target) : emit_reduce_staged(g, target);
      plan.steps.push_back({StepSpec::Kind::OnePass, at});
      if (members.size() > 1)
        plan.notes.push_back(std::to_string(members.size()) + " reductions share kernel " + k.name +
                             ": one pass over the inputs");
      plan.kernels.push_back(std::move(k));
    }
    if (stage + 1 < stages)
      plan.notes.push_back("a reduction's result is used by a later map: the program splits after stage " +
                           std::to_string(stage) + ", the scalar stays on the device");
  }
  emit_scans(scans, program, scan_context, policies, target, plan);
  for (int i : array_op_output_ids) {
    const ArrayOpContext context{program, text, slot_types, slot_of, policies};
    plan_array_op(context, program.outputs()[static_cast<std::size_t>(i)].node().op, i, target, plan);
  }
  if (!filter_output_ids.empty()) plan_filters({program, text, slot_types, slot_of, policies}, filter_output_ids, target, plan);
  if (!array_outputs.empty()) {
    ReduceGroup leaves;
    leaves.program_text = text;
    leaves.slot_types = slot_types;
    leaves.slot_of = slot_of;
    fill_leaves(leaves, program, array_outputs, slot_of);
    Kernel k = emit_map(array_outputs, array_output_ids, leaves, target);
    plan.steps.push_back({StepSpec::Kind::OnePass, static_cast<int>(plan.kernels.size())});
    plan.kernels.push_back(std::move(k));
  }
  return plan;
}

}  // namespace fuseflow::codegen
