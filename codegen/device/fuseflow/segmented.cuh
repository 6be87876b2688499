// fuseflow device helper library: segmented reduction by offsets (CSR), load-balanced.
//
// Segment s is the elements [offsets[s], offsets[s + 1]). The work is the merge of two
// sorted lists, the segment ends (offsets[1..m]) and the element positions
// (offsets[0] .. offsets[m] - 1): m + (offsets[m] - offsets[0]) items, an item being either
// "fold the next element" or "segment s ends here". The grid splits ITEMS evenly (merge
// path, as in Merrill & Garland's merge-based SpMV), so one huge segment, millions of
// tiny ones, and empty segments all cost the same per item: no segment-length skew can
// leave a block with more than its share.
//
// Each block owns a contiguous range of tiles (kThreads x kItems items) and walks them in
// order, carrying the value of the segment that is open at a tile boundary into the next
// tile. Inside a tile, each thread folds kItems consecutive items; a segment crossing
// thread boundaries is completed by an order-preserving exclusive scan of the threads'
// carries. A segment crossing block boundaries is completed by the last block to finish,
// from every block's carry-out and "head" (the first segment it ends). Left operands
// always cover lower element indices, so non-commutative monoids stay exact.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {
namespace segmented {

// A partial reduction of one segment. `segment` < 0 is "nothing yet" (the identity of join).
template <typename T>
struct Carry {
  long long segment;
  T value;
};

// Joins two carries, a covering lower positions than b: within one segment the values
// combine; otherwise b's segment is the one still open. Associative for carries whose
// segments do not decrease from left to right, which holds for carries taken in order.
template <typename T, typename Combine>
__device__ __forceinline__ Carry<T> join(const Carry<T>& a, const Carry<T>& b, Combine combine) {
  if (b.segment < 0) return a;
  if (a.segment == b.segment) return Carry<T>{b.segment, combine(a.value, b.value)};
  return b;
}

// Exclusive scan of one carry per thread, in thread order: returns the join of the carries
// of threads 0 .. t-1 (nothing for thread 0), and every thread gets the block's join in
// total. `scratch` holds kThreads / 32 carries. Ends with a barrier, so scratch is reusable.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ Carry<T> block_exclusive_join(Carry<T> carry, const T& identity, Combine combine,
                                                         Carry<T>* scratch, Carry<T>& total) {
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const Carry<T> none{-1, identity};
  Carry<T> inclusive = carry;
#pragma unroll
  for (int d = 1; d < kWarpSize; d *= 2) {
    Carry<T> lower = shfl_up(inclusive, d);
    if (lane >= d) inclusive = join(lower, inclusive, combine);
  }
  Carry<T> exclusive = shfl_up(inclusive, 1);
  if (lane == 0) exclusive = none;
  if (lane == kWarpSize - 1) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    Carry<T> w = lane < kWarps ? scratch[lane] : none;
#pragma unroll
    for (int d = 1; d < kWarpSize; d *= 2) {
      Carry<T> lower = shfl_up(w, d);
      if (lane >= d) w = join(lower, w, combine);
    }
    if (lane < kWarps) scratch[lane] = w;  // inclusive over warps 0 .. lane
  }
  __syncthreads();
  if (warp > 0) exclusive = join(scratch[warp - 1], exclusive, combine);
  total = scratch[kWarps - 1];
  __syncthreads();
  return exclusive;
}

// How many segment ends come among the first `diagonal` items of the merge, searching
// [lo, hi]. The end of segment i is end_at(i); element j sits at position first + j; an
// end comes first when end <= position (the segment holds no element at or after it).
template <typename EndAt>
__device__ __forceinline__ long long merge_path_search(long long diagonal, long long lo, long long hi,
                                                       long long first, EndAt end_at) {
  while (lo < hi) {
    const long long pivot = (lo + hi) / 2;
    if (end_at(pivot) <= first + diagonal - pivot - 1) lo = pivot + 1;
    else hi = pivot;
  }
  return lo;
}

