#pragma once
// How a program runs over shards (shard_plan.cpp): the program every rank runs on its
// shard (ff::index() made global, each scan's carry folded into what it stores), the
// per-shard totals program the scans need first, and how each output is combined.
#include <vector>

#include "fuseflow/frontend/program.hpp"

namespace fuseflow::detail {

enum class ShardedOutput : std::uint8_t {
  Reduce,     // a scalar: the per-rank partials folded in rank order
  Map,        // an array as long as the shard (maps, scans)
  Filter,     // an array of the shard's survivors (a filter's result, or maps of it)
  Histogram,  // per-rank counts, all-reduced
};

struct ShardScan {
  Monoid monoid;
  ScanKind kind = ScanKind::Inclusive;
  std::vector<Expr> carry_params;  // the carry's scalar fields, in order (one for a scalar)
};

struct ShardPlan {
  Program main;                     // what every rank runs on its shard
  std::vector<ShardScan> scans;     // one per scan op, in the order of `totals`' outputs
  std::vector<Expr> totals;         // reduce(scan values, scan monoid) per scan (empty: no scan)
  Expr offset_param;                // i64: the shard's global offset (used where ff::index() is)
  std::vector<ShardedOutput> kinds;   // per output
  std::vector<Monoid> monoids;        // per output: the reduce's monoid (Reduce outputs)
  std::vector<std::int64_t> bins;     // per output: the histogram's bins (Histogram outputs)
};

// Throws GraphError naming what cannot run sharded (segmented and by-key ops, counting
// sort, a reduction or histogram used inside another expression, a scan of a scan).
ShardPlan plan_sharded(const Program& program);

// The carry's value as the parameter values of its fields (flattened tuple fields).
void flatten_value(const Value& v, std::vector<Value>& out);

}  // namespace fuseflow::detail
