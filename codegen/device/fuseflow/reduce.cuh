// fuseflow device helper library: reductions of a whole array to one value (the reduce
// strategies: chunked, staged, tree, atomic).
//
// A kernel calls one of these templates with the fused functors the code generator
// writes for it:
//   element(x..., i) -> Acc   the fused map's contribution of element i, given the
//                             inputs' elements x... (a filtered-out element gives the identity)
//   combine(a, b) -> Acc      the fused monoid; a covers lower indices than b
//   identity                  its identity
//   store(total)              writes the fused results (one per reduction) to the outputs
// and the kernel's input pointers, in the order `element` takes them. Constants (block
// size, vector width, items per lane) are template parameters, so every loop unrolls as
// if they were spelled in the kernel.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {
namespace reduce {

// ---- the finish: block partial, then the last block combines the partials ------------

// Block partial, then the last block to finish combines the partials in block order: a
// fixed order, so the result is the same bits on every run. With the warps' values in
// warp order (the staged reduce: lane 0 of each holds it, the other lanes the identity),
// the block reduce keeps index order too.
template <int kBlock, typename Acc, typename Combine, typename Store>
__device__ __forceinline__ void finish_last_block(const Acc& value, Combine combine, const Acc& identity,
                                                  Acc* partials, unsigned* ticket, Store store) {
  __shared__ Acc warp_partials[kBlock / 32];
  const Acc block_total = ff::block_reduce<kBlock>(value, combine, identity, warp_partials);
  if (threadIdx.x == 0) ff::store_global_words(partials + blockIdx.x, block_total);
  if (ff::take_last_block_ticket(ticket)) {
    const Acc total = ff::combine_partials<kBlock>(partials, gridDim.x, combine, identity, warp_partials);
    if (threadIdx.x == 0) store(total);
  }
}

// ---- chunked: commutative monoids (Brent's lemma) ---------------------------------------

// A fixed grid of about (SM count x resident blocks per SM) blocks; each thread folds a
// grid-strided sequence of kVec-element (16-byte) vector loads into kVec independent
// accumulators (one per vector lane, so the loads and combines of different lanes
// overlap), applying the fused map per element; then warp shuffles, shared memory across
// warps, one partial per block, and the last block combines the partials in block order.
// One launch, no atomics on values. The monoid must be commutative: a thread's
// accumulators hold elements kVec apart, and threads stride through the array.
template <int kBlock, int kVec, typename Acc, typename Element, typename Combine, typename Store, typename... In>
__device__ __forceinline__ void chunked(long long n, Element element, Combine combine, Acc identity, Store store,
                                        Acc* partials, unsigned* ticket, const In*... in) {
  Acc acc[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) acc[k] = identity;
  ff::for_each_strided<kBlock, kVec>(
      n, [&](int k, long long i, const In&... x) { acc[k] = combine(acc[k], element(x..., i)); }, in...);
  Acc value = acc[0];
#pragma unroll
  for (int k = 1; k < kVec; ++k) value = combine(value, acc[k]);
  finish_last_block<kBlock>(value, combine, identity, partials, ticket, store);
}

// ---- staged: any monoid, order preserved (chunked coalesced staging) ------------------

// Shared-memory slot of tile element s: one slot of padding per 32 elements, so lane l
// reading element l * kItems + k does not collide with its neighbours' banks.
__device__ __forceinline__ int stage_slot(int s) { return s + s / 32; }

// One shared array [kRows][kCols] per input type T..., in order: stage(row, col, at, in...)
// copies element `at` of every input into [row][col]; apply(row, col, f) calls
// f(x...) with the staged elements.
template <int kRows, int kCols, typename... T>
struct StageArrays {
  template <typename... P>
  __device__ __forceinline__ void stage(int, int, long long, const P*...) {}
  template <typename F, typename... V>
  __device__ __forceinline__ auto apply(int, int, F f, const V&... got) const {
    return f(got...);
  }
};
template <int kRows, int kCols, typename T, typename... Rest>
struct StageArrays<kRows, kCols, T, Rest...> {
  T head[kRows][kCols];
  StageArrays<kRows, kCols, Rest...> rest;
  template <typename... P>
  __device__ __forceinline__ void stage(int row, int col, long long at, const T* p, const P*... more) {
    head[row][col] = p[at];
    rest.stage(row, col, at, more...);
  }
  template <typename F, typename... V>
  __device__ __forceinline__ auto apply(int row, int col, F f, const V&... got) const {
    return rest.apply(row, col, f, got..., head[row][col]);
  }
};
template <int kRows, int kCols, typename T>
struct StageArrays<kRows, kCols, T> {  // the last one: no empty tail in the layout
  T head[kRows][kCols];
  __device__ __forceinline__ void stage(int row, int col, long long at, const T* p) { head[row][col] = p[at]; }
  template <typename F, typename... V>
  __device__ __forceinline__ auto apply(int row, int col, F f, const V&... got) const {
    return f(got..., head[row][col]);
  }
};

// The array is split into warp tiles of 32 x kItems elements; every warp of the grid owns
// a contiguous range of tiles (quotient/remainder split, as in the persistent-blocks
// paper), numbered so that a block's warps, and the blocks, follow each other in index
// order. A warp loads its tile coalesced (in step k, lane l reads element k * 32 + l)
// into its own slice of shared memory, then lane l folds its kItems consecutive elements
// in order, applying the fused map; a warp reduce (shuffles, left operand = lower lanes)
// gives the tile's value, folded into the warp's running value. Only __syncwarp guards a
// tile: warps never wait for each other until the end, where the warps' values are
// combined in warp order and the blocks' partials in block order by the last block.
// Left operands always cover lower indices, so non-commutative monoids (maximum segment
// sum, matrix products) are exact.
template <int kBlock, int kItems, typename Acc, typename Element, typename Combine, typename Store, typename... In>
__device__ __forceinline__ void staged(long long n, Element element, Combine combine, Acc identity, Store store,
                                       Acc* partials, unsigned* ticket, const In*... in) {
  constexpr int kWarps = kBlock / 32;
  constexpr int kWarpTile = 32 * kItems;
  __shared__ StageArrays<kWarps, kWarpTile + kWarpTile / 32, In...> stage;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  // This warp's contiguous range of tiles: the first tiles % warps warps take one more.
  const long long tiles = (n + kWarpTile - 1) / kWarpTile;
  const long long warps = (long long)gridDim.x * kWarps;
  const long long me = (long long)blockIdx.x * kWarps + warp;
  const long long share = tiles / warps;
  const long long extra = tiles % warps;
  const long long begin = me * share + min(me, extra);
  const long long end = begin + share + (me < extra ? 1 : 0);
  Acc running = identity;  // the warp's value so far, in lane 0
  for (long long t = begin; t < end; ++t) {
    const long long base = t * kWarpTile;
    // element(...) of tile element s, read from the stage.
    const auto at = [&](int s, long long i) {
      return stage.apply(warp, stage_slot(s), [&](const In&... x) { return element(x..., i); });
    };
    Acc value;
    if (base + kWarpTile <= n) {
      // Coalesced: in step k, lane l loads element base + k * 32 + l.
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int s = k * 32 + lane;
        stage.stage(warp, stage_slot(s), base + s, in...);
      }
      __syncwarp();
      // Lane l folds elements l * kItems ... l * kItems + kItems - 1, in order; a full
      // tile needs no bounds checks and starts from its first element.
      value = at(lane * kItems, base + lane * kItems);
#pragma unroll
      for (int k = 1; k < kItems; ++k) value = combine(value, at(lane * kItems + k, base + lane * kItems + k));
    } else {
      // The last, partial tile checks every index and starts from the identity.
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int s = k * 32 + lane;
        if (base + s < n) stage.stage(warp, stage_slot(s), base + s, in...);
      }
      __syncwarp();
      value = identity;
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int s = lane * kItems + k;
        if (base + s < n) value = combine(value, at(s, base + s));
      }
    }
    __syncwarp();  // the stage is overwritten by the next tile
    value = ff::warp_reduce(value, combine);
    if (lane == 0) running = combine(running, value);
  }
  finish_last_block<kBlock>(running, combine, identity, partials, ticket, store);
}

