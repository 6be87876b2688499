// fuseflow device helper library: stable counting sort by a small integer key.
//
// The course's construction, in three kernels and no host round trip:
//  1. count_tile: every tile of kTile consecutive elements counts its keys per bin in
//     shared memory (ff::SharedHistogram) and writes the counts as column `tile` of a
//     bin-major [kBins x tiles] matrix;
//  2. exclusive_scan_counts: one exclusive scan of that matrix in memory order gives each
//     (bin, tile) the output position of its first element: every element of a lower bin,
//     then every element of the same bin in an earlier tile, comes before it;
//  3. scatter_tile: every tile ranks its elements within the tile and bin, in element
//     order, and writes each to its bin's position plus its rank.
// Equal keys therefore keep their input order (stable), and the positions are integers:
// the same output on every run.
//
// Keys outside [0, kKeyBins) (negative, or too large) belong to one more bin, kKeyBins,
// after every key in range: the output is always a permutation of the input. The
// *_by forms take the bins as a functor type instead (KeyBins, or a radix sort's digit).
#pragma once

#include <fuseflow/histogram.cuh>
#include <fuseflow/scan.cuh>

namespace ff {
namespace sort {

// Bits needed to write v.
__host__ __device__ constexpr int bit_width(unsigned long long v) { return v == 0 ? 0 : 1 + bit_width(v >> 1); }

// The bin of a key: the key itself in [0, kKeyBins), else the extra bin kKeyBins.
template <long long kKeyBins, typename Key>
__device__ __forceinline__ int bin_of(const Key key) {
  const long long k = static_cast<long long>(key);
  return static_cast<unsigned long long>(k) < static_cast<unsigned long long>(kKeyBins) ? static_cast<int>(k)
                                                                                         : static_cast<int>(kKeyBins);
}

// The bins of a counting sort by a small key: kKeyBins + 1 (the last for keys outside).
// The kernels below take any such functor: kCount bins, operator() a key's bin in
// [0, kCount) (a radix sort's digit, radix_sort.cuh).
template <long long kKeyBins>
struct KeyBins {
  static constexpr int kCount = static_cast<int>(kKeyBins) + 1;
  template <typename Key>
  __device__ __forceinline__ int operator()(const Key key) const {
    return bin_of<kKeyBins>(key);
  }
};

// ---- 1. tile counts ------------------------------------------------------------------

// Counts the keys of tile blockIdx.x (kThreads threads, kTile / kThreads elements each,
// loaded coalesced) into shared memory, then stores them as column blockIdx.x of
// `tile_counts`, the [Bins::kCount x tiles] matrix. `key_at(i)` is element i's key.
template <int kThreads, int kTile, typename Bins, int kCopies, typename KeyAt>
__device__ __forceinline__ void count_tile_by(const long long n, KeyAt key_at, unsigned* tile_counts) {
  constexpr long long kBins = Bins::kCount;
  constexpr int kPerThread = kTile / kThreads;
  static_assert(kTile % kThreads == 0, "a tile is a whole number of rows of the block");
  __shared__ unsigned private_counts[kCopies * kBins];
  SharedHistogram<kThreads, kBins, kCopies> hist{private_counts};
  hist.clear();
  const long long tile = blockIdx.x;
  const long long base = tile * kTile;
  // Every load is issued before the first count.
  int bins[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const long long i = base + k * kThreads + threadIdx.x;
    bins[k] = i < n ? Bins{}(key_at(i)) : -1;  // past n: counted nowhere
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) hist.add(bins[k]);
  __syncthreads();
  hist.store_column(tile_counts, tile, (n + kTile - 1) / kTile);
}
template <int kThreads, int kTile, long long kKeyBins, int kCopies, typename KeyAt>
__device__ __forceinline__ void count_tile(const long long n, KeyAt key_at, unsigned* tile_counts) {
  count_tile_by<kThreads, kTile, KeyBins<kKeyBins>, kCopies>(n, key_at, tile_counts);
}

// ---- 2. the scan of the counts -------------------------------------------------------

// Exclusive prefix sums of `count` 32-bit counts into 64-bit positions (a sort of more
// than 2^32 elements needs them), one tile of kThreads * kItems counts per block: a
// single pass with the decoupled look-back of <fuseflow/scan.cuh>: `tile_counter` starts
// zeroed and is left zeroed (draw_tile_id), `tile_status` holds ScanTileStatus<unsigned
// long long> entries of this launch's `epoch` or of others.
template <int kThreads, int kItems>
__device__ __forceinline__ void exclusive_scan_counts(const unsigned* counts, unsigned long long* positions,
                                                      const long long count, unsigned* tile_counter,
                                                      void* tile_status, unsigned epoch) {
  static_assert(kItems % 4 == 0, "counts are read four at a time");
  constexpr int kTile = kThreads * kItems;
  using Position = unsigned long long;
  __shared__ unsigned tile_id;
  __shared__ Position warp_totals[kThreads / kWarpSize];
  __shared__ Position tile_prefix;
  // Dynamic tile ids: every predecessor of a tile is running or done, so the look-back
  // cannot wait on a block that has not started.
  if (threadIdx.x == 0) tile_id = draw_tile_id(tile_counter);
  __syncthreads();
  const long long tile = tile_id;
  const long long first = tile * kTile + static_cast<long long>(threadIdx.x) * kItems;
  unsigned items[kItems];
  if (first + kItems <= count) {
    // 16-byte loads: the matrix is 256-byte aligned scratch and first is a multiple of 4.
#pragma unroll
    for (int k = 0; k < kItems; k += 4) {
      const uint4 v = *reinterpret_cast<const uint4*>(counts + first + k);
      items[k] = v.x;
      items[k + 1] = v.y;
      items[k + 2] = v.z;
      items[k + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) items[k] = first + k < count ? counts[first + k] : 0u;
  }
  Position thread_total = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) thread_total += items[k];
  const auto plus = [](const Position& a, const Position& b) -> Position { return a + b; };
  Position tile_total;
  const Position thread_prefix = block_exclusive_scan<kThreads>(thread_total, plus, Position{0}, warp_totals, tile_total);
  // The tile's exclusive prefix from scan.cuh's look-back (warp 0 publishes the tile's
  // total and finds the prefix); without a stash it waits for a group prefix within its
  // window, which sums of counts reach quickly.
  const ScanTileStatus<Position> status(tile_status, (count + kTile - 1) / kTile, epoch);
  if (threadIdx.x < kWarpSize) {
    const Position exclusive =
        tile_exclusive_prefix(status, tile, tile_total, plus, Position{0}, static_cast<Position*>(nullptr), 0);
    if (threadIdx.x == 0) tile_prefix = exclusive;
  }
  __syncthreads();
  Position running = tile_prefix + thread_prefix;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (first + k < count) positions[first + k] = running;
    running += items[k];
  }
}

// ---- 3. ranks and the scatter --------------------------------------------------------

// The lanes of the warp whose bin equals this lane's: one ballot per bit of the bin. On
// the device CUB's MatchAny sequence (a predicate from one AND, the ballot, the ballot
// inverted under the predicate, one AND into the peers: 4 SASS instructions per bit),
// where the C++ form compiles to about 7 (the bit extracted twice, once for the ballot's
// predicate, once for a select mask).
template <int kBits>
__device__ __forceinline__ unsigned lanes_with_bin(const unsigned bin) {
  unsigned peers = kFullMask;
#pragma unroll
  for (int b = 0; b < kBits; ++b) {
#ifdef __CUDA_ARCH__
    unsigned same;
    asm("{\n\t.reg .pred p;\n\tand.b32 %0, %1, %2;\n\tsetp.ne.u32 p, %0, 0;\n\t"
        "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t@!p not.b32 %0, %0;\n\t}"
        : "=r"(same)
        : "r"(bin), "r"(1u << b));
    peers &= same;
#else
    const bool bit = (bin >> b) & 1u;
    const unsigned ones = __ballot_sync(kFullMask, bit);
    peers &= bit ? ones : ~ones;
#endif
  }
  return peers;
}

// One round of a warp's ranking: the number of elements of this lane's bin that the warp
// has seen before this lane's element (earlier rounds, then lower lanes of this round).
// `counters` is the warp's own row of per-bin counts; the lowest lane of each bin adds
// the round's count of that bin, and __syncwarp orders it before the next round's reads.
template <int kBits>
__device__ __forceinline__ unsigned rank_in_warp(unsigned short* counters, const int bin) {
  const unsigned lane = threadIdx.x % kWarpSize;
  const unsigned peers = lanes_with_bin<kBits>(static_cast<unsigned>(bin));
  const unsigned below = __popc(peers & ((1u << lane) - 1u));
  unsigned before = 0u;
  if (below == 0u) {
    before = counters[bin];
    counters[bin] = static_cast<unsigned short>(before + __popc(peers));
  }
  before = __shfl_sync(kFullMask, before, __ffs(peers) - 1);
  __syncwarp();
  return before + below;
}

// The same with 32-bit counts: the lowest lane of each bin adds the round's count with one
// shared atomic (no separate read and write; the shuffle from that lane orders the
// rounds).
template <int kBits>
__device__ __forceinline__ unsigned rank_in_warp(unsigned* counters, const int bin) {
  const unsigned lane = threadIdx.x % kWarpSize;
  const unsigned peers = lanes_with_bin<kBits>(static_cast<unsigned>(bin));
  const unsigned below = __popc(peers & ((1u << lane) - 1u));
  unsigned before = 0u;
  if (below == 0u) before = atomicAdd(&counters[bin], static_cast<unsigned>(__popc(peers)));
  return __shfl_sync(kFullMask, before, __ffs(peers) - 1) + below;
}

// Turns the per-warp counts [kWarps][kBins] into the tile position of the first element
// of each (warp, bin), in place: an exclusive scan in bin-major order (bin 0 of warps 0,
// 1, ..., then bin 1 ...), because a tile lists its bins in order and, within a bin, the
// warps' chunks in element order. Row 0 ends as the first position of each bin in the
// tile. Begins and ends with a barrier.
template <int kThreads, int kWarps, int kBins>
__device__ __forceinline__ void warp_bin_offsets(unsigned short* counters, unsigned* warp_totals) {
  constexpr int kEntries = kWarps * kBins;
  constexpr int kPerThread = (kEntries + kThreads - 1) / kThreads;
  __syncthreads();
  const int begin = threadIdx.x * kPerThread;
  const int end = min(begin + kPerThread, kEntries);
  const auto entry = [&](int e) -> unsigned short& { return counters[(e % kWarps) * kBins + e / kWarps]; };
  unsigned total = 0u;
  for (int e = begin; e < end; ++e) total += entry(e);
  unsigned all;
  unsigned running = block_exclusive_scan<kThreads>(
      total, [](const unsigned& a, const unsigned& b) -> unsigned { return a + b; }, 0u, warp_totals, all);
  for (int e = begin; e < end; ++e) {
    const unsigned c = entry(e);
    entry(e) = static_cast<unsigned short>(running);
    running += c;
  }
  __syncthreads();
}

// A counting sort without values: its value type, its values, and the store of a result
// that is not an output of the program.
struct NoValue {};
struct NoValues {
  __device__ NoValue operator()(long long) const { return NoValue{}; }
};
struct Discard {
  template <typename T>
  __device__ void operator()(unsigned long long, const T&) const {}
};
template <typename Value>
struct HasValues {
  static constexpr bool value = true;
};
template <>
struct HasValues<NoValue> {
  static constexpr bool value = false;
};

// One tile of a scatter: its geometry, and where thread (warp, lane) finds its items.
// Warp w owns the tile's w-th chunk of 32 * kItems consecutive elements and reads it
// round by round (round k: 32 consecutive elements, coalesced), so ranking the rounds in
// order ranks the chunk in element order.
template <int kThreads, int kItems>
struct ScatterTile {
  static constexpr int kWarps = kThreads / kWarpSize;
  static constexpr int kTile = kThreads * kItems;
  long long tile, tiles, base;
  int valid;  // elements of this tile below n
  int warp, lane;

