// fuseflow device helper library: segmented scans (by offsets, by runs of equal keys) and
// reduce-by-key, as ONE ordinary look-back scan (scan.cuh) over "pieces".
//
// A segmented scan restarts at every segment head. Lift each element x to the piece
// (x, head) and combine pieces with
//     (a, ha) . (b, hb) = (hb ? b : a . b,  ha + hb)
// where a piece's value is the combination of its elements since its last head (all of
// them when it holds none). This "segmented monoid" is associative and not commutative
// (whatever the value monoid is), so the block scan and the deterministic look-back of
// scan.cuh carry segments across threads and tiles unchanged, and one pass does the whole
// segmented scan. The head part is a bool for scans (ha + hb converts back to "either") or
// a count for reduce-by-key, where the count of heads up to an element numbers its run.
//
// The tile templates at the end (scan_tile, reduce_by_key_tile) take the kernel's fused
// functors as scan_tile.cuh's do (combine, identity, load, element, store over the tile's
// input stages), and a source of segment heads: OffsetHeads (from the offsets, found in
// each tile) or KeyHeads (where the key changes).
#pragma once

#include <fuseflow/scan.cuh>
#include <fuseflow/scan_tile.cuh>

namespace ff {
namespace segmented {

// A piece of the sequence: the combination of its elements since its last segment head,
// and whether (bool) or how many (long long) heads it holds.
template <typename T, typename Heads>
struct Piece {
  T value;
  Heads heads;
};

// a covers lower indices than b. For bool heads, `a.heads + b.heads` is "either".
template <typename T, typename Heads, typename Combine>
__device__ __forceinline__ Piece<T, Heads> combine_pieces(const Piece<T, Heads>& a, const Piece<T, Heads>& b,
                                                          Combine combine) {
  return Piece<T, Heads>{b.heads ? b.value : combine(a.value, b.value), static_cast<Heads>(a.heads + b.heads)};
}

// The number of offsets before `key`: the first s in [0, count) with offset_at(s) >= key
// (count when there is none), for non-decreasing offsets. One full warp searches
// kPivots * 32 pivots per step, each lane's kPivots reads issued together, so it takes
// log_(32 kPivots)(count) dependent reads instead of log2(count), and every lane gets the
// answer: 128 pivots take 4 rounds for 2^24 offsets where 32 took 5 (3 where 4 for 2^20),
// on the path of every tile of a segmented scan to its load's barrier. (8 per lane: ptxas
// kept 5 reads in flight and put the rest behind offset_at's flag stores, sm_90, 48
// registers.) Unsorted offsets give some s in [0, count]; it always ends.
template <int kPivots = 4, typename OffsetAt>
__device__ __forceinline__ long long warp_lower_bound(long long count, long long key, OffsetAt offset_at) {
  constexpr int kWay = kPivots * kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  long long lo = 0, hi = count;  // the answer lies in [lo, hi]
  while (lo < hi) {
    const long long step = (hi - lo + kWay - 1) / kWay;
    // Pivot j (lane j % 32 reads it) is lo + (j + 1) * step - 1; the pivots below `key`
    // come first, so their count k says the answer is in [lo + k * step, pivot k]. A pivot
    // at or past hi reads offset hi - 1 instead and counts as not below: no read waits on
    // a branch, so the kPivots reads are in flight together.
    bool below[kPivots];
#pragma unroll
    for (int p = 0; p < kPivots; ++p) {
      const long long pivot = lo + (p * kWarpSize + lane + 1) * step - 1;
      const long long offset = offset_at(pivot < hi ? pivot : hi - 1);
      below[p] = pivot < hi && offset < key;
    }
    int k = 0;
#pragma unroll
    for (int p = 0; p < kPivots; ++p) k += __popc(__ballot_sync(kFullMask, below[p]));
    const long long bound = lo + (k + 1) * step - 1;
    lo += k * step;
    if (bound < hi) hi = bound;
  }
  return lo;
}

// ---- segment heads -------------------------------------------------------------------------
//
// A source of segment heads is called at three points of a tile: before_load(base) (beside
// the tile's loads), after_load(base, n) (after the load's barrier), and thread_items, which
// fills the thread's blocked items (items[k] is tile element threadIdx.x * kItems + k; past
// n the identity) and returns its head bits (bit k: element k starts a segment).

// Heads from the offsets: warps 0 and 1 find the tile's offsets (the first at or after the
// tile's start and end) with 128-way warp searches (warp_lower_bound, log128 of the offset
// count dependent reads, issued beside the tile's loads), and the block marks them as
// flag bytes in shared memory: a plain byte store per offset, where a bitmask took a shared
// atomicOr per offset, serialized over the lanes of a warp whose offsets share a word (ncu,
// segments of 1..3: 63% of the shared wavefronts were excess). Elements before offsets[0]
// or at or after the last offset belong to no segment: each is a head of its own holding
// the identity, so its scan is the identity, as the reference defines it. offset_at(s) is
// offset s clamped to [0, n] (it flags offsets outside); decreasing neighbours are flagged
// in `invalid` here, as each tile reads its offsets.
template <int kBlock, int kTile, typename OffsetAt>
struct OffsetHeads {
  OffsetAt offset_at;
  long long count;     // how many offsets
  unsigned* invalid;   // set to 1 for decreasing offsets
  // Byte s: 1 where a segment starts at tile element s, else 0; read back 4 at a time
  // (kFlagWords words: the tile's, and one more a thread's last word may reach into,
  // rounded up to cleared 16 bytes at a time).
  static constexpr int kFlagWords = (kTile / 4 + 2 + 3) / 4 * 4;
  unsigned int* flag_words;
  long long* tile_offsets;   // the offsets in this tile are those numbered [tile_offsets[0], tile_offsets[1])
  long long first = 0, last = 0;  // offset_at(0) and offset_at(count - 1), after after_load

