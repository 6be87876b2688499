#pragma once
// Shifts over shards (halo.cpp): each rank's end elements of a shifted input, all-gathered
// before the main pass, and the halo table each rank reads them from (ShardHalo).
#include <cstddef>
#include <vector>

#include "fuseflow/runtime/sharded.hpp"
#include "gather.hpp"
#include "shard_plan.hpp"

namespace fuseflow::detail {

// This rank's part of the halo exchange of `h`, |k| elements: the last |k| elements of its
// shard (k < 0: what the ranks after it read) or the first k (k > 0), straight from the
// shard's memory; a shard shorter than that is padded (its elements at the end for k < 0,
// at the start for k > 0) and staged through the host.
GatherItem halo_item(Runtime& rt, const ShardHalo& h, const DeviceBytes& shard);

// Whether every shard holds at least |k| elements for every halo: then rank r's table is
// rank r - 1's part (k < 0) or rank r + 1's (k > 0) of the gathered block, read where it
// lies in device memory (no wait, no copy); else the tables are made on the host.
bool halos_on_device(const std::vector<ShardHalo>& halos, const ShardLayout& layout);

// The halo table of `rank`: entry j is the input at global element off + j + k (k < 0) or
// off + size + j (k > 0), taken from the rank that holds it (any rank: a shift longer than
// the shards reads several), zero outside the array (a shift's fill is selected there).
std::vector<std::byte> halo_table(const ShardHalo& h, const ShardLayout& layout, int rank, const Gathered& all,
                                  std::size_t item);

// A gather's table bound to a sharded array: every rank's shard all-gathered, padded to the
// largest shard (world x its bytes per rank), then concatenated on the host and uploaded.
GatherItem table_item(Runtime& rt, const ShardLayout& layout, std::size_t elem, const DeviceBytes& shard);
std::vector<std::byte> table_whole(const ShardLayout& layout, std::size_t elem, const Gathered& all, std::size_t item);

}  // namespace fuseflow::detail