  __device__ explicit ScatterTile(const long long n) : ScatterTile(n, blockIdx.x) {}
  __device__ ScatterTile(const long long n, const long long tile_id)
      : tile(tile_id), tiles((n + kTile - 1) / kTile), base(tile * kTile),
        valid(static_cast<int>(min(static_cast<long long>(kTile), n - tile * kTile))),
        warp(threadIdx.x / kWarpSize), lane(threadIdx.x % kWarpSize) {}
  // Tile position of this thread's item k, in element order.
  __device__ __forceinline__ int item(int k) const { return warp * kWarpSize * kItems + k * kWarpSize + lane; }
};

// Many bins (the runs of one bin in a tile are short anyway): every element is written
// straight from registers to its (bin, tile) position plus its rank in the tile and bin.
template <int kBins, typename Tile, int kItems, typename Key, typename ItemBin, typename ValueAt,
          typename StoreKey, typename StoreValue>
__device__ __forceinline__ void write_direct(const Tile& t, const unsigned short* offsets,
                                             const unsigned long long* positions, const Key (&keys)[kItems],
                                             const unsigned (&ranks)[kItems], ItemBin item_bin, ValueAt value_at,
                                             StoreKey store_key, StoreValue store_value) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (t.item(k) >= t.valid) continue;
    const int b = item_bin(k);
    const unsigned rank_in_bin = offsets[t.warp * kBins + b] + ranks[k] - offsets[b];
    const unsigned long long p = positions[static_cast<long long>(b) * t.tiles + t.tile] + rank_in_bin;
    store_key(p, keys[k]);
    store_value(p, value_at(t.base + t.item(k)));
  }
}