  __device__ __forceinline__ OffsetHeads(OffsetAt offset_at_, long long count_, unsigned* invalid_)
      : offset_at(offset_at_), count(count_), invalid(invalid_) {
    __shared__ __align__(16) unsigned int words[kFlagWords];
    __shared__ long long offsets[2];
    flag_words = words;
    tile_offsets = offsets;
  }

  // The tile's loads are the block's (tile_load): after_load's marks need its barrier.
  static constexpr bool kWarpLoads = false;

  // Warp 0 finds the first offset at or after the tile's start, warp 1 the first at or after
  // its end (128-way searches), while the block clears the flags.
  template <int kItems>
  __device__ __forceinline__ void before_load(long long base, long long /*n*/) {
    for (int j = threadIdx.x; j < kFlagWords / 4; j += kBlock)
      reinterpret_cast<uint4*>(flag_words)[j] = uint4{0u, 0u, 0u, 0u};
    if (threadIdx.x < 64) {
      const long long s = warp_lower_bound(count, base + threadIdx.x / 32 * kTile, offset_at);
      if (threadIdx.x % 32 == 0) tile_offsets[threadIdx.x / 32] = s;
    }
  }

  // The tile's offsets marked in the flags (the load's barrier made tile_offsets visible),
  // then a barrier. Decreasing offsets: each offset s the tile marks is checked against
  // offset s + 1 as it is read (that one an L1 hit beside it, not a second pass over the
  // offsets from memory), and the last tile checks the pairs after its offsets. Every pair
  // is checked: the tiles' ranges [a_t, a_(t+1)) chain from a_0 = 0 (no clamped offset is
  // below 0) to the last tile's end a_T, each boundary the same search in both tiles, so
  // they cover [0, a_T) even where unsorted offsets make the searches disagree with order.
  __device__ __forceinline__ void after_load(long long base, long long n) {
    const long long begin = tile_offsets[0], end = tile_offsets[1];
    for (long long s = begin + threadIdx.x; s < end; s += kBlock) {
      const long long offset = offset_at(s);
      const long long at = offset - base;
      if (at >= 0 && at < kTile) reinterpret_cast<unsigned char*>(flag_words)[at] = 1;
      if (s + 1 < count && offset > offset_at(s + 1)) *invalid = 1u;
    }
    if (base + kTile >= n)
      for (long long s = end + threadIdx.x; s < count - 1; s += kBlock)
        if (offset_at(s) > offset_at(s + 1)) *invalid = 1u;
    __syncthreads();
    first = offset_at(0);
    last = offset_at(count - 1);
  }

