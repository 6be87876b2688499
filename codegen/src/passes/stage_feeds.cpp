// A filter's result among the keys or values of scan_by_key, reduce_by_key or a sort
// (counting_sort, sort, sort_by_key): the staging pass (stages.cpp) cuts the program before
// the op. Stage 1 compacts the op's operands (keys and values zipped, so one compaction and
// one count) into an intermediate with the count the device wrote; the op then runs over
// that intermediate's n slots, of which the first `count` are the survivors, and the
// program reads its results as filter(result, mask), the survivors' part, with no host round
// trip (the first slots: index() beside them is the slot's index):
//
//   scan_by_key   looks back only: its first `count` results are those of the survivors;
//   a sort        keys past the count are a key that sorts last (out of the bins' range,
//                 or every ordered bit set), so, the sort being stable, the survivors
//                 sorted fill the first `count` positions;
//   reduce_by_key keys past the count are one run of their own, told apart by a flag
//                 field in front of the keys (0 for a survivor, 1 past the count): the
//                 runs of flag 0 are the survivors' runs, the last run (if any) the padding.
//
//   segmented_reduce, segmented_scan by offsets: the offsets index the survivors, as in
//                 the CPU reference; stage 2 reads them as
//                 select(offset <= count, offset, -1), so an offset past the survivors
//                 is one the kernel's own check flags (offsets outside [0, n] or
//                 decreasing), and the runtime then names the bad offset from the CPU
//                 reference. The reduction's results are one per segment (no mask); the
//                 scan's are the survivors' part of its n slots.
//   reduce        over index() beside a filter's result (the position among the
//                 survivors), read by another reduction or a scan: the planner computes
//                 such a reduction in a scan's pass after every other reduction and scan,
//                 so none could read it. Stage 1 compacts its values (index() there the
//                 position, as a compaction's map has it); stage 2 reduces
//                 filter(staged, index() < count), a masked reduction the readers follow.
#include <limits>
#include <map>
#include <set>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

bool reads_filter(const Expr& e) {
  if (!e.valid()) return false;
  for (const Expr& leaf : array_leaves(e))
    if (leaf.kind() == ExprKind::Result && leaf.node().op->kind == OpKind::Filter) return true;
  return false;
}

// A key that sorts last: for a counting sort one outside [0, bins), which goes after every
// bin (-1, or an unsigned type's largest value: when even that is a bin, it is the last bin
// a key can reach); for a radix sort one whose ordered bits are all set (u32 as it is, i32
// with the sign flipped, f32 the NaN 0x7fffffff).
Expr largest_key(const OpNode& op) {
  const ScalarType t = op.keys.type().scalar();
  if (op.bins > 0 && Type(t).is_signed_integer()) return Expr::cast(Type(t), Expr(-1LL));
  if (op.bins > 0) return Expr::cast(Type(t), Expr(Value::from_uint(ScalarType::U64, ~0ULL)));
  switch (t) {
    case ScalarType::U32: return Expr(Value::from_uint(t, 0xFFFFFFFFu));
    case ScalarType::I32: return Expr(Value::from_int(t, std::numeric_limits<int>::max()));
    case ScalarType::F32: return Expr(Value::from_double(t, std::numeric_limits<double>::quiet_NaN()));
    default: break;
  }
  throw GraphError("codegen: sort keys of " + op.keys.type().name() + " (a sort of a filter's result takes u32, i32 or "
                   "f32 keys, or a bin count)");
}

Expr zero_of(ScalarType t) { return Expr::cast(Type(t), Expr(0LL)); }

// Whether `e` reads index() outside the ops it reads (beside them, not inside one).
bool reads_index(const Expr& e, std::set<const void*>& seen) {
  if (!e.valid() || e.kind() == ExprKind::Result || !seen.insert(e.get()).second) return false;
  if (e.kind() == ExprKind::Index) return true;
  for (const Expr& a : e.args())
    if (reads_index(a, seen)) return true;
  return false;
}

// The reductions whose results `e` reads (not through other ops).
void reads_reductions(const Expr& e, std::set<const void*>& seen, std::set<const OpNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    if (e.node().op->kind == OpKind::Reduce) out.insert(e.node().op.get());
    return;
  }
  for (const Expr& a : e.args()) reads_reductions(a, seen, out);
}

void input_names(const Expr& e, std::set<const void*>& seen, std::map<std::string, const ExprNode*>& names,
                 bool& clash) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) {
    const auto [at, fresh] = names.emplace(e.node().name, e.get());
    clash = clash || (!fresh && at->second != e.get());
  }
  if (e.kind() == ExprKind::Result && seen.insert(e.node().op.get()).second)
    for (const Expr* x : {&e.node().op->values, &e.node().op->predicate, &e.node().op->keys, &e.node().op->offsets})
      input_names(*x, seen, names, clash);
  for (const Expr& a : e.args()) input_names(a, seen, names, clash);
}

}  // namespace

