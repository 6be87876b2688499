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
#include <fuseflow/segmented_short.cuh>  // the short-segment pass and the `which` policies

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

// Shared-memory index with one padding word per 32: a warp whose thread t reads item
// t * s + k (the fold's strides: kItems for one long segment, about 3 for segments of
// 3, ...) spreads over the banks instead of hitting a few of them s times.
__device__ __forceinline__ int padded(int i) { return i + (i >> 5); }

// One tile's place on the merge path: its segment ends are [i0, i0 + ends) and its elements
// [j0, j0 + elements) (relative to offsets[0]); items = ends + elements.
struct TileSpan {
  long long i0, j0;
  int ends, elements, items;
  bool valid;  // false when the offsets decrease across the tile (ends or elements < 0)
  bool needed;  // a segment `which` writes lies in it (else the tile is skipped, not even loaded)
  bool fast;   // no segment end, a full tile, vector-aligned: read straight into registers
};

// The body of the merge path's vector_at(i, v): v[k] = element(x..., i + k) for k < kVec,
// x... the inputs' elements read with one vector load per input (element(x..., i) is the
// kernel's fused map of element i). The kernel's lambda passes its __restrict__ input
// parameters straight in: a closure holding the pointers loses their read-only loads
// (ld.global.nc), a call like this one keeps them.
template <int kVec, typename T, typename Element, typename... In>
__device__ __forceinline__ void vector_elements(const Element& element, const long long i, T* v, const In*... in) {
  const auto fold = [&](const Vec<In, kVec>&... x) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) v[k] = element(x.v[k]..., i + k);
  };
  fold(ff::load_vec<kVec>(in + i)...);
}

// Whether every input is aligned to a whole vector of kVec elements (true with none).
template <int kVec, typename... In>
__device__ __forceinline__ bool vectors_aligned(const In*... in) {
  return (0ull | ... | ff::misalignment<kVec>(in)) == 0;
}

// The whole reduction, called by every thread of every block of the grid.
//   segments: m; value_at(i): the (mapped) value of element i; vector_at(i, v): the mapped
//   values of elements i .. i + kVec - 1 into v (i a multiple of kVec; used only when
//   vectors_aligned, i.e. every input is aligned to a whole vector); offset_at(s):
//   offsets[s], clamped to [0, n] so that bad offsets never read or write out of bounds.
//   out: m results; carry_segment, carry_value, head_value: one per block (scratch);
//   ticket: a zeroed counter, left zeroed; invalid: set to 1 when an offset is less than
//   the one before it (the segments concerned get unspecified values); which:
//   EverySegment, or DeferredSegments after reduce_short_segments (then a tile holding no
//   segment it left is skipped, and only those segments are written).
//
// Per tile (kThreads x kItems items), software-pipelined: the next tile's values and
// segment ends are loaded into registers while this one is reduced, so a block always has
// a tile's loads in flight. Two kinds of tile:
//  - no segment end (inside one long segment): each thread folds its kItems consecutive
//    elements, read with vector loads straight into registers (nothing staged);
//  - otherwise the values and ends are staged in shared memory (padded), each end inside
//    the tile setting a "head" byte where the next segment starts; each thread folds its
//    kItems consecutive elements (blocked), restarting at heads, with no branch per
//    element, and writes the running value back over each element.
// Then a segmented scan of the threads' tails (the value of the segment open at each
// thread's end) gives every thread the value of the segment open at its start: ballot
// for the heads, one shuffle per step, and per warp one tail and flag in shared memory.
// Last, one thread per segment end reads its segment's value at the segment's last
// element (the running value there, after the value open at that thread's start if no
// head comes between), so results are written coalesced, in segment order; an empty
// segment (its end equal to the one before) gets the identity.
// Segments carry no ids: the segment open at a tile's start is its i0.
//
// Why every decreasing pair is found: with non-decreasing offsets the tiles' ranges of
// segment ends [i0, i1) partition [0, m) in order, so each end is loaded once and compared
// with its predecessor. Decreasing offsets either leave that so (and the loads find
// them) or make some tile's range run backwards, which is flagged too.
template <int kThreads, int kItems, int kVec, typename T, typename ValueAt, typename VectorAt, typename OffsetAt,
          typename Combine, typename Which = EverySegment>