  template <int kItems, typename T, typename Element>
  __device__ __forceinline__ unsigned thread_items(T (&items)[kItems], unsigned char* stages, Element element,
                                                   const T identity, long long base, long long /*n: last >= n*/) const {
    static_assert(kItems <= 32, "a thread's head bits are one word");
    const int item0 = threadIdx.x * kItems;
    // This thread's kItems flags, from the words holding them: a word's four 0/1 bytes
    // times 0x01020408 put byte b at bit 24 + b (no two partial products meet there).
    constexpr int kWords = (kItems + 3) / 4 + 1;
    unsigned long long bits = 0;
#pragma unroll
    for (int j = 0; j < kWords; ++j)
      bits |= (unsigned long long)((flag_words[item0 / 4 + j] * 0x01020408u) >> 24) << (4 * j);
    unsigned heads = (unsigned)(bits >> (item0 % 4));
    if (kItems < 32) heads &= (1u << (kItems % 32)) - 1u;
    if (base + item0 >= first && base + item0 + kItems <= last) {
      // Every element of the thread inside [first, last): no check per element.
#pragma unroll
      for (int k = 0; k < kItems; ++k) items[k] = element(stages, tile_slot(item0 + k), base + item0 + k);
    } else {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int s = item0 + k;
        const long long i = base + s;
        // Outside [first, last) (past n too) an element belongs to no segment: a head of the identity.
        const bool inside = i >= first && i < last;
        items[k] = inside ? element(stages, tile_slot(s), i) : identity;
        if (!inside) heads |= 1u << k;
      }
    }
    return heads;
  }
};

template <int kBlock, int kTile, typename OffsetAt>
__device__ __forceinline__ OffsetHeads<kBlock, kTile, OffsetAt> offset_heads(OffsetAt offset_at, long long count,
                                                                             unsigned* invalid) {
  return OffsetHeads<kBlock, kTile, OffsetAt>(offset_at, count, invalid);
}

// Heads where the key changes: element i is a head when i == 0 or same_key(key of i - 1,
// key of i) is false. staged_key(stages, slot, i) is the key of a staged element;
// key_before(i) the key of element i read from global memory, for the element before a
// warp's range (read by its lane 0, issued beside the loads). Each warp loads its own range
// of the tile (warp_tile_load: no block barrier before the heads), since no thread reads a
// key another warp staged.
template <typename StagedKey, typename KeyBefore, typename SameKey>
struct KeyHeads {
  using Key = decltype((*static_cast<const KeyBefore*>(nullptr))(0ll));
  StagedKey staged_key;
  KeyBefore key_before;
  SameKey same_key;
  Key lane0_previous = {};  // lane 0: the key of the element before its first

  static constexpr bool kWarpLoads = true;

  template <int kItems>
  __device__ __forceinline__ void before_load(long long base, long long n) {
    const long long first = base + threadIdx.x * kItems;
    if (threadIdx.x % kWarpSize == 0 && first > 0 && first <= n) lane0_previous = key_before(first - 1);
  }
  __device__ __forceinline__ void after_load(long long, long long) const {}

