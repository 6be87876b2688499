#pragma once
// reduce_by_key over shards (keyed.cpp). Each rank runs the op on its shard; a run of
// equal keys cut by shard boundaries is held by the rank where it starts: a rank drops its
// first run when its first key equals the last key of the nearest non-empty rank before
// it, and the rank holding that run folds the dropped first runs into its last one, in
// rank order (through ranks whose shard is one run, skipping empty ones).
#include <vector>

#include "gather.hpp"
#include "shard_plan.hpp"

namespace fuseflow::detail {

// This rank's part of the combine: the run count (read from the device: waits for the
// stream) and four items added to the gather: the count, the first and last keys, the
// first run's value.
struct KeyedRank {
  std::size_t count = 0;
  std::size_t first_item = 0;
};
KeyedRank keyed_items(const Result& keys, const Result& values, std::vector<GatherItem>& items);

// After the gather: how many runs each rank holds, whether this rank drops its first,
// and this rank's last run folded with the runs continuing it (written to the device).
struct KeyedHeld {
  std::vector<std::size_t> held;  // per rank
  bool drop = false;              // this rank's first run belongs to a rank before
};
KeyedHeld keyed_combine(Runtime& rt, int rank, int ranks, const Monoid& m, const KeyedRank& mine, const Gathered& all,
                        const std::vector<GatherItem>& items, const Result& keys, const Result& values);

// scan_by_key: this rank's runs (the totals program's reduce_by_key and last indices:
// reads the run count, waiting for the stream) as five gather items: the count, the first
// and last keys, the last run's value, the first run's last index.
KeyedRank keyscan_items(const Result& keys, const Result& values, const Result& last, std::vector<GatherItem>& items);
// After the gather: the carry into this rank's first run (the last runs of the ranks
// before that it continues, folded in rank order) and where that run ends (0: it starts
// here, and the carry is the identity).
struct KeyScanCarry {
  Value carry;
  long long head_end = 0;
};
KeyScanCarry keyscan_carry(int rank, const Monoid& m, const KeyedRank& mine, const Gathered& all,
                           const std::vector<GatherItem>& items, const Type& key);

// Replaces the value at `at` on the device with fold(that value, parts...) in order.
void fold_on_device(Runtime& rt, CUdeviceptr at, const Monoid& m, const std::vector<Value>& parts);

}  // namespace fuseflow::detail
