// fuseflow device helper library: the tiled scans (the look-back scan, one block per tile,
// and the three phases of reduce_then_scan), as templates over the kernel's fused functors.
//
// Embedded into the fuseflow binary like collectives.cuh. A kernel's emitter writes only
// what is particular to its program, as lambdas, and one call of a template here:
//   combine(a, b), identity  the monoid; a covers lower indices than b
//   load(stages, slot, i)     copies element i of every input into its stage, at `slot`
//   element(stages, slot, i)  the scan's element (the prologue map) from the staged inputs
//   store(stages, scanned, slot, i)
//                             writes element i of every output: scanned[slot] itself, or an
//                             epilogue of it and the staged inputs
// `stages` is the tile's input-stage memory in shared memory: the kernel lays its inputs'
// stages out in it (stage_bytes, stage), each on a 16-byte boundary, kInputStageBytes in all.
//
// One tile's journey: a coalesced load into the input stages (in step k, thread t loads
// element k * kBlock + t), a blocked arrangement (thread t owns the kItems consecutive
// elements t * kItems ...), the thread's sequential scan, the block scan, and the store
// back through shared memory, coalesced, the epilogue applied. Every loop has a constant
// trip count and is unrolled.
#pragma once

#include <fuseflow/scan.cuh>

namespace ff {

// ---- the tile in shared memory ---------------------------------------------------------

// Shared-memory slot of tile element s: one slot of padding per 32 elements, so thread t
// reading element t * kItems + k does not collide with its neighbours' banks.
__device__ __forceinline__ int tile_slot(int s) { return s + s / fuseflow::shared::kSlotPadEvery; }

// Bytes of one input stage of values of type T for a tile of `tile` elements, rounded up
// so that the next stage starts on a 16-byte boundary.
template <typename T>
__host__ __device__ constexpr int stage_bytes(int tile) {
  return static_cast<int>((fuseflow::shared::stage_slots(tile) * sizeof(T) + 15) / 16 * 16);
}

// The stage of values of type T that starts `offset` bytes into the input-stage memory.
template <typename T>
__device__ __forceinline__ T* stage(unsigned char* stages, int offset) {
  return reinterpret_cast<T*>(stages + offset);
}

// Where a tile's elements live between the load and the store.
enum class TileStages {
  // The input stages and the scanned stage apart (an epilogue reads the inputs at the
  // store); the thread's elements in registers.
  Separate,
  // One buffer, two lives: the input stages until the tile is in registers, then the
  // scanned stage (and the look-back's stash). The block scan's barriers come before the
  // first write of a scanned value. Half the shared memory, so more tiles fit on an SM.
  Shared,
  // One buffer, and the thread's elements stay in it: read twice (for the thread's total,
  // then for its scan, each scanned value written over the input element it was read
  // from), so a tile holds more elements than registers would (a "staged tile").
  Staged,
};

// The shared memory of a tile: its input stages and its scanned stage, apart or in one
// buffer. Each instantiation declares its own.
template <typename T, int kTile, int kInputStageBytes, bool kShare>
struct TileMemory {
  static constexpr int kSlots = static_cast<int>(fuseflow::shared::stage_slots(kTile));
  unsigned char* inputs;
  T* scanned;

  __device__ __forceinline__ TileMemory() {
    if constexpr (kShare) {
      constexpr int kScannedStageBytes = kSlots * sizeof(T);
      __shared__ __align__(16) unsigned char
          stage_storage[kInputStageBytes > kScannedStageBytes ? kInputStageBytes : kScannedStageBytes];
      inputs = stage_storage;
      scanned = reinterpret_cast<T*>(stage_storage);
    } else {
      __shared__ __align__(16) unsigned char input_storage[kInputStageBytes > 0 ? kInputStageBytes : 16];
      __shared__ T scanned_stage[kSlots];
      inputs = input_storage;
      scanned = scanned_stage;
    }
  }
};

// The input stages of a tile that only reads (reduce_then_scan's reduce phase).
template <int kTile, int kInputStageBytes>
__device__ __forceinline__ unsigned char* tile_input_stages() {
  __shared__ __align__(16) unsigned char input_storage[kInputStageBytes > 0 ? kInputStageBytes : 16];
  return input_storage;
}

// ---- the block's pieces of a tile -------------------------------------------------------

// Coalesced: in step k, thread t loads element base + k * kBlock + t; then a barrier.
// kChecked: the last tile, which stops at n.
template <int kBlock, int kItems, bool kChecked, typename Load>
__device__ __forceinline__ void tile_load(unsigned char* stages, Load load, long long base, long long n) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = k * kBlock + threadIdx.x;
    const long long i = base + s;
    if (!kChecked || i < n) load(stages, tile_slot(s), i);
  }
  __syncthreads();
}

