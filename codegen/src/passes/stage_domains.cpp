// Segment offsets the program computes, of another length than its elements (issues 21 and
// 25): CSR offsets as a scan of row lengths, `segmented_reduce(vals, scan(lengths, plus,
// exclusive), plus)`, a sort's keys, or a map of an offsets input that a broadcast beside
// other ops reads (`broadcast(segmented_reduce(x, offs + 0, max), offs + 0)`). The staging
// pass (stages.cpp) computes each such offsets expression in stage 1, alone, into an
// intermediate of its own length (Intermediate::own_length): that part of stage 1 runs over
// the domain of the inputs it reads (StepSpec::over: its launches' n, grids, scratch and the
// intermediate are sized by that domain's length, not the elements'), and stage 2 reads the
// intermediate as an offsets input of that domain: a segmented op's off_ pointer and
// offsets_count, a broadcast's binary search (cut again there: its segmented reductions,
// then the ops beside it).
#include <algorithm>

#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

bool offsets_leaf(const Expr& e) { return e.kind() == ExprKind::Input || e.kind() == ExprKind::Rows; }

bool reads_array_result(const Expr& e) {
  for (const Expr& leaf : array_leaves(e))
    if (leaf.kind() == ExprKind::Result) return true;
  return false;
}

// The offsets stage 1 cannot give a length the inputs know: a filter's survivors or
// reduce_by_key's runs (as many as the device counts).
void check_counted(const Expr& offsets) {
  for (const Expr& leaf : array_leaves(offsets)) {
    if (leaf.kind() != ExprKind::Result) continue;
    const OpKind k = leaf.node().op->kind;
    if (k == OpKind::Filter || k == OpKind::ReduceByKey)
      throw GraphError("codegen: segment offsets " + to_string(offsets) + " read the result of " + op_name(k) +
                       ", whose length only the device counts; offsets computed in the program need a length its "
                       "inputs give (a scan, sort or map of an input array); meanwhile output them and bind them as "
                       "an input of a second program");
  }
}

void broadcast_offsets(const Expr& e, std::set<const void*>& seen, std::set<const ExprNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (seen.insert(&op).second)
      for (const Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets}) broadcast_offsets(*x, seen, out);
    return;
  }
  if (e.kind() == ExprKind::Broadcast && e.node().index == 0 && !offsets_leaf(e.args()[1])) {
    check_counted(e.args()[1]);
    out.insert(e.args()[1].get());
  }
  for (const Expr& a : e.args()) broadcast_offsets(a, seen, out);
}

// GraphError where `e` reads staged offsets as elements (of the elements' length, not theirs);
// a gather's table has a length of its own (read as one, an intermediate of the offsets' length).
void element_reads(const Expr& e, const std::set<const ExprNode*>& offsets, std::set<const void*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (offsets.count(e.get()))
    throw GraphError("codegen: the segment offsets " + to_string(e) + " are read as elements too (they have the length "
                     "of the inputs they are computed from, not the elements'); read them as offsets only, or output "
                     "them and bind them as an input of a second program");
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (seen.insert(&op).second)
      for (const Expr* x : {&op.values, &op.predicate, &op.keys}) element_reads(*x, offsets, seen);
    return;
  }
  const bool skip_first = e.kind() == ExprKind::Gather;  // the table
  const std::size_t last = e.kind() == ExprKind::Broadcast ? 1 : e.args().size();  // not the offsets
  for (std::size_t i = skip_first ? 1 : 0; i < last; ++i) element_reads(e.args()[i], offsets, seen);
}

}  // namespace

std::set<const ExprNode*> staged_offsets(const Program& program) {
  std::set<const ExprNode*> out;
  for (const auto& op : program.ops()) {
    if (!op->offsets.valid() || offsets_leaf(op->offsets) || !reads_array_result(op->offsets)) continue;
    check_counted(op->offsets);
    out.insert(op->offsets.get());
  }
  std::set<const void*> seen;
  for (const Expr& o : program.outputs()) broadcast_offsets(o, seen, out);
  seen.clear();
  for (const Expr& o : program.outputs())  // an output that is the offsets themselves is written by stage 1
    if (!out.count(o.get())) element_reads(o, out, seen);
  return out;
}

std::vector<StagePart> stage_parts(std::size_t results, const std::function<bool(std::size_t)>& spread,
                                   const std::set<int>& own_lengths) {
  std::vector<StagePart> parts;
  for (const int k : own_lengths) parts.push_back({{static_cast<std::size_t>(k)}, false, true});
  StagePart spreads{{}, true, false}, others{{}, false, false};
  for (std::size_t k = 0; k < results; ++k) {
    if (own_lengths.count(static_cast<int>(k))) continue;
    (spread(k) ? spreads : others).members.push_back(k);
  }
  for (StagePart* p : {&spreads, &others})
    if (!p->members.empty()) parts.push_back(std::move(*p));
  return parts;
}

void check_own_length(const Plan& part, const OutputShape& shape, const std::string& what) {
  if (part.fill_length >= 0 || part.fill_length_param >= 0)
    throw GraphError("codegen: segment offsets " + what + " computed from a fill or iota (their length is not an "
                     "input's); compute them from an input array, or output them and bind them as an input of a "
                     "second program");
  if (shape.fixed >= 0 || shape.counted || shape.less != 0)
    throw GraphError("codegen: segment offsets " + what + " have a length no input array gives (a histogram's bins, "
                     "a segmented op's segments); computed offsets must have the length of the inputs they read (a "
                     "scan, sort or map of an input array): meanwhile output them and bind them as an input of a "
                     "second program");
}

std::string mixed_lengths(const Expr& input, const std::string& offsets) {
  return "codegen: input '" + input.node().name + "' is read both as elements and through the segment offsets " +
         offsets + " computed from it, which have its length; the two have different lengths, so bind the offsets' "
         "source to an input of its own";
}

std::string one_line(const Program& p) {
  std::string s;
  for (const char ch : to_string(p)) s += ch == '\n' ? std::string("; ") : std::string(1, ch);
  if (s.size() >= 2) s.resize(s.size() - 2);
  return s;
}

int own_domain(const Program& program, const Program& stage, const std::vector<int>& stage_domain, Plan& joined,
               OwnInputs& own) {
  const std::string what = to_string(stage.outputs().at(0));
  std::vector<std::size_t> elements;
  int d = -1;
  for (std::size_t s = 0; s < stage.inputs().size(); ++s) {
    const auto at = std::find_if(program.inputs().begin(), program.inputs().end(),
                                 [&](const Expr& in) { return same_node(in, stage.inputs()[s]); });
    if (at == program.inputs().end() || stage_domain[s] != 0) continue;
    const auto i = static_cast<std::size_t>(at - program.inputs().begin());
    elements.push_back(i);
    if (auto it = own.find(static_cast<int>(i)); it != own.end()) d = it->second.first;
  }
  if (elements.empty())
    throw GraphError("codegen: the segment offsets " + what + " read no input array as their elements, so no input "
                     "gives their length; compute them from an input array");
  if (d < 0) d = joined.domains++;
  if (joined.input_domain.empty()) joined.input_domain.assign(program.inputs().size(), 0);
  for (const std::size_t i : elements) {
    if (joined.input_domain[i] != 0 && joined.input_domain[i] != d) throw GraphError(mixed_lengths(program.inputs()[i], what));
    joined.input_domain[i] = d;
    own.emplace(static_cast<int>(i), std::make_pair(d, what));
  }
  return d;
}

}  // namespace fuseflow::codegen
