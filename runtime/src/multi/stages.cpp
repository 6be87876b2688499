// Reductions read inside expressions, over shards: the program split into stages
// (stages.hpp). Every node is rebuilt through the DSL's checked constructors, once per
// program (the staging is cached), so each stage's program keeps its nodes from run to run
// and the ShardedRuntime's and the Runtimes' caches find it.
#include "stages.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "fuseflow/frontend/reference.hpp"
#include "shard_plan.hpp"

namespace fuseflow::detail {
namespace {

// The scalar reductions whose results are read other than as an output of their own (in
// an output's expression or an op's operands), in the order first reached.
class ReadReductions {
 public:
  explicit ReadReductions(const std::vector<Expr>& outputs) {
    for (const Expr& o : outputs) visit(o, true);
  }
  std::vector<Expr> found;

 private:
  void visit(const Expr& e, bool root) {
    if (!e.valid()) return;
    if (e.kind() == ExprKind::Result) {
      const OpNode* op = e.node().op.get();
      if (!root && is_reduction_result(e) && read_.insert(op).second) found.push_back(e);
      if (ops_.insert(op).second)  // the op's operands, once
        for (const Expr* x : {&op->values, &op->predicate, &op->offsets, &op->keys}) visit(*x, false);
      return;
    }
    if (!seen_.insert(e.get()).second) return;
    for (const Expr& a : e.args()) visit(a, false);
  }
  std::set<const ExprNode*> seen_;
  std::set<const OpNode*> ops_, read_;
};

// Whether `e` reads a scalar reduction's result, through the ops it reads too.
bool reads_reduction(const Expr& e, std::map<const ExprNode*, bool>& memo) {
  if (!e.valid()) return false;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  bool out = false;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    out = is_reduction_result(e);
    for (const Expr* x : {&op.values, &op.predicate, &op.offsets, &op.keys}) out = out || reads_reduction(*x, memo);
  } else {
    for (const Expr& a : e.args()) out = out || reads_reduction(a, memo);
  }
  memo.emplace(e.get(), out);
  return out;
}

Expr param_of(const Type& t, const std::string& name, std::vector<Expr>& fields) {
  if (t.is_scalar()) {
    Expr p = Expr::param(name, t);
    fields.push_back(p);
    return p;
  }
  std::vector<Expr> parts;
  for (std::size_t i = 0; i < t.fields().size(); ++i)
    parts.push_back(param_of(t.fields()[i], name + "_" + std::to_string(i), fields));
  return Expr::make_tuple(std::move(parts));
}

// Rebuilds expressions with some nodes replaced (`leaf`), ops included: an op whose
// operands changed is made again through its DSL constructor; unchanged nodes are kept.
struct Substitute {
  std::map<const ExprNode*, Expr> leaf;
  std::map<const ExprNode*, Expr> memo;
  std::map<const OpNode*, std::vector<Expr>> ops;  // rebuilt op: its results (empty: unchanged)

  Expr operator()(const Expr& e) {
    if (!e.valid()) return e;
    if (auto it = leaf.find(e.get()); it != leaf.end()) return it->second;
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
    Expr out = e;
    if (e.kind() == ExprKind::Result) {
      const std::vector<Expr>& made = rebuild(e.node().op);
      if (!made.empty()) out = made.at(static_cast<std::size_t>(e.node().index));
    } else if (!e.args().empty()) {
      std::vector<Expr> args;
      bool changed = false;
      for (const Expr& a : e.args()) {
        args.push_back((*this)(a));
        changed = changed || !same_node(args.back(), a);
      }
      if (changed) out = e.with_args(std::move(args));
    }
    memo.emplace(e.get(), out);
    return out;
  }

  const std::vector<Expr>& rebuild(const std::shared_ptr<const OpNode>& node) {
    if (auto it = ops.find(node.get()); it != ops.end()) return it->second;
    const OpNode& op = *node;
    const Expr v = (*this)(op.values), p = (*this)(op.predicate), o = (*this)(op.offsets), k = (*this)(op.keys);
    std::vector<Expr> made;
    const bool changed = !same_node(v, op.values) || !same_node(p, op.predicate) || !same_node(o, op.offsets) ||
                         !same_node(k, op.keys);
    if (changed) switch (op.kind) {
        case OpKind::Reduce: made = {reduce(v, op.monoid, op.strategy)}; break;
        case OpKind::Scan: made = {scan(v, op.monoid, op.scan_kind, op.strategy)}; break;
        case OpKind::Filter: made = {filter(v, p)}; break;
        case OpKind::SegmentedReduce: made = {segmented_reduce(v, o, op.monoid)}; break;
        case OpKind::SegmentedScan: made = {segmented_scan(v, o, op.monoid, op.scan_kind)}; break;
        case OpKind::ScanByKey: made = {scan_by_key(k, v, op.monoid, op.scan_kind)}; break;
        case OpKind::ReduceByKey: {
          const KeyedResult r = reduce_by_key(k, v, op.monoid);
          made = {r.keys, r.values};
          break;
        }
        case OpKind::Histogram:
          made = {v.valid() ? histogram(k, v, op.bins) : histogram(k, op.bins, op.output_types.at(0))};
          break;
        default:
          throw GraphError(std::string("sharded run: ") + op_name(op.kind) +
                           " is not supported over shards yet (sorting ops run on one GPU)");
      }
    return ops.emplace(node.get(), std::move(made)).first->second;
  }
};

}  // namespace