// Blocked: items[k] is tile element threadIdx.x * kItems + k; past n the identity, so the
// tile's total is right in the last tile too.
template <int kBlock, int kItems, bool kChecked, typename T, typename Element>
__device__ __forceinline__ void tile_items(T (&items)[kItems], unsigned char* stages, Element element, T identity,
                                           long long base, long long n) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = threadIdx.x * kItems + k;
    const long long i = base + s;
    items[k] = !kChecked || i < n ? element(stages, tile_slot(s), i) : identity;
  }
}

template <int kItems, typename T, typename Combine>
__device__ __forceinline__ T thread_fold(const T (&items)[kItems], Combine combine) {
  T total = items[0];
#pragma unroll
  for (int k = 1; k < kItems; ++k) total = combine(total, items[k]);
  return total;
}

// A staged tile's thread total: its elements folded straight from the input stage.
template <int kItems, bool kChecked, typename T, typename Combine, typename Element>
__device__ __forceinline__ T staged_thread_total(unsigned char* stages, Element element, Combine combine, T identity,
                                                 long long base, long long n) {
  const int item0 = threadIdx.x * kItems;
  T total = !kChecked || base + item0 < n ? element(stages, tile_slot(item0), base + item0) : identity;
#pragma unroll
  for (int k = 1; k < kItems; ++k) {
    const int s = item0 + k;
    const long long i = base + s;
    if (!kChecked || i < n) total = combine(total, element(stages, tile_slot(s), i));
  }
  return total;
}

// The thread's scan of its items in registers into the scanned stage, seeded with
// `running` (everything before its first element).
template <int kItems, bool kInclusive, typename T, typename Combine>
__device__ __forceinline__ void register_scan(const T (&items)[kItems], T running, Combine combine, T* scanned) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = threadIdx.x * kItems + k;
    if (kInclusive) {
      running = combine(running, items[k]);
      scanned[tile_slot(s)] = running;
    } else {
      scanned[tile_slot(s)] = running;
      running = combine(running, items[k]);
    }
  }
}

// The staged tile's scan: each element read from the input stage, the running value
// written over it in the scanned stage (the same slot: the stages share one buffer).
template <int kItems, bool kInclusive, bool kChecked, typename T, typename Combine, typename Element>
__device__ __forceinline__ void staged_scan(unsigned char* stages, T* scanned, Element element, T running,
                                            Combine combine, long long base, long long n) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = threadIdx.x * kItems + k;
    const long long i = base + s;
    if (!kChecked || i < n) {
      const T x = element(stages, tile_slot(s), i);
      if (kInclusive) {
        running = combine(running, x);
        scanned[tile_slot(s)] = running;
      } else {
        scanned[tile_slot(s)] = running;
        running = combine(running, x);
      }
    }
  }
}

// Coalesced stores of the scanned stage, each output's epilogue applied on the way.
template <int kBlock, int kItems, bool kChecked, typename T, typename Store>
__device__ __forceinline__ void tile_store(unsigned char* stages, T* scanned, Store store, long long base,
                                           long long n) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = k * kBlock + threadIdx.x;
    const long long i = base + s;
    if (!kChecked || i < n) store(stages, scanned, tile_slot(s), i);
  }
}

// ---- reductions folded into a scan's pass -------------------------------------------------
//
// (DESIGN.md, fusion rules: "several reduces (and a scan's total) over the same inputs:
// one kernel, one pass".) The scan kernel already holds each tile's inputs in shared
// memory; every thread folds its kItems consecutive elements into one accumulator (a field
// per reduction, each with its own map and monoid), the block combines the threads in
// thread order, and the tile's fold is written to partials[tile]. The last tile to finish
// (atomic ticket) combines the folds in tile order. Left operands always cover lower
// indices and the order is fixed, so the results are the same bits on every run and right
// for non-commutative monoids, with no change to the look-back (whose status carries the
// scan's value only). element(stages, slot, i) is the accumulator of element i; store(total)
// writes the results.
template <typename F, typename Combine, typename Element, typename Store>
struct TileFold {
  static constexpr bool kActive = true;
  static constexpr bool kAfterScan = false;
  F* partials;
  unsigned* ticket;
  F identity;
  Combine combine;
  Element element;
  Store store;