  template <int kItems, typename T, typename Element>
  __device__ __forceinline__ unsigned thread_items(T (&items)[kItems], unsigned char* stages, Element element,
                                                   const T identity, long long base, long long n) const {
    static_assert(kItems <= 32, "a thread's head bits are one word");
    unsigned heads = 0u;
    const int item0 = threadIdx.x * kItems;
    // The key of the element before this thread's first: staged by the warp, or (lane 0)
    // read from global memory beside the loads.
    Key previous_key = lane0_previous;
    if (threadIdx.x % kWarpSize > 0 && base + item0 <= n)
      previous_key = staged_key(stages, tile_slot(item0 - 1), base + item0 - 1);
    if (base + item0 > 0 && base + item0 + kItems <= n) {
      // Every element of the thread before n and none of them element 0: no check per element.
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        items[k] = element(stages, tile_slot(item0 + k), base + item0 + k);
        const auto key = staged_key(stages, tile_slot(item0 + k), base + item0 + k);
        if (!same_key(previous_key, key)) heads |= 1u << k;
        previous_key = key;
      }
    } else {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int s = item0 + k;
        const long long i = base + s;
        items[k] = identity;
        if (i < n) {
          items[k] = element(stages, tile_slot(s), i);
          const auto key = staged_key(stages, tile_slot(s), i);
          if (i == 0 || !same_key(previous_key, key)) heads |= 1u << k;
          previous_key = key;
        }
      }
    }
    return heads;
  }
};

template <typename StagedKey, typename KeyBefore, typename SameKey>
__device__ __forceinline__ KeyHeads<StagedKey, KeyBefore, SameKey> key_heads(StagedKey staged_key, KeyBefore key_before,
                                                                           SameKey same_key) {
  return {staged_key, key_before, same_key};
}

// ---- warp-local tile transfers --------------------------------------------------------------
//
// Warp w owns tile elements [w * 32 * kItems, (w + 1) * 32 * kItems): its threads' blocked
// items (thread t: t * kItems + k). Moving that range between global and shared memory is
// the warp's own business, coalesced (in step k, lane l takes element w * 32 * kItems +
// 32 k + l, 128 bytes of 4-byte elements), so a __syncwarp orders it with the warp's
// blocked reads or writes and no block barrier waits for the slowest warp of the tile
// (CUB's BLOCK_LOAD / BLOCK_STORE_WARP_TRANSPOSE). The slots are the tile's (tile_slot).

// The warp's range of the tile into the input stages, then a __syncwarp. kChecked: the last
// tile, which stops at n.
template <int kItems, bool kChecked, typename Load>
__device__ __forceinline__ void warp_tile_load(unsigned char* stages, Load load, long long base, long long n) {
  const int first = threadIdx.x / kWarpSize * kWarpSize * kItems + threadIdx.x % kWarpSize;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = first + k * kWarpSize;
    const long long i = base + s;
    if (!kChecked || i < n) load(stages, tile_slot(s), i);
  }
  __syncwarp();
}

// The warp's range of the scanned stage (written by its own threads; a __syncwarp first),
// each output's epilogue applied on the way. kChecked: the last tile, which stops at n.
template <int kItems, bool kChecked, typename T, typename Store>
__device__ __forceinline__ void warp_tile_store(unsigned char* stages, T* scanned, Store store, long long base,
                                                long long n) {
  __syncwarp();
  const int first = threadIdx.x / kWarpSize * kWarpSize * kItems + threadIdx.x % kWarpSize;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = first + k * kWarpSize;
    const long long i = base + s;
    if (!kChecked || i < n) store(stages, scanned, tile_slot(s), i);
  }
}

// ---- the look-back tile over pieces --------------------------------------------------------

// Windows of 32 group aggregates (pieces) the look-back may keep in its stash.
constexpr int kPieceStashWindows = 4;

// tile_pieces uses scan.cuh's block_exclusive_scan_once (no second barrier): it writes its
// warp totals once per block, and its look-back's barrier follows, so each warp goes on to
// its look-back or its wait as soon as it has read the totals.

