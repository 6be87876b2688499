// fuseflow device helper library: Onesweep (Adinets & Merrill 2022), the radix and
// counting sorts' one-kernel-per-pass structure.
//
//  1. digit_histograms: one read of the keys counts every digit of every pass at once
//     (the [digits x bins] counts, added into zeroed memory, 64-bit);
//  2. onesweep_pass, one launch per digit (one per portion of the tiles, below): a block
//     draws its tile from an atomic counter (so every earlier tile is running or done, and
//     the look-back cannot wait on a block that has not started, whatever order blocks run
//     in), ranks its keys within the tile and bin by warp ballots (counting_sort.cuh's
//     rank_in_warp, stable: element order), publishes its per-bin counts, then each bin's
//     thread looks back over the earlier tiles' entries of its bin (decoupled look-back)
//     until it meets an inclusive count, publishes its own inclusive count, and the tile
//     is written through shared memory to the bin's start (the exclusive scan of the
//     digit's histogram, which every block computes for itself) plus the count of the bin
//     in earlier tiles plus the element's rank in the tile and bin.
//
// Look-back entries, [tiles x bins] 32-bit words: a 2-bit flag over a 30-bit count. The
// flags alternate with the pass's parity, so an entry the previous pass left reads as "not
// yet" (pass even: 1 partial, 2 inclusive; odd: 3 partial, 0 inclusive; memory zeroed
// before the run's first pass reads as "not yet" for it; every pass writes every entry).
// Counts within a look-back stay below 2^30: the tiles form portions of kPortionTiles
// tiles, one launch each; the look-back stops at the portion's first tile, and the last
// tile of a portion writes the next portion's bin starts (`bin_starts`).
//
// Integers all: the output is the same on every run (stable and deterministic).
#pragma once

#include <fuseflow/radix_sort.cuh>