  template <int kBlock>
  __device__ __forceinline__ static F* warp_totals() {
    __shared__ F fold_warp_totals[kBlock / kWarpSize];
    return fold_warp_totals;
  }

  // Thread t folds its elements t * kItems ... in order (none past n) from the input
  // stages, the block combines the threads in thread order, and the tile's fold waits in
  // partials for the last tile.
  template <int kBlock, int kItems>
  __device__ __forceinline__ void fold_tile(unsigned char* stages, long long tile, long long base, long long n) const {
    F folded = identity;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int s = threadIdx.x * kItems + k;
      const long long i = base + s;
      if (i < n) folded = combine(folded, element(stages, tile_slot(s), i));
    }
    const F tile_fold = block_reduce<kBlock>(folded, combine, identity, warp_totals<kBlock>());
    if (threadIdx.x == 0) partials[tile] = tile_fold;
  }

  // The last tile to finish combines the tiles' folds in tile order (a fixed order: the
  // same bits on every run, and right for non-commutative monoids) and stores the results.
  template <int kBlock>
  __device__ __forceinline__ void finish() const {
    if (take_last_block_ticket(ticket)) {
      const F total = combine_partials<kBlock>(partials, gridDim.x, combine, identity, warp_totals<kBlock>());
      if (threadIdx.x == 0) store(total);
    }
  }
};

template <typename F, typename Combine, typename Element, typename Store>
__device__ __forceinline__ TileFold<F, Combine, Element, Store> tile_fold(F* partials, unsigned* ticket, F identity,
                                                                         Combine combine, Element element,
                                                                         Store store) {
  return {partials, ticket, identity, combine, element, store};
}

// Reductions that read the scan's element (index() among a filter's survivors: an
// exclusive count of the survivors): folded after the scan, from the input and scanned
// stages, element(stages, scanned, slot, i); the rest as TileFold.
template <typename F, typename Combine, typename Element, typename Store>
struct ScannedTileFold : TileFold<F, Combine, Element, Store> {
  static constexpr bool kAfterScan = true;

  template <int kBlock, int kItems, typename T>
  __device__ __forceinline__ void fold_scanned_tile(unsigned char* stages, const T* scanned, long long tile,
                                                    long long base, long long n) const {
    F folded = this->identity;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int s = threadIdx.x * kItems + k;
      const long long i = base + s;
      if (i < n) folded = this->combine(folded, this->element(stages, scanned, tile_slot(s), i));
    }
    const F tile_fold = block_reduce<kBlock>(folded, this->combine, this->identity,
                                             TileFold<F, Combine, Element, Store>::template warp_totals<kBlock>());
    if (threadIdx.x == 0) this->partials[tile] = tile_fold;
  }
};

template <typename F, typename Combine, typename Element, typename Store>
__device__ __forceinline__ ScannedTileFold<F, Combine, Element, Store> scanned_tile_fold(
    F* partials, unsigned* ticket, F identity, Combine combine, Element element, Store store) {
  return {{partials, ticket, identity, combine, element, store}};
}

// No reductions folded in.
struct NoTileFold {
  static constexpr bool kActive = false;
  static constexpr bool kAfterScan = false;
  template <int kBlock, int kItems>
  __device__ __forceinline__ void fold_tile(unsigned char*, long long, long long, long long) const {}
  template <int kBlock>
  __device__ __forceinline__ void finish() const {}
};

// ---- the look-back scan: one block per tile ----------------------------------------------
//
// Single pass with decoupled look-back (Merrill & Garland 2016). The block takes its tile
// id from an atomic counter, so tile ids follow the order in which blocks start and every
// predecessor of a tile is already running (no deadlock). The tile is loaded coalesced
// through shared memory (a full tile with no bounds checks, only the last one checks),
// scanned per thread, per warp (shuffles) and per block; warp 0 publishes the tile's
// aggregate and finds the tile's exclusive prefix (scan.cuh, tile_exclusive_prefix:
// Q(g) . (A(32g) . ... . A(tile-1)) over groups of 32 tiles, one fixed form folded left to
// right, so float results are the same bits on every run). Status entries carry a flag and
// the launch's epoch in every 64-bit word: no fences, and entries other launches left read
// as unpublished, so nothing clears the status between launches. Reads n elements, writes
// n. `fold`: reductions folded into the same pass (TileFold), or NoTileFold.
template <int kBlock, int kItems, int kInputStageBytes, TileStages kStages, bool kInclusive, typename T,
          typename Combine, typename Load, typename Element, typename Store, typename Fold>
