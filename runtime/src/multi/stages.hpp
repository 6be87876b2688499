#pragma once
// Reductions read inside expressions, over shards (stages.cpp). A reduction's value is
// known only once every rank's partial is combined, so a program that reads one inside
// another expression (a scalar epilogue such as log-sum-exp's `m + log(s)`, a map such as
// `x - m`, or another reduction's values such as `exp(x - m)`) runs in stages, as one GPU
// runs it in stages: each stage is a sharded run of the reductions that read no other
// reduction's result; their combined values (the same bits on every rank) become
// parameters of what reads them, and the next stage runs. What is left is a sharded run
// of the program's array outputs and bare reductions, and the scalar epilogues, computed
// on the host from the combined values.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "fuseflow/frontend/program.hpp"
#include "fuseflow/runtime/sharded.hpp"

namespace fuseflow::detail {

struct Staging {
  // A checked gather over shards is checked before anything else runs: a sharded run of
  // the first bad global position and its index (argmin of (position or INT64_MAX, index)
  // over the elements, the table's length a parameter); the program then reads it unchecked.
  struct Check {
    Program program;                // one output per checked gather
    std::vector<Expr> gathers;      // the program's checked gathers (for the error)
    std::vector<Expr> table_sizes;  // per gather: the i64 parameter its table's length binds
  };
  std::optional<Check> check;
  struct Stage {
    Program program;                       // bare reductions, one per output
    std::vector<std::vector<Expr>> params;  // per output: the scalar parameters its value binds (tuple fields flattened)
  };
  std::vector<Stage> stages;
  // The outputs left for a sharded run (arrays, bare reductions), if any; per output of the
  // program its index there, or -1 when it is an epilogue computed on the host:
  // epilogue[i], an expression of constants and the stages' parameters.
  std::optional<Program> rest;
  std::vector<int> rest_index;
  std::vector<Expr> epilogue;
  Program original;  // kept: the cache is keyed by its nodes' addresses
};

// The stages of `program`, or null when it reads no reduction's result inside an
// expression and has no checked gather (it runs as one sharded run).
std::shared_ptr<const Staging> plan_stages(const Program& program);

// Runs the stages, then the rest and the epilogues: `run` is a sharded run of one program
// (ShardedRuntime::run). Every rank computes an epilogue from the same combined bits with
// the same host code, so the value is the same on every rank and every run; a device
// kernel per rank would be as deterministic but add a launch and a copy per epilogue.
using RunSharded = std::function<std::vector<ShardedResult>(const Program&, const ShardedBindings&)>;
std::vector<ShardedResult> run_stages(const Staging& st, const ShardedBindings& bindings, const RunSharded& run);

// Every parameter in `e` replaced by a constant of `values` (per parameter node),
// folded on the host.
Value evaluate_epilogue(const Expr& e, const std::vector<std::pair<const ExprNode*, Value>>& values);

}  // namespace fuseflow::detail
