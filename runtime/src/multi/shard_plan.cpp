// Rewrites a program for sharded execution. Every node is rebuilt through the DSL's own
// checked constructors (Expr::with_args, ff::reduce, ff::scan ...), so the rewritten program
// is planned and cached like any other: its structure is the same on every run, so
// the Runtime's program cache finds it.
#include "shard_plan.hpp"

#include "fuseflow/frontend/filter_lift.hpp"

#include <cstdint>
#include <map>
#include <set>
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
  Expr rank = Expr::param("ff_shard_rank", ScalarType::I64);
  Expr size = Expr::param("ff_shard_size", ScalarType::I64);
  Expr global_size = Expr::param("ff_global_size", ScalarType::I64);
  std::vector<ShardHalo> halos;
  std::vector<Expr> tables;                   // the gathers' tables (inputs)
  std::set<const ExprNode*> elementwise;      // inputs read element by element
  std::map<std::pair<const ExprNode*, int>, Expr> at_memo;  // (node, k) -> its value at i + k
  std::map<const ExprNode*, Expr> memo;
  std::map<const OpNode*, Expr> ops;  // old op -> its rewritten result (output 0)
  std::vector<ShardScan> scans;
  std::vector<Expr> totals;
  std::vector<ShardSegmented> segs;
  std::map<const OpNode*, int> seg_index;
  std::map<const OpNode*, KeyedResult> keyed;  // old reduce_by_key -> its rewritten results
  std::vector<ShardKeyScan> keyscans;
  std::vector<Expr> keyscan_totals;
  bool in_scan_values = false;
  bool device_carry = true;

  Expr rewrite(const Expr& e) {
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
    Expr out;
    switch (e.kind()) {
      case ExprKind::Index: out = Expr::binary(BinaryOp::Add, e, offset); break;
      case ExprKind::Input:
        elementwise.insert(e.get());
        out = e;
        break;
      case ExprKind::Constant:
      case ExprKind::Param:
      case ExprKind::Operand: out = e; break;
      case ExprKind::Result: out = rewrite_result(e); break;
      case ExprKind::Fill:
        if (fill_has_own_length(e))  // its n (a size or a parameter) is the whole array's, not a shard's
          throw GraphError("sharded run: " + to_string(e) + " has a length of its own, which a sharded run does not "
                           "split yet; run the program on one GPU");
        out = e.with_args({rewrite(e.args()[0]), rewrite(e.args()[1])});
        break;
      case ExprKind::Shift: out = shifted(e, 0); break;
      case ExprKind::Gather: {  // the table is whole on every rank
        const Expr& table = e.args()[0];
        if (table.kind() != ExprKind::Input)
          throw GraphError("sharded run: the table of " + to_string(e) + " must be an input (bound to a host array "
                           "or a sharded array), not a computed array; output it and bind it to a second run");
        bool known = false;
        for (const Expr& t : tables) known = known || same_node(t, table);
        if (!known) tables.push_back(table);
        out = Expr::gather(table, rewrite(e.args()[1]), e.node().index == 0);
        break;
      }
      case ExprKind::Broadcast:
      case ExprKind::Rows:  // per-segment values and row offsets span shards
        throw GraphError("sharded run: " + to_string(e) + " (a per-segment broadcast or row offsets) is not "
                         "supported by a sharded run yet; run the program on one GPU");
      default: {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) args.push_back(rewrite(a));
        out = e.with_args(std::move(args));
      }
    }
    memo.emplace(e.get(), out);
    return out;
  }

  // Whether global element g + k (g the global index) lies inside the array.
  Expr inside(std::int64_t k) {
    Expr at = Expr::binary(BinaryOp::Add, Expr::binary(BinaryOp::Add, Expr::index(), offset), Expr(Value(static_cast<long long>(k))));
    return Expr::binary(BinaryOp::And, Expr::binary(BinaryOp::Ge, at, Expr(Value(0LL))),
                        Expr::binary(BinaryOp::Lt, at, global_size));
  }

  // The value of element-wise `e` at element i + k (global positions; a shift's fill
  // where a shift inside it reads outside the array). Inputs read their own shard where
  // i + k lies in it, else the halo table of (input, k); index() is the global index + k.
  Expr shifted(const Expr& e, std::int64_t k) {
    const auto key = std::make_pair(e.get(), static_cast<int>(k));
    if (auto it = at_memo.find(key); it != at_memo.end()) return it->second;
    Expr out;
    switch (e.kind()) {
      case ExprKind::Input:
        elementwise.insert(e.get());
        out = k == 0 ? e : halo_read(e, static_cast<int>(k));
        break;
      case ExprKind::Index: out = Expr::binary(BinaryOp::Add, rewrite(e), Expr(Value(static_cast<long long>(k)))); break;
      case ExprKind::Constant:
      case ExprKind::Param: out = e; break;
      case ExprKind::Shift: {
        const std::int64_t j = k + e.node().index;
        if (j > INT32_MAX || j < INT32_MIN) throw GraphError("sharded run: shifts by more than 2^31 elements in all");
        out = Expr::select(inside(j), shifted(e.args()[0], j), rewrite(e.args()[1]));
        break;
      }
      case ExprKind::Result:
      case ExprKind::Gather:
      case ExprKind::Broadcast:
      case ExprKind::Rows:
      case ExprKind::Fill:
        throw GraphError("sharded run: a shift of " + to_string(e) + " is not supported over shards yet: the "
                         "shifted array must be an element-wise expression of inputs (its halo is the inputs' "
                         "elements on the neighbouring ranks); output it and shift it in a second run");
      default: {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) args.push_back(shifted(a, k));
        out = e.with_args(std::move(args));
      }
    }
    at_memo.emplace(key, out);
    return out;
  }

  // Input x at element i + k, k != 0: x's own shard where local i + k is inside it, else
  // entry j of the halo table: k < 0: j = i (table: x at off + j + k); k > 0:
  // j = i + k - size (table: x at off + size + j). The table's index is clamped, so that
  // the branch select does not take never reads outside it.
  Expr halo_read(const Expr& x, int k) {
    Expr table;
    for (const ShardHalo& h : halos)
      if (same_node(h.input, x) && h.k == k) table = h.table;
    if (!table.valid()) {
      table = Expr::input("ff_halo" + std::to_string(halos.size()), x.type());
      halos.push_back({x, k, table});
    }
    const auto count = static_cast<long long>(k < 0 ? -static_cast<std::int64_t>(k) : k);
    Expr i = Expr::index();  // the local index
    Expr kk = Expr(Value(static_cast<long long>(k)));
    Expr from_table = k < 0 ? Expr::binary(BinaryOp::Lt, i, Expr(Value(count)))
                            : Expr::binary(BinaryOp::Ge, Expr::binary(BinaryOp::Add, i, kk), size);
    Expr j = k < 0 ? i : Expr::binary(BinaryOp::Sub, Expr::binary(BinaryOp::Add, i, kk), size);
    j = Expr::call(MathFn::Min, {Expr::call(MathFn::Max, {j, Expr(Value(0LL))}), Expr(Value(count - 1))});
    const std::vector<std::byte> zero(x.type().size(), std::byte{0});  // any fill: never selected
    return Expr::select(from_table, Expr::gather(table, j, false),
                        Expr::shift(x, k, Expr::constant(Value::from_bytes(x.type(), zero.data()))));
  }

  Expr rewrite_result(const Expr& e) {
    const OpNode& op = *e.node().op;
    if (op.kind == OpKind::ReduceByKey) {
      auto it = keyed.find(&op);
      if (it == keyed.end())
        it = keyed.emplace(&op, reduce_by_key(rewrite(op.keys), rewrite(op.values), op.monoid)).first;
      return e.node().index == 0 ? it->second.keys : it->second.values;
    }
    if (auto it = ops.find(&op); it != ops.end()) return it->second;
    Expr out;
    switch (op.kind) {
      case OpKind::Reduce: out = reduce(rewrite(op.values), op.monoid, op.strategy); break;
      case OpKind::Filter: out = filter(rewrite(op.values), rewrite(op.predicate)); break;
      case OpKind::Histogram:  // weighted: the weights' sums (all-reduced like counts)
        out = op.values.valid() ? histogram(rewrite(op.keys), rewrite(op.values), op.bins)
                                : histogram(rewrite(op.keys), op.bins, op.output_types.at(0));
        break;
      case OpKind::Scan: {
        if (in_scan_values)
          throw GraphError("sharded run: a scan of a scan's result is not supported over shards yet");
        in_scan_values = true;
        Expr values = rewrite(op.values);
        in_scan_values = false;
        Expr local = scan(values, op.monoid, op.scan_kind, op.strategy);
        ShardScan s{op.monoid, op.scan_kind, {}, {}};
        Expr carry;
        if (device_carry && op.monoid.type().is_scalar()) {  // the ranks before's totals, folded on the device
          s.carries = Expr::input("ff_carries" + std::to_string(scans.size()), op.monoid.type());
          carry = Expr::gather(s.carries, rank, false);
        } else {
          carry = carry_expr(op.monoid.type(), "ff_carry" + std::to_string(scans.size()), s.carry_params);
        }
        std::map<const ExprNode*, Expr> sub;
        // The shard's scan with the ranks before it folded in: carry . local[i], a map of
        // the scan's result.
        out = substitute_operands(op.monoid.combine(), carry, local, sub);
        scans.push_back(std::move(s));
        totals.push_back(reduce(values, op.monoid));
        break;
      }
      case OpKind::SegmentedReduce:
      case OpKind::SegmentedScan: out = rewrite_segmented(op); break;
      case OpKind::ScanByKey: out = rewrite_scan_by_key(op); break;
      default:
        throw GraphError(std::string("sharded run: ") + op_name(op.kind) +
                         " is not supported over shards yet (scan_by_key and sorting ops run on one GPU)");
    }
    ops.emplace(&op, out);
    return out;
  }

  Expr rewrite_scan_by_key(const OpNode& op) {
    if (in_scan_values) throw GraphError("sharded run: a scan of a scan_by_key's result is not supported over shards yet");
    in_scan_values = true;
    Expr keys = rewrite(op.keys);
    Expr values = rewrite(op.values);
    in_scan_values = false;
    const std::string k = std::to_string(keyscans.size());
    ShardKeyScan ks;
    ks.monoid = op.monoid;
    ks.head_end = Expr::param("ff_key_head_end" + k, ScalarType::I64);
    Expr carry = carry_expr(op.monoid.type(), "ff_key_carry" + k, ks.carry_params);
    Expr local = scan_by_key(keys, values, op.monoid, op.scan_kind);
    std::map<const ExprNode*, Expr> sub;
    Expr out = Expr::select(Expr::binary(BinaryOp::Lt, Expr::index(), ks.head_end),
                            substitute_operands(op.monoid.combine(), carry, local, sub), local);
    // The shard's runs (their keys, values and last indices) for the combine.
    KeyedResult runs = reduce_by_key(keys, values, op.monoid);
    Expr leaf = keys;  // the index as an array of the keys' length (select reads a key)
    while (leaf.type().is_tuple()) leaf = Expr::get(leaf, 0);
    Expr index = Expr::select(Expr::binary(BinaryOp::Eq, leaf, leaf), Expr::index(), Expr::index());
    Expr last = reduce_by_key(keys, index, Monoid::builtin(MonoidKind::Max)).values;
    ks.totals_at = keyscan_totals.size();
    keyscan_totals.insert(keyscan_totals.end(), {runs.keys, runs.values, last});
    keyscans.push_back(std::move(ks));
    return out;
  }

  Expr rewrite_segmented(const OpNode& op) {
    const bool is_scan = op.kind == OpKind::SegmentedScan;
    if (op.offsets.kind() != ExprKind::Input)
      throw GraphError(std::string("sharded run: the offsets of a ") + op_name(op.kind) +
                       " must be an input bound to a host array (ff::HostArray) that every rank reads, not " +
                       to_string(op.offsets));
    if (is_scan && in_scan_values)
      throw GraphError("sharded run: a scan of a segmented_scan's result is not supported over shards yet");
    const std::string k = std::to_string(segs.size());
    ShardSegmented s;
    s.scan = is_scan;
    s.monoid = op.monoid;
    s.offsets = op.offsets;
    s.local_offsets = Expr::input("ff_seg_offsets" + k, ScalarType::I64);
    const bool outer = in_scan_values;
    in_scan_values = outer || is_scan;
    Expr values = rewrite(op.values);
    in_scan_values = outer;
    Expr out;
    if (!is_scan) {
      out = segmented_reduce(values, s.local_offsets, op.monoid);
    } else {
      Expr local = segmented_scan(values, s.local_offsets, op.monoid, op.scan_kind);
      s.head_end = Expr::param("ff_seg_head_end" + k, ScalarType::I64);
      Expr carry = carry_expr(op.monoid.type(), "ff_seg_carry" + k, s.carry_params);
      std::map<const ExprNode*, Expr> sub;
      // The shard's first, cut segment with the ranks before folded in: carry . local[i].
      out = Expr::select(Expr::binary(BinaryOp::Lt, Expr::index(), s.head_end),
                         substitute_operands(op.monoid.combine(), carry, local, sub), local);
      s.tail_offsets = Expr::input("ff_seg_tail" + k, ScalarType::I64);
      s.total = segmented_reduce(values, s.tail_offsets, op.monoid);
    }
    seg_index.emplace(&op, static_cast<int>(segs.size()));
    segs.push_back(std::move(s));
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

// Whether an expression reads index() outside the ops whose results it reads.
bool reads_index(const Expr& e) {
  if (e.kind() == ExprKind::Index) return true;
  if (e.kind() == ExprKind::Result) return false;
  for (const Expr& a : e.args())
    if (reads_index(a)) return true;
  return false;
}

// Every op's operands: a reduce's or histogram's result must not feed anything.
void check_uses(const Expr& e, const std::string& where) {
  std::vector<const OpNode*> used;
  result_leaves(e, used);
  for (const OpNode* op : used)
    if (op->kind == OpKind::Reduce || op->kind == OpKind::Histogram || op->kind == OpKind::SegmentedReduce ||
        op->kind == OpKind::ReduceByKey)
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

ShardPlan plan_sharded(const Program& program, bool device_carry) {
  // A filter's result mixed with other arrays or index() means those arrays at the
  // survivors' positions (ff::lift_filters); over shards that needs the survivors' global
  // positions, which this version does not compute.
  const Program lifted = lift_filters(program);
  for (std::size_t i = 0; i < program.outputs().size(); ++i)
    if (!same_node(lifted.outputs()[i], program.outputs()[i]))
      throw GraphError("sharded run: output " + std::to_string(i) + " (" + to_string(program.outputs()[i]) +
                       ") mixes a filter's result with other arrays or index(), which is not supported over "
                       "shards yet: run it with a plain Runtime on one GPU");
  for (const auto& op : program.ops()) {
    for (const Expr* e : {&op->values, &op->predicate, &op->offsets, &op->keys})
      if (e->valid()) check_uses(*e, std::string("the ") + op_name(op->kind));
  }
  Rewriter rw;
  rw.device_carry = device_carry;
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
    } else if (o.kind() == ExprKind::Result && o.node().op->kind == OpKind::SegmentedReduce) {
      kind = ShardedOutput::Segments;
    } else if (o.kind() == ExprKind::Result && o.node().op->kind == OpKind::ReduceByKey) {
      kind = ShardedOutput::Keyed;
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
      // index() beside a filter's result is the position among all the survivors, which a
      // shard does not know before the counts are combined.
      if (kind == ShardedOutput::Filter && reads_index(o))
        throw GraphError("sharded run: " + what +
                         " mixes a filter's result with other arrays or index(), which is not supported over "
                         "shards yet: run it with a plain Runtime on one GPU");
    }
    outputs.push_back(rw.rewrite(o));
    kinds.push_back(kind);
    monoids.push_back(m);
    all_bins.push_back(bins);
  }
  std::vector<int> seg_of, keyed_of;
  std::vector<ShardKeyed> keyed;
  std::map<const OpNode*, int> keyed_index;
  std::vector<const OpNode*> keyed_ops;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    const Expr& o = program.outputs()[i];
    seg_of.push_back(kinds[i] == ShardedOutput::Segments ? rw.seg_index.at(o.node().op.get()) : -1);
    keyed_of.push_back(-1);
    if (kinds[i] != ShardedOutput::Keyed) continue;
    const OpNode* op = o.node().op.get();
    auto [it, fresh] = keyed_index.emplace(op, static_cast<int>(keyed.size()));
    if (fresh) {
      keyed.push_back({op->monoid, SIZE_MAX, SIZE_MAX});
      keyed_ops.push_back(op);
    }
    keyed_of[i] = it->second;
    (o.node().index == 0 ? keyed[static_cast<std::size_t>(it->second)].keys
                         : keyed[static_cast<std::size_t>(it->second)].values) = i;
  }
  // Both results of every reduce_by_key: the combine compares the keys at the shards' ends.
  for (std::size_t k = 0; k < keyed.size(); ++k) {
    ShardKeyed& kd = keyed[k];
    const KeyedResult& r = rw.keyed.at(keyed_ops[k]);
    if (kd.keys == SIZE_MAX) {
      kd.keys = outputs.size();
      outputs.push_back(r.keys);
    }
    if (kd.values == SIZE_MAX) {
      kd.values = outputs.size();
      outputs.push_back(r.values);
    }
  }
  std::vector<Expr> totals = std::move(rw.totals);
  for (const ShardSegmented& s : rw.segs)
    if (s.scan) totals.push_back(s.total);
  for (ShardKeyScan& ks : rw.keyscans) ks.totals_at += totals.size();
  totals.insert(totals.end(), rw.keyscan_totals.begin(), rw.keyscan_totals.end());
  ShardPlan plan{Program(std::move(outputs)), std::move(rw.scans), std::move(totals), rw.offset, rw.rank,
                 std::move(kinds),           std::move(monoids),  std::move(all_bins), std::move(rw.segs),
                 std::move(seg_of),          std::move(keyed),    std::move(keyed_of), std::move(rw.keyscans),
                 {},                         {},                  rw.size,             rw.global_size};
  for (const Expr& t : rw.tables)
    if (rw.elementwise.count(t.get()))
      throw GraphError("sharded run: input '" + t.node().name + "' is the table of a gather and is read element by "
                       "element too; over shards a table is whole on every rank: bind a second input to it");
  plan.tables = std::move(rw.tables);
  plan.halos = std::move(rw.halos);
  // The halos are exchanged after the scans' totals pass, which cannot read them.
  if (!plan.halos.empty() && !plan.totals.empty()) {
    const Program first(plan.totals);
    for (const Expr& in : first.inputs())
      for (const ShardHalo& h : plan.halos)
        if (same_node(in, h.table))
          throw GraphError("sharded run: a scan of a shifted array (" + to_string(h.input) + " shifted by " +
                           std::to_string(h.k) + ") is not supported over shards yet; output the shifted array "
                           "and scan it in a second run");
  }
  // The offsets are replaced by each shard's own: read anywhere else, they would be an
  // array of another length than the shards.
  for (const ShardSegmented& s : plan.segs)
    for (const Expr& in : plan.main.inputs())
      if (same_node(in, s.offsets))
        throw GraphError("sharded run: input '" + s.offsets.node().name +
                         "' is the offsets of a segmented op and is read elsewhere too; over shards the offsets "
                         "can only be offsets");
  return plan;
}

}  // namespace fuseflow::detail
