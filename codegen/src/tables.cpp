// Inputs read at computed positions: a gather's table (any length, its own input domain)
// and a shifted array (the elements' length). Kernels get them whole, as tab_<name> and
// tab_<name>_n (append_table_args), beside the inputs they read element by element.
#include <set>

#include "kernel_context.hpp"

namespace fuseflow::codegen {

std::vector<Expr> table_free_args(const Expr& e) {
  if (e.kind() == ExprKind::Gather) return {e.args()[1]};
  // A broadcast reads its reduction's per-segment result (or, in a later stage, the input
  // holding them) at the element's segment: neither the reduction's elements nor its
  // offsets are read element by element.
  if (e.kind() == ExprKind::Broadcast) return {};
  return e.args();
}

namespace {

void collect_tables(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& tables, bool& checked) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Gather || e.kind() == ExprKind::Shift) tables.insert(e.args()[0].get());
  if (e.kind() == ExprKind::Broadcast && e.args()[0].kind() == ExprKind::Input)  // stage 2's (passes/stages.cpp)
    for (const auto& a : e.args()) tables.insert(a.get());
  if (e.kind() == ExprKind::Gather && e.node().index == 0) checked = true;
  for (const auto& a : e.args()) collect_tables(a, seen, tables, checked);
}

// The inputs `e` reads element by element (a shifted array is one).
void collect_elements(const Expr& e, std::set<const ExprNode*>& seen, std::set<const ExprNode*>& out) {
  if (!e.valid() || !seen.insert(e.get()).second) return;
  if (e.kind() == ExprKind::Input) out.insert(e.get());
  for (const auto& a : table_free_args(e)) collect_elements(a, seen, out);
}

}  // namespace

void fill_tables(Leaves& g, const Program& p, const std::vector<Expr>& exprs) {
  std::set<const ExprNode*> seen, tables;
  for (const auto& e : exprs) collect_tables(e, seen, tables, g.checked_gather);
  // A group may be filled again (a scan's, after reductions are folded in): each table once.
  for (const auto& t : g.tables) tables.erase(t.get());
  for (std::size_t i = 0; i < p.inputs().size(); ++i)
    if (tables.count(p.inputs()[i].get())) {
      g.tables.push_back(p.inputs()[i]);
      g.table_ids.push_back(static_cast<int>(i));
    }
}

void plan_tables(const Program& p, Plan& plan) {
  std::set<const ExprNode*> seen, tables, elements;
  bool checked = false;
  std::vector<const Expr*> roots;
  for (const auto& op : p.ops())
    for (const Expr* e : {&op->values, &op->predicate, &op->keys, &op->offsets}) roots.push_back(e);
  for (const auto& o : p.outputs()) roots.push_back(&o);
  for (const Expr* e : roots) collect_tables(*e, seen, tables, checked);
  if (checked) plan.checked_offsets.push_back(nullptr);  // index kGatherFlag: nothing is planned yet
  seen.clear();
  for (const Expr* e : roots) collect_elements(*e, seen, elements);
  for (std::size_t i = 0; i < p.inputs().size(); ++i) {
    if (!tables.count(p.inputs()[i].get()) || elements.count(p.inputs()[i].get())) continue;
    if (plan.input_domain.empty()) plan.input_domain.assign(p.inputs().size(), 0);
    plan.input_domain[i] = plan.domains++;
  }
}

}  // namespace fuseflow::codegen
