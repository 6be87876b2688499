// Gather and shift of computed arrays (issue 25). Kernels read a gather's table and a
// shifted array whole, as inputs (tab_<name>); a table or shifted array the program computes
// is made an input first, in one of two ways:
//
//   fused   gather(f(t, u, ...), idx), f an element-wise map of inputs (with constants,
//           parameters, reductions' results, index() and gathers of inputs): rewritten to
//           f(gather(t, idx), gather(u, idx), ...), index() the gathered position, so the
//           consumer applies the map to the elements it gathers (nothing is materialized;
//           a checked gather checks each input's read, the first bad index the same);
//           shift(f(x, ...), k, fill) with k < 0 (an element before): rewritten to
//           select(index() >= -k, f(shift(x, k, 0), ...), fill), index() + k in f, so the
//           stencil applies the map to the neighbours it loads; with k > 0 (an element
//           after) the test is index() + k < n, n spelled as the length of the first input
//           f reads element by element (tab_<x>_n, a kernel argument wherever shift(x, k, 0)
//           is read: the inputs of f have the program's n elements);
//   staged  anything else (a scan's, a sort's or another op's result of n elements, a map
//           of one): the staging pass (stages.cpp) computes it in stage 1
//           into an intermediate of n elements, which stage 2 reads as the table;
//   own     a gather's table of a length of its own that the run knows before it starts: a
//           histogram's bins (a plan-time count) or a segmented reduction's results (one
//           per segment: offsets - 1; a map of them is fused as above, the map applied to
//           what the gathers read from each): stage 1 computes it into an
//           intermediate of that length (Intermediate::fixed, ::less), stage 2 reads it as
//           the table, its length the intermediate's (Arg::Kind::IntermediateLength), so a
//           checked gather checks each index against the table's real length.
//
// A broadcast over ff::rows beside other ops than the row reductions is staged the same way:
// stage 1 is the per-row kernel writing the broadcast array (n elements), stage 2 reads it.
//
// Tables refused: the results of a filter or reduce_by_key (as many as the device counts),
// offsets of ff::rows, fills of a length of their own, bins or segments mixed with arrays
// of another length; a shifted array must have n elements.
#include <algorithm>

#include "fuseflow/frontend/filter_lift.hpp"
#include "../expr_emitter.hpp"
#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

bool element_wise(ExprKind k) {
  switch (k) {
    case ExprKind::Unary: case ExprKind::Binary: case ExprKind::Select: case ExprKind::Call:
    case ExprKind::Cast: case ExprKind::MakeTuple: case ExprKind::Get: case ExprKind::RawCuda: return true;
    default: return false;
  }
}

// A histogram's bins or a segmented reduction's results: a table of a length of its own.
bool own_kind(const Expr& leaf) {
  return leaf.kind() == ExprKind::Result &&
         (leaf.node().op->kind == OpKind::Histogram || leaf.node().op->kind == OpKind::SegmentedReduce);
}

// Whether the table `e` is an element-wise map of inputs that a gather can apply to the
// elements it reads (`reads` set when it reads an input at all); with `results`, of
// histograms' bins and segmented reductions' results too (each gathered, staged alone).
bool map_of_inputs(const Expr& e, bool& reads, bool results = false) {
  switch (e.kind()) {
    case ExprKind::Input: reads = true; return true;
    case ExprKind::Constant: case ExprKind::Param: case ExprKind::Index: return true;
    case ExprKind::Result:
      if (results && own_kind(e)) reads = true;
      return e.node().op->scalar_output || (results && own_kind(e));
    case ExprKind::Gather: return e.args()[0].kind() == ExprKind::Input && map_of_inputs(e.args()[1], reads, results);
    default: break;
  }
  if (!element_wise(e.kind())) return false;
  return std::all_of(e.args().begin(), e.args().end(), [&](const Expr& a) { return map_of_inputs(a, reads, results); });
}

