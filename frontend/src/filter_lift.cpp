// lift_filters (filter_lift.hpp): every element-wise expression that reads a filter's result
// beside other arrays, or the results of several filters of one predicate, is rewritten to
// read one filter's result alone, whose values are the other arrays (and the filters'
// values) before the filter. The ops the program reads are rewritten first, so a filter of
// such a mix is lifted in turn.
#include "fuseflow/frontend/filter_lift.hpp"

#include <algorithm>
#include <map>

namespace fuseflow {

bool same_structure(const Expr& a, const Expr& b) {
  if (!a.valid() || !b.valid()) return a.valid() == b.valid();
  if (same_node(a, b)) return true;
  const ExprNode& x = a.node();
  const ExprNode& y = b.node();
  if (x.kind != y.kind || !(x.type == y.type) || x.name != y.name || x.index != y.index || x.unary != y.unary ||
      x.binary != y.binary || x.fn != y.fn || x.op != y.op || x.length != y.length || x.args.size() != y.args.size())
    return false;
  if (x.kind == ExprKind::Constant && !(x.constant == y.constant)) return false;
  for (std::size_t i = 0; i < x.args.size(); ++i)
    if (!same_structure(x.args[i], y.args[i])) return false;
  return true;
}

namespace {

// What an element-wise expression reads at its own level (not inside the ops it reads).
struct Reads {
  bool filter = false;    // a filter's result
  bool survivor = false;  // another op's result over a filter's survivors (a scan of one): read as it is
  bool array = false;     // any other array: taken at the survivors' positions when lifted
  bool index = false;     // index(): the position in the expression's own array
  Reads& operator|=(const Reads& o) {
    filter = filter || o.filter;
    survivor = survivor || o.survivor;
    array = array || o.array;
    index = index || o.index;
    return *this;
  }
  bool over_survivors() const { return filter || survivor; }
};

bool reads_index(const Expr& e) {
  if (e.kind() == ExprKind::Index) return true;
  return std::any_of(e.args().begin(), e.args().end(), [](const Expr& a) { return reads_index(a); });
}

// Memo tables keep their keys alive, so a node's address is never reused while they hold it.
template <class V>
using NodeMemo = std::map<const void*, std::pair<Expr, V>>;

class Lifter {
 public:
  Program run(const Program& program) {
    std::vector<Expr> outputs;
    for (const Expr& o : program.outputs()) outputs.push_back(relink(o));
    // Outputs over survivors of one predicate are lifted together: one filter writes them all.
    std::vector<bool> done(outputs.size(), false);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const OpNode* first = first_filter(outputs[i]);
      if (done[i] || !first) continue;
      std::vector<std::size_t> group;
      for (std::size_t j = i; j < outputs.size(); ++j) {
        const OpNode* f = first_filter(outputs[j]);
        if (!done[j] && f && same_structure(f->predicate, first->predicate)) {
          group.push_back(j);
          done[j] = true;
        }
      }
      std::vector<Expr> exprs;
      for (std::size_t j : group) exprs.push_back(outputs[j]);
      exprs = lift(exprs);
      for (std::size_t k = 0; k < group.size(); ++k) outputs[group[k]] = exprs[k];
    }
    bool changed = false;
    for (std::size_t i = 0; i < outputs.size(); ++i) changed = changed || !same_node(outputs[i], program.outputs()[i]);
    return changed ? Program(std::move(outputs), program) : program;
  }

 private:
  NodeMemo<std::shared_ptr<const OpNode>> ops_;
  NodeMemo<Expr> relinked_;
  NodeMemo<Reads> reads_;
  NodeMemo<Expr> pre_filter_;

