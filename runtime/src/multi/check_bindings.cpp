#include "check_bindings.hpp"

#include <string>

namespace fuseflow::detail {
namespace {

std::string describe(const Expr& leaf) {
  return (leaf.kind() == ExprKind::Input ? "input '" : "parameter '") + leaf.node().name + "'";
}

}  // namespace

Checked check_sharded_bindings(const Program& program, const ShardedBindings& bindings, int world,
                               const std::vector<std::pair<int, Runtime*>>& local,
                               const std::vector<ShardSegmented>& segs, const std::vector<Expr>& tables) {
  Checked c;
  for (const auto& [expr, b] : bindings) {
    if (expr.kind() != ExprKind::Input && expr.kind() != ExprKind::Param)
      throw GraphError("sharded run: only inputs and parameters can be bound, not " + to_string(expr));
    if (!c.bound.emplace(expr.get(), &b).second) throw GraphError("sharded run: " + describe(expr) + " is bound twice");
  }
  if (program.inputs().empty())
    throw GraphError("sharded run: the program has no input array, so there is nothing to shard");
  const Expr* first = nullptr;
  for (const Expr& in : program.inputs()) {
    auto it = c.bound.find(in.get());
    if (it == c.bound.end()) throw GraphError("sharded run: " + describe(in) + " is not bound");
    const ShardedBinding& b = *it->second;
    bool is_offsets = false, is_table = false;
    for (const ShardSegmented& sg : segs) is_offsets = is_offsets || same_node(sg.offsets, in);
    for (const Expr& t : tables) is_table = is_table || same_node(t, in);
    if (is_offsets != b.is_replicated() && !is_table)
      throw GraphError("sharded run: " + describe(in) +
                       (is_offsets ? " holds the offsets of a segmented op: bind it to a host array (ff::HostArray) "
                                     "that every rank reads whole"
                                   : " is bound to a host array; only the offsets of a segmented op and the table "
                                     "of a gather can be"));
    if (is_offsets || (is_table && b.is_replicated())) {
      if (b.type() != in.type())
        throw GraphError("sharded run: " + describe(in) + " holds " + in.type().name() +
                         " but was bound to a host array of " + b.type().name());
      continue;
    }
    if (!b.is_array())
      throw GraphError("sharded run: " + describe(in) + " is bound to the scalar " + b.scalar().to_string() +
                       "; an input of a sharded run must be a ShardedArray");
    if (b.type() != in.type())
      throw GraphError("sharded run: " + describe(in) + " holds " + in.type().name() +
                       " but was bound to a sharded array of " + b.type().name());
    if (b.layout().world() != world)
      throw GraphError("sharded run: " + describe(in) + " is sharded over " + std::to_string(b.layout().world()) +
                       " ranks, but this runtime's world has " + std::to_string(world));
    if (is_table) {  // whole on every rank (all-gathered): any layout
    } else if (!first) {
      first = &in;
      c.layout = b.layout();
    } else if (b.layout() != c.layout) {
      throw GraphError("sharded run: " + describe(in) + " (" + std::to_string(b.layout().global_size()) +
                       " elements) is not sharded like " + describe(*first) + " (" +
                       std::to_string(c.layout.global_size()) +
                       " elements); the inputs of a sharded run need the same length and the same shards");
    }
    for (const auto& [rank, rt] : local) {
      bool found = false;
      for (const ShardPiece& p : b.pieces())
        if (p.rank == rank) {
          if (p.runtime != rt)
            throw GraphError("sharded run: " + describe(in) + "'s shard of rank " + std::to_string(rank) +
                             " lives on another Runtime than this ShardedRuntime's");
          found = true;
        }
      if (!found)
        throw GraphError("sharded run: " + describe(in) + " has no shard of rank " + std::to_string(rank) +
                         " in this process");
    }
  }
  if (!first) throw GraphError("sharded run: the program reads no sharded array, so there is nothing to shard");
  for (const Expr& p : program.params()) {
    auto it = c.bound.find(p.get());
    if (it == c.bound.end()) throw GraphError("sharded run: " + describe(p) + " is not bound");
    if (it->second->is_array() || it->second->is_replicated())
      throw GraphError("sharded run: " + describe(p) + " is a scalar but was bound to an array");
  }
  for (const auto& [expr, b] : bindings) {
    bool used = false;
    for (const Expr& e : program.inputs()) used = used || same_node(e, expr);
    for (const Expr& e : program.params()) used = used || same_node(e, expr);
    if (!used) throw GraphError("sharded run: " + describe(expr) + " is bound but not used by this program");
  }
  return c;
}

}  // namespace fuseflow::detail
