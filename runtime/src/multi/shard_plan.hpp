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
  Segments,   // a segmented_reduce: the segments starting in the shard (segments.hpp)
  Keyed,      // reduce_by_key's keys or values: the runs starting in the shard (keyed.cpp)
};

// A scan_by_key over shards: the shard's first run, when it continues the last run of the
// ranks before (keyed.cpp), gets the carry folded in: elements before head_end (i64 param).
// The totals program gives, from `totals_at` on: the shard's runs' keys and values
// (reduce_by_key) and each run's last index.
struct ShardKeyScan {
  Monoid monoid;
  Expr head_end;
  std::vector<Expr> carry_params;
  std::size_t totals_at = 0;
};

// A reduce_by_key over shards: the op runs on each shard; `keys` and `values` are the
// indices of its two results among the main program's outputs (appended after the
// program's own when it asks for only one).
struct ShardKeyed {
  Monoid monoid;
  std::size_t keys = 0, values = 0;
};

// A segmented op over shards (segmented_reduce, segmented_scan). The program's offsets
// input, bound to a host array, is replaced by the shard's own offsets (segments.hpp).
struct ShardSegmented {
  bool scan = false;
  Monoid monoid;
  Expr offsets;        // the program's offsets input (global, on the host)
  Expr local_offsets;  // i64 input: the offsets cut to the shard
  // Scans: elements before head_end (i64 param) continue the segment of the ranks before
  // and get the carry (carry_params) folded in; tail_offsets (i64 input, 2 values) bound
  // the shard's last segment piece, whose reduction `total` the totals program gives.
  Expr head_end, tail_offsets, total;
  std::vector<Expr> carry_params;
};

// A shift over shards reads elements of other ranks (the halo): the value of `input` at
// element i + k for the shard's first |k| elements (k < 0) or its last k (k > 0) comes from
// `table` (an input of |k| elements), which every run fills from the ranks' end elements,
// all-gathered before the main pass (halo.cpp). Shifts of a shift compose their k.
struct ShardHalo {
  Expr input;  // the program's input
  int k = 0;
  Expr table;
};

struct ShardScan {
  Monoid monoid;
  ScanKind kind = ScanKind::Inclusive;
  std::vector<Expr> carry_params;  // the carry's scalar fields, in order (one for a scalar)
  // Valid: the carry stays on the device (scalar monoids). The world's totals, gathered
  // into device memory, are scanned there (exclusive, in rank order: entry r is the fold of
  // the ranks before r) and the main program reads entry `rank` of that table:
  // gather_unchecked(carries, ShardPlan::rank_param) folded into the scan's store;
  // carry_params is empty. No host round trip, no wait between the totals and the scan.
  Expr carries;
};

struct ShardPlan {
  Program main;                     // what every rank runs on its shard
  std::vector<ShardScan> scans;     // one per scan op, in the order of `totals`' outputs
  std::vector<Expr> totals;         // reduce(scan values, scan monoid) per scan (empty: no scan)
  Expr offset_param;                // i64: the shard's global offset (used where ff::index() is)
  Expr rank_param;                  // i64: the rank (the device carries' entry)
  std::vector<ShardedOutput> kinds;   // per output
  std::vector<Monoid> monoids;        // per output: the reduce's monoid (Reduce outputs)
  std::vector<std::int64_t> bins;     // per output: the histogram's bins (Histogram outputs)
  // The segmented ops; per output the one it is (Segments outputs, else -1). The totals
  // program's outputs are the scans' totals, then the segmented scans' `total`s, then
  // three per scan_by_key (ShardKeyScan).
  std::vector<ShardSegmented> segs;
  std::vector<int> seg_of;
  std::vector<ShardKeyed> keyed;
  std::vector<int> keyed_of;  // per output: the reduce_by_key it is a result of (Keyed outputs, else -1)
  std::vector<ShardKeyScan> keyscans;
  std::vector<ShardHalo> halos;
  // The gathers' tables: inputs bound to a host array (uploaded to every rank) or to a
  // sharded array of any layout (all-gathered before the main pass, halo.cpp). Checked
  // gathers are checked by a stage before (stages.cpp) and read unchecked here.
  std::vector<Expr> tables;
  Expr size_param;         // i64: the shard's length (used by forward shifts)
  Expr global_size_param;  // i64: the global length (used by shifts)
};

// Throws GraphError naming what cannot run sharded (counting
// sort, a reduction or histogram used inside another expression, a scan of a scan).
// `device_carry`: scans of scalar monoids take their carry from the device (ShardScan::totals_input).
ShardPlan plan_sharded(const Program& program, bool device_carry = true);

// The carry's value as the parameter values of its fields (flattened tuple fields).
void flatten_value(const Value& v, std::vector<Value>& out);

}  // namespace fuseflow::detail
