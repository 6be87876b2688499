// index() beside a filter's result inside a histogram: the position among the survivors
// (the CPU reference's definition: the histogram bins the compacted survivors, and index()
// in its bin or weight expression is a survivor's place among them). The histogram kernels
// are masked (a dropped element gets bin -1, nothing is compacted), so they do not know it.
// Planned in two kernels with no host round-trip:
//   1. a look-back scan (the scan family's strategy, deterministic) of select(mask, 1, 0)
//      over all n elements, exclusive: element i's count of survivors before it, which is
//      its position when it survives; written into an intermediate of n i64 in the run's
//      scratch (Plan::intermediates, Arg::Kind::Intermediate);
//   2. the histogram (any of its strategies) reading that intermediate as one more input,
//      in_ff_survivor_position, where its expressions read index().
// The scan writes 8 bytes per element that the histogram reads back: about 16 bytes per
// element more than a histogram without index(). Folding the histogram into the scan's own
// pass (as reductions over such an index() are, passes/scans.cpp) would save them; counts
// could take that, float sums would need a fixed order of additions (histogram_sorted.cpp sorts by bin).
#include <map>

#include "array_ops.hpp"
#include "strategy.hpp"

namespace fuseflow::codegen {

namespace {

bool reads(const Expr& e, bool filter) {
  if (!e.valid()) return false;
  if (filter && e.kind() == ExprKind::Result) return e.node().op->kind == OpKind::Filter;
  if (!filter && e.kind() == ExprKind::Index) return true;
  for (const auto& a : e.args())
    if (reads(a, filter)) return true;
  return false;
}

Expr replace_index(const Expr& e, const Expr& with, std::map<const ExprNode*, Expr>& memo) {
  if (e.kind() == ExprKind::Index) return with;
  if (e.args().empty() || e.kind() == ExprKind::Result) return e;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  std::vector<Expr> args;
  bool changed = false;
  for (const auto& a : e.args()) {
    args.push_back(replace_index(a, with, memo));
    changed = changed || !same_node(args.back(), a);
  }
  return memo.emplace(e.get(), changed ? e.with_args(std::move(args)) : e).first->second;
}

}  // namespace

std::shared_ptr<OpNode> survivor_count_scan(const Expr& mask, ScalarType t) {
  const auto constant = [&](int v) {
    return Expr::constant(t == ScalarType::U64 ? Value::from_uint(t, static_cast<std::uint64_t>(v)) : Value::from_int(t, v));
  };
  auto op = std::make_shared<OpNode>();
  op->kind = OpKind::Scan;
  op->values = mask.valid() ? Expr::select(mask, constant(1), constant(0)) : constant(1);
  op->monoid = Monoid::builtin(MonoidKind::Plus).instantiate(t, "scan");
  op->scan_kind = ScanKind::Exclusive;
  op->output_types = {t};
  return op;
}

bool reads_survivor_index(const OpNode& op) {
  for (const Expr* e : {&op.keys, &op.values})
    if (reads(*e, true) && reads(*e, false)) return true;
  return false;
}

Expr survivor_position_input() { return Expr::input("ff_survivor_position", ScalarType::I64); }

Expr with_survivor_position(const Expr& e, const Expr& position) {
  std::map<const ExprNode*, Expr> memo;
  return e.valid() && position.valid() ? replace_index(e, position, memo) : e;
}

int plan_survivor_positions(const PlanContext& c, const Expr& mask, const Expr& position, KernelContext& g,
                            Plan& plan) {
  // The scan: survivors before each element (exclusive), one i64 per element.
  const std::shared_ptr<OpNode> op = survivor_count_scan(mask, ScalarType::I64);
  KernelContext scan = context_in(c);
  scan.op = op;
  scan.value = op->values;
  scan.outputs = {Expr::result(op, 0, ScalarType::I64)};
  scan.output_ids = {g.output_ids.at(0)};  // its argument becomes the intermediate below
  scan.leaves = leaves_in(c, {scan.value});
  const int k = static_cast<int>(plan.intermediates.size());
  plan.intermediates.push_back({ScalarType::I64, "index() among the survivors of " + to_string(mask), -1, false});
  const int first = plan_with_registry("scan", scan, Strategy::Automatic, plan);
  for (std::size_t i = static_cast<std::size_t>(first); i < plan.kernels.size(); ++i)
    for (Arg& a : plan.kernels[i].args)
      if (a.kind == Arg::Kind::Output) a = {Arg::Kind::Intermediate, k, a.name, a.type};
  plan.notes.push_back("index() among a filter's survivors in a histogram: " + plan.kernels.back().name +
                       " writes each element's count of survivors before it (an exclusive scan) into intermediate " +
                       std::to_string(k) + ", which the histogram reads as index(); no host round-trip");
  // The histogram reads it as an input of its own, bound to the intermediate once emitted.
  g.leaves.inputs.push_back(position);
  g.leaves.input_ids.push_back(-1 - k);
  return k;
}

void bind_survivor_positions(Plan& plan, int first, int k) {
  for (std::size_t i = static_cast<std::size_t>(first); i < plan.kernels.size(); ++i)
    for (Arg& a : plan.kernels[i].args)
      if (a.kind == Arg::Kind::Input && a.index == -1 - k) a = {Arg::Kind::Intermediate, k, a.name, a.type};
}

}  // namespace fuseflow::codegen