__device__ __forceinline__ void lookback_scan_tile(const long long n, unsigned* tile_counter, void* tile_status,
                                                   const unsigned epoch, Combine combine, const T identity, Load load,
                                                   Element element, Store store, const Fold& fold) {
  constexpr int kTile = kBlock * kItems;
  constexpr bool kStaged = kStages == TileStages::Staged;
  // Windows of 32 group aggregates the look-back may keep: in the scanned stage, free until
  // the store; a staged tile's stage still holds the inputs then, so it has its own stash.
  constexpr int kStashWindows = kStaged ? 8 : (kTile / 32 < 32 ? kTile / 32 : 32);
  const TileMemory<T, kTile, kInputStageBytes, kStages != TileStages::Separate> memory;
  unsigned char* const stages = memory.inputs;
  __shared__ T warp_totals[kBlock / kWarpSize];
  T* stash = memory.scanned;
  if constexpr (kStaged) {
    __shared__ T staged_stash[kStashWindows * kWarpSize];
    stash = staged_stash;
  }
  __shared__ unsigned int tile_id;
  __shared__ T tile_prefix;
  // Dynamic tile id: tiles are numbered in the order their blocks start.
  if (threadIdx.x == 0) tile_id = draw_tile_id(tile_counter);
  __syncthreads();
  const long long tile = tile_id;
  const long long base = tile * kTile;

  T items[kStaged ? 1 : kItems];
  T thread_total;
  if (base + kTile <= n) {
    // A full tile (every tile but the last): no bounds checks.
    tile_load<kBlock, kItems, false>(stages, load, base, n);
    if constexpr (kStaged) thread_total = staged_thread_total<kItems, false>(stages, element, combine, identity, base, n);
    else tile_items<kBlock, kItems, false>(items, stages, element, identity, base, n);
  } else {
    tile_load<kBlock, kItems, true>(stages, load, base, n);
    if constexpr (kStaged) thread_total = staged_thread_total<kItems, true>(stages, element, combine, identity, base, n);
    else tile_items<kBlock, kItems, true>(items, stages, element, identity, base, n);
  }
  if constexpr (!kStaged) thread_total = thread_fold(items, combine);
  if constexpr (!Fold::kAfterScan) fold.template fold_tile<kBlock, kItems>(stages, tile, base, n);

  T tile_total;
  const T thread_prefix = block_exclusive_scan<kBlock>(thread_total, combine, identity, warp_totals, tile_total);
  const ScanTileStatus<T> status(tile_status, (n + kTile - 1) / kTile, epoch);
  if (threadIdx.x < 32) {
    const T exclusive = tile_exclusive_prefix(status, tile, tile_total, combine, identity, stash, kStashWindows);
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();

  // The thread's scan, seeded with everything before its first element (exclusive: element
  // i gets the combination of the elements before it, the identity at 0).
  const T running = combine(tile_prefix, thread_prefix);
  if constexpr (kStaged) {
    if (base + kTile <= n) staged_scan<kItems, kInclusive, false>(stages, memory.scanned, element, running, combine, base, n);
    else staged_scan<kItems, kInclusive, true>(stages, memory.scanned, element, running, combine, base, n);
  } else {
    register_scan<kItems, kInclusive>(items, running, combine, memory.scanned);
  }
  __syncthreads();
  if constexpr (Fold::kAfterScan) fold.template fold_scanned_tile<kBlock, kItems>(stages, memory.scanned, tile, base, n);
  // Coalesced stores, the epilogue applied to each element before it is written.
  if (base + kTile <= n) tile_store<kBlock, kItems, false>(stages, memory.scanned, store, base, n);
  else tile_store<kBlock, kItems, true>(stages, memory.scanned, store, base, n);
  fold.template finish<kBlock>();
}

// ---- reduce_then_scan: three phases over a fixed grid -------------------------------------
//
// A fixed grid of blocks splits the tiles into contiguous chunks (quotient/remainder, as in
// the persistent-blocks paper): 1. each block reduces its chunk, tile by tile, in order ->
// one sum per block; 2. one block scans the block sums (exclusive) in place; 3. each block
// scans its chunk again, tile by tile, seeded with its block's prefix. No flags, no spinning.

// This block's contiguous range of tiles [first, end): the first tiles % gridDim.x blocks
// take one more.
template <int kTile>
struct TileChunk {
  long long first;
  long long end;
  __device__ __forceinline__ explicit TileChunk(long long n) {
    const long long tiles = (n + kTile - 1) / kTile;
    const long long share = tiles / gridDim.x;
    const long long extra = tiles % gridDim.x;
    first = blockIdx.x * share + min((long long)blockIdx.x, extra);
    end = first + share + (blockIdx.x < extra ? 1 : 0);
  }
};

// Phase 1: block_sums[blockIdx.x] = the combination of this block's chunk.
template <int kBlock, int kItems, int kInputStageBytes, typename T, typename Combine, typename Load, typename Element>
__device__ __forceinline__ void reduce_tile_chunk(const long long n, T* block_sums, Combine combine, const T identity,
                                                  Load load, Element element) {
  constexpr int kTile = kBlock * kItems;
  unsigned char* const stages = tile_input_stages<kTile, kInputStageBytes>();
  __shared__ T warp_totals[kBlock / kWarpSize];
  const TileChunk<kTile> chunk(n);
  T chunk_total = identity;  // in thread 0
  for (long long tile = chunk.first; tile < chunk.end; ++tile) {
    const long long base = tile * kTile;
    tile_load<kBlock, kItems, true>(stages, load, base, n);
    T items[kItems];
    tile_items<kBlock, kItems, true>(items, stages, element, identity, base, n);
    const T thread_total = thread_fold(items, combine);
    // Block reduce in thread order; its closing barrier frees the stages for the next tile.
    const T tile_total = block_reduce<kBlock>(thread_total, combine, identity, warp_totals);
    if (threadIdx.x == 0) chunk_total = combine(chunk_total, tile_total);
  }
  if (threadIdx.x == 0) block_sums[blockIdx.x] = chunk_total;
}

// Phase 2: the n block sums, scanned exclusive in place by one block: thread t folds a
// contiguous run, the block scans the runs' totals, then each thread rewrites its run.
template <int kBlock, typename T, typename Combine>
__device__ __forceinline__ void scan_block_sums(const long long n, T* block_sums, Combine combine, const T identity) {
  __shared__ T warp_totals[kBlock / kWarpSize];
  const long long per_thread = (n + kBlock - 1) / kBlock;
  const long long begin = min(n, threadIdx.x * per_thread);
  const long long end = min(n, begin + per_thread);
  T run_total = identity;
  for (long long b = begin; b < end; ++b) run_total = combine(run_total, block_sums[b]);
  T all;
  T running = block_exclusive_scan<kBlock>(run_total, combine, identity, warp_totals, all);
  for (long long b = begin; b < end; ++b) {
    const T sum = block_sums[b];
    block_sums[b] = running;
    running = combine(running, sum);
  }
}

// Phase 3: this block's chunk scanned tile by tile, seeded with block_prefixes[blockIdx.x]
// (everything before the chunk).
template <int kBlock, int kItems, int kInputStageBytes, bool kInclusive, typename T, typename Combine, typename Load,
          typename Element, typename Store>
__device__ __forceinline__ void scan_tile_chunk(const long long n, const T* block_prefixes, Combine combine,
                                                const T identity, Load load, Element element, Store store) {
  constexpr int kTile = kBlock * kItems;
  const TileMemory<T, kTile, kInputStageBytes, false> memory;
  unsigned char* const stages = memory.inputs;
  __shared__ T warp_totals[kBlock / kWarpSize];
  const TileChunk<kTile> chunk(n);
  T carry = block_prefixes[blockIdx.x];
  for (long long tile = chunk.first; tile < chunk.end; ++tile) {
    const long long base = tile * kTile;
    tile_load<kBlock, kItems, true>(stages, load, base, n);
    T items[kItems];
    tile_items<kBlock, kItems, true>(items, stages, element, identity, base, n);
    const T thread_total = thread_fold(items, combine);
    T tile_total;
    const T thread_prefix = block_exclusive_scan<kBlock>(thread_total, combine, identity, warp_totals, tile_total);
    register_scan<kItems, kInclusive>(items, combine(carry, thread_prefix), combine, memory.scanned);
    __syncthreads();
    tile_store<kBlock, kItems, true>(stages, memory.scanned, store, base, n);
    carry = combine(carry, tile_total);
    __syncthreads();  // the stages are overwritten by the next tile
  }
}

}  // namespace ff