// One tile of pieces, up to its look-back (block_exclusive_scan_once, then
// tile_exclusive_prefix, whose one fixed form gives float results the same bits on every
// run). The block draws its tile id (tiles numbered in the order their blocks start), loads
// the tile coalesced into `stages` (a full tile with no bounds checks), fills the thread's
// items and head bits, and returns the piece of everything before the thread's first
// element; `base` is the tile's first element, `tile_before` the piece of everything before
// the tile and `tile_total` the tile's own.
template <int kBlock, int kItems, typename HeadCount, typename T, typename Combine, typename Load, typename Element,
          typename Heads>
__device__ __forceinline__ Piece<T, HeadCount> tile_pieces(const long long n, unsigned* tile_counter, void* tile_status,
                                                           const unsigned epoch, Combine combine, const T identity,
                                                           Load load, Element element, Heads& heads,
                                                           unsigned char* stages, T (&items)[kItems],
                                                           unsigned& head_bits, long long& base,
                                                           Piece<T, HeadCount>& tile_before,
                                                           Piece<T, HeadCount>& tile_total) {
  using P = Piece<T, HeadCount>;
  constexpr int kTile = kBlock * kItems;
  const auto combine_pieces = [&](const P& a, const P& b) -> P { return segmented::combine_pieces(a, b, combine); };
  const P no_piece = {identity, static_cast<HeadCount>(0)};
  __shared__ P warp_totals[kBlock / kWarpSize];
  __shared__ P piece_stash[kPieceStashWindows * kWarpSize];
  __shared__ unsigned int tile_id;
  __shared__ P tile_prefix;
  if (threadIdx.x == 0) tile_id = draw_tile_id(tile_counter);
  __syncthreads();
  const long long tile = tile_id;
  base = tile * kTile;
  heads.template before_load<kItems>(base, n);
  if constexpr (Heads::kWarpLoads) {
    if (base + kTile <= n) warp_tile_load<kItems, false>(stages, load, base, n);
    else warp_tile_load<kItems, true>(stages, load, base, n);
  } else {
    if (base + kTile <= n) tile_load<kBlock, kItems, false>(stages, load, base, n);
    else tile_load<kBlock, kItems, true>(stages, load, base, n);
  }
  heads.after_load(base, n);
  head_bits = heads.template thread_items<kItems>(items, stages, element, identity, base, n);
  P thread_total = P{items[0], static_cast<HeadCount>(head_bits & 1u)};
#pragma unroll
  for (int k = 1; k < kItems; ++k)
    thread_total = combine_pieces(thread_total, P{items[k], static_cast<HeadCount>(head_bits >> k & 1u)});
  const P thread_prefix =
      block_exclusive_scan_once<kBlock>(thread_total, combine_pieces, no_piece, warp_totals, tile_total);
  // Warp 0 publishes the tile's aggregate and finds its exclusive prefix.
  const ScanTileStatus<P> status(tile_status, (n + kTile - 1) / kTile, epoch);
  if (threadIdx.x < 32) {
    const P exclusive =
        tile_exclusive_prefix(status, tile, tile_total, combine_pieces, no_piece, piece_stash, kPieceStashWindows);
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();
  tile_before = tile_prefix;
  return combine_pieces(tile_prefix, thread_prefix);
}

// A segmented scan (by offsets or by key; the status holds Piece<T, bool>): one block per
// tile, a look-back over (value, head flag) pieces, then the thread's scan restarting at
// each head and the store back through shared memory, coalesced, each warp its own range
// (warp_tile_store), store(stages, scanned, slot, i) applying each output's epilogue.
// kShareStages: the input stages and the scanned stage share one buffer (no epilogue reads
// an input at the store; the block scan's barriers come between the last read of an input
// stage and the first scanned write).
template <int kBlock, int kItems, int kInputStageBytes, bool kShareStages, bool kInclusive, typename T,
          typename Combine, typename Load, typename Element, typename Heads, typename Store>
__device__ __forceinline__ void scan_tile(const long long n, unsigned* tile_counter, void* tile_status,
                                          const unsigned epoch, Combine combine, const T identity, Load load,
                                          Element element, Heads heads, Store store) {
  constexpr int kTile = kBlock * kItems;
  const TileMemory<T, kTile, kInputStageBytes, kShareStages> memory;
  T items[kItems];
  unsigned head_bits;
  long long base;
  Piece<T, bool> tile_before, tile_total;
  const Piece<T, bool> before = tile_pieces<kBlock, kItems, bool>(n, tile_counter, tile_status, epoch, combine, identity,
                                                                  load, element, heads, memory.inputs, items,
                                                                  head_bits, base, tile_before, tile_total);
  // The thread's scan, seeded with everything before its first element; a segment head
  // starts again from the identity (exclusive: element i gets the combination of the
  // elements of its segment before it).
  T running = before.value;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int s = threadIdx.x * kItems + k;
    const T prior = (head_bits >> k & 1u) ? identity : running;
    running = combine(prior, items[k]);
    memory.scanned[tile_slot(s)] = kInclusive ? running : prior;
  }
  // Each warp stores the range its threads scanned: no block barrier. The scanned stage may
  // lie over any warp's input stages, but every input was read before tile_pieces' last
  // barrier, and an epilogue reading inputs at the store has stages apart (kShareStages false).
  if (base + kTile <= n) warp_tile_store<kItems, false>(memory.inputs, memory.scanned, store, base, n);
  else warp_tile_store<kItems, true>(memory.inputs, memory.scanned, store, base, n);
}

