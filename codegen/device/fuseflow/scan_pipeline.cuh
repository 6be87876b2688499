// fuseflow device helper library: the pipelined scan (sm_90 and later).
//
// A persistent block per SM scans tile after tile. Its warps have roles, and the tiles
// pass between them through a ring of kStages shared-memory stages, each guarded by
// mbarriers (the hardware's transaction barriers in shared memory):
//
//   warp 0, producer   draws a tile id, and the bulk copy engine (cp.async.bulk) brings
//                      the tile's input into a free stage: one instruction per tile, so
//                      the loads of several tiles are in flight while the other warps work.
//   warp 1, reducer    folds each tile from its stage, per scanner segment, and publishes
//                      the tile's aggregate at once: aggregates never wait for anything
//                      but their tile's data.
//   warp 2, look-back  finds each tile's exclusive prefix (scan.cuh,
//                      tile_exclusive_prefix_published) and the carry into each segment.
//   warps 3 ...        scanners: each scans its segment of the tile from the stage, in
//                      rounds of 128 elements (4 per lane), and stores it; then the stage
//                      is free for the producer again.
//
// The look-back's waits, which stall a one-tile-per-block scan (bench/RESULTS.md, the
// look-back study), overlap here with the loads of the next tiles and the stores of the
// previous ones: a block has up to kStages tiles in hand.
//
// No deadlock: every role takes the stages in the order the producer filled them, which
// is the order of the block's tile ids. Let m be the smallest tile id whose block has not
// finished it. Every tile before m is finished, so m's look-back waits for nothing, and
// every tile its block holds before m is finished too, so m is at the head of each role's
// queue: m finishes. The producer of a block draws only when a stage is free, and a
// block's last draw (past the tiles) reaches every role in turn and tells it to stop:
// each role is one warp, or warps that all take every stage, so none waits for a phase
// that never comes.
//
// Stages hold the input as loaded; the element map is applied where a role reads it, so
// the reducer and the scanners each evaluate it once per element.
#pragma once

#include <fuseflow/scan.cuh>

namespace ff {

// The same ring compacts a stream (compact_tiles below, the filter's pipelined kernel):
// the values passed on are survivor counts, and compacting warps take the reducer's and
// the scanners' places.

// ---- mbarrier and bulk copy (PTX, sm_90) ----------------------------------------------
// A host that runs this header without PTX defines FF_HOST_BARRIERS and provides these
// functions itself (the CPU emulator's prelude, tests/emulator).
#ifndef FF_HOST_BARRIERS

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void barrier_init(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void barrier_arrive(unsigned long long* bar) {
  asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.shared::cta.b64 state, [%0];\n\t}" ::"r"(shared_address(bar))
               : "memory");
}
// Arrives and expects `bytes` more of bulk copies on the barrier's current phase.
__device__ __forceinline__ void barrier_arrive_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}
// Whether the phase of parity `parity` has completed (true at once for the phase before
// the first).
__device__ __forceinline__ bool barrier_done(unsigned long long* bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory
// by the bulk copy engine, completing on `bar`. The data is read once: L2 evicts it first.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes,
                                                    unsigned long long* bar) {
  asm volatile(
      "{\n\t.reg .b64 policy;\n\t"
      "createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n\t"
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
      "policy;\n\t}" ::"r"(shared_address(dst)),
      "l"(src), "r"(bytes), "r"(shared_address(bar))
      : "memory");
}
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// Orders this thread's earlier ordinary shared-memory accesses before later bulk copies.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif  // FF_HOST_BARRIERS

__device__ __forceinline__ void barrier_wait(unsigned long long* bar, unsigned parity) {
  while (!barrier_done(bar, parity)) {
  }
}

// Four consecutive elements, read and written as one 16-byte access.
template <typename T>
struct alignas(16) Quad {
  T e[4];
};
__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15) == 0; }

// ---- the ring ------------------------------------------------------------------------

// The block's shared control state (the stages themselves are dynamic shared memory).
template <typename T, int kStages, int kScanWarps>
struct ScanPipeline {
  unsigned long long loaded[kStages];   // producer -> reducer, scanners: the stage holds its tile
  unsigned long long reduced[kStages];  // reducer -> look-back: aggregate and segment totals
  unsigned long long carried[kStages];  // look-back -> scanners: each segment's carry
  unsigned long long freed[kStages];    // scanners -> producer: the stage may be refilled
  long long tile[kStages];              // the stage's tile id; -1: no more tiles
  T aggregate[kStages];
  T segment_total[kStages][kScanWarps];
  T carry[kStages][kScanWarps];
  T stash[8 * kWarpSize];               // the look-back's windows of group aggregates
};
constexpr int kPipelineStashWindows = 8;