template <typename Bins, int kThreads, typename Tile, int kItems, typename Key, typename ItemBin, typename ValueAt,
          typename StoreKey, typename StoreValue>
__device__ __forceinline__ void write_staged_at(const Tile& t, const unsigned short* offsets, const Key (&keys)[kItems],
                                                const unsigned (&ranks)[kItems], ItemBin item_bin, ValueAt value_at,
                                                StoreKey store_key, StoreValue store_value, void* stage,
                                                const unsigned long long* bin_delta);

// Few bins: the tile is written into shared memory in sorted order (keys, then values,
// through one `stage`), then copied out: thread t copies tile positions t, t + kThreads,
// ..., so a bin's run is written by consecutive threads to consecutive addresses.
// `stage` may overlap `offsets`: they are read before the first write to it.
template <typename Bins, int kThreads, typename Tile, int kItems, typename Key, typename ItemBin,
          typename ValueAt, typename StoreKey, typename StoreValue>
__device__ __forceinline__ void write_staged(const Tile& t, const unsigned short* offsets,
                                             const unsigned long long* positions, const Key (&keys)[kItems],
                                             const unsigned (&ranks)[kItems], ItemBin item_bin, ValueAt value_at,
                                             StoreKey store_key, StoreValue store_value, void* stage,
                                             unsigned long long* bin_delta) {
  constexpr int kBins = Bins::kCount;
  // Per bin the distance from tile position to output position (row 0 of the offsets is
  // where each bin starts in the tile).
  for (int b = threadIdx.x; b < kBins; b += kThreads)
    bin_delta[b] = positions[static_cast<long long>(b) * t.tiles + t.tile] - offsets[b];
  write_staged_at<Bins, kThreads>(t, offsets, keys, ranks, item_bin, value_at, store_key, store_value, stage, bin_delta);
}