// ---- tree: the course's multi-pass reduction, kept for study ---------------------------

// Every level ends alike: the block's value in thread order becomes its partial, and the
// last level (a single block) writes the result.
template <int kBlock, typename Acc, typename Combine, typename Store>
__device__ __forceinline__ void tree_level_finish(Acc value, Combine combine, const Acc& identity, Acc* partials,
                                                  Store store) {
  __shared__ Acc warp_partials[kBlock / 32];
  value = ff::block_reduce<kBlock>(value, combine, identity, warp_partials);
  if (threadIdx.x == 0) ff::store_global_words(partials + blockIdx.x, value);
  if (gridDim.x == 1 && threadIdx.x == 0) store(value);
}

// Pass 1: block b reduces elements b * kBlock ... b * kBlock + kBlock - 1 (one per
// thread, the fused map applied) in thread order and writes one partial; every later pass
// (tree_level) reduces blocks of kBlock partials the same way, one level of the tree per
// launch, until one block is left, which writes the result. Order-preserving, so any
// monoid is exact; it reads each level back from memory and pays a launch per level,
// which is what the chunked and staged strategies avoid.
template <int kBlock, typename Acc, typename Element, typename Combine, typename Store, typename... In>
__device__ __forceinline__ void tree_first(long long n, Element element, Combine combine, Acc identity, Store store,
                                           Acc* partials, const In*... in) {
  const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;
  Acc value = i < n ? element(in[i]..., i) : identity;
  tree_level_finish<kBlock>(value, combine, identity, partials, store);
}
template <int kBlock, typename Acc, typename Combine, typename Store>
__device__ __forceinline__ void tree_level(long long n, Combine combine, Acc identity, Store store, Acc* partials,
                                           const Acc* in) {
  const long long i = (long long)blockIdx.x * kBlock + threadIdx.x;
  Acc value = i < n ? in[i] : identity;
  tree_level_finish<kBlock>(value, combine, identity, partials, store);
}

// ---- atomic: per-element atomics, kept to reproduce the course's measurements ------------

// Every thread of a grid-strided loop applies add(element(x..., i)) (an atomicAdd /
// atomicMin / atomicMax on the single result, which the kernel before set to the
// identity) for each of its elements. Every element contends for one address, so it is
// slow at scale; a float sum's rounding depends on the order the atomics land in.
template <int kBlock, typename Element, typename Add, typename... In>
__device__ __forceinline__ void atomic(long long n, Element element, Add add, const In*... in) {
  for (long long i = (long long)blockIdx.x * kBlock + threadIdx.x; i < n; i += (long long)gridDim.x * kBlock) {
    add(element(in[i]..., i));
  }
}

}  // namespace reduce
}  // namespace ff