// Use u of the ring (the block's u-th tile) is stage u % kStages; a barrier's phase for it
// has parity (u / kStages) & 1.
template <int kStages>
__device__ __forceinline__ int ring_stage(long long use) {
  return static_cast<int>(use % kStages);
}
template <int kStages>
__device__ __forceinline__ unsigned ring_parity(long long use) {
  return static_cast<unsigned>((use / kStages) & 1);
}

// One thread, before the roles start (then a __syncthreads()).
// `reducers`: the warps that arrive on `reduced` (the reducer; a compaction's compacting
// warps).
// `loaders`: the arrivals on `loaded` (every producer lane after its own stores; the
// segmented ring's producer adds lane 0's expecting arrival).
template <typename T, int kStages, int kScanWarps>
__device__ void pipeline_init(ScanPipeline<T, kStages, kScanWarps>& p, unsigned reducers = 1,
                              unsigned loaders = kWarpSize) {
  for (int s = 0; s < kStages; ++s) {
    barrier_init(&p.loaded[s], loaders);
    barrier_init(&p.reduced[s], reducers);
    barrier_init(&p.carried[s], 1);
    barrier_init(&p.freed[s], kScanWarps);
  }
  fence_barrier_init();
}

// The producer's next tile id, in every lane of its warp: lane 0 draws it from `counter`;
// the block that draws the launch's last id (one past the tiles for every block) zeroes
// the counter for the next launch.
__device__ __forceinline__ unsigned draw_ring_tile(unsigned* counter, long long tiles) {
  unsigned id = 0;
  if (threadIdx.x % kWarpSize == 0) {
    id = atomicAdd(counter, 1u);
    if (id == tiles + gridDim.x - 1) atomicExch(counter, 0u);
  }
  return __shfl_sync(kFullMask, id, 0);
}

// The producer warp. Draws tile ids (the block that draws the launch's last id, one past
// the tiles for every block, zeroes the counter for the next launch) and fills stages in
// order. Bulk copies need 16-byte aligned input; otherwise (or for the few elements past
// the last multiple of 16 bytes) the warp copies with ordinary loads.
template <int kTile, typename In, typename T, int kStages, int kScanWarps>
__device__ void produce_tiles(ScanPipeline<T, kStages, kScanWarps>& p, In* stages, const In* __restrict__ in,
                              long long n, long long tiles, unsigned* counter) {
  static_assert(sizeof(In) == 4, "the pipelined scan stages 4-byte inputs");
  const int lane = threadIdx.x % kWarpSize;
  const bool bulk = aligned16(in);
  for (long long use = 0;; ++use) {
    const int s = ring_stage<kStages>(use);
    if (use >= kStages) barrier_wait(&p.freed[s], ring_parity<kStages>(use - kStages));
    const unsigned id = draw_ring_tile(counter, tiles);
    if (id >= tiles) {
      if (lane == 0) p.tile[s] = -1;
      barrier_arrive(&p.loaded[s]);
      return;
    }
    const long long base = static_cast<long long>(id) * kTile;
    const long long valid = n - base < kTile ? n - base : kTile;
    In* stage = stages + static_cast<long long>(s) * kTile;
    const long long by_copy = bulk ? valid / 4 * 4 : 0;  // elements the copy engine brings
    // The rest with ordinary loads and stores; each lane's arrival releases its own stores.
    for (long long e = by_copy + lane; e < valid; e += kWarpSize) stage[e] = in[base + e];
    if (lane == 0) {
      p.tile[s] = id;
      if (by_copy > 0) {
        // The scanners' ordinary reads of this stage's last tile came before `freed`;
        // order them before the copy engine's writes.
        fence_proxy_async();
        barrier_arrive_expect(&p.loaded[s], static_cast<unsigned>(by_copy * sizeof(In)));
        bulk_copy_to_shared(stage, in + base, static_cast<unsigned>(by_copy * sizeof(In)), &p.loaded[s]);
        continue;
      }
    }
    barrier_arrive(&p.loaded[s]);
  }
}

