// fuseflow device helper library: scans.
//
// Embedded into the fuseflow binary like collectives.cuh. Layered as in CUB: the warp
// inclusive scan (shuffles) is the building block of the block scan; tile status and the
// look-back of Merrill & Garland ("Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016) turn block scans into one device-wide pass. The look-back here is
// deterministic (see tile_exclusive_prefix): every tile's prefix has one fixed form,
// folded in one fixed order, so a float scan gives the same bits on every run
// (DESIGN.md, Strategies).
//
// As in collectives.cuh, every combine keeps element order: the left operand always
// covers lower indices, so non-commutative monoids (linear recurrences, MSSP) are exact.
#pragma once

#include <fuseflow/collectives.cuh>
#include <fuseflow/shared_constants.cuh>

namespace ff {

// The look-back's status encoding, epochs, tile groups and stage padding, shared with the
// host (shared_constants.cuh).
using fuseflow::shared::kMaxLookbackEpoch;
using fuseflow::shared::kStatusFlagBits;
using fuseflow::shared::kStatusFlagMask;
using fuseflow::shared::kTileAggregate;
using fuseflow::shared::kTileInvalid;
using fuseflow::shared::kTilePrefix;
using fuseflow::shared::kTilesPerGroup;
using fuseflow::shared::scan_status_bytes;
using fuseflow::shared::TileFlag;
static_assert(kTilesPerGroup == kWarpSize, "the group look-back reads a group's tiles with one warp");

// Inclusive scan across a full warp in lane order: lane l ends with x0 . x1 . ... . xl.
// After the step with offset d, lane l holds the combination of lanes (l - 2d, l], so
// the value shuffled up always covers the lanes just below: combine(lower, mine).
template <typename T, typename Combine>
__device__ __forceinline__ T warp_inclusive_scan(T value, Combine combine) {
  const int lane = threadIdx.x % kWarpSize;
#pragma unroll
  for (int d = 1; d < kWarpSize; d *= 2) {
    const T lower = shfl_up(value, d);
    if (lane >= d) value = combine(lower, value);
  }
  return value;
}

// Exclusive scan across a block of kThreads threads in thread order: returns the
// combination of the values of the lower threads (identity in thread 0) and sets
// `aggregate`, in every thread, to the combination of all of them. `scratch` holds
// kThreads / 32 values. Each warp scans with shuffles, the last lane's total goes to
// `scratch`, one barrier, each thread folds the warp totals before its own in warp order (a
// fixed tree: the same bits every run). No barrier after it: `scratch` may not be written
// again until one (block_exclusive_scan below adds it).
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T block_exclusive_scan_once(T value, Combine combine, T identity, T* scratch,
                                                       T& aggregate) {
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const T inclusive = warp_inclusive_scan(value, combine);
  T exclusive = shfl_up(inclusive, 1);
  if (lane == 0) exclusive = identity;
  if (lane == kWarpSize - 1) scratch[warp] = inclusive;
  __syncthreads();
  // Each thread folds the few warp totals itself: no second barrier round.
  T warp_prefix = identity;
  aggregate = identity;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    if (w == warp) warp_prefix = aggregate;
    aggregate = combine(aggregate, scratch[w]);
  }
  return combine(warp_prefix, exclusive);
}

// block_exclusive_scan_once, then a barrier so `scratch` can be reused.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T block_exclusive_scan(T value, Combine combine, T identity, T* scratch, T& aggregate) {
  const T exclusive = block_exclusive_scan_once<kThreads>(value, combine, identity, scratch, aggregate);
  __syncthreads();
  return exclusive;
}

// ---- decoupled look-back -------------------------------------------------------------

// A tile's (or a group's) status (TileFlag, shared_constants.cuh): nothing yet, its own
// aggregate, or its inclusive prefix (the combination of every element up to the end of
// the tile or group).

// Look-back status entries. A value is cut into 32-bit chunks and every chunk travels in
// its own 64-bit word beside a 32-bit tag, (chunk << 32) | (epoch << kStatusFlagBits) | flag,
// written and read with single 64-bit accesses. A reader accepts an entry only when every word carries
// the same tag, so it never combines a half-written value, and no fence is needed on
// either side: each word announces itself.
//
// The status memory outlives launches and is not cleared between them: each launch has
// its own epoch (1 ... kMaxLookbackEpoch, never 0, so zeroed memory reads as nothing), and
// an entry another launch left behind carries another epoch and reads as kTileInvalid. The
// runtime hands out epochs in order and zeroes the memory before it starts them again.
// That saves the memsets before each launch: 1.7 us of a 2^20-element scan's 10.5 on an
// H100 (bench/RESULTS.md, seventh run). kMaxLookbackEpoch is in shared_constants.cuh.