namespace ff {
namespace sort {

constexpr unsigned kLookbackCountBits = 30;
constexpr unsigned kLookbackCountMask = (1u << kLookbackCountBits) - 1u;

// The digits of a radix sort by key bits [kBegin, kEnd): 8 bits each, least significant
// first, the last possibly narrower; digit d of a key is the bin of pass d.
template <int kBegin, int kEnd>
struct RadixDigits {
  static_assert(kBegin >= 0 && kBegin < kEnd && kEnd <= 32, "a bit range within 32 bits");
  static constexpr int kDigits = (kEnd - kBegin + 7) / 8;
  static constexpr int kBins = kEnd - kBegin >= 8 ? 256 : 1 << (kEnd - kBegin);  // of the widest digit
  template <typename Key>
  __device__ __forceinline__ int operator()(const Key key, const int d) const {
    const int shift = kBegin + 8 * d;
    const int width = kEnd - shift < 8 ? kEnd - shift : 8;
    return static_cast<int>((ordered_bits(key) >> shift) & ((1u << width) - 1u));
  }
};

// The one "digit" of a counting sort by a small key (KeyBins: keys outside last).
template <long long kKeyBins>
struct CountingDigits {
  static constexpr int kDigits = 1;
  static constexpr int kBins = static_cast<int>(kKeyBins) + 1;
  template <typename Key>
  __device__ __forceinline__ int operator()(const Key key, int) const {
    return bin_of<kKeyBins>(key);
  }
};

// ---- 1. every digit's histogram, one read of the keys --------------------------------

// One chunk's keys counted into `shared_counts`: kFull chunks (every element inside) load
// and count without a bounds check per key, one shared atomic per key and digit; the
// last, partial chunk checks each key and adds a run of equal digits once.
template <bool kFull, int kThreads, int kItems, typename Digits, typename KeyAt>
__device__ __forceinline__ void count_digit_chunk(const long long base, const int valid, KeyAt key_at,
                                                  unsigned* shared_counts) {
  using Key = decltype(key_at(0LL));
  const auto inside = [&](const int k) { return kFull || k * kThreads + static_cast<int>(threadIdx.x) < valid; };
  const long long first = base + threadIdx.x;
  Key keys[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (inside(k)) keys[k] = key_at(first + k * kThreads);
  if constexpr (kFull) {
    // CUB's histogram: one shared atomic per key and digit, no run bookkeeping (on random
    // keys every run is one key long; the compare and branch per key and digit cost more
    // than the atomics they would save).
#pragma unroll
    for (int k = 0; k < kItems; ++k)
#pragma unroll
      for (int d = 0; d < Digits::kDigits; ++d) atomicAdd(&shared_counts[d * Digits::kBins + Digits{}(keys[k], d)], 1u);
  } else {
#pragma unroll
    for (int d = 0; d < Digits::kDigits; ++d) {
      int run_bin = -1;
      unsigned run = 0u;
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        if (!inside(k)) continue;
        const int bin = Digits{}(keys[k], d);
        if (bin != run_bin) {
          if (run != 0u) atomicAdd(&shared_counts[d * Digits::kBins + run_bin], run);
          run_bin = bin;
          run = 0u;
        }
        ++run;
      }
      if (run != 0u) atomicAdd(&shared_counts[d * Digits::kBins + run_bin], run);
    }
  }
}

// Blocks take chunks of kThreads * kItems elements, grid-stride; each counts its keys'
// digits in shared memory (count_digit_chunk), then adds its nonzero counts into `counts`
// ([Digits::kDigits x Digits::kBins], zeroed before the launch).
template <int kThreads, int kItems, typename Digits, typename KeyAt>
__device__ __forceinline__ void digit_histograms(const long long n, KeyAt key_at, unsigned long long* counts) {
  constexpr int kEntries = Digits::kDigits * Digits::kBins;
  constexpr long long kChunk = static_cast<long long>(kThreads) * kItems;
  __shared__ unsigned shared_counts[kEntries];
  for (int e = threadIdx.x; e < kEntries; e += kThreads) shared_counts[e] = 0u;
  __syncthreads();
  for (long long base = static_cast<long long>(blockIdx.x) * kChunk; base < n; base += kChunk * gridDim.x) {
    if (n - base >= kChunk)
      count_digit_chunk<true, kThreads, kItems, Digits>(base, static_cast<int>(kChunk), key_at, shared_counts);
    else
      count_digit_chunk<false, kThreads, kItems, Digits>(base, static_cast<int>(n - base), key_at, shared_counts);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kEntries; e += kThreads)
    if (shared_counts[e] != 0u) atomicAdd(&counts[e], static_cast<unsigned long long>(shared_counts[e]));
}

// ---- 2. one pass -------------------------------------------------------------------------

// A look-back entry: flag (by the pass's parity) over count.
__device__ __forceinline__ unsigned lookback_word(const bool inclusive, const int parity, const unsigned count) {
  const unsigned flag = parity == 0 ? (inclusive ? 2u : 1u) : (inclusive ? 0u : 3u);
  return flag << kLookbackCountBits | count;
}

// The exclusive count of bin `bin` in the tiles of this tile's portion before it, read
// from their entries (spinning while one is not yet written this pass), then this tile's
// inclusive count published. One thread per bin; the tile's own partial count is already
// published. The entries are read kLookbackWindow at a time (independent loads, one
// round trip to L2 for the window, not one per tile), then folded nearest first up to
// the first inclusive one: the same sum as reading them one by one; an entry found not
// yet written is read again alone until it is.
constexpr int kLookbackWindow = 4;
__device__ __forceinline__ unsigned look_back(unsigned* status, const int bins, const long long tile,
                                              const long long first, const int bin, const int parity,
                                              const unsigned count) {
  const unsigned partial = parity == 0 ? 1u : 3u, inclusive = parity == 0 ? 2u : 0u;
  unsigned exclusive = 0u;
  bool done = false;
  const volatile unsigned* entry = status + (tile - 1) * bins + bin;  // tile t's entry of the bin
  for (long long t = tile - 1; t >= first && !done; t -= kLookbackWindow, entry -= kLookbackWindow * bins) {
    const int window = static_cast<int>(min(static_cast<long long>(kLookbackWindow), t - first + 1));
    unsigned words[kLookbackWindow];
#pragma unroll
    for (int j = 0; j < kLookbackWindow; ++j) words[j] = j < window ? entry[-j * bins] : 0u;
#pragma unroll
    for (int j = 0; j < kLookbackWindow; ++j) {
      if (done || j >= window) break;
      unsigned word = words[j], flag = word >> kLookbackCountBits;
      while (flag != partial && flag != inclusive) {
        word = entry[-j * bins];
        flag = word >> kLookbackCountBits;
      }
      exclusive += word & kLookbackCountMask;
      done = flag == inclusive;
    }
  }
  if (tile != first)
    *reinterpret_cast<volatile unsigned*>(status + tile * bins + bin) = lookback_word(true, parity, exclusive + count);
  return exclusive;
}

// A bin's tile count and, in a portion's first launch, its count in the whole digit: one
// block scan gives each bin its first position in the tile and its first output position.
struct BinCounts {
  unsigned long long total;  // the bin's count in the digit's histogram (portion 0), else 0
  unsigned tile;             // the bin's count in the tile
};

// One pass of a stable sort by Bins (RadixDigit for a radix pass, KeyBins for a counting
// sort; Bins::kCount <= kThreads), digit `kDigit` of `digit_counts` (its histogram rows
// have kRowBins entries). `tile_counter` is a zeroed word, left zeroed; `lookback` holds
// [tiles x Bins::kCount] look-back entries (see above), `bin_starts` [portions x
// Bins::kCount] bin starts of the portions after the first. key_at, value_at, store_key
// and store_value as in counting_sort.cuh's scatter_tile_by.
//
// The tile, in the order that keeps the fewest registers live (CUB's Onesweep agent has
// the same order): its keys are loaded and ranked within each warp's chunk (a warp's
// leader of a bin adds the bin's count with one shared atomic); thread b sums bin b over
// the warps, publishes it, and one block scan turns the per-warp counts into tile
// positions (bin-major, in place, each thread its own bin's column: no bank conflicts);
// each key goes to its tile position in shared memory at once, so only the positions
// stay in registers through the look-back; then the keys are copied out in tile order
// (consecutive threads write consecutive addresses within a bin's run), each to its
// bin's output start plus its place in the bin's run; the values follow by the same
// positions, their bins taken from the staged keys before the values overwrite them.
template <int kThreads, int kItems, typename Bins, int kDigit, int kRowBins, int kParity, long long kPortionTiles,
          typename KeyAt, typename ValueAt, typename StoreKey, typename StoreValue>
__device__ __forceinline__ void onesweep_pass(const long long n, const unsigned long long* digit_counts,
                                              unsigned long long* bin_starts, unsigned* lookback,
                                              unsigned* tile_counter, KeyAt key_at, ValueAt value_at,
                                              StoreKey store_key, StoreValue store_value) {
  using Tile = ScatterTile<kThreads, kItems>;
  using Key = decltype(key_at(0LL));
  using Value = decltype(value_at(0LL));
  constexpr int kWarps = Tile::kWarps;
  constexpr int kBins = Bins::kCount;
  constexpr int kBits = bit_width(kBins - 1);
  static_assert(kBins <= kThreads, "one thread per bin looks back");
  static_assert(Tile::kTile < 65536 && kBins < 65536, "tile positions and bins fit 16 bits");
  static_assert(kPortionTiles * Tile::kTile < (1ll << kLookbackCountBits), "a portion's counts fit 30 bits");
  constexpr unsigned long long kCounterBytes = sizeof(unsigned) * kWarps * kBins;
  constexpr unsigned long long kValueBytes = HasValues<Value>::value ? sizeof(Value) : 0;
  constexpr unsigned long long kStageBytes =
      static_cast<unsigned long long>(Tile::kTile) * (sizeof(Key) > kValueBytes ? sizeof(Key) : kValueBytes);
  // The per-warp counts, then the tile's keys, then its values.
  __shared__ __align__(16) unsigned char shared[kCounterBytes > kStageBytes ? kCounterBytes : kStageBytes];
  __shared__ BinCounts scan_totals[kWarps];
  __shared__ unsigned long long bin_delta[kBins];
  __shared__ unsigned tile_id;
  unsigned* counters = reinterpret_cast<unsigned*>(shared);
  const long long tiles = (n + Tile::kTile - 1) / Tile::kTile;
  if (threadIdx.x == 0) {
    const unsigned id = atomicAdd(tile_counter, 1u);
    if (id == tiles - 1) atomicExch(tile_counter, 0u);  // every block of the pass has drawn
    tile_id = id;
  }
  for (int c = threadIdx.x; c < kWarps * kBins; c += kThreads) counters[c] = 0u;
  __syncthreads();
  const Tile t(n, tile_id);
  const bool full = t.valid == Tile::kTile;
  const long long portion = t.tile / kPortionTiles, first = portion * kPortionTiles;
  const long long last = min(tiles, first + kPortionTiles) - 1;

  Key keys[kItems];
  if (full) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) keys[k] = key_at(t.base + t.item(k));
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (t.item(k) < t.valid) keys[k] = key_at(t.base + t.item(k));
  }
  // Past n: the last bin, after every element of the tile (counted out below).
  const auto item_bin = [&](int k) -> int { return full || t.item(k) < t.valid ? Bins{}(keys[k]) : kBins - 1; };
  // Item k's rank within the warp's chunk and bin, its bin in the upper 16 bits (so the
  // compiler has no reason to hold the bins in registers of their own), then its tile
  // position.
  unsigned slots[kItems];
  // A counting sort by 2^m keys has 2^m + 1 bins, and only the last (keys outside, and
  // items past n) needs bit m: when the histogram counted no key outside, a full tile's
  // bins all fit m bits, and its ranks take m ballots per item, not m + 1.
  constexpr int kNarrowBits = bit_width(kBins - 2);
  bool narrow = false;
  if constexpr (kNarrowBits < kBits) narrow = full && digit_counts[kDigit * kRowBins + kBins - 1] == 0ull;
  if (narrow) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int bin = item_bin(k);
      slots[k] = rank_in_warp<kNarrowBits>(counters + t.warp * kBins, bin) | static_cast<unsigned>(bin) << 16;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int bin = item_bin(k);
      slots[k] = rank_in_warp<kBits>(counters + t.warp * kBins, bin) | static_cast<unsigned>(bin) << 16;
    }
  }

  // Thread b: bin b's count in the tile (the items past n counted in the last bin are
  // left out of what is published), published at once so that later tiles' look-backs
  // find it early.
  __syncthreads();
  const int b = threadIdx.x;
  unsigned count = 0u, own = 0u;  // with the items past n, and without
  if (b < kBins) {
#pragma unroll
    for (int w = 0; w < kWarps; ++w) count += counters[w * kBins + b];
    own = b == kBins - 1 ? count - static_cast<unsigned>(Tile::kTile - t.valid) : count;
    *reinterpret_cast<volatile unsigned*>(lookback + t.tile * kBins + b) = lookback_word(t.tile == first, kParity, own);
  }
  // The bins' first positions in the tile and, in portion 0, their output starts (the
  // digit's histogram scanned); later portions have theirs from the portion before.
  const BinCounts mine = {portion == 0 && b < kBins ? digit_counts[kDigit * kRowBins + b] : 0ull, count};
  BinCounts all;
  const BinCounts before_bin = block_exclusive_scan<kThreads>(
      mine, [](const BinCounts& x, const BinCounts& y) { return BinCounts{x.total + y.total, x.tile + y.tile}; },
      BinCounts{0ull, 0u}, scan_totals, all);
  const unsigned tile_start = before_bin.tile;  // bin b's first position in the tile
  if (b < kBins) {
    unsigned running = tile_start;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const unsigned c = counters[w * kBins + b];
      counters[w * kBins + b] = running;
      running += c;
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k) slots[k] = (slots[k] & 0xffffu) + counters[t.warp * kBins + (slots[k] >> 16)];
  __syncthreads();  // every position read before the keys overwrite the counts
  Key* stage_keys = reinterpret_cast<Key*>(shared);
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (full || t.item(k) < t.valid) stage_keys[slots[k]] = keys[k];

  if (b < kBins) {
    const unsigned long long start = portion == 0 ? before_bin.total : bin_starts[portion * kBins + b];
    const unsigned before = look_back(lookback, kBins, t.tile, first, b, kParity, own);
    if (t.tile == last && last + 1 < tiles) bin_starts[(portion + 1) * kBins + b] = start + before + own;
    bin_delta[b] = start + before - tile_start;
  }
  __syncthreads();
  write_staged_tile<Bins, kThreads>(t, full, slots, stage_keys, value_at, store_key, store_value, bin_delta);
}

}  // namespace sort
}  // namespace ff