// The map `e` at position `idx`: its inputs gathered there, index() the position.
Expr at(const Expr& e, const Expr& idx, bool checked, std::map<const ExprNode*, Expr>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = e;
  switch (e.kind()) {
    case ExprKind::Input: r = Expr::gather(e, idx, checked); break;
    case ExprKind::Result:
      if (!e.node().op->scalar_output) r = Expr::gather(e, idx, checked);  // bins, segments: staged
      break;
    case ExprKind::Index: r = Expr::cast(ScalarType::I64, idx); break;
    case ExprKind::Gather: r = Expr::gather(e.args()[0], at(e.args()[1], idx, checked, memo), e.node().index == 0); break;
    default:
      if (element_wise(e.kind())) {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) args.push_back(at(a, idx, checked, memo));
        r = e.with_args(std::move(args));
      }
  }
  return memo.emplace(e.get(), r).first->second;
}

// The map `e` at the element k after (k < 0: before) each: its inputs shifted by k (their
// fill unused), index() + k. Nothing when an input is not of a scalar type. `first` is set
// to the first input shifted (read element by element: not a gather's table).
Expr shifted(const Expr& e, int k, std::map<const ExprNode*, Expr>& memo, Expr& first) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = e;
  switch (e.kind()) {
    case ExprKind::Input:
      if (!e.type().is_scalar()) return Expr();
      r = Expr::shift(e, k, Expr::constant(Value(0LL).cast(e.type().scalar())));
      if (!first.valid()) first = e;
      break;
    case ExprKind::Index: r = Expr::binary(BinaryOp::Add, e, Expr(static_cast<long long>(k))); break;
    case ExprKind::Gather:
      r = shifted(e.args()[1], k, memo, first);
      if (r.valid()) r = Expr::gather(e.args()[0], r, e.node().index == 0);
      break;
    default:
      if (element_wise(e.kind())) {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) {
          args.push_back(shifted(a, k, memo, first));
          if (!args.back().valid()) return Expr();
        }
        r = e.with_args(std::move(args));
      }
  }
  return memo.emplace(e.get(), r).first->second;
}

// shift(f, k, fill) for a map f of inputs: k < 0, i + k >= 0 is i >= -k; k > 0, i + k < n,
// n the length of f's first input read element by element (x: tab_x_n, which every kernel
// reading shift(x, k, 0) has, as the shift's own test reads it). k = 0 is f itself
// (Expr::shift keeps it as a shift; nothing to fuse).
Expr fused_shift(const Expr& s) {
  bool reads = false;
  const int k = s.node().index;
  if (k == 0 || !map_of_inputs(s.args()[0], reads) || !reads) return Expr();
  std::map<const ExprNode*, Expr> memo;
  Expr first;
  const Expr at = shifted(s.args()[0], k, memo, first);
  if (!at.valid() || (k > 0 && !first.valid())) return Expr();
  const Expr inside =
      k < 0 ? Expr::binary(BinaryOp::Ge, Expr::index(), Expr(static_cast<long long>(-k)))
            : Expr::raw_cuda("$0 < " + table_name(first) + "_n", Type(ScalarType::Bool),
                             {Expr::binary(BinaryOp::Add, Expr::index(), Expr(static_cast<long long>(k)))});
  return Expr::select(inside, at, s.args()[1]);
}

// The inputs a map reads element by element (not the tables of gathers inside it).
void map_inputs(const Expr& e, std::set<const ExprNode*>& out) {
  if (e.kind() == ExprKind::Input) out.insert(e.get());
  for (std::size_t i = e.kind() == ExprKind::Gather ? 1 : 0; i < e.args().size(); ++i) map_inputs(e.args()[i], out);
}

// Rewrites every gather of a map of inputs, and shift of one (fused above), in
// expressions and ops alike.
class Fuser {
 public:
  bool changed = false;
  std::vector<std::set<const ExprNode*>> same_length;  // per fused gather: the inputs of its map