template <typename T>
struct StatusEntries {
  static constexpr int kWords = (sizeof(T) + 3) / 4;
  unsigned long long* words;
  unsigned epoch;

  __device__ __forceinline__ void publish(long long e, unsigned flag, const T& value) const {
    unsigned chunks[kWords] = {};
    memcpy(chunks, &value, sizeof(T));
    const unsigned long long tag = epoch << kStatusFlagBits | flag;
    volatile unsigned long long* w = words + e * kWords;
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = (static_cast<unsigned long long>(chunks[k]) << 32) | tag;
  }

  // The entry's flag (kTileInvalid while its words disagree, or when another launch wrote
  // it) and, when valid, its value.
  __device__ __forceinline__ unsigned read(long long e, T& value) const {
    const volatile unsigned long long* w = words + e * kWords;
    unsigned long long got[kWords];
#pragma unroll
    for (int k = 0; k < kWords; ++k) got[k] = w[k];
    unsigned tag = static_cast<unsigned>(got[0]);
    unsigned chunks[kWords];
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      if (static_cast<unsigned>(got[k]) != tag) tag = kTileInvalid;
      chunks[k] = static_cast<unsigned>(got[k] >> 32);
    }
    const unsigned flag = tag >> kStatusFlagBits == epoch ? tag & kStatusFlagMask : kTileInvalid;
    if (flag != kTileInvalid) memcpy(&value, chunks, sizeof(T));
    return flag;
  }
};

// The id of this block's tile, drawn by one thread: tiles are numbered in the order their
// blocks start, so every tile's predecessors are running or done and the look-back cannot
// deadlock, whatever order the hardware schedules blocks in. One draw per block: the block
// that draws the launch's last id (every other block has drawn) zeroes the counter again,
// so it is zero for the next launch without a memset.
__device__ __forceinline__ unsigned draw_tile_id(unsigned* counter) {
  const unsigned id = atomicAdd(counter, 1u);
  if (id == gridDim.x - 1) atomicExch(counter, 0u);
  return id;
}

// Tiles form groups of kTilesPerGroup = 32 consecutive tiles (a warp's width); the status
// of `tiles` tiles takes scan_status_bytes (both in shared_constants.cuh, which the host
// sizes the status memory with).

template <typename T>
struct ScanTileStatus {
  StatusEntries<T> tiles;
  StatusEntries<T> groups;

  __device__ ScanTileStatus(void* storage, long long tile_count, unsigned epoch) {
    tiles.words = static_cast<unsigned long long*>(storage);
    groups.words = tiles.words + tile_count * StatusEntries<T>::kWords;
    tiles.epoch = epoch;
    groups.epoch = epoch;
  }
};

// The inclusive prefix of the groups before `group` (> 0), found by one full warp looking
// back over the group entries, window by window (lane l reads group end - 32 + l). It
// stops at the nearest group j with a published inclusive prefix GP(j) and returns the
// strict left fold GP(j) . GA(j+1) . ... . GA(group-1), one group at a time in index order
// (never a tree). It waits only for aggregates, which a group publishes without waiting
// for anyone; a window of aggregates alone is kept in `stash` (kWarpSize values per
// window, `stash_windows` windows) and the search moves on to the window before it. With
// the stash full it re-reads the deepest window until a prefix appears there (group 0
// publishes its prefix at once, so one always does). Entries before group 0 read as
// aggregates that are never combined. The result is in every lane.
template <typename T, typename Combine>
__device__ T group_look_back(const StatusEntries<T>& groups, long long group, Combine combine, T identity,
                             T* stash, int stash_windows) {
  const int lane = threadIdx.x % kWarpSize;
  long long end = group;  // the window is [end - 32, end)
  int depth = 0;
  for (;;) {
    const long long e = end - kWarpSize + lane;
    unsigned flag = kTileAggregate;
    T value = identity;
    if (e >= 0) flag = groups.read(e, value);
    const unsigned prefixes = __ballot_sync(kFullMask, flag == kTilePrefix);
    if (prefixes != 0) {
      const int nearest = 31 - __clz(static_cast<int>(prefixes));
      // Every group after j must have published at least its aggregate.
      if (__any_sync(kFullMask, lane > nearest && flag == kTileInvalid)) continue;
      // Strict left fold from j. The shuffles do not depend on the running value, so they
      // issue at once; only the combines form a chain.
      T prefix = shfl_idx(value, nearest);
#pragma unroll
      for (int l = 1; l < kWarpSize; ++l) {
        const T next = shfl_idx(value, l);
        if (l > nearest) prefix = combine(prefix, next);
      }
      for (int d = depth - 1; d >= 0; --d)
#pragma unroll 8
        for (int l = 0; l < kWarpSize; ++l) prefix = combine(prefix, stash[d * kWarpSize + l]);
      return prefix;
    }
    if (__any_sync(kFullMask, flag == kTileInvalid)) continue;  // an aggregate is on its way
    if (depth == stash_windows) continue;                        // stash full: wait for a prefix here
    stash[depth * kWarpSize + lane] = value;
    __syncwarp();
    ++depth;
    end -= kWarpSize;
  }
}

