// fuseflow device helper library: segmented scans (by offsets, by key) and reduce_by_key
// on the pipelined scan's ring (scan_pipeline.cuh), sm_90 and later.
//
// The same persistent block per SM, the same roles (producer, reducer, look-back,
// scanners) and the same deterministic look-back as the plain pipelined scan, over the
// pieces of segmented_scan.cuh: each element is lifted to (value, head) and pieces combine
// as (a, ha) . (b, hb) = (hb ? b : a . b, ha | hb), an associative operator, so the plain
// pipelined scan over pieces is the segmented scan. What differs from the plain ring:
//
//  - the producer stages several 4-byte inputs per tile (a scan by key reads its keys
//    and its values), each in its own region of the stage, and, in the word before each
//    region, that input's element before the tile (base - 1), so the key of the element
//    before any staged one is in shared memory;
//  - a `prepare(stage, base, valid)` hook runs in the producer warp after the tile's bulk
//    copies are issued and before its lanes arrive on `loaded`: by offsets it marks the
//    tile's segment heads in a bitmask of the stage (two 32-way searches of the offsets,
//    segmented_scan.cuh's warp_lower_bound), by key it does nothing;
//  - the reducer and the scanners read a round's four elements through
//    lift(stage, e, i, count, values, heads): the values and head bits of tile elements
//    e .. e + 3 (global index i), of which the first `count` are before n; the others are
//    the identity without a head;
//  - reduce_by_key's pieces count their heads (Piece<T, long long>): the heads before a
//    head number its run, and the writers in the scanners' places store each run's key
//    and the previous run's total there (run_piece_tiles), element n - 1 the last total
//    and the run count.
//
// `loaded` takes kWarpSize + 1 arrivals: lane 0's expecting arrival for the bulk copies
// and every lane's own after its ordinary stores (the tail, the element before the tile,
// the heads); so the bitmask written after the copies are issued is released with them.
// Everything else (the ring's order, why it cannot deadlock) is scan_pipeline.cuh's.
#pragma once

#include <fuseflow/scan_pipeline.cuh>
#include <fuseflow/segmented_scan.cuh>