  Expr expr(const Expr& e) {
    if (!e.valid()) return e;
    if (auto it = exprs_.find(e.get()); it != exprs_.end()) return it->second;
    Expr r = e;
    if (e.kind() == ExprKind::Result) {
      r = result(e);
    } else if (!e.args().empty()) {
      std::vector<Expr> args;
      bool any = false;
      for (const Expr& a : e.args()) {
        args.push_back(expr(a));
        any = any || !same_node(args.back(), a);
      }
      if (any) r = e.with_args(std::move(args));
      bool reads = false;
      const Expr t = r.kind() == ExprKind::Gather ? r.args()[0] : Expr();
      // A map of bins or segments alone: the map applied to the elements gathered from them.
      if (t.valid() && t.kind() != ExprKind::Input && !own_kind(t) &&
          (map_of_inputs(t, reads) || (own_length_table(t) && map_of_inputs(t, reads, true))) && reads) {
        map_inputs(r.args()[0], same_length.emplace_back());
        std::map<const ExprNode*, Expr> memo;
        r = at(r.args()[0], r.args()[1], r.node().index == 0, memo);
        changed = true;
      } else if (r.kind() == ExprKind::Shift && r.args()[0].kind() != ExprKind::Input) {
        if (Expr f = fused_shift(r); f.valid()) {
          r = f;
          changed = true;
        }
      }
    }
    return exprs_.emplace(e.get(), r).first->second;
  }

 private:
  std::map<const ExprNode*, Expr> exprs_;
  std::map<const OpNode*, std::shared_ptr<const OpNode>> ops_;

  Expr result(const Expr& e) {
    const auto& n = e.node().op;
    auto it = ops_.find(n.get());
    if (it == ops_.end()) {
      auto copy = std::make_shared<OpNode>(*n);
      bool any = false;
      for (Expr* x : {&copy->values, &copy->predicate, &copy->keys, &copy->offsets}) {
        const Expr r = expr(*x);
        any = any || !same_node(r, *x);
        *x = r;
      }
      it = ops_.emplace(n.get(), any ? std::shared_ptr<const OpNode>(std::move(copy)) : n).first;
    }
    return it->second == n ? e : Expr::result(it->second, e.node().index, e.type());
  }
};

// Why `table` (not an input, not fused) cannot be staged, or "": `gather`, the table of a
// gather (which may have a length of its own), else a shifted array (n elements).
std::string not_of_n(const Expr& table, bool gather) {
  if (gather && own_length_table(table)) return "";
  for (const Expr& leaf : array_leaves(table)) {
    if (leaf.kind() == ExprKind::Rows) return "it reads the offsets " + to_string(leaf);
    if (leaf.kind() == ExprKind::Fill) return "it reads " + to_string(leaf) + ", an array of a length of its own";
    if (leaf.kind() != ExprKind::Result) continue;
    switch (leaf.node().op->kind) {
      case OpKind::Filter: case OpKind::ReduceByKey:
        return std::string("it reads the result of ") + op_name(leaf.node().op->kind) +
               ", as many elements as the device counts";
      case OpKind::Histogram:
      case OpKind::SegmentedReduce:
        return std::string("it reads ") + (leaf.node().op->kind == OpKind::Histogram ? "a histogram's bins"
                                                                                      : "a segmented_reduce's results, one per segment") +
               (gather ? " mixed with arrays of another length" : ", not one per element");
      default: break;
    }
  }
  return "";
}

void find_tables(const Expr& e, std::set<const void*>& seen, std::set<const ExprNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (seen.insert(&op).second)
      for (const Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets}) find_tables(*x, seen, out);
    return;
  }
  if ((e.kind() == ExprKind::Gather || e.kind() == ExprKind::Shift) && e.args()[0].kind() != ExprKind::Input) {
    const Expr& t = e.args()[0];
    if (const std::string why = not_of_n(t, e.kind() == ExprKind::Gather); !why.empty())
      unsupported(std::string(e.kind() == ExprKind::Gather ? "a gather's table " : "a shifted array ") + to_string(t) +
                  " that has no element per element of the program: " + why +
                  " (a computed table is computed into an intermediate first, of the program's n elements, a "
                  "histogram's bins or a segmented_reduce's segments; a shifted array must have n elements; "
                  "meanwhile output it and bind it as an input of a second program)");
    out.insert(t.get());
  }
  for (const Expr& a : e.args()) find_tables(a, seen, out);
}