// The value of the four elements of a round that lane `lane` holds (x, elements e .. e + 3
// of the tile, at global index i), folded in order; with kChecked, those at e >= valid
// count as the identity.
template <bool kChecked, typename In, typename T, typename Element, typename Combine>
__device__ __forceinline__ T fold_four(const Quad<In>& x, int e, int valid, long long i, Element element,
                                       Combine combine, T identity) {
  if (!kChecked || e + 3 < valid)
    return combine(combine(element(x.e[0], i), element(x.e[1], i + 1)),
                   combine(element(x.e[2], i + 2), element(x.e[3], i + 3)));
  T v = identity;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (e + k < valid) v = combine(v, element(x.e[k], i + k));
  return v;
}

// The reducer warp: each tile's segment totals (segment w: elements w * kSegment ...),
// its aggregate, published at once. `element(x, i)` maps input x at index i to a value.
// A commutative monoid lets each lane fold its own elements across rounds; otherwise
// every round of 128 elements is folded across the warp in order first. Every tile but
// the last is full: no bounds checks, and the segments unrolled, so the warp has many
// shared-memory reads in flight: the sooner an aggregate is out, the less other tiles'
// look-backs wait (bench/RESULTS.md, ninth run, tiles of 8192: 857 us at 2^28 with a loop
// per segment, 794 unrolled).
template <int kTile, bool kCommutative, typename In, typename T, int kStages, int kScanWarps, typename Element,
          typename Combine>
__device__ void reduce_tiles(ScanPipeline<T, kStages, kScanWarps>& p, const In* stages, long long n,
                             const ScanTileStatus<T>& status, Element element, Combine combine, T identity) {
  constexpr int kSegment = kTile / kScanWarps;
  constexpr int kRounds = kSegment / 128;
  static_assert(kSegment % 128 == 0, "a segment is whole rounds of 4 elements per lane");
  const int lane = threadIdx.x % kWarpSize;
  // A round's value into a segment's running total.
  const auto add = [&](T& total, T v) {
    if (kCommutative) {
      total = combine(total, v);
    } else {
      v = warp_inclusive_scan(v, combine);
      total = combine(total, shfl_idx(v, kWarpSize - 1));
    }
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
    const Quad<In>* quads = reinterpret_cast<const Quad<In>*>(stages + static_cast<long long>(s) * kTile);
    T aggregate = identity;
#pragma unroll
    for (int w = 0; w < kScanWarps; ++w) {
      T total = identity;
      if (valid == kTile) {
#pragma unroll 4
        for (int r = 0; r < kRounds; ++r) {
          const int e = w * kSegment + r * 128 + lane * 4;
          add(total, fold_four<false>(quads[e / 4], e, valid, base + e, element, combine, identity));
        }
      } else {
        for (int r = 0; r < kRounds; ++r) {
          const int e = w * kSegment + r * 128 + lane * 4;
          add(total, fold_four<true>(quads[e / 4], e, valid, base + e, element, combine, identity));
        }
      }
      if (kCommutative) total = shfl_idx(warp_inclusive_scan(total, combine), kWarpSize - 1);
      if (lane == 0) p.segment_total[s][w] = total;
      aggregate = combine(aggregate, total);
    }
    if (lane == 0) {
      status.tiles.publish(tile, kTileAggregate, aggregate);
      p.aggregate[s] = aggregate;
      barrier_arrive(&p.reduced[s]);
    }
  }
}

// The look-back warp: each tile's exclusive prefix, then the carry into each segment.
// `finish(tile, prefix, aggregate)` runs in lane 0 once the tile's prefix is known (a
// compaction's last tile writes its count there).
template <typename T, int kStages, int kScanWarps, typename Combine, typename Finish>
__device__ void look_back_tiles(ScanPipeline<T, kStages, kScanWarps>& p, const ScanTileStatus<T>& status,
                                Combine combine, T identity, Finish finish) {
  const int lane = threadIdx.x % kWarpSize;
  for (long long use = 0;; ++use) {
    const int s = ring_stage<kStages>(use);
    barrier_wait(&p.reduced[s], ring_parity<kStages>(use));
    const long long tile = p.tile[s];
    if (tile < 0) {
      if (lane == 0) barrier_arrive(&p.carried[s]);
      return;
    }
    T carry = tile_exclusive_prefix_published(status, tile, p.aggregate[s], combine, identity, p.stash,
                                              kPipelineStashWindows);
    if (lane == 0) {
      finish(tile, carry, p.aggregate[s]);
      for (int w = 0; w < kScanWarps; ++w) {
        p.carry[s][w] = carry;
        carry = combine(carry, p.segment_total[s][w]);
      }
      barrier_arrive(&p.carried[s]);
    }
  }
}
template <typename T, int kStages, int kScanWarps, typename Combine>
__device__ void look_back_tiles(ScanPipeline<T, kStages, kScanWarps>& p, const ScanTileStatus<T>& status,
                                Combine combine, T identity) {
  look_back_tiles(p, status, combine, identity, [](long long, const T&, const T&) {});
}