// The copy-out of a tile whose keys are staged in tile order (`stage`: the key at tile
// position j is element j): thread t writes positions t, t + kThreads, ..., each key to
// bin_delta[its bin] + j, so a bin's run is written by consecutive threads to
// consecutive addresses. Then the values: loaded only now, while few registers are
// taken, staged at the tile positions of the thread's items (`slots`) over the keys once
// every key is read, and copied out the same way, by the bins of the keys that were at
// their positions. `full`: no element of the tile is past n.
template <typename Bins, int kThreads, typename Tile, int kItems, typename Key, typename ValueAt, typename StoreKey,
          typename StoreValue>
__device__ __forceinline__ void write_staged_tile(const Tile& t, const bool full, unsigned (&slots)[kItems],
                                                  const Key* stage, ValueAt value_at, StoreKey store_key,
                                                  StoreValue store_value, const unsigned long long* bin_delta) {
  using Value = decltype(value_at(0LL));
  static_assert(Tile::kTile <= 65536 && Bins::kCount <= 65536, "a tile position and a bin share 32 bits");
  const auto write_key = [&](const int k) {
    const int j = k * kThreads + threadIdx.x;
    const Key key = stage[j];
    const int bin = Bins{}(key);
    // The bin of position j beside the tile position of item k, in one register: the
    // values need both, and three arrays of kItems would not fit the registers.
    slots[k] |= static_cast<unsigned>(bin) << 16;
    store_key(bin_delta[bin] + j, key);
  };
  // A full tile's copy-out has no check (and no branch around each key) per key.
  if (full) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      write_key(k);
      __syncwarp();  // keeps the compiler from hoisting every item's reads ahead (registers)
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (k * kThreads + static_cast<int>(threadIdx.x) < t.valid) write_key(k);
      __syncwarp();
    }
  }
  if constexpr (HasValues<Value>::value) {
    // The values are loaded straight into the stage once every key is read from it: only
    // the positions stay in registers.
    __syncthreads();
    Value* stage_values = reinterpret_cast<Value*>(const_cast<Key*>(stage));
    if (full) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) stage_values[slots[k] & 0xffffu] = value_at(t.base + t.item(k));
    } else {
#pragma unroll
      for (int k = 0; k < kItems; ++k)
        if (t.item(k) < t.valid) stage_values[slots[k] & 0xffffu] = value_at(t.base + t.item(k));
    }
    __syncthreads();
    const auto write_value = [&](const int k) {
      const int j = k * kThreads + threadIdx.x;
      store_value(bin_delta[slots[k] >> 16] + j, stage_values[j]);
    };
    if (full) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        write_value(k);
        __syncwarp();
      }
    } else {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        if (k * kThreads + static_cast<int>(threadIdx.x) < t.valid) write_value(k);
        __syncwarp();
      }
    }
  }
}