  // The op with its element-wise expressions lifted (the offsets on their own: another domain).
  std::shared_ptr<const OpNode> op(const std::shared_ptr<const OpNode>& n) {
    auto it = ops_.find(n.get());
    if (it != ops_.end()) return it->second.second;
    auto copy = std::make_shared<OpNode>(*n);
    std::vector<Expr*> together;
    for (Expr* e : {&copy->values, &copy->predicate, &copy->keys})
      if (e->valid()) together.push_back(e);
    std::vector<Expr> in;
    for (Expr* e : together) in.push_back(relink(*e));
    std::vector<Expr> out = lift(in);
    bool changed = false;
    for (std::size_t k = 0; k < together.size(); ++k) {
      changed = changed || !same_node(out[k], *together[k]);
      *together[k] = out[k];
    }
    if (copy->offsets.valid()) {
      Expr offsets = lift({relink(copy->offsets)})[0];
      changed = changed || !same_node(offsets, copy->offsets);
      copy->offsets = offsets;
    }
    std::shared_ptr<const OpNode> result = changed ? std::shared_ptr<const OpNode>(std::move(copy)) : n;
    ops_.emplace(n.get(), std::make_pair(Expr(), result));
    ops_.emplace(result.get(), std::make_pair(Expr(), result));
    return result;
  }

  // `e` reading the lifted ops.
  Expr relink(const Expr& e) {
    if (!e.valid()) return e;
    auto it = relinked_.find(e.get());
    if (it != relinked_.end()) return it->second.second;
    Expr r = e;
    if (e.kind() == ExprKind::Result) {
      std::shared_ptr<const OpNode> o = op(e.node().op);
      if (o != e.node().op) r = Expr::result(o, e.node().index, e.type());
    } else if (!e.args().empty()) {
      std::vector<Expr> args;
      bool changed = false;
      for (const Expr& a : e.args()) {
        args.push_back(relink(a));
        changed = changed || !same_node(args.back(), a);
      }
      if (changed) r = e.with_args(std::move(args));
    }
    relinked_.emplace(e.get(), std::make_pair(e, r));
    return r;
  }

  bool over_survivors(const OpNode& op) {
    if (op.kind != OpKind::Scan && op.kind != OpKind::SegmentedScan && op.kind != OpKind::ScanByKey &&
        op.kind != OpKind::CountingSort)
      return false;
    for (const Expr* e : {&op.values, &op.keys})
      if (e->valid() && reads(*e).over_survivors()) return true;
    return false;
  }

  Reads reads(const Expr& e) {
    auto it = reads_.find(e.get());
    if (it != reads_.end()) return it->second.second;
    Reads r;
    switch (e.kind()) {
      case ExprKind::Input:
      case ExprKind::Rows:
      case ExprKind::Broadcast:
      case ExprKind::Shift: r.array = true; break;
      case ExprKind::Index: r.index = true; break;
      case ExprKind::Result:
        if (e.node().op->scalar_output) break;
        if (e.node().op->kind == OpKind::Filter) r.filter = true;
        else if (over_survivors(*e.node().op)) r.survivor = true;
        else r.array = true;
        break;
      case ExprKind::Fill:
        if (fill_has_own_length(e)) {
          r.array = true;  // its own length; its value's index() is its own
        } else {
          r = reads(e.args()[1]);  // as long as `like`, index() its position
          r.index = r.over_survivors() && reads_index(e.args()[0]);
        }
        break;
      case ExprKind::Gather: r = reads(e.args()[1]); break;  // the table is read at computed positions
      default:
        for (const Expr& a : e.args()) r |= reads(a);
    }
    reads_.emplace(e.get(), std::make_pair(e, r));
    return r;
  }

  // The filters an expression reads at its own level, in order, each once.
  void filters(const Expr& e, std::vector<std::shared_ptr<const OpNode>>& out) {
    if (!reads(e).filter) return;
    if (e.kind() == ExprKind::Result) {
      const auto& op = e.node().op;
      if (std::none_of(out.begin(), out.end(), [&](const auto& f) { return f == op; })) out.push_back(op);
      return;
    }
    for (std::size_t k = e.kind() == ExprKind::Gather ? 1 : 0; k < e.args().size(); ++k) filters(e.args()[k], out);
  }
  const OpNode* first_filter(const Expr& e) {
    std::vector<std::shared_ptr<const OpNode>> f;
    filters(e, f);
    return f.empty() ? nullptr : f.front().get();
  }