// The checked gathers of `p` whose table is an input (other tables are refused by the
// shard plan), in the order first reached.
void checked_gathers(const Expr& e, std::set<const ExprNode*>& seen, std::vector<Expr>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Gather && e.node().index == 0 && e.args()[0].kind() == ExprKind::Input) out.push_back(e);
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    for (const Expr* x : {&op.values, &op.predicate, &op.offsets, &op.keys}) checked_gathers(*x, seen, out);
    return;
  }
  for (const Expr& a : e.args()) checked_gathers(a, seen, out);
}

std::shared_ptr<const Staging> plan_stages(const Program& program) {
  std::vector<Expr> current = program.outputs();
  auto st = std::make_shared<Staging>(Staging{std::nullopt, {}, std::nullopt, {}, {}, program});
  {
    std::set<const ExprNode*> seen;
    std::vector<Expr> gathers;
    for (const Expr& o : current) checked_gathers(o, seen, gathers);
    if (!gathers.empty()) {
      Substitute unchecked;
      std::vector<Expr> firsts, sizes;
      const Expr none = Expr(Value(static_cast<long long>(INT64_MAX)));
      for (std::size_t j = 0; j < gathers.size(); ++j) {
        const Expr& g = gathers[j];
        Expr size = Expr::param("ff_table_size" + std::to_string(j), ScalarType::I64);
        Expr at = Expr::cast(ScalarType::I64, g.args()[1]);
        Expr bad = Expr::binary(BinaryOp::Or, Expr::binary(BinaryOp::Lt, at, Expr(Value(0LL))),
                                Expr::binary(BinaryOp::Ge, at, size));
        // (the global position where bad, else INT64_MAX; the index): argmin keeps the first bad one.
        firsts.push_back(reduce(Expr::make_tuple({Expr::select(bad, Expr::index(), none), at}),
                                Monoid::builtin(MonoidKind::ArgMin)));
        sizes.push_back(size);
        unchecked.leaf.emplace(g.get(), Expr::gather(g.args()[0], g.args()[1], false));
      }
      st->check.emplace(Staging::Check{Program(firsts), gathers, sizes});
      for (Expr& o : current) o = unchecked(o);
    }
  }
  for (int s = 0;; ++s) {
    const ReadReductions read{current};
    if (read.found.empty()) break;
    // The reductions that read no other reduction's result run in this stage; the others
    // wait for their values.
    std::map<const ExprNode*, bool> memo;
    std::vector<Expr> ready;
    for (const Expr& r : read.found) {
      const OpNode& op = *r.node().op;
      bool waits = false;
      for (const Expr* x : {&op.values, &op.predicate, &op.offsets, &op.keys}) waits = waits || reads_reduction(*x, memo);
      if (!waits) ready.push_back(r);
    }
    if (ready.empty()) throw InternalError("sharded run: no reduction to run first in a program's stages");
    Substitute sub;
    std::vector<std::vector<Expr>> params;
    for (std::size_t j = 0; j < ready.size(); ++j) {
      std::vector<Expr> fields;
      sub.leaf.emplace(ready[j].get(),
                       param_of(ready[j].type(), "ff_stage" + std::to_string(s) + "_" + std::to_string(j), fields));
      params.push_back(std::move(fields));
    }
    st->stages.push_back({Program(ready), std::move(params)});
    for (Expr& o : current) o = sub(o);
  }
  if (st->stages.empty() && !st->check) return nullptr;
  std::vector<Expr> rest;
  for (const Expr& o : current) {
    const bool sharded = is_array(o) || o.kind() == ExprKind::Result;
    st->rest_index.push_back(sharded ? static_cast<int>(rest.size()) : -1);
    st->epilogue.push_back(sharded ? Expr() : o);
    if (sharded) rest.push_back(o);
  }
  if (!rest.empty()) st->rest.emplace(std::move(rest));
  return st;
}