namespace ff {
namespace segmented {

// Words per input per stage: the word before the tile's element 0 at offset 3 (so the
// tile starts 16-byte aligned at 4), then kTile elements.
template <int kTile>
__device__ __forceinline__ constexpr long long stage_stride() {
  return kTile + 4;
}
// Input j of stage s: tile element e is word e of the result; word -1 is element base - 1.
template <int kTile, int kInputs>
__device__ __forceinline__ unsigned* stage_input(unsigned* words, int s, int j) {
  return words + (static_cast<long long>(s) * kInputs + j) * stage_stride<kTile>() + 4;
}

// The ring's control over pieces: Heads is bool (a scan's head flags) or long long
// (reduce_by_key's head counts, which number the runs).
template <typename T, int kStages, int kScanWarps, typename Heads = bool>
using PiecePipeline = ScanPipeline<Piece<T, Heads>, kStages, kScanWarps>;

// One thread, before the roles start (then a __syncthreads()): `loaded` takes lane 0's
// expecting arrival, then every lane's own.
template <typename P, int kStages, int kScanWarps>
__device__ void piece_pipeline_init(ScanPipeline<P, kStages, kScanWarps>& p) {
  pipeline_init(p, 1, kWarpSize + 1);
}

// The producer warp: as produce_tiles (scan_pipeline.cuh) for kInputs 4-byte inputs, `in`
// their words; then prepare(s, base, valid) in the whole warp; then each lane arrives.
template <int kTile, int kInputs, typename P, int kStages, int kScanWarps, typename Prepare>
__device__ void produce_piece_tiles(ScanPipeline<P, kStages, kScanWarps>& p, unsigned* words,
                                    const unsigned* const (&in)[kInputs], long long n, long long tiles,
                                    unsigned* counter, Prepare prepare) {
  const int lane = threadIdx.x % kWarpSize;
  bool bulk = true;
#pragma unroll
  for (int j = 0; j < kInputs; ++j) bulk = bulk && aligned16(in[j]);
  for (long long use = 0;; ++use) {
    const int s = ring_stage<kStages>(use);
    if (use >= kStages) barrier_wait(&p.freed[s], ring_parity<kStages>(use - kStages));
    const unsigned id = draw_ring_tile(counter, tiles);
    if (id >= tiles) {
      if (lane == 0) {
        p.tile[s] = -1;
        barrier_arrive(&p.loaded[s]);
      }
      barrier_arrive(&p.loaded[s]);
      return;
    }
    const long long base = static_cast<long long>(id) * kTile;
    const long long valid = n - base < kTile ? n - base : kTile;
    const long long by_copy = bulk ? valid / 4 * 4 : 0;  // elements the copy engine brings
#pragma unroll
    for (int j = 0; j < kInputs; ++j) {
      unsigned* const stage = stage_input<kTile, kInputs>(words, s, j);
      for (long long e = by_copy + lane; e < valid; e += kWarpSize) stage[e] = in[j][base + e];
      if (lane == 0) stage[-1] = base > 0 ? in[j][base - 1] : 0u;
    }
    if (lane == 0) {
      p.tile[s] = id;
      if (by_copy > 0) {
        // The scanners' ordinary reads of this stage's last tile came before `freed`;
        // order them before the copy engine's writes.
        fence_proxy_async();
        const unsigned bytes = static_cast<unsigned>(by_copy * 4);
        barrier_arrive_expect(&p.loaded[s], bytes * kInputs);
#pragma unroll
        for (int j = 0; j < kInputs; ++j)
          bulk_copy_to_shared(stage_input<kTile, kInputs>(words, s, j), in[j] + base, bytes, &p.loaded[s]);
      } else {
        barrier_arrive(&p.loaded[s]);
      }
    }
    prepare(s, base, valid);
    __syncwarp();
    barrier_arrive(&p.loaded[s]);
  }
}

// The kernel's lift (the reducer's and the scanners' view of a stage) from its functors:
// value_at(k) is the value of element i + k, key_at(k) its key (by key), the first `count`
// of the four before n; the others are the identity without a head. Returns the head bits.
// By key: a head where the key changes from the element before (`previous`: the key of
// element i - 1, staged before the tile), and at element 0.
template <typename T, typename Key, typename ValueAt, typename KeyAt, typename SameKey>
__device__ __forceinline__ unsigned lift_by_key(Key previous, long long i, int count, T identity, ValueAt value_at,
                                                KeyAt key_at, SameKey same_key, T (&v)[4]) {
  unsigned heads = 0u;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    v[k] = k < count ? value_at(k) : identity;
    const Key key = key_at(k);
    if (k < count && (i + k == 0 || !same_key(previous, key))) heads |= 1u << k;
    previous = key;
  }
  return heads;
}

// By offsets: a head where the producer's bitmask says so (`bits`, one per element); an
// element outside [first, last) (offsets[0] and the last offset) belongs to no segment:
// the identity, a head of its own.
template <typename T, typename ValueAt>
__device__ __forceinline__ unsigned lift_by_offsets(unsigned bits, long long i, int count, long long first,
                                                    long long last, T identity, ValueAt value_at, T (&v)[4]) {
  unsigned heads = 0u;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const bool inside = k < count && i + k >= first && i + k < last;
    v[k] = inside ? value_at(k) : identity;
    if ((bits >> k & 1u) || (k < count && !inside)) heads |= 1u << k;
  }
  return heads;
}

// Lifts a lane's four elements of a round: `count` of them before n (the rest the
// identity, no head), their values and head bits.
template <typename T, typename Lift>
__device__ __forceinline__ unsigned lift_four(Lift& lift, int s, int e, long long i, int count, T (&v)[4]) {
  unsigned heads = 0u;
  lift(s, e, i, count, v, heads);
  return heads;
}