// The staged writes once `bin_delta` (output position - tile position, per bin) is filled
// in, or being filled in by this block before its next barrier: every thread's tile
// positions are read from `offsets` before the barrier after which `stage` (which may
// overlap them) is written.
template <typename Bins, int kThreads, typename Tile, int kItems, typename Key, typename ItemBin, typename ValueAt,
          typename StoreKey, typename StoreValue>
__device__ __forceinline__ void write_staged_at(const Tile& t, const unsigned short* offsets, const Key (&keys)[kItems],
                                                const unsigned (&ranks)[kItems], ItemBin item_bin, ValueAt value_at,
                                                StoreKey store_key, StoreValue store_value, void* stage,
                                                const unsigned long long* bin_delta) {
  constexpr int kBins = Bins::kCount;
  unsigned slots[kItems];  // tile positions of the items
#pragma unroll
  for (int k = 0; k < kItems; ++k) slots[k] = offsets[t.warp * kBins + item_bin(k)] + ranks[k];
  __syncthreads();
  Key* stage_keys = static_cast<Key*>(stage);
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (t.item(k) < t.valid) stage_keys[slots[k]] = keys[k];
  __syncthreads();
  write_staged_tile<Bins, kThreads>(t, t.valid == Tile::kTile, slots, stage_keys, value_at, store_key, store_value,
                                    bin_delta);
}