// Broadcasts over ff::rows (an n-element array each) in a program whose ops are not all
// segmented reductions over rows (the per-row kernel plans nothing else).
void find_row_broadcasts(const Expr& e, std::set<const void*>& seen, std::set<const ExprNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Broadcast && e.args()[0].kind() == ExprKind::Result && e.args()[1].kind() == ExprKind::Rows)
    out.insert(e.get());
  if (e.kind() == ExprKind::Result) {
    const OpNode& op = *e.node().op;
    if (seen.insert(&op).second)
      for (const Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets}) find_row_broadcasts(*x, seen, out);
    return;
  }
  for (const Expr& a : e.args()) find_row_broadcasts(a, seen, out);
}

}  // namespace

bool own_length_table(const Expr& table) {
  const std::vector<Expr> leaves = array_leaves(table);
  return !leaves.empty() && std::all_of(leaves.begin(), leaves.end(), own_kind);
}

void size_own_table(Intermediate& im, const Plan& part, const OutputShape& shape, const std::string& what) {
  if (shape.counted || part.fill_length >= 0 || part.fill_length_param >= 0)
    throw GraphError("codegen: the gather table " + what + " has a length only the device counts or a fill's; "
                     "output it and bind it as an input of a second program");
  im.zeroed = shape.zeroed;  // a histogram's counts, added into
  if (shape.fixed >= 0) {
    im.fixed = shape.fixed;  // a histogram's bins
  } else {
    im.domain = shape.domain;  // one per segment: the offsets' length less one
    im.less = shape.less;
  }
}

std::optional<FusedTables> fuse_table_maps(const Program& original) {
  // Filters' results mixed with other arrays are lifted onto one filter first: a fused shift
  // tests the element's position (index() >= -k), which must be the position in the
  // filter's input, not among its survivors, as index() beside a filter's result would be.
  const Program program = lift_filters(original);
  Fuser f;
  std::vector<Expr> outputs;
  for (const Expr& o : program.outputs()) outputs.push_back(f.expr(o));
  if (!f.changed) return std::nullopt;
  return FusedTables{Program(std::move(outputs), program), std::move(f.same_length)};
}

std::set<const ExprNode*> computed_tables(const Program& program) {
  std::set<const void*> seen;
  std::set<const ExprNode*> out;
  for (const Expr& o : program.outputs()) find_tables(o, seen, out);
  const auto& ops = program.ops();
  if (std::all_of(ops.begin(), ops.end(), [](const auto& op) {
        return op->kind == OpKind::SegmentedReduce && op->offsets.kind() == ExprKind::Rows;
      }))
    return out;
  seen.clear();
  for (const Expr& o : program.outputs()) find_row_broadcasts(o, seen, out);
  return out;
}

Plan plan_fused_tables(const Program& original, const FusedTables& tables, const Target& target,
                       const PlanOptions& options) {
  const Program& fused = tables.program;
  Plan p = plan(fused, target, options);
  // The inputs of one gathered map have one length: one domain (the elements' when one is
  // read element by element too), so the run checks it ("arrays of different lengths").
  for (const auto& group : tables.same_length) {
    if (p.input_domain.empty()) break;
    std::vector<std::size_t> members;
    int domain = -1;
    for (std::size_t i = 0; i < fused.inputs().size(); ++i)
      if (group.count(fused.inputs()[i].get())) {
        members.push_back(i);
        domain = domain < 0 ? p.input_domain[i] : std::min(domain, p.input_domain[i]);
      }
    for (std::size_t i : members) p.input_domain[i] = domain;
  }
  // A checked segmented op whose values were rewritten is explained under the user's op.
  for (auto& op : p.checked_offsets) {
    const auto& ops = original.ops();
    if (!op || std::find(ops.begin(), ops.end(), op) != ops.end()) continue;
    for (const auto& o : ops)
      if (o->kind == op->kind && same_node(o->offsets, op->offsets)) op = o;
  }
  std::string text;
  for (const char ch : to_string(fused)) text += ch == '\n' ? std::string("; ") : std::string(1, ch);
  if (text.size() >= 2) text.resize(text.size() - 2);
  p.notes.push_back("computed tables: a gather (or a shift) of a map of inputs reads the inputs and applies "
                    "the map to what it reads, planned as: " + text);
  return p;
}

}  // namespace fuseflow::codegen