// The reducer warp: each scanner segment's piece and the tile's, published at once. Pieces
// do not commute, so a lane cannot fold its elements of every round as the plain reducer
// does; instead each lane folds a contiguous chunk of the segment (kSegment / 32 elements)
// in the lane, and only the chunks' pieces are folded across the warp, once per segment.
// Lane l starts its chunk at quad l % kQuads and wraps around (two runs, folded apart and
// joined in order), so the lanes' 16-byte reads spread over the banks.
template <int kTile, typename T, typename Heads, int kStages, int kScanWarps, typename Lift, typename Combine>
__device__ void reduce_piece_tiles(ScanPipeline<Piece<T, Heads>, kStages, kScanWarps>& p, long long n,
                                   const ScanTileStatus<Piece<T, Heads>>& status, Lift lift, Combine combine,
                                   T identity) {
  using P = Piece<T, Heads>;
  constexpr int kSegment = kTile / kScanWarps;
  constexpr int kQuads = kSegment / kWarpSize / 4;  // a lane's chunk, in quads
  static_assert(kSegment % 128 == 0, "a segment is whole rounds of 4 elements per lane");
  const int lane = threadIdx.x % kWarpSize;
  const auto pieces = [&](const P& a, const P& b) { return combine_pieces(a, b, combine); };
  const P none = {identity, static_cast<Heads>(0)};
  const int turn = lane % kQuads;  // the lane's first quad
  // The piece of segment w of the stage's tile; `valid`: the tile's elements before n.
  const auto segment_piece = [&](const int s, const long long base, const int w, const int valid, const bool whole) {
    P before_turn = none, from_turn = none;  // the chunk's quads [0, turn) and [turn, kQuads)
#pragma unroll
    for (int q = 0; q < kQuads; ++q) {
      const int quad = q + turn < kQuads ? q + turn : q + turn - kQuads;
      const int e = w * kSegment + lane * (kQuads * 4) + quad * 4;
      const int count = whole ? 4 : valid - e < 0 ? 0 : valid - e > 4 ? 4 : valid - e;
      T v[4];
      const unsigned heads = lift_four(lift, s, e, base + e, count, v);
      P x = {v[0], static_cast<Heads>(heads & 1u)};
#pragma unroll
      for (int k = 1; k < 4; ++k) x = pieces(x, P{v[k], static_cast<Heads>(heads >> k & 1u)});
      if (quad >= turn) from_turn = pieces(from_turn, x);
      else before_turn = pieces(before_turn, x);
    }
    const P chunk = warp_inclusive_scan(pieces(before_turn, from_turn), pieces);
    return shfl_idx(chunk, kWarpSize - 1);
  };
  for (long long use = 0;; ++use) {
    const int s = ring_stage<kStages>(use);
    barrier_wait(&p.loaded[s], ring_parity<kStages>(use));
    const long long tile = p.tile[s];
    if (tile < 0) {
      if (lane == 0) barrier_arrive(&p.reduced[s]);
      return;
    }
    const long long base = tile * kTile;
    const int valid = static_cast<int>(n - base < kTile ? n - base : kTile);
    P aggregate = none;
#pragma unroll 1
    for (int w = 0; w < kScanWarps; ++w) {
      const P total = valid == kTile ? segment_piece(s, base, w, valid, true) : segment_piece(s, base, w, valid, false);
      if (lane == 0) p.segment_total[s][w] = total;
      aggregate = pieces(aggregate, total);
    }
    if (lane == 0) {
      status.tiles.publish(tile, kTileAggregate, aggregate);
      p.aggregate[s] = aggregate;
      barrier_arrive(&p.reduced[s]);
    }
  }
}

// The lane's four elements of a round as pieces (local[k]: its elements 0 .. k), and the
// piece of everything before the lane's first element (`before`, seeded with `carry`);
// returns the carry after the round.
template <typename T, typename Heads, typename Lift, typename Combine>
__device__ __forceinline__ Piece<T, Heads> round_pieces(Lift& lift, int s, int e, long long i, int count,
                                                        const Piece<T, Heads>& carry, Combine combine, T identity,
                                                        unsigned& heads, Piece<T, Heads> (&local)[4],
                                                        Piece<T, Heads>& before) {
  using P = Piece<T, Heads>;
  const auto pieces = [&](const P& a, const P& b) { return combine_pieces(a, b, combine); };
  const int lane = threadIdx.x % kWarpSize;
  T v[4];
  heads = lift_four(lift, s, e, i, count, v);
  local[0] = P{v[0], static_cast<Heads>(heads & 1u)};
#pragma unroll
  for (int k = 1; k < 4; ++k) local[k] = pieces(local[k - 1], P{v[k], static_cast<Heads>(heads >> k & 1u)});
  const P lanes = warp_inclusive_scan(local[3], pieces);
  before = shfl_up(lanes, 1);
  if (lane == 0) before = P{identity, static_cast<Heads>(0)};
  before = pieces(carry, before);
  return pieces(carry, shfl_idx(lanes, kWarpSize - 1));
}