// One round of a scanner: lane `lane` scans its four elements (x, at segment offset e and
// global index i), the lanes' totals are scanned across the warp, everything is seeded
// with `carry` (all before the round), and stored; returns the carry after the round.
// With kChecked, elements at e >= left count as the identity and are not stored.
template <bool kChecked, bool kInclusive, typename In, typename T, typename Element, typename Combine,
          typename Store4, typename Store1>
__device__ __forceinline__ T scan_four(const Quad<In>& x, int e, long long left, long long i, T carry,
                                       Element element, Combine combine, T identity, Store4& store4,
                                       Store1& store1) {
  const int lane = threadIdx.x % kWarpSize;
  const bool whole = !kChecked || e + 3 < left;
  T v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) v[k] = whole || e + k < left ? element(x.e[k], i + k) : identity;
  v[1] = combine(v[0], v[1]);
  v[2] = combine(v[1], v[2]);
  v[3] = combine(v[2], v[3]);
  const T lanes = warp_inclusive_scan(v[3], combine);
  T before = shfl_up(lanes, 1);
  if (lane == 0) before = identity;
  before = combine(carry, before);
  T scanned[4];
  if (kInclusive) {
#pragma unroll
    for (int k = 0; k < 4; ++k) scanned[k] = combine(before, v[k]);
  } else {
    scanned[0] = before;
#pragma unroll
    for (int k = 1; k < 4; ++k) scanned[k] = combine(before, v[k - 1]);
  }
  if (whole) {
    store4(i, scanned, x.e);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (e + k < left) store1(i + k, scanned[k], x.e[k]);
  }
  return combine(carry, shfl_idx(lanes, kWarpSize - 1));
}

// A round's bounds: Checked<false> for a whole segment, Checked<true> where elements at
// or past n count as the identity.
template <bool kChecked>
struct Checked {
  static constexpr bool value = kChecked;
};

// The loop of a scanner warp (`segment` 0 .. kScanWarps - 1) over the ring's tiles: for
// each round of 128 elements of its segment, round(checked, s, e, left, base, carry) (e:
// the lane's first element in the segment, left: the segment's elements before n, base:
// the segment's first global index; `checked` a Checked<>) returns the carry after the
// round; then the stage is freed. A whole segment has no bounds checks; 2 rounds unrolled
// (4 measured no faster at 2^28: the scanners' shared reads compete with the reducer's).
template <int kTile, typename T, int kStages, int kScanWarps, typename Round>
__device__ __forceinline__ void scanner_rounds(ScanPipeline<T, kStages, kScanWarps>& p, int segment, long long n,
                                               Round round) {
  constexpr int kSegment = kTile / kScanWarps;
  const int lane = threadIdx.x % kWarpSize;
  for (long long use = 0;; ++use) {
    const int s = ring_stage<kStages>(use);
    barrier_wait(&p.loaded[s], ring_parity<kStages>(use));
    barrier_wait(&p.carried[s], ring_parity<kStages>(use));
    const long long tile = p.tile[s];
    if (tile < 0) return;
    const long long base = tile * kTile + segment * kSegment;
    const long long left = n - base;  // elements of the segment before n (may be <= 0)
    T carry = p.carry[s][segment];
    if (left >= kSegment) {
#pragma unroll 2
      for (int r = 0; r < kSegment / 128; ++r) carry = round(Checked<false>{}, s, r * 128 + lane * 4, left, base, carry);
    } else {
      for (int r = 0; r < kSegment / 128 && r * 128 < left; ++r)
        carry = round(Checked<true>{}, s, r * 128 + lane * 4, left, base, carry);
    }
    __syncwarp();
    if (lane == 0) barrier_arrive(&p.freed[s]);
  }
}