// The exclusive prefix of `tile`, computed by one full warp of its block once the block
// knows the tile's aggregate; it publishes everything other tiles need. The result is in
// every lane (the identity for tile 0).
//
// Deterministic: the same bits on every run, whatever the timing of the other blocks. A
// plain decoupled look-back folds whatever it happens to find (a prefix 3 tiles back on
// one run, 40 on the next) as a tree, so a float sum associates differently from run to
// run. Here the prefix has one fixed form. Tiles form groups of 32; with
// A(t) a tile's aggregate, GA(g) = A(32g) . ... . A(32g+31) a group's aggregate (folded
// left to right) and Q(g) = GA(0) . GA(1) . ... . GA(g-1) (folded left to right), the
// exclusive prefix of tile t = 32g + r is
//     Q(g) . (A(32g) . A(32g+1) . ... . A(t-1)).
// Each tile: (1) publishes A(t); (2) reads the aggregates of the r tiles before it in its
// group (they started earlier and publish theirs without waiting) and folds them; (3) if
// it is its group's last tile, publishes GA(g) at once, so later groups never wait for its
// look-back; (4) finds Q(g) with group_look_back, which folds the nearest published group
// prefix GP(j) = Q(j+1) with the group aggregates after it strictly left to right: by
// induction that is Q(g) for every j found; (5) the group's last tile publishes
// GP(g) = Q(g) . GA(g). Nothing waits on another tile's look-back, only on aggregates, so
// a prefix is never more than two status reads away; every combine chain is at most 31
// tiles long plus the groups since the nearest group prefix.
// Termination: tile ids come from an atomic counter, so every predecessor is running or
// done; aggregates are published unconditionally, and group 0's last tile publishes
// GP(0) = GA(0) at once.
//
// tile_exclusive_prefix_published is the same after step (1): for a tile whose aggregate
// someone already published (the pipelined scan's reducer warp, scan_pipeline.cuh).
template <typename T, typename Combine>
__device__ T tile_exclusive_prefix_published(const ScanTileStatus<T>& status, long long tile, const T& aggregate,
                                             Combine combine, T identity, T* stash, int stash_windows);

template <typename T, typename Combine>
__device__ T tile_exclusive_prefix(const ScanTileStatus<T>& status, long long tile, const T& aggregate,
                                   Combine combine, T identity, T* stash, int stash_windows) {
  if (threadIdx.x % kWarpSize == 0) status.tiles.publish(tile, kTileAggregate, aggregate);
  return tile_exclusive_prefix_published(status, tile, aggregate, combine, identity, stash, stash_windows);
}

template <typename T, typename Combine>
__device__ T tile_exclusive_prefix_published(const ScanTileStatus<T>& status, long long tile, const T& aggregate,
                                             Combine combine, T identity, T* stash, int stash_windows) {
  const int lane = threadIdx.x % kWarpSize;
  const long long group = tile / kTilesPerGroup;
  const int r = static_cast<int>(tile % kTilesPerGroup);

  // (2) The aggregates of the tiles before this one in its group, folded left to right.
  T within = identity;
  if (r > 0) {
    T value = identity;
    for (;;) {
      unsigned flag = kTileAggregate;
      if (lane < r) flag = status.tiles.read(group * kTilesPerGroup + lane, value);
      if (__all_sync(kFullMask, flag != kTileInvalid)) break;
    }
    within = shfl_idx(value, 0);
#pragma unroll
    for (int l = 1; l < kWarpSize; ++l) {
      const T next = shfl_idx(value, l);
      if (l < r) within = combine(within, next);
    }
  }
  // (3) The group's aggregate, from its last tile.
  const bool last_of_group = r == kTilesPerGroup - 1;
  const T group_aggregate = r > 0 ? combine(within, aggregate) : aggregate;
  if (last_of_group && lane == 0)
    status.groups.publish(group, group == 0 ? kTilePrefix : kTileAggregate, group_aggregate);
  if (group == 0) return within;
  // (4) Everything before the group, then (5) the group's inclusive prefix.
  const T before = group_look_back(status.groups, group, combine, identity, stash, stash_windows);
  if (last_of_group && lane == 0) status.groups.publish(group, kTilePrefix, combine(before, group_aggregate));
  return r > 0 ? combine(before, within) : before;
}

}  // namespace ff