// One round of a scanner: store4(s, e, i, scanned) for a whole quad, store1(s, e, i,
// scanned) per element for the first `count`. Exclusive: a head's scan is the identity,
// every other element's the combination of its segment's elements before it.
template <bool kInclusive, typename T, typename Lift, typename Combine, typename Store4, typename Store1>
__device__ __forceinline__ Piece<T, bool> scan_piece_four(Lift& lift, int s, int e, long long i, int count,
                                                         const Piece<T, bool>& carry, Combine combine, T identity,
                                                         Store4& store4, Store1& store1) {
  using P = Piece<T, bool>;
  const auto pieces = [&](const P& a, const P& b) { return combine_pieces(a, b, combine); };
  unsigned heads;
  P local[4], before;
  const P after = round_pieces(lift, s, e, i, count, carry, combine, identity, heads, local, before);
  T scanned[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (kInclusive) scanned[k] = pieces(before, local[k]).value;
    else if (heads >> k & 1u) scanned[k] = identity;
    else scanned[k] = k == 0 ? before.value : pieces(before, local[k - 1]).value;
  }
  if (count == 4) {
    store4(s, e, i, scanned);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (k < count) store1(s, e + k, i + k, scanned[k]);
  }
  return after;
}

// One round of reduce_by_key's writer: the heads up to an element, less one, number its
// run. A head calls run_head(s, e, i, run, previous) (its run's key into slot `run`, and
// `previous`, the value of the run before it, when run > 0); element n - 1 calls
// last_run(runs, value) (the last run's value and the number of runs).
template <typename T, typename Lift, typename Combine, typename RunHead, typename LastRun>
__device__ __forceinline__ Piece<T, long long> run_piece_four(Lift& lift, int s, int e, long long i, int count,
                                                             const Piece<T, long long>& carry, Combine combine,
                                                             T identity, long long n, RunHead& run_head,
                                                             LastRun& last_run) {
  using P = Piece<T, long long>;
  const auto pieces = [&](const P& a, const P& b) { return combine_pieces(a, b, combine); };
  unsigned heads;
  P local[4], before;
  const P after = round_pieces(lift, s, e, i, count, carry, combine, identity, heads, local, before);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k >= count) break;
    if (heads >> k & 1u) {
      const P until = k == 0 ? before : pieces(before, local[k - 1]);  // the elements before this head
      run_head(s, e + k, i + k, until.heads, until.value);
    }
    if (i + k == n - 1) {
      const P through = pieces(before, local[k]);
      last_run(through.heads, through.value);
    }
  }
  return after;
}

// A scanner warp (`segment` 0 .. kScanWarps - 1), scan_pipeline.cuh's scanner_rounds:
// round(s, e, i, count, carry) for each round of 128 elements of its segment of each
// tile (e: tile element, i: global index, count: elements of the lane's four before n),
// returning the carry after it.
template <int kTile, typename P, int kStages, int kScanWarps, typename Round>
__device__ void piece_rounds(ScanPipeline<P, kStages, kScanWarps>& p, int segment, long long n, Round round) {
  constexpr int kSegment = kTile / kScanWarps;
  const int first = segment * kSegment;  // the segment's first tile element
  scanner_rounds<kTile>(p, segment, n, [&](auto checked, int s, int e, long long left, long long base, const P& carry) {
    const int count = !decltype(checked)::value ? 4 : static_cast<int>(left - e < 0 ? 0 : left - e > 4 ? 4 : left - e);
    return round(s, first + e, base + e, count, carry);
  });
}

// The scanners of a segmented scan.
template <int kTile, bool kInclusive, typename T, int kStages, int kScanWarps, typename Lift, typename Combine,
          typename Store4, typename Store1>
__device__ void scan_piece_tiles(PiecePipeline<T, kStages, kScanWarps>& p, int segment, long long n, Lift lift,
                                 Combine combine, T identity, Store4 store4, Store1 store1) {
  piece_rounds<kTile>(p, segment, n, [&](int s, int e, long long i, int count, const Piece<T, bool>& carry) {
    return scan_piece_four<kInclusive>(lift, s, e, i, count, carry, combine, identity, store4, store1);
  });
}

// The writers of reduce_by_key (in the scanners' places).
template <int kTile, typename T, int kStages, int kScanWarps, typename Lift, typename Combine, typename RunHead,
          typename LastRun>
__device__ void run_piece_tiles(PiecePipeline<T, kStages, kScanWarps, long long>& p, int segment, long long n,
                                Lift lift, Combine combine, T identity, RunHead run_head, LastRun last_run) {
  piece_rounds<kTile>(p, segment, n, [&](int s, int e, long long i, int count, const Piece<T, long long>& carry) {
    return run_piece_four(lift, s, e, i, count, carry, combine, identity, n, run_head, last_run);
  });
}

