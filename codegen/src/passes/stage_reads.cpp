// The staging pass's reads (stages.cpp): which ops it cuts the program after, and the
// refusal of reduce_by_key's runs mixed with arrays of another length. Split from
// stages.cpp by topic.
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

bool staged_kind(OpKind k) { return k == OpKind::CountingSort || k == OpKind::ReduceByKey; }

void broadcast_ops(const Expr& e, std::set<const void*>& seen, std::set<const OpNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (seen.insert(&op).second)
      for (const Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets}) broadcast_ops(*x, seen, out);
    return;
  }
  if (e.kind() == ExprKind::Broadcast && e.args()[0].kind() == ExprKind::Result &&
      (e.node().index == 1 || e.args()[1].kind() == ExprKind::Input))  // by key: always; by offsets: an input's
    out.insert(e.args()[0].node().op.get());
  for (const Expr& a : e.args()) broadcast_ops(a, seen, out);
}

}  // namespace

// The segmented reductions over an offsets input whose broadcasts the program reads beside
// ops of other kinds (which the broadcast path does not plan), and the reduce_by_key ops
// read through broadcast_by_key: stage 1, their results intermediates. None when every op
// is a segmented reduction (one step of the broadcast path).
std::set<const OpNode*> spread_ops(const Program& program) {
  const auto& ops = program.ops();
  if (std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op->kind == OpKind::SegmentedReduce; })) return {};
  std::set<const void*> seen;
  std::set<const OpNode*> out;
  for (const Expr& o : program.outputs()) broadcast_ops(o, seen, out);
  return out;
}

// The ops of a staged kind whose array result is read other than as a program output (or as
// the segment results a broadcast spreads, which the broadcast's own kernels compute); and
// scan_by_key where a filter reads its result (n elements, like a sort's: a map of it as an
// output is the scan's own epilogue, not cut); a segmented scan's likewise (read so where it
// scans a filter's survivors, stage_feeds.cpp).
void find_reads(const Expr& e, bool as_output, bool in_filter, std::set<const void*>& seen,
                std::set<const OpNode*>& read) {
  if (!e.valid()) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode* op = e.node().op.get();
    const bool scan = op->kind == OpKind::ScanByKey || op->kind == OpKind::SegmentedScan;
    if (!as_output && (staged_kind(op->kind) || (in_filter && scan))) read.insert(op);
    if (seen.insert(op).second)
      for (const Expr* x : {&op->values, &op->predicate, &op->keys, &op->offsets})
        find_reads(*x, false, op->kind == OpKind::Filter, seen, read);
    return;
  }
  if (!seen.insert(e.get()).second) return;
  for (std::size_t i = 0; i < e.args().size(); ++i)
    find_reads(e.args()[i], e.kind() == ExprKind::Broadcast && i == 0, in_filter, seen, read);
}

// reduce_by_key's results have one element per run, a count only the device knows: an
// element-wise expression (or an op's values, predicate and keys together) that mixes them
// with other arrays is refused, as their lengths may differ.
void check_runs_alone(const std::vector<Expr>& together, const std::set<const OpNode*>& read) {
  const OpNode* runs = nullptr;
  std::string other;
  for (const Expr& e : together)
    for (const Expr& leaf : array_leaves(e)) {
      const bool is_runs = leaf.kind() == ExprKind::Result && leaf.node().op->kind == OpKind::ReduceByKey &&
                           read.count(leaf.node().op.get());
      if (is_runs && (!runs || runs == leaf.node().op.get())) runs = leaf.node().op.get();
      else if (other.empty()) other = to_string(leaf);
    }
  if (runs && !other.empty())
    throw GraphError("codegen: " + to_string(together.front()) +
                     " mixes reduce_by_key's results (one element per run, as many as the device counts) with " +
                     other + ", an array of another length; read the runs alone, or run reduce_by_key first and bind "
                     "its results as inputs of a second program");
}

void check_runs(const Expr& e, std::set<const void*>& seen, const std::set<const OpNode*>& read) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (!seen.insert(&op).second) return;
    std::vector<Expr> together;
    for (const Expr* x : {&op.values, &op.predicate, &op.keys})
      if (x->valid()) together.push_back(*x);
    if (!together.empty()) check_runs_alone(together, read);
    for (const Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets}) check_runs(*x, seen, read);
    return;
  }
  for (const Expr& a : e.args()) check_runs(a, seen, read);
}

}  // namespace fuseflow::codegen
