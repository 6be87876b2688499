// broadcast_by_key on the device (passes/stages.cpp): each element's run of equal keys,
// numbered by a scan of head flags that stage 1 computes beside reduce_by_key, so that
// stage 2 reads the run's value as gather_unchecked(its results, run - 1). A head is the
// first element or one whose key differs from the element before it (the != of
// reduce_by_key's CPU reference: floats by value, so each NaN is a run of its own); the key
// before is the key expression with each input shifted by one and index() one less.
#include "passes.hpp"

namespace fuseflow::codegen {

namespace {

[[noreturn]] void refuse(const OpNode& op, const std::string& why) {
  unsupported("broadcast_by_key of reduce_by_key over keys " + to_string(op.keys) + " " + why +
              " (the run of each element comes from the keys before it: keys of scalar type whose leaves are "
              "inputs, parameters, constants, reductions and index())");
}

Expr previous(const OpNode& op, const Expr& e, std::map<const ExprNode*, Expr>& memo) {
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  Expr r = e;
  switch (e.kind()) {
    case ExprKind::Input: r = Expr::shift(e, -1, Expr::constant(Value(0LL).cast(e.type().scalar()))); break;
    case ExprKind::Index: r = Expr::binary(BinaryOp::Sub, e, Expr(1LL)); break;
    case ExprKind::Result:
      if (!e.node().op->scalar_output) refuse(op, std::string("reading the result of ") + op_name(e.node().op->kind));
      break;
    case ExprKind::Gather:
    case ExprKind::Shift:
    case ExprKind::Broadcast:
    case ExprKind::Rows:
    case ExprKind::Fill: refuse(op, "reading " + to_string(e));
    default:
      if (!e.args().empty()) {
        std::vector<Expr> args;
        for (const Expr& a : e.args()) args.push_back(previous(op, a, memo));
        r = e.with_args(std::move(args));
      }
  }
  return memo.emplace(e.get(), r).first->second;
}

}  // namespace

Expr key_run_numbers(const OpNode& reduce_by_key) {
  const Expr& keys = reduce_by_key.keys;
  if (!keys.type().is_scalar()) refuse(reduce_by_key, "of a tuple type");
  std::map<const ExprNode*, Expr> memo;
  const Expr changed = Expr::binary(BinaryOp::Ne, keys, previous(reduce_by_key, keys, memo));
  const Expr head = Expr::select(Expr::binary(BinaryOp::Eq, Expr::index(), Expr(0LL)), Expr(1LL),
                                 Expr::cast(ScalarType::I64, changed));
  return fuseflow::scan(head, fuseflow::plus);
}

}  // namespace fuseflow::codegen