// ---- segment heads from offsets, in the producer ------------------------------------------

// Two lower bounds at once, one per half-warp (16 pivots a step, as warp_lower_bound does
// with 32): lanes 0-15 find the first s in [0, count) with offset_at(s) >= `key` of lane 0,
// lanes 16-31 that of lane 16's key. The two searches' reads overlap, so the producer waits
// for one chain of dependent reads instead of two. Every lane gets its half's answer.
template <typename OffsetAt>
__device__ __forceinline__ long long half_warp_lower_bounds(long long count, long long key, OffsetAt offset_at) {
  const int lane = threadIdx.x % kWarpSize;
  const int half_lane = lane % 16, shift = lane / 16 * 16;
  long long lo = 0, hi = count;  // the answer lies in [lo, hi], the same in every lane of a half
  while (__any_sync(kFullMask, lo < hi)) {
    const bool active = lo < hi;
    const long long step = active ? (hi - lo + 15) / 16 : 1;
    const long long pivot = lo + (half_lane + 1) * step - 1;
    const bool below = active && pivot < hi && offset_at(pivot) < key;
    const int k = __popc((__ballot_sync(kFullMask, below) >> shift) & 0xffffu);
    if (active) {
      const long long bound = lo + (k + 1) * step - 1;
      lo += k * step;
      if (bound < hi) hi = bound;
    }
  }
  return lo;
}

// The heads of the stage's tile from the offsets (the producer's prepare hook): a bitmask
// of kTile / 32 words per stage (`words`: kStages of them), cleared, then the tile's offsets
// marked, found with two 16-way searches at once. Decreasing neighbours are flagged in
// `invalid`: the pairs (s, s + 1), s in [0, count - 1), are split evenly among the tiles,
// each offset read once (its right neighbour from the next lane), so every pair is
// checked once whatever the offsets are, at most ceil((count - 1) / tiles) per tile.
template <int kTile, typename OffsetAt>
struct PipelinedOffsetHeads {
  static constexpr int kBatch = 8;  // offsets a lane reads at once
  OffsetAt offset_at;
  long long count;   // how many offsets
  unsigned* invalid;
  unsigned* words;   // kStages * kTile / 32 words of shared memory
  long long n;

  __device__ __forceinline__ void operator()(int s, long long base, long long /*valid*/) const {
    const int lane = threadIdx.x % kWarpSize;
    unsigned* const bits = words + static_cast<long long>(s) * (kTile / 32);
    for (int j = lane; j < kTile / 32; j += kWarpSize) bits[j] = 0u;
    const long long bound = half_warp_lower_bounds(count, lane < 16 ? base : base + kTile, offset_at);
    const long long from = __shfl_sync(kFullMask, bound, 0), to = __shfl_sync(kFullMask, bound, 16);
    __syncwarp();
    // In batches of kBatch offsets per lane, all read before any is marked: one warp has to
    // keep many reads in flight (a tile of segments of 1..3 holds thousands of offsets).
    for (long long o = from + lane; o < to; o += kBatch * kWarpSize) {
      long long at[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) at[b] = o + b * kWarpSize < to ? offset_at(o + b * kWarpSize) - base : -1;
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (at[b] >= 0 && at[b] < kTile) atomicOr(&bits[at[b] / 32], 1u << (at[b] % 32));
    }
    // This tile's share of the pairs.
    const long long tiles = (n + kTile - 1) / kTile, pairs = count - 1;
    const long long share = (pairs + tiles - 1) / tiles, tile = base / kTile;
    const long long first = tile * share, end = first + share < pairs ? first + share : pairs;
    for (long long o = first; o < end; o += kBatch * kWarpSize) {
      long long here[kBatch], last[kBatch];  // offsets o + 32b + lane, and the one after the batch's last lane
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const long long at = o + b * kWarpSize + lane;
        here[b] = at <= end ? offset_at(at) : 0;
        last[b] = lane == kWarpSize - 1 && at + 1 <= end ? offset_at(at + 1) : 0;
      }
      bool decreasing = false;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const long long at = o + b * kWarpSize + lane;
        long long next = __shfl_down_sync(kFullMask, here[b], 1);
        if (lane == kWarpSize - 1) next = last[b];
        decreasing = decreasing || (at < end && here[b] > next);
      }
      if (decreasing) *invalid = 1u;
    }
  }
};

}  // namespace segmented
}  // namespace ff