std::set<const OpNode*> position_reductions_read(const Program& program) {
  std::set<const OpNode*> read;
  for (const auto& op : program.ops()) {
    if (op->kind != OpKind::Reduce && op->kind != OpKind::Scan) continue;
    std::set<const void*> seen;
    for (const Expr* e : {&op->values, &op->predicate}) reads_reductions(*e, seen, read);
  }
  std::set<const OpNode*> out;
  for (const auto& op : program.ops()) {
    std::set<const void*> seen;
    if (read.count(op.get()) && reads_filter(op->values) && reads_index(op->values, seen)) out.insert(op.get());
  }
  return out;
}

// Whether two different inputs of `exprs` have one name.
bool names_clash(const std::vector<Expr>& exprs) {
  std::set<const void*> seen;
  std::map<std::string, const ExprNode*> names;
  bool clash = false;
  for (const Expr& e : exprs) input_names(e, seen, names, clash);
  return clash;
}

bool feeds_on_filter(const OpNode& op) {
  const bool reads = reads_filter(op.keys) || reads_filter(op.values);
  if (!reads) return false;
  return op.kind == OpKind::ScanByKey || op.kind == OpKind::ReduceByKey || op.kind == OpKind::CountingSort ||
         op.kind == OpKind::SegmentedReduce || op.kind == OpKind::SegmentedScan;
}

Expr feed_operands(const OpNode& op) {
  if (op.keys.valid() && op.values.valid()) return Expr::make_tuple({op.keys, op.values});
  return op.keys.valid() ? op.keys : op.values;
}

FeedCut feed_cut(const std::shared_ptr<const OpNode>& op, const Expr& staged, const Expr& count) {
  const bool both = op->keys.valid() && op->values.valid();
  const Expr keys = op->keys.valid() ? (both ? Expr::get(staged, 0) : staged) : Expr();
  const Expr values = op->values.valid() ? (both ? Expr::get(staged, 1) : staged) : Expr();
  const Expr survivor = Expr::binary(BinaryOp::Lt, Expr::index(),
                                     Expr::cast(ScalarType::I64, Expr::gather(count, Expr(0LL), false)));
  auto x = std::make_shared<OpNode>(*op);
  x->keys = keys;
  x->values = values;
  FeedCut cut;
  if (op->kind == OpKind::Reduce) {  // the survivors' values, masked by the count
    x->values = fuseflow::filter(staged, survivor);
    cut.op = x;
    cut.results.push_back(Expr::result(x, 0, op->output_types[0]));
    return cut;
  }
  if (op->kind == OpKind::SegmentedReduce || op->kind == OpKind::SegmentedScan) {
    // Offsets past the survivors (the count) become -1, which the kernel flags.
    const Expr offset = Expr::cast(ScalarType::I64, op->offsets);
    const Expr inside = Expr::binary(BinaryOp::Le, offset, Expr::cast(ScalarType::I64, Expr::gather(count, Expr(0LL), false)));
    x->offsets = Expr::select(inside, offset, Expr(-1LL));
    cut.op = x;
    if (op->kind == OpKind::SegmentedScan) cut.mask = survivor;  // a reduction: one result per segment, no mask
    cut.results.push_back(Expr::result(x, 0, op->output_types[0]));
    return cut;
  }
  if (op->kind == OpKind::CountingSort) x->keys = Expr::select(survivor, keys, largest_key(*op));
  if (op->kind != OpKind::ReduceByKey) {
    cut.op = x;
    cut.mask = survivor;
    for (std::size_t i = 0; i < op->output_types.size(); ++i)
      cut.results.push_back(Expr::result(x, static_cast<int>(i), op->output_types[i]));
    return cut;
  }
  // reduce_by_key: keys (flag, key fields...), the flag 1 past the count, the fields 0 there.
  const Type& kt = op->keys.type();
  const int fields = kt.is_tuple() ? static_cast<int>(kt.fields().size()) : 1;
  std::vector<Expr> flagged = {Expr::select(survivor, Expr(0), Expr(1))};
  for (int f = 0; f < fields; ++f) {
    const Expr field = kt.is_tuple() ? Expr::get(keys, f) : keys;
    flagged.push_back(Expr::select(survivor, field, zero_of(field.type().scalar())));
  }
  x->keys = Expr::make_tuple(flagged);
  x->output_types[0] = x->keys.type();
  cut.op = x;
  const Expr runs = Expr::result(x, 0, x->output_types[0]);
  cut.mask = Expr::binary(BinaryOp::Eq, Expr::get(runs, 0), Expr(0));
  std::vector<Expr> key_fields;
  for (int f = 0; f < fields; ++f) key_fields.push_back(Expr::get(runs, f + 1));
  cut.results.push_back(kt.is_tuple() ? Expr::make_tuple(key_fields) : key_fields.front());
  cut.results.push_back(Expr::result(x, 1, op->output_types[1]));
  return cut;
}

}  // namespace fuseflow::codegen
