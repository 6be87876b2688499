#pragma once
// The checks of a sharded run's bindings before anything runs (check_bindings.cpp).
#include <map>
#include <utility>
#include <vector>

#include "fuseflow/runtime/sharded.hpp"
#include "shard_plan.hpp"

namespace fuseflow::detail {

struct Checked {
  ShardLayout layout;                       // the inputs' common layout
  std::map<const ExprNode*, const ShardedBinding*> bound;
};

// Every check before anything runs, the same on every rank: all inputs bound to sharded
// arrays of their type and of one layout over this world (a segmented op's offsets to a
// host array; a gather's table to a host array or a sharded array of any layout),
// parameters to scalars. Throws GraphError naming what is wrong.
Checked check_sharded_bindings(const Program& program, const ShardedBindings& bindings, int world,
                               const std::vector<std::pair<int, Runtime*>>& local,
                               const std::vector<ShardSegmented>& segs, const std::vector<Expr>& tables);

}  // namespace fuseflow::detail
