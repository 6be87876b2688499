// Rewrites a program for sharded execution. Every node is rebuilt through the DSL's own
// checked constructors (Expr::with_args, ff::reduce, ff::scan ...), so the rewritten program
// is planned and cached like any other: its structure is the same on every run, so
// the Runtime's program cache finds it.
#include "shard_plan.hpp"

#include <map>
#include <string>

namespace fuseflow::detail {
namespace {

Expr carry_expr(const Type& t, const std::string& name, std::vector<Expr>& params) {
  if (t.is_scalar()) {
    Expr p = Expr::param(name, t);
    params.push_back(p);
    return p;
  }
  std::vector<Expr> fields;
  for (std::size_t i = 0; i < t.fields().size(); ++i)
    fields.push_back(carry_expr(t.fields()[i], name + "_" + std::to_string(i), params));
  return Expr::make_tuple(std::move(fields));
}

// combine(a, b) of `m` with its operands replaced.
Expr substitute_operands(const Expr& e, const Expr& a, const Expr& b, std::map<const ExprNode*, Expr>& memo) {
  if (e.kind() == ExprKind::Operand) return e.node().index == 0 ? a : b;
  if (e.args().empty()) return e;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  std::vector<Expr> args;
  for (const Expr& x : e.args()) args.push_back(substitute_operands(x, a, b, memo));
  Expr out = e.with_args(std::move(args));
  memo.emplace(e.get(), out);
  return out;
}

struct Rewriter {
  Expr offset = Expr::param("ff_shard_offset", ScalarType::I64);
  std::map<const ExprNode*, Expr> memo;
  std::map<const OpNode*, Expr> ops;  // old op -> its rewritten result (output 0)
  std::vector<ShardScan> scans;
  std::vector<Expr> totals;
  bool in_scan_values = false;

  Expr rewrite(const Expr& e) {
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
    Expr out;
    switch (e.kind()) {
      case ExprKind::Index: out = Expr::binary(BinaryOp::Add, e, offset); break;
      case ExprKind::Input:
      case ExprKind::Constant:
      case ExprKind::Param:
      case ExprKind::Operand: out = e; break;
      case ExprKind::Result: out = rewrite_result(e); break;
      case ExprKind::Gather:
      case ExprKind::Shift:  // they read other shards' elements
        throw GraphError("sharded run: " + to_string(e) + " reads elements at other positions, which a sharded "
                         "run does not support yet; run the program on one GPU");
      default: {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) args.push_back(rewrite(a));
        out = e.with_args(std::move(args));
      }
    }
    memo.emplace(e.get(), out);
    return out;
  }

  Expr rewrite_result(const Expr& e) {
    const OpNode& op = *e.node().op;
    if (auto it = ops.find(&op); it != ops.end()) return it->second;
    Expr out;
    switch (op.kind) {
      case OpKind::Reduce: out = reduce(rewrite(op.values), op.monoid, op.strategy); break;
      case OpKind::Filter: out = filter(rewrite(op.values), rewrite(op.predicate)); break;
      case OpKind::Histogram: out = histogram(rewrite(op.keys), op.bins, op.output_types.at(0)); break;
      case OpKind::Scan: {
        if (in_scan_values)
          throw GraphError("sharded run: a scan of a scan's result is not supported over shards yet");
        in_scan_values = true;
        Expr values = rewrite(op.values);
        in_scan_values = false;
        Expr local = scan(values, op.monoid, op.scan_kind, op.strategy);
        ShardScan s{op.monoid, op.scan_kind, {}};
        Expr carry = carry_expr(op.monoid.type(), "ff_carry" + std::to_string(scans.size()), s.carry_params);
        std::map<const ExprNode*, Expr> sub;
        // The shard's scan with the ranks before it folded in: carry . local[i], a map of
        // the scan's result.
        out = substitute_operands(op.monoid.combine(), carry, local, sub);
        scans.push_back(std::move(s));
        totals.push_back(reduce(values, op.monoid));
        break;
      }
      default:
        throw GraphError(std::string("sharded run: ") + op_name(op.kind) +
                         " is not supported over shards yet (segmented, by-key and sorting ops run on one GPU)");
    }
    ops.emplace(&op, out);
    return out;
  }
};

// The ops whose results an expression reads (not descending into those ops).
void result_leaves(const Expr& e, std::vector<const OpNode*>& out) {
  if (e.kind() == ExprKind::Result) {
    out.push_back(e.node().op.get());
    return;
  }
  for (const Expr& a : e.args()) result_leaves(a, out);
}

// Every op's operands: a reduce's or histogram's result must not feed anything.
void check_uses(const Expr& e, const std::string& where) {
  std::vector<const OpNode*> used;
  result_leaves(e, used);
  for (const OpNode* op : used)
    if (op->kind == OpKind::Reduce || op->kind == OpKind::Histogram)
      throw GraphError("sharded run: " + where + " uses the result of a " + op_name(op->kind) +
                       ", which is only known once the shards are combined; run it first and pass its value as a "
                       "parameter");
}

}  // namespace

void flatten_value(const Value& v, std::vector<Value>& out) {
  if (!v.is_tuple()) {
    out.push_back(v);
    return;
  }
  for (const Value& f : v.fields()) flatten_value(f, out);
}

ShardPlan plan_sharded(const Program& program) {
  for (const auto& op : program.ops()) {
    for (const Expr* e : {&op->values, &op->predicate, &op->offsets, &op->keys})
      if (e->valid()) check_uses(*e, std::string("the ") + op_name(op->kind));
  }
  Rewriter rw;
  std::vector<ShardedOutput> kinds;
  std::vector<Monoid> monoids;
  std::vector<std::int64_t> all_bins;
  std::vector<Expr> outputs;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    const std::string what = "output " + std::to_string(i) + " (" + to_string(o) + ")";
    ShardedOutput kind = ShardedOutput::Map;
    Monoid m;
    std::int64_t bins = 0;
    if (o.kind() == ExprKind::Result && o.node().op->kind == OpKind::Reduce) {
      kind = ShardedOutput::Reduce;
      m = o.node().op->monoid;
    } else if (o.kind() == ExprKind::Result && o.node().op->kind == OpKind::Histogram) {
      kind = ShardedOutput::Histogram;
      bins = o.node().op->bins;
    } else {
      if (!is_array(o)) throw GraphError("sharded run: " + what + " is a scalar that is not a reduction");
      check_uses(o, what);
      std::vector<const OpNode*> used;
      result_leaves(o, used);
      for (const OpNode* op : used)
        if (op->kind == OpKind::Filter) kind = ShardedOutput::Filter;
    }
    outputs.push_back(rw.rewrite(o));
    kinds.push_back(kind);
    monoids.push_back(m);
    all_bins.push_back(bins);
  }
  return ShardPlan{Program(std::move(outputs)), std::move(rw.scans), std::move(rw.totals), rw.offset,
                   std::move(kinds),           std::move(monoids),  std::move(all_bins)};
}

}  // namespace fuseflow::detail