// A thread's elements of reduce_by_key's tile in order (the first at index i0; kChecked:
// some at or past n, those skipped): at(k, i, head, run, value) for element k (index i),
// `run` the heads before it and `value` its run's value before it; element n - 1 then
// calls last(runs, value) with the heads up to it and its run's value through it.
template <bool kChecked, int kItems, typename T, typename Combine, typename At, typename Last>
__device__ __forceinline__ void thread_runs(const T (&items)[kItems], const unsigned head_bits, const long long i0,
                                            const long long n, const Piece<T, long long>& before, Combine combine,
                                            const T identity, At at, Last last) {
  T running = before.value;
  long long runs = before.heads;  // runs started before this element
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long i = i0 + k;
    if (kChecked && i >= n) break;
    const bool head = head_bits >> k & 1u;
    at(k, i, head, runs, running);
    if (head) ++runs;
    running = combine(head ? identity : running, items[k]);
    if (kChecked && i == n - 1) last(runs, running);
  }
}

// reduce_by_key (the status holds Piece<T, long long>): the heads up to element i, less
// one, number its run. A head's run gets its key (store_key(run, key), the key from
// run_key(stages, slot, i)), and the run before it its value (store_value(run - 1,
// value), when run > 0); element n - 1 calls last_run(runs, value) (the last run's value
// and the number of runs).
//
// The tile's runs are those numbered [first, first + count) (first: the heads before the
// tile, count: the tile's heads), and the values it writes those of runs [first - 1,
// first + count - 1). With a run stage (kRunKeyStage != kRunsUnstaged) and more runs than
// threads (runs of a few elements): "two-phase scatter", as CUB's reduce-by-key: each head
// puts its key and the value before it into shared memory at its place among the tile's
// runs, and after a barrier the block writes both ranges with consecutive threads on
// consecutive runs, coalesced, instead of one partial-sector write per head scattered over
// the warp. Otherwise each head writes its own (few writes: a tile of long runs has few
// heads). The block takes one way or the other as a whole (count is the block scan's
// aggregate), so the barriers are uniform.
//
// Where the runs go: kRunKeyStage, a byte offset into the input stages, puts the keys over
// stages that run_key does not read (the elements are in registers by then, after
// tile_pieces' barriers), and kRunValueStage the values, once every key is read, over
// stages clear of the keys; no shared memory beyond the tile's stages, so the stage costs
// no occupancy. kRunKeysOwnArray: the keys in an array of their own beside the stages
// (run_key reads every stage), the values at kRunValueStage.
constexpr int kRunsUnstaged = -2;
constexpr int kRunKeysOwnArray = -1;