// Sorts tile blockIdx.x into place: loads its keys, ranks them per warp, turns the
// per-warp counts into tile positions (scanned in bin-major order, so the chunks of one
// bin follow in warp order), then writes every element to its (bin, tile) position from
// the scan of the tile counts plus its rank within the tile and bin: staged through
// shared memory (kStaged) or straight from registers. The values are read after the
// ranks, so the keys, ranks and values are never all held in registers at once.
//
// `key_at(i)` and `value_at(i)` evaluate element i (NoValues{} for a sort of keys
// alone); `store_key(position, key)` and `store_value(position, value)` write the
// outputs (Discard{} for a result that is not one).
template <int kThreads, int kItems, typename Bins, bool kStaged, typename KeyAt, typename ValueAt,
          typename StoreKey, typename StoreValue>
__device__ __forceinline__ void scatter_tile_by(const long long n, const unsigned long long* positions, KeyAt key_at,
                                                ValueAt value_at, StoreKey store_key, StoreValue store_value) {
  using Tile = ScatterTile<kThreads, kItems>;
  using Key = decltype(key_at(0LL));
  using Value = decltype(value_at(0LL));
  constexpr int kWarps = Tile::kWarps;
  constexpr int kBins = Bins::kCount;
  constexpr int kBits = bit_width(kBins - 1);  // bins 0 .. kBins - 1
  static_assert(Tile::kTile < 65536, "tile positions and per-warp counts fit 16 bits");
  constexpr unsigned long long kCounterBytes = sizeof(unsigned short) * kWarps * kBins;
  constexpr unsigned long long kValueBytes = HasValues<Value>::value ? sizeof(Value) : 0;
  constexpr unsigned long long kStageBytes =
      kStaged ? static_cast<unsigned long long>(Tile::kTile) * (sizeof(Key) > kValueBytes ? sizeof(Key) : kValueBytes)
              : 0;
  // The per-warp counts are done with before the stage is first written: they share it.
  __shared__ __align__(16) unsigned char shared[kCounterBytes > kStageBytes ? kCounterBytes : kStageBytes];
  __shared__ unsigned warp_totals[kWarps];
  unsigned short* counters = reinterpret_cast<unsigned short*>(shared);
  const Tile t(n);
  for (int c = threadIdx.x; c < kWarps * kBins; c += kThreads) counters[c] = 0;

  // Every load is issued before the first rank.
  Key keys[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (t.item(k) < t.valid) keys[k] = key_at(t.base + t.item(k));
  // Item k's bin, recomputed where needed rather than held in registers. Past n: the last
  // bin; those items come after every element of the tile, so they change no rank or
  // position of an element that is written.
  const auto item_bin = [&](int k) -> int {
    return t.item(k) < t.valid ? Bins{}(keys[k]) : kBins - 1;
  };
  __syncthreads();
  unsigned ranks[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) ranks[k] = rank_in_warp<kBits>(counters + t.warp * kBins, item_bin(k));
  warp_bin_offsets<kThreads, kWarps, kBins>(counters, warp_totals);
  if constexpr (kStaged) {
    __shared__ unsigned long long bin_delta[kBins];  // output position - tile position, per bin
    write_staged<Bins, kThreads>(t, counters, positions, keys, ranks, item_bin, value_at, store_key,
                                            store_value, shared, bin_delta);
  } else {
    write_direct<kBins>(t, counters, positions, keys, ranks, item_bin, value_at, store_key, store_value);
  }
}
template <int kThreads, int kItems, long long kKeyBins, bool kStaged, typename KeyAt, typename ValueAt,
          typename StoreKey, typename StoreValue>
__device__ __forceinline__ void scatter_tile(const long long n, const unsigned long long* positions, KeyAt key_at,
                                             ValueAt value_at, StoreKey store_key, StoreValue store_value) {
  scatter_tile_by<kThreads, kItems, KeyBins<kKeyBins>, kStaged>(n, positions, key_at, value_at, store_key, store_value);
}

}  // namespace sort
}  // namespace ff
