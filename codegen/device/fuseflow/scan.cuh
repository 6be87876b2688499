// fuseflow device helper library: scans.
//
// Embedded into the fuseflow binary like collectives.cuh. Layered as in CUB: the warp
// inclusive scan (shuffles) is the building block of the block scan; tile status and the
// look-back of Merrill & Garland ("Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016) turn block scans into one device-wide pass. The look-back here is
// deterministic (see look_back): every tile's prefix is the chained left fold of the tile
// aggregates, so a float scan gives the same bits on every run (DESIGN.md, Strategies).
//
// As in collectives.cuh, every combine keeps element order: the left operand always
// covers lower indices, so non-commutative monoids (linear recurrences, MSSP) are exact.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {

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
// kThreads / 32 values. Ends with a barrier so scratch can be reused.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T block_exclusive_scan(T value, Combine combine, T identity, T* scratch, T& aggregate) {
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
  __syncthreads();
  return combine(warp_prefix, exclusive);
}

// ---- decoupled look-back -------------------------------------------------------------

// A tile's status: nothing yet, its own aggregate, or its inclusive prefix (the
// combination of every element up to the end of the tile).
enum TileFlag : unsigned { kTileInvalid = 0, kTileAggregate = 1, kTilePrefix = 2 };

// Bytes of the flags array of unpacked tile status, before the values (the host sizes it alike).
__host__ __device__ constexpr unsigned long long lookback_flags_bytes(unsigned long long tiles) {
  return (tiles * 4 + 15) / 16 * 16;
}

// Tile status in zeroed device memory (zero is kTileInvalid). Values of 4 bytes or less
// share one 64-bit word with their flag, written and read with single 64-bit accesses,
// so a reader sees the flag and its value together without fences.
template <typename T, bool kPacked = (sizeof(T) <= 4)>
struct LookbackState;

template <typename T>
struct LookbackState<T, true> {
  unsigned long long* words;  // (value bits << 32) | flag, one per tile

  __device__ LookbackState(void* storage, long long /*tiles*/) : words(static_cast<unsigned long long*>(storage)) {}

  __device__ __forceinline__ void publish(long long tile, unsigned flag, const T& value) const {
    unsigned bits = 0;
    memcpy(&bits, &value, sizeof(T));
    volatile unsigned long long* word = words + tile;
    *word = (static_cast<unsigned long long>(bits) << 32) | flag;
  }

  __device__ __forceinline__ unsigned read(long long tile, T& value) const {
    const volatile unsigned long long* word = words + tile;
    const unsigned long long w = *word;
    const unsigned bits = static_cast<unsigned>(w >> 32);
    memcpy(&value, &bits, sizeof(T));
    return static_cast<unsigned>(w);
  }
};

// Larger values: flags, aggregates and inclusive prefixes in three arrays (as CUB does).
// Aggregate and prefix have separate arrays, so a reader that saw kTileAggregate never
// reads a half-written prefix. The writer fences between the value and the flag; the
// reader fences between the flag and the value.
template <typename T>
struct LookbackState<T, false> {
  unsigned* flags;
  T* aggregates;
  T* prefixes;

  __device__ LookbackState(void* storage, long long tiles)
      : flags(static_cast<unsigned*>(storage)),
        aggregates(reinterpret_cast<T*>(static_cast<char*>(storage) + lookback_flags_bytes(tiles))),
        prefixes(aggregates + tiles) {}

  __device__ __forceinline__ void publish(long long tile, unsigned flag, const T& value) const {
    (flag == kTilePrefix ? prefixes : aggregates)[tile] = value;
    __threadfence();  // the value is visible device-wide before the flag that announces it
    volatile unsigned* f = flags + tile;
    *f = flag;
  }

  __device__ __forceinline__ unsigned read(long long tile, T& value) const {
    const volatile unsigned* f = flags + tile;
    const unsigned flag = *f;
    if (flag != kTileInvalid) {
      __threadfence();  // the value is read after the flag
      value = load_global_coherent((flag == kTilePrefix ? prefixes : aggregates) + tile);
    }
    return flag;
  }
};

// The exclusive prefix of `tile` (> 0), computed by one full warp, deterministic: the
// same bits on every run whatever the timing of the other blocks.
//
// A plain decoupled look-back folds whatever it happens to find (a prefix 3 tiles back
// on one run, 40 tiles back on the next) and combines the window as a tree, so a
// floating-point sum associates differently from run to run. Here every tile's inclusive
// prefix is the chained left fold P(t) = P(t-1) . A(t) (P(0) = A(0), A = a tile's
// aggregate), whichever predecessor the look-back finds:
//  - lane l reads the status of tile - 32 + l (the 32 nearest predecessors, at once);
//  - j is the nearest of them with an inclusive prefix (ballot); with none in the window,
//    or while a tile between j and `tile` has not published its aggregate yet, the warp
//    re-reads the SAME window (spins) instead of moving further back;
//  - the exclusive prefix is the strict left fold P(j) . A(j+1) . ... . A(tile-1),
//    combined one tile at a time in index order, never as a tree over the window.
// By induction (P(j) is the chained fold up to j), the result is the chained fold up to
// tile - 1 for every j found, and the tile publishes P(tile) = exclusive . A(tile).
// Termination: tile 0 publishes its prefix at once, every tile publishes its aggregate
// before it looks back and its prefix right after, and tile ids come from an atomic
// counter, so every predecessor is running or done: the window always fills in.
// Predecessors before tile 0 read as aggregates that are never combined (they lie below
// tile 0, which ends up as j at the latest). The result is in every lane.
template <typename State, typename T, typename Combine>
__device__ T look_back(const State& state, long long tile, Combine combine, T identity) {
  const int lane = threadIdx.x % kWarpSize;
  const long long predecessor = tile - kWarpSize + lane;
  unsigned flag;
  T value;
  int nearest = 0;  // the lane of j
  for (;;) {
    flag = kTileAggregate;  // before tile 0: never combined, never waited for
    value = identity;
    if (predecessor >= 0) flag = state.read(predecessor, value);
    const unsigned prefixes = __ballot_sync(kFullMask, flag == kTilePrefix);
    if (prefixes == 0) continue;  // no prefix in the window yet: read it again
    nearest = 31 - __clz(static_cast<int>(prefixes));
    // Every tile after j must have published at least its aggregate.
    if (__any_sync(kFullMask, lane > nearest && flag == kTileInvalid)) continue;
    break;
  }
  // Strict left fold from j, one tile at a time. The shuffles do not depend on the
  // running value, so they all issue at once; only the combines form a chain.
  T exclusive = shfl_idx(value, nearest);
#pragma unroll
  for (int l = 1; l < kWarpSize; ++l) {
    const T next = shfl_idx(value, l);
    if (l > nearest) exclusive = combine(exclusive, next);
  }
  return exclusive;
}

}  // namespace ff