__device__ __forceinline__ void reduce_by_offsets(const long long segments, ValueAt value_at, VectorAt vector_at,
                                                  const bool vectors_aligned, OffsetAt offset_at, Combine combine,
                                                  const T identity, T* out, long long* carry_segment, T* carry_value,
                                                  T* head_value, unsigned* ticket, unsigned* invalid,
                                                  const Which which = Which{}) {
  // After the short-segment pass: nothing to do when it left no segment (the whole grid
  // returns, so no ticket is drawn and the flag stays zero).
  if (!which.any()) return;
  constexpr int kTile = kThreads * kItems;
  constexpr int kPadded = kTile + kTile / kWarpSize;
  constexpr int kRow = kThreads + kThreads / kWarpSize;  // padded slots of kThreads consecutive elements
  static_assert(kThreads % kWarpSize == 0, "whole warps");
  constexpr int kWarps = kThreads / kWarpSize;
  constexpr bool kVectorTiles = kVec > 1 && kItems % kVec == 0;
  // The tile's segment ends, relative to its first element. Only comparisons with
  // positions in [0, kTile] are made, so they are clamped to [-1, kTile + 1]: 32 bits.
  __shared__ int ends[kPadded];
  __shared__ T values[kPadded];       // the tile's elements, mapped; then each thread's running values
  // Byte p is 1 when a segment starts at tile element p: written by plain stores, one per
  // distinct end (no atomics), read as words.
  constexpr int kHeadWords = (kTile + 3) / 4 + 4;
  __shared__ unsigned heads[kHeadWords];
  __shared__ long long tile_segment[kThreads];  // segment ends before each tile of a batch
  __shared__ bool tile_needed[Which::kSkips ? kThreads : 1];  // a segment `which` writes lies in the tile
  __shared__ T thread_open[kThreads];  // the value open at each thread's first element
  __shared__ unsigned char thread_first_head[kThreads];  // each thread's first head (kItems: none)
  __shared__ T warp_tail[kWarps];    // each warp's inclusive scan of tails
  __shared__ int warp_ended[kWarps];  // whether a segment starts in the warp
  __shared__ Carry<T> scratch[kWarps];
  Carry<T> total;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;

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

  long long block_segment = -1;  // the segment open where this block starts (its "head")
  long long open_segment = -1;   // the segment open after the tiles done so far
  T open = identity;             // its value over this block's elements

  // The next tile, in registers: values (and ends, relative and clamped) in a striped
  // arrangement for staging, or kItems consecutive values per thread for a fast tile.
  T staged_value[kItems];
  int staged_end[kItems];
  unsigned staged_distinct = 0u;  // bit k: staged_end[k] differs from the end before it

  const auto span_of = [&](const long long batch, const int t) {
    const long long d0 = batch + (long long)t * kTile, d1 = min(d_end, d0 + kTile);
    const long long i0 = tile_segment[t], i1 = tile_segment[t + 1];
    TileSpan s;
    s.i0 = i0;
    s.j0 = d0 - i0;
    s.valid = i1 >= i0 && d1 - i1 >= s.j0;  // the same for the whole block: barriers stay matched
    s.needed = !Which::kSkips || tile_needed[Which::kSkips ? t : 0];
    s.ends = (int)(i1 - i0);
    s.elements = (int)(d1 - i1 - s.j0);
    s.items = (int)(d1 - d0);
    s.fast = kVectorTiles && vectors_aligned && s.valid && s.ends == 0 && s.elements == kTile &&
             (first + s.j0) % kVec == 0;
    return s;
  };
  const auto load = [&](const TileSpan& s) {
    if (!s.valid || !s.needed) return;
    if constexpr (kVectorTiles) {
      if (s.fast) {
        const long long at = first + s.j0 + (long long)threadIdx.x * kItems;
#pragma unroll
        for (int k = 0; k < kItems; k += kVec) vector_at(at + k, &staged_value[k]);
        return;
      }
    }
    // Coalesced. Each end is checked against the one before it: the lane below's, by a
    // shuffle (lane 0 loads its own).
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int e = k * kThreads + threadIdx.x;
      if (e < s.elements) staged_value[k] = value_at(first + s.j0 + e);
      if (k * kThreads < s.ends) {  // the same for the whole block: the shuffle is converged
        const long long i = s.i0 + e;
        const bool mine = e < s.ends;
        const long long end = mine ? end_at(i) : 0;
        long long previous = shfl_up(end, 1);
        if (mine) {
          if (lane == 0) previous = i == 0 ? first : end_at(i - 1);
          if (end < previous) *invalid = 1u;
          staged_end[k] = (int)min((long long)kTile + 1, max(-1LL, end - (first + s.j0)));
          if (end != previous) staged_distinct |= 1u << k;
          else staged_distinct &= ~(1u << k);
        }
      }
    }
  };

  for (int i = threadIdx.x; i < kHeadWords; i += kThreads) heads[i] = 0u;  // before the first barrier

  // Tiles go in batches of kThreads - 1: first every thread finds where one tile starts
  // on the merge path (a binary search over the offsets), then the tiles run in order.
  for (long long batch = d_begin; batch < d_end || batch == d_begin; batch += (long long)(kThreads - 1) * kTile) {
    {
      const long long d = min(d_end, batch + (long long)threadIdx.x * kTile);
      const long long lo = max(0LL, d - elements), hi = min(d, segments);
      tile_segment[threadIdx.x] = merge_path_search(d, lo, hi, first, end_at);
    }
    __syncthreads();
    if (block_segment < 0) block_segment = open_segment = tile_segment[0];
    const int batch_tiles = (int)min((long long)(kThreads - 1), (d_end - batch + kTile - 1) / kTile);
    if constexpr (Which::kSkips) {
      // Tile t's segments are tile_segment[t] .. tile_segment[t + 1] (the last one open at its end).
      if (threadIdx.x < batch_tiles)
        tile_needed[threadIdx.x] =
            which.any_in(tile_segment[threadIdx.x], min(tile_segment[threadIdx.x + 1], segments - 1));
      __syncthreads();
    }
    TileSpan next = span_of(batch, 0);
    if (batch_tiles > 0) load(next);
    for (int t = 0; t < batch_tiles; ++t) {
      const TileSpan cur = next;
      // This thread's elements: kItems consecutive ones (blocked), p0 .. p0 + kItems - 1.
      // Each is folded into `tail`, restarting at every head; in staged tiles the running
      // value is written back over the element, so a segment's value is read at its last
      // element. `starts` has bit k set when a segment starts at element p0 + k.
      T tail = identity;
      unsigned starts = 0u;
      if (cur.fast) {  // before the registers take the next tile
#pragma unroll
        for (int k = 0; k < kItems; ++k) tail = combine(tail, staged_value[k]);
      } else if (cur.valid && cur.needed) {
        // Stage the values and the ends; each end inside the tile marks where a segment
        // starts (several empty segments may mark the same element).
        // Element k * kThreads + t sits at padded(t) + k * kRow (kThreads is a multiple of 32):
        // constant offsets from one address.
        const int my_slot = padded(threadIdx.x);
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
          const int e = k * kThreads + threadIdx.x;
          if (e < cur.elements) values[my_slot + k * kRow] = staged_value[k];
          if (e < cur.ends) {
            const int rel = staged_end[k];
            ends[my_slot + k * kRow] = rel;
            // Equal ends (empty segments) mark the same element: only the first writes.
            if (rel >= 0 && rel < cur.elements && (staged_distinct >> k) & 1u)
              reinterpret_cast<unsigned char*>(heads)[rel] = 1;
          }
        }
      }
      // The staged tile is complete, and every thread is done with the previous tile.
      __syncthreads();
      if (t + 1 < batch_tiles) {
        next = span_of(batch, t + 1);
        load(next);
      }
      if (!cur.valid) {
        if (threadIdx.x == 0) *invalid = 1u;
        continue;
      }
      if (!cur.needed) {
        // Every segment here was folded by the short-segment pass, and so is the one open at
        // the tile's end, if any: whatever a later tile adds to it is never written, so it
        // starts from the identity. (The tile was not loaded, and it stages nothing.)
        open = identity;
        open_segment = cur.i0 + cur.ends;
        continue;
      }
      // A staged tile: fold this thread's elements from shared memory.
      const int p0 = (int)threadIdx.x * kItems;
      if (!cur.fast) {
        const int here = max(0, min(kItems, cur.elements - p0));
        if (here > 0) {
          // Bytes p0 .. p0 + kItems - 1 as bits: byte j of a word is 0 or 1, so
          // (word * 0x10204080) >> 28 gathers its four into bits 0..3 (no carries).
          const unsigned char* bytes = reinterpret_cast<const unsigned char*>(heads) + p0;
#pragma unroll
          for (int q = 0; q < kItems; q += 4) {
            unsigned word;
            memcpy(&word, bytes + q, 4);
            starts |= ((word * 0x10204080u) >> 28) << q;
          }
          starts &= (1u << here) - 1u;
        }
        // This thread's elements from one address: when kItems divides 32, p0 + k never
        // crosses a padding word, so element p0 + k sits k slots after p0.
        const auto slot_of = [&](const int k) { return 32 % kItems == 0 ? padded(p0) + k : padded(p0 + k); };
        if (here == kItems) {  // every thread but the tile's last with elements: no bounds
#pragma unroll
          for (int k = 0; k < kItems; ++k) {
            const T v = values[slot_of(k)];
            tail = (starts >> k) & 1u ? v : combine(tail, v);
            values[slot_of(k)] = tail;
          }
        } else {
#pragma unroll
          for (int k = 0; k < kItems; ++k) {
            if (k < here) {
              const T v = values[slot_of(k)];
              tail = (starts >> k) & 1u ? v : combine(tail, v);
              values[slot_of(k)] = tail;
            }
          }
        }
      }
      const bool ended = starts != 0u;  // a segment starts (so one ends) among this thread's elements

      // Segmented inclusive scan of the tails over the warp: lane L's covers lanes
      // start .. L, start being the last lane at or below L where a segment starts (lane 0
      // when none does; the warps before and the tiles before then continue it).
      const unsigned ended_lanes = __ballot_sync(kFullMask, ended);
      const unsigned ended_below = ended_lanes & ((1u << lane) - 1u);
      const unsigned ended_upto = ended_lanes & ((2u << lane) - 1u);
      const int start = ended_upto ? kWarpSize - 1 - __clz((int)ended_upto) : 0;
      T inclusive = tail;
#pragma unroll
      for (int d = 1; d < kWarpSize; d *= 2) {
        const T lower = shfl_up(inclusive, d);
        if (lane - d >= start) inclusive = combine(lower, inclusive);
      }
      T before = shfl_up(inclusive, 1);  // the lanes below, back to the last segment start
      if (lane == kWarpSize - 1) {
        warp_tail[warp] = inclusive;
        warp_ended[warp] = ended_lanes != 0u;
      }
      __syncthreads();
      // The value open at the start of warp w: the warps before it back to the last one
      // where a segment starts, then (if none does) the tiles before.
      const auto open_before = [&](const int w) {
        T v = identity;
        for (int u = w - 1; u >= 0; --u) {
          v = combine(warp_tail[u], v);
          if (warp_ended[u]) return v;
        }
        return combine(open, v);
      };
      const T open_in = open;  // the segment open where the tile starts: segment cur.i0
      open_segment = cur.i0 + cur.ends;
      if (cur.ends > 0) {  // the same for the whole block
        // The value open at this thread's first element, for the segment ends below.
        if (lane == 0) before = identity;
        if (ended_below == 0u) before = combine(open_before(warp), before);
        thread_open[threadIdx.x] = before;
        thread_first_head[threadIdx.x] = (unsigned char)(starts ? __ffs((int)starts) - 1 : kItems);
        // Every head byte has been read: clear them for the next tile.
        for (int i = threadIdx.x; i < kHeadWords; i += kThreads) heads[i] = 0u;
        // An end after the tile's last element: the segment open after the tile starts
        // with the next tile.
        const bool fresh = ends[padded(cur.ends - 1)] >= cur.elements;
        open = fresh ? identity : open_before(kWarps);
        __syncthreads();  // thread_open and thread_first_head complete
        // Segment cur.i0 + k ends before tile element ends[k]: its value is the running value
        // at its last element, after the value open at that thread's start when no segment
        // starts between the two; it is the identity when empty, and the value carried in
        // when its last element is in an earlier tile.
        for (int k = threadIdx.x; k < cur.ends; k += kThreads) {
          const int rel = ends[padded(k)];
          T v = identity;
          if (k == 0 || rel > ends[padded(k - 1)]) {
            const int last = min(rel, cur.elements) - 1;
            if (last < 0) {
              v = open_in;
            } else {
              const int owner = last / kItems;
              v = values[padded(last)];
              if (thread_first_head[owner] > last - owner * kItems) v = combine(thread_open[owner], v);
            }
          }
          const long long s = cur.i0 + k;
          // The block's first segment began before it: earlier blocks hold its start.
          if (s == block_segment) store_global_words(head_value + blockIdx.x, v);
          else if (which.writes(s)) out[s] = v;
        }
        __syncthreads();  // values, ends and thread_open are rewritten by the next tile
      } else {
        // No barrier: warp_tail is rewritten only after the next tile's first one.
        open = open_before(kWarps);
      }
    }
    __syncthreads();  // tile_segment is rewritten by the next batch
  }
  if (threadIdx.x == 0) {
    carry_segment[blockIdx.x] = open_segment;
    store_global_words(carry_value + blockIdx.x, open);  // padding included, for the coherent reads below
  }

  // The last block completes each block's head with the carries of the blocks before it.
  if (!take_last_block_ticket(ticket)) return;
  if (threadIdx.x == 0) which.reset();  // every block has read it: the next launch finds it zero
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
    if (c.segment != starts_in && starts_in >= 0 && starts_in < segments && which.writes(starts_in)) {
      const T head = load_global_coherent(head_value + b);
      out[starts_in] = running.segment == starts_in ? combine(running.value, head) : head;
    }
    running = join(running, c, combine);
  }
}

}  // namespace segmented
}  // namespace ff