// A scanner warp (`segment` 0 .. kScanWarps - 1): scans its segment of each tile in rounds
// of 128 elements, lane l taking elements 4l .. 4l + 3 of the round: their scan in the
// lane, the lanes' totals scanned across the warp, the carry from everything before.
// `store4(i, scanned, x)` stores elements i .. i + 3 of every output (x: the inputs);
// `store1(i, scanned, x)` one element (the last tile's end).
template <int kTile, bool kInclusive, typename In, typename T, int kStages, int kScanWarps, typename Element,
          typename Combine, typename Store4, typename Store1>
__device__ void scan_tiles(ScanPipeline<T, kStages, kScanWarps>& p, const In* stages, int segment, long long n,
                           Element element, Combine combine, T identity, Store4 store4, Store1 store1) {
  constexpr int kSegment = kTile / kScanWarps;
  scanner_rounds<kTile>(p, segment, n, [&](auto checked, int s, int e, long long left, long long base, T carry) {
    const Quad<In>* quads =
        reinterpret_cast<const Quad<In>*>(stages + static_cast<long long>(s) * kTile + segment * kSegment);
    return scan_four<decltype(checked)::value, kInclusive>(quads[e / 4], e, left, base + e, carry, element, combine,
                                                          identity, store4, store1);
  });
}

// ---- stream compaction on the ring ------------------------------------------------------
// The filter's pipelined kernel uses the ring with other roles: warp 0 the producer as
// above, warp 1 look_back_tiles over survivor counts (64-bit), and kScanWarps compacting
// warps. There is no reducer warp: a compacting warp first compacts its segment of the
// stage in place (pass 1, which needs no carry), and the last of them to finish publishes
// the tile's count, so counts are out as early as a reducer would have them. The carry,
// the segment's first output position, is needed only by pass 2, which writes the
// compacted segment out; a warp runs it kDepth tiles later, after the next tiles' pass 1,
// so the look-back's waits overlap work (a stage is held kDepth tiles longer; the ring
// needs kStages >= kDepth + 2 for the producer to keep one stage loading).
// bench/RESULTS.md, tenth run: the study behind these choices.

// Pass 1 of one round of 128 elements: lane l holds elements e .. e + 3 of the segment (x,
// at global index i; with kChecked, those at e >= left are not there). Each survivor's
// value goes to its rank among the segment's survivors, `kept` before the round, in
// `compacted` (the segment's start in the stage, viewed as values): ranks never pass the
// positions they come from, and every lane has read its four before any lane writes (the
// ballots), so the segment compacts in place. `x` is a copy: read from the stage before
// any lane writes (by reference, the compiler could re-read it after the writes, which may
// land on it). Returns the round's survivor count.
template <bool kChecked, typename In, typename V, typename Keep, typename Value>
__device__ __forceinline__ unsigned compact_four_in_place(const Quad<In> x, int e, long long left, long long i,
                                                          unsigned kept, V* compacted, Keep& keep, Value& value) {
  const unsigned lower_lanes = (1u << (threadIdx.x % kWarpSize)) - 1u;
  bool flags[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) flags[k] = (!kChecked || e + k < left) && keep(x.e[k], i + k);
  unsigned rank = kept, total = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const unsigned votes = __ballot_sync(kFullMask, flags[k]);
    rank += __popc(votes & lower_lanes);
    total += __popc(votes);
  }
  __syncwarp();
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (flags[k]) compacted[rank++] = value(x.e[k], i + k);
  return total;
}

// A compacting warp (`segment` 0 .. kScanWarps - 1). For the block's u-th tile: pass 1
// compacts the segment's survivors (keep(x, i), each as value(x, i), of type V, no wider
// than In) to the front of its part of the stage and counts them; the warp that completes
// the tile's count (`arrived[s]`, a shared word per stage, zero between tiles) publishes it
// in `status` and in p.aggregate. Pass 2 of tile u - kDepth waits for that tile's carry
// and writes its survivors to consecutive positions, coalesced: `store(at, value)`, then
// frees the stage.
template <int kTile, int kDepth, typename In, typename V, int kStages, int kScanWarps, typename Keep,
          typename Value, typename Store>