template <int kBlock, int kItems, int kInputStageBytes, int kRunKeyStage, int kRunValueStage, typename T,
          typename Combine, typename Load, typename Element, typename Heads, typename RunKey, typename StoreKey,
          typename StoreValue, typename LastRun>
__device__ __forceinline__ void reduce_by_key_tile(const long long n, unsigned* tile_counter, void* tile_status,
                                                   const unsigned epoch, Combine combine, const T identity, Load load,
                                                   Element element, Heads heads, RunKey run_key, StoreKey store_key,
                                                   StoreValue store_value, LastRun last_run) {
  constexpr int kTile = kBlock * kItems;
  unsigned char* const stages = tile_input_stages<kTile, kInputStageBytes>();
  T items[kItems];
  unsigned head_bits;
  long long base;
  Piece<T, long long> tile_before, tile_total;
  const Piece<T, long long> before =
      tile_pieces<kBlock, kItems, long long>(n, tile_counter, tile_status, epoch, combine, identity, load, element,
                                             heads, stages, items, head_bits, base, tile_before, tile_total);
  const int item0 = threadIdx.x * kItems;
  // No element of the thread is element n - 1 or past it: no check per element.
  const bool whole = base + item0 + kItems < n;
  const auto each_element = [&](auto at, auto last) {
    if (whole) thread_runs<false>(items, head_bits, base + item0, n, before, combine, identity, at, last);
    else thread_runs<true>(items, head_bits, base + item0, n, before, combine, identity, at, last);
  };
  const auto no_last_run = [](long long, const T&) {};
  if constexpr (kRunKeyStage != kRunsUnstaged) {
    using Key = decltype(run_key(stages, 0, 0ll));
    constexpr int kKeyBytes = static_cast<int>(sizeof(Key)) * kTile, kValueBytes = static_cast<int>(sizeof(T)) * kTile;
    static_assert(kRunValueStage >= 0 && kRunValueStage % 16 == 0 && kRunValueStage + kValueBytes <= kInputStageBytes,
                  "the tile's run values fit in its input stages");
    static_assert(kRunKeyStage == kRunKeysOwnArray ||
                      (kRunKeyStage >= 0 && kRunKeyStage % 16 == 0 && kRunKeyStage + kKeyBytes <= kInputStageBytes &&
                       (kRunKeyStage >= kRunValueStage + kValueBytes || kRunValueStage >= kRunKeyStage + kKeyBytes)),
                  "the tile's run keys fit in its input stages, clear of the run values");
    Key* key_stage;
    if constexpr (kRunKeyStage == kRunKeysOwnArray) {
      __shared__ Key own_key_stage[kTile];
      key_stage = own_key_stage;
    } else {
      key_stage = reinterpret_cast<Key*>(stages + kRunKeyStage);
    }
    const long long first = tile_before.heads, count = tile_total.heads;
    if (count > kBlock) {
      each_element([&](int k, long long i, bool head, long long run, const T&) {
        if (head) key_stage[run - first] = run_key(stages, tile_slot(item0 + k), i);
      }, no_last_run);
      __syncthreads();  // every key read from the input stages: the values go over them
      T* const value_stage = reinterpret_cast<T*>(stages + kRunValueStage);
      each_element([&](int, long long, bool head, long long run, const T& value) {
        if (head) value_stage[run - first] = value;
      }, last_run);
      __syncthreads();
      for (int j = threadIdx.x; j < count; j += kBlock) {
        store_key(first + j, key_stage[j]);
        if (first + j > 0) store_value(first + j - 1, value_stage[j]);
      }
      return;
    }
  }
  each_element([&](int k, long long i, bool head, long long run, const T& value) {
    if (!head) return;
    store_key(run, run_key(stages, tile_slot(item0 + k), i));
    if (run > 0) store_value(run - 1, value);
  }, last_run);
}

}  // namespace segmented
}  // namespace ff