Value evaluate_epilogue(const Expr& e, const std::vector<std::pair<const ExprNode*, Value>>& values) {
  Substitute sub;
  // The parameters the expression reads, by node: a constant of the bound value (cast to
  // the parameter's type when the binding was of another).
  std::map<const ExprNode*, const Value*> bound;
  for (const auto& [node, v] : values) bound[node] = &v;
  std::vector<Expr> stack = {e};
  std::set<const ExprNode*> seen;
  while (!stack.empty()) {
    const Expr x = stack.back();
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    if (x.kind() == ExprKind::Param) {
      auto it = bound.find(x.get());
      if (it == bound.end())
        throw GraphError("sharded run: parameter '" + x.node().name + "' is not bound");
      Expr c = Expr::constant(*it->second);
      sub.leaf.emplace(x.get(), c.type() == x.type() ? c : Expr::cast(x.type(), c));
    }
    for (const Expr& a : x.args()) stack.push_back(a);
  }
  return evaluate_constant(sub(e));
}

namespace {

// The bindings of `p`'s inputs and parameters among `all`.
ShardedBindings bindings_of(const Program& p, const ShardedBindings& all) {
  ShardedBindings out;
  for (const auto& [e, b] : all) {
    bool used = false;
    for (const Expr& x : p.inputs()) used = used || same_node(x, e);
    for (const Expr& x : p.params()) used = used || same_node(x, e);
    if (used) out.emplace_back(e, b);
  }
  return out;
}

}  // namespace

std::vector<ShardedResult> run_stages(const Staging& st, const ShardedBindings& bindings, const RunSharded& run) {
  for (const auto& binding : bindings) {
    const Expr& e = binding.first;
    bool used = false;
    for (const Expr& x : st.original.inputs()) used = used || same_node(x, e);
    for (const Expr& x : st.original.params()) used = used || same_node(x, e);
    if (!used)
      throw GraphError(std::string("sharded run: ") + (e.kind() == ExprKind::Input ? "input '" : "parameter '") +
                       (e.valid() ? e.node().name : std::string()) + "' is bound but not used by this program");
  }
  ShardedBindings all = bindings;
  // The first bad index of every checked gather, before anything else runs (a table not
  // bound to an array: the program's own run below says so).
  bool tables_bound = true;
  ShardedBindings sub;
  if (st.check) {
    sub = bindings_of(st.check->program, bindings);
    for (std::size_t j = 0; j < st.check->gathers.size(); ++j) {
      const Expr& table = st.check->gathers[j].args()[0];
      long long length = -1;
      for (const auto& [e, b] : bindings)
        if (same_node(e, table) && (b.is_replicated() || b.is_array()))
          length = static_cast<long long>(b.is_replicated() ? b.host().size() : b.layout().global_size());
      tables_bound = tables_bound && length >= 0;
      sub.emplace_back(st.check->table_sizes[j], ShardedBinding(Value(length)));
    }
  }
  if (st.check && tables_bound) {
    const std::vector<ShardedResult> firsts = run(st.check->program, sub);
    for (std::size_t j = 0; j < firsts.size(); ++j) {
      const Value v = firsts[j].value();
      const long long at = v[0].as<long long>();
      if (at == INT64_MAX) continue;
      const Expr& g = st.check->gathers[j];
      long long length = 0;
      for (const auto& [e, b] : sub)
        if (same_node(e, st.check->table_sizes[j])) length = b.scalar().as<long long>();
      throw GraphError("gather: the index at position " + std::to_string(at) + " is " +
                       std::to_string(v[1].as<long long>()) + ", outside the table '" + g.args()[0].node().name +
                       "' of " + std::to_string(length) + " elements (" + to_string(g.args()[1]) + ")");
    }
  }
  std::vector<std::pair<const ExprNode*, Value>> values;  // the parameters an epilogue may read
  for (const auto& [e, b] : bindings)
    if (e.kind() == ExprKind::Param && !b.is_array() && !b.is_replicated()) values.emplace_back(e.get(), b.scalar());
  for (const Staging::Stage& stage : st.stages) {
    std::vector<ShardedResult> got = run(stage.program, bindings_of(stage.program, all));
    for (std::size_t j = 0; j < got.size(); ++j) {
      std::vector<Value> fields;
      flatten_value(got[j].value(), fields);
      for (std::size_t f = 0; f < fields.size(); ++f) {
        all.emplace_back(stage.params[j][f], ShardedBinding(fields[f]));
        values.emplace_back(stage.params[j][f].get(), fields[f]);
      }
    }
  }
  std::vector<ShardedResult> rest;
  if (st.rest) rest = run(*st.rest, bindings_of(*st.rest, all));
  std::vector<ShardedResult> out;
  for (std::size_t i = 0; i < st.rest_index.size(); ++i) {
    if (st.rest_index[i] >= 0) out.push_back(std::move(rest[static_cast<std::size_t>(st.rest_index[i])]));
    else out.emplace_back(evaluate_epilogue(st.epilogue[i], values));
  }
  return out;
}

}  // namespace fuseflow::detail