// The whole reduction, called by every thread of every block of the grid.
//   segments: m; value_at(i): the (mapped) value of element i; offset_at(s): offsets[s],
//   clamped to [0, n] so that bad offsets never read or write out of bounds.
//   out: m results; carry_segment, carry_value, head_value: one per block (scratch);
//   ticket: a zeroed counter, left zeroed; invalid: set to 1 when an offset is less than
//   the one before it (the segments concerned get unspecified values).
//
// Why every decreasing pair is found: with non-decreasing offsets the tiles' ranges of
// segment ends [i0, i1) partition [0, m) in order, so each end is staged once and compared
// with its predecessor. Decreasing offsets either leave that so (and the staging finds
// them) or make some tile's range run backwards, which is flagged too.
template <int kThreads, int kItems, typename T, typename ValueAt, typename OffsetAt, typename Combine>
__device__ __forceinline__ void reduce_by_offsets(const long long segments, ValueAt value_at, OffsetAt offset_at,
                                                  Combine combine, const T identity, T* out,
                                                  long long* carry_segment, T* carry_value, T* head_value,
                                                  unsigned* ticket, unsigned* invalid) {
  constexpr int kTile = kThreads * kItems;
  // The tile's segment ends, relative to its first element. Only comparisons with
  // positions in [0, kTile] are made, so they are clamped to [-1, kTile + 1]: 32 bits.
  __shared__ int ends[kTile];
  __shared__ T values[kTile];        // the tile's elements, mapped
  __shared__ long long tile_segment[kThreads];  // segment ends before each tile of a batch
  __shared__ Carry<T> scratch[kThreads / kWarpSize];
  Carry<T> total;

  const long long first = offset_at(0);
  const long long elements = max(0LL, offset_at(segments) - first);
  const long long items = segments + elements;
  const auto end_at = [&](long long s) { return offset_at(s + 1); };

  // This block's contiguous range of tiles: the first tiles % blocks blocks take one more.
  const long long tiles = (items + kTile - 1) / kTile;
  const long long share = tiles / gridDim.x, extra = tiles % gridDim.x;
  const long long my_first_tile = blockIdx.x * share + min((long long)blockIdx.x, extra);
  const long long my_tiles = share + ((long long)blockIdx.x < extra ? 1 : 0);
  const long long d_begin = min(items, my_first_tile * kTile);
  const long long d_end = min(items, (my_first_tile + my_tiles) * kTile);

  long long block_segment = -1;  // the segment open where this block starts
  Carry<T> open{-1, identity};    // that segment's value so far, then the next open one
  // Tiles go in batches of kThreads - 1: first every thread finds where one tile starts
  // on the merge path (a binary search over the offsets), then the tiles run in order.
  for (long long batch = d_begin; batch < d_end || batch == d_begin; batch += (long long)(kThreads - 1) * kTile) {
    {
      const long long d = min(d_end, batch + (long long)threadIdx.x * kTile);
      const long long lo = max(0LL, d - elements), hi = min(d, segments);
      tile_segment[threadIdx.x] = merge_path_search(d, lo, hi, first, end_at);
    }
    __syncthreads();
    if (block_segment < 0) {
      block_segment = tile_segment[0];
      open = Carry<T>{block_segment, identity};
    }
    for (int t = 0; t + 1 < kThreads; ++t) {
      const long long d0 = batch + (long long)t * kTile;
      if (d0 >= d_end) break;
      const long long d1 = min(d_end, d0 + kTile);
      const long long i0 = tile_segment[t], i1 = tile_segment[t + 1];
      const long long j0 = d0 - i0, j1 = d1 - i1;
      const int tile_ends = (int)(i1 - i0), tile_elements = (int)(j1 - j0), tile_items = (int)(d1 - d0);
      if (tile_ends < 0 || tile_elements < 0) {  // the same for the whole block: barriers stay matched
        if (threadIdx.x == 0) *invalid = 1u;
        continue;
      }
      // Coalesced: the tile's segment ends and elements, into shared memory. Each end is
      // checked against the one before it (the previous thread's, so a cache hit).
      for (int k = threadIdx.x; k < tile_ends; k += kThreads) {
        const long long end = end_at(i0 + k);
        if (end < (i0 + k == 0 ? first : end_at(i0 + k - 1))) *invalid = 1u;
        ends[k] = (int)min((long long)kTile + 1, max(-1LL, end - (first + j0)));
      }
      for (int k = threadIdx.x; k < tile_elements; k += kThreads) values[k] = value_at(first + j0 + k);
      __syncthreads();

      // This thread's kItems items, from where it starts on the tile's merge path.
      const int dd = min((int)threadIdx.x * kItems, tile_items);
      const int dd_end = min(dd + kItems, tile_items);
      int x = dd - tile_elements > 0 ? dd - tile_elements : 0, hi = min(dd, tile_ends);
      while (x < hi) {
        const int pivot = (x + hi) / 2;
        if (ends[pivot] <= dd - pivot - 1) x = pivot + 1;
        else hi = pivot;
      }
      int j = dd - x;
      T running = identity;
      bool ended = false;   // whether this thread ended a segment
      long long first_ended = 0;
      T first_value = identity;  // that segment's value from this thread's start
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        if (x + j < dd_end) {
          if (x < tile_ends && (j >= tile_elements || ends[x] <= j)) {
            if (!ended) {
              ended = true;
              first_ended = i0 + x;
              first_value = running;
            } else {
              out[i0 + x] = running;  // began and ended inside this thread: complete
            }
            running = identity;
            ++x;
          } else {
            running = combine(running, values[j]);
            ++j;
          }
        }
      }
      // The segment open at this thread's start continues what the threads before it
      // (and the tiles before this one) carried.
      const Carry<T> before = block_exclusive_join<kThreads>(Carry<T>{i0 + x, running}, identity, combine, scratch, total);
      const Carry<T> prefix = join(open, before, combine);
      if (ended) {
        const T v = prefix.segment == first_ended ? combine(prefix.value, first_value) : first_value;
        if (first_ended == block_segment) head_value[blockIdx.x] = v;  // earlier blocks hold its start
        else out[first_ended] = v;
      }
      open = join(open, total, combine);
    }
    __syncthreads();  // tile_segment is rewritten by the next batch
  }
  if (threadIdx.x == 0) {
    carry_segment[blockIdx.x] = open.segment;
    carry_value[blockIdx.x] = open.value;
  }

  // The last block completes each block's head with the carries of the blocks before it.
  if (!take_last_block_ticket(ticket)) return;
  const long long blocks = gridDim.x;
  const long long per_thread = (blocks + kThreads - 1) / kThreads;
  const long long lo = min(blocks, (long long)threadIdx.x * per_thread), hi = min(blocks, lo + per_thread);
  const auto carry_of = [&](long long b) {
    return Carry<T>{load_global_coherent(carry_segment + b), load_global_coherent(carry_value + b)};
  };
  Carry<T> mine{-1, identity};
  for (long long b = lo; b < hi; ++b) mine = join(mine, carry_of(b), combine);
  Carry<T> running = block_exclusive_join<kThreads>(mine, identity, combine, scratch, total);
  for (long long b = lo; b < hi; ++b) {
    const Carry<T> c = carry_of(b);
    const long long starts_in = b == 0 ? 0 : load_global_coherent(carry_segment + b - 1);
    if (c.segment != starts_in && starts_in >= 0 && starts_in < segments) {
      const T head = load_global_coherent(head_value + b);
      out[starts_in] = running.segment == starts_in ? combine(running.value, head) : head;
    }
    running = join(running, c, combine);
  }
}

}  // namespace segmented
}  // namespace ff