  // `e` (over survivors, with no index() of them) before the filter: each filter's result
  // replaced by the filter's values.
  Expr pre_filter(const Expr& e) {
    auto it = pre_filter_.find(e.get());
    if (it != pre_filter_.end()) return it->second.second;
    Expr r = e;
    if (e.kind() == ExprKind::Result && e.node().op->kind == OpKind::Filter && !e.node().op->scalar_output) {
      r = e.node().op->values;
    } else if (reads(e).filter) {
      std::vector<Expr> args = e.args();
      for (std::size_t k = e.kind() == ExprKind::Gather ? 1 : 0; k < args.size(); ++k) args[k] = pre_filter(args[k]);
      r = e.with_args(std::move(args));
    }
    pre_filter_.emplace(e.get(), std::make_pair(e, r));
    return r;
  }

  // One rewrite of a unit's expressions: collecting the fields of the lifted filter's
  // values (star invalid), then reading them from its result.
  struct Pass {
    Expr star;
    std::vector<Expr> fields;
    NodeMemo<Expr> memo;
    Expr field(const Expr& e) {
      auto it = std::find_if(fields.begin(), fields.end(), [&](const Expr& f) { return same_node(f, e); });
      const auto k = static_cast<int>(it - fields.begin());
      if (it == fields.end()) fields.push_back(e);
      if (!star.valid()) return e;
      return fields.size() == 1 ? star : Expr::get(star, k);
    }
  };

  Expr rewrite(const Expr& e, Pass& s) {
    auto it = s.memo.find(e.get());
    if (it != s.memo.end()) return it->second.second;
    const Reads r = reads(e);
    Expr out = e;
    if (!r.over_survivors() && r.array && !r.index) {
      out = s.field(e);  // an array taken at the survivors' positions
    } else if (r.filter && !r.survivor && !r.index) {
      out = s.field(pre_filter(e));  // computed before the filter
    } else if ((r.array || r.over_survivors()) && e.kind() != ExprKind::Result) {
      std::vector<Expr> args = e.args();
      // A gather's table and a fill's value are not element-wise arrays of the expression.
      const std::size_t first = e.kind() == ExprKind::Gather || e.kind() == ExprKind::Fill ? 1 : 0;
      for (std::size_t k = first; k < args.size(); ++k) args[k] = rewrite(args[k], s);
      out = e.with_args(std::move(args));
    }
    s.memo.emplace(e.get(), std::make_pair(e, out));
    return out;
  }

  // A unit: expressions one op (or the program's outputs over one filter's survivors)
  // reads together, lifted onto one filter when they mix its result with other arrays or
  // with other filters of the same predicate.
  std::vector<Expr> lift(const std::vector<Expr>& exprs) {
    std::vector<std::shared_ptr<const OpNode>> fs;
    Reads all;
    for (const Expr& e : exprs) {
      filters(e, fs);
      all |= reads(e);
    }
    if (fs.empty() || (fs.size() == 1 && !all.array)) return exprs;
    for (const auto& f : fs)
      if (!same_structure(f->predicate, fs.front()->predicate))
        throw GraphError("filter: " + to_string(exprs.front()) + " mixes the results of filters with different "
                         "predicates (" + to_string(fs.front()->predicate) + " and " + to_string(f->predicate) +
                         "), which keep different elements; filter once, filter(zip(x, y), p)");
    Pass collect;
    for (const Expr& e : exprs) rewrite(e, collect);
    Pass read;
    read.fields = collect.fields;
    const Expr values = collect.fields.size() == 1 ? collect.fields[0] : Expr::make_tuple(collect.fields);
    const Expr star = filter(values, fs.front()->predicate);
    read.star = Expr::result(op(star.node().op), 0, star.type());  // a filter of a filter's mix: lifted too
    std::vector<Expr> out;
    for (const Expr& e : exprs) out.push_back(rewrite(e, read));
    return out;
  }
};

}  // namespace

Program lift_filters(const Program& program) { return Lifter().run(program); }

}  // namespace fuseflow