__device__ void compact_tiles(ScanPipeline<unsigned long long, kStages, kScanWarps>& p, In* stages,
                              unsigned* arrived, int segment, long long n,
                              const ScanTileStatus<unsigned long long>& status, Keep keep, Value value, Store store) {
  constexpr int kSegment = kTile / kScanWarps;
  constexpr int kRounds = kSegment / 128;
  static_assert(kSegment % 128 == 0, "a segment is whole rounds of 4 elements per lane");
  static_assert(sizeof(V) <= sizeof(In), "survivors are compacted over their inputs");
  static_assert(kStages >= kDepth + 2, "a stage loading while kDepth + 1 are held");
  constexpr unsigned kArrival = 1u << 20;  // arrived[s]: arrivals * kArrival + the tile's count so far
  static_assert(kTile < kArrival && kScanWarps < 4096, "counts and arrivals share 32 bits");
  const int lane = threadIdx.x % kWarpSize;
  const auto segment_of = [&](const int s) { return stages + static_cast<long long>(s) * kTile + segment * kSegment; };
  // Pass 1 of use `use`; false when the ring has ended.
  const auto rank = [&](const long long use) {
    const int s = ring_stage<kStages>(use);
    barrier_wait(&p.loaded[s], ring_parity<kStages>(use));
    const long long tile = p.tile[s];
    if (tile < 0) {
      if (lane == 0) barrier_arrive(&p.reduced[s]);  // the look-back warp's last use
      return false;
    }
    const long long base = tile * kTile + segment * kSegment;
    const long long left = n - base;  // elements of the segment before n (may be <= 0)
    In* const own = segment_of(s);
    const Quad<In>* quads = reinterpret_cast<const Quad<In>*>(own);
    V* const compacted = reinterpret_cast<V*>(own);
    unsigned kept = 0;
    if (left >= kSegment) {
#pragma unroll 4
      for (int r = 0; r < kRounds; ++r) {
        const int e = r * 128 + lane * 4;
        kept += compact_four_in_place<false>(quads[e / 4], e, left, base + e, kept, compacted, keep, value);
      }
    } else {
      for (int r = 0; r < kRounds && r * 128 < left; ++r) {
        const int e = r * 128 + lane * 4;
        kept += compact_four_in_place<true>(quads[e / 4], e, left, base + e, kept, compacted, keep, value);
      }
    }
    if (lane == 0) {
      p.segment_total[s][segment] = kept;
      // One atomic adds the segment's count and its arrival: the warp that brings the
      // arrivals to kScanWarps holds the tile's count.
      const unsigned after = atomicAdd(&arrived[s], kept + kArrival) + kept + kArrival;
      if (after / kArrival == kScanWarps) {
        const unsigned long long count = after % kArrival;
        status.tiles.publish(tile, kTileAggregate, count);
        p.aggregate[s] = count;
        atomicExch(&arrived[s], 0u);  // for the stage's next tile, which comes after this tile's `freed`
      }
      barrier_arrive(&p.reduced[s]);
    }
    return true;
  };
  // Pass 2 of use `use`.
  const auto write = [&](const long long use) {
    const int s = ring_stage<kStages>(use);
    barrier_wait(&p.carried[s], ring_parity<kStages>(use));
    __syncwarp();  // the lanes' compacting stores of pass 1, before other lanes read them
    const V* const compacted = reinterpret_cast<const V*>(segment_of(s));
    const unsigned kept = static_cast<unsigned>(p.segment_total[s][segment]);
    const long long first = static_cast<long long>(p.carry[s][segment]);
#pragma unroll 4
    for (unsigned j = lane; j < kept; j += kWarpSize) store(first + j, compacted[j]);
    __syncwarp();
    if (lane == 0) barrier_arrive(&p.freed[s]);
  };
  for (long long use = 0;; ++use) {
    if (!rank(use)) {
      for (long long u = use - kDepth; u < use; ++u)
        if (u >= 0) write(u);
      return;
    }
    if (use >= kDepth) write(use - kDepth);
  }
}

// Stores four consecutive values, as one 16-byte streaming store (__stcs: written once,
// not kept in the caches) when `quads` (the output is 16-byte aligned: i is a multiple
// of 4).
template <typename T>
__device__ __forceinline__ void store_four(T* out, bool quads, const T& a, const T& b, const T& c, const T& d) {
  if (sizeof(T) == 4 && quads) {
    Quad<T> q;
    q.e[0] = a;
    q.e[1] = b;
    q.e[2] = c;
    q.e[3] = d;
    float4 bits;
    memcpy(&bits, &q, sizeof bits);
    __stcs(reinterpret_cast<float4*>(out), bits);
  } else {
    out[0] = a;
    out[1] = b;
    out[2] = c;
    out[3] = d;
  }
}

}  // namespace ff
