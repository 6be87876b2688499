// fuseflow device helper library: stream compaction (filter as a program output).
//
// Embedded into the fuseflow binary like collectives.cuh. A compaction tile ranks its kept
// elements within each warp with ballots (WarpRanks), adds the warps' counts in the block,
// and finds its global output offset with scan.cuh's look-back (tile_exclusive_prefix)
// over the tiles' survivor counts, as 64-bit integers (a total beyond 2^32 survivors
// stays exact). compact_tile is the whole one-tile-per-block kernel over the kernel's
// functors.
#pragma once

#include <fuseflow/scan.cuh>

namespace ff {

// Ranks of a warp's kept elements in input order. The warp holds its elements in rows:
// in a row, lane l holds the kVec consecutive elements l * kVec ... l * kVec + kVec - 1,
// and every row follows the previous one. rank_row, called by the full warp for each row
// in order, returns the position of the lane's first kept element of the row among the
// warp's kept elements (those of earlier rows and of lower lanes in this row come first);
// the lane's other kept elements of the row follow it, in order. One ballot per element
// of the row: no shared memory, no barrier.
template <int kVec>
struct WarpRanks {
  unsigned kept = 0;  // kept elements in the rows ranked so far; the same in every lane

  __device__ __forceinline__ unsigned rank_row(const bool (&flags)[kVec]) {
    const unsigned lower_lanes = (1u << (threadIdx.x % kWarpSize)) - 1u;
    unsigned first = kept;
    unsigned row = 0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const unsigned votes = __ballot_sync(kFullMask, flags[k]);
      first += __popc(votes & lower_lanes);
      row += __popc(votes);
    }
    kept += row;
    return first;
  }
};

// ---- the compaction kernel: one block per tile --------------------------------------------
//
// Filter as a program output (stream compaction), one pass (DESIGN.md "Strategies:
// Filter"). One block per tile; a block takes its tile id from an atomic counter, so every
// predecessor of a tile is already running (no deadlock whatever order blocks are
// scheduled in). Each warp owns a contiguous part of the tile (kWarpTile elements) and
// loads it in rows: in row r, lane l holds the kVec elements from
// warp_base + (r * 32 + l) * kVec, one coalesced 16-byte vector load per lane, row and
// input (element-wise loads for the last tile and for misaligned inputs). It evaluates the
// predicate (with the map before the filter fused in) on each element and ranks the
// survivors in input order with one ballot per element of a row (WarpRanks); each
// survivor's value goes to its rank in the warp's part of the shared tile `survivors`
// (kTile values of dynamic shared memory, which the kernel declares). The warps' counts
// give the tile's count and each warp's offset in it; the tile's first output position
// comes from scan.cuh's deterministic look-back over the tiles' survivor counts, as 64-bit
// integers. Each warp then writes its survivors to consecutive positions (coalesced), each
// output's map applied on the way (filter -> map), and the last tile writes the total
// count. Stable: survivors keep their input order. Reads n elements, writes the survivors.
//
// The kernel's functors (r: a row, k: an element of it, i: its index):
//   aligned()           every input is aligned to a whole vector of kVec elements
//   load_row(r, at)     the lane's row r: the kVec elements from `at` of every input
//                       (neither is called when kVec is 1)
//   load(r, k, i)       element k of row r, element i of every input
//   keep(r, k, i)       the predicate of the loaded element; value(r, k, i) its value
//   count(total)        writes the total count of survivors (the last tile)
//   store(at, kept)     writes survivor `kept` at position `at` of every output
template <int kBlock, int kVec, int kRows, typename V, typename Aligned, typename LoadRow, typename Load,
          typename Keep, typename Value, typename Count, typename Store>
__device__ __forceinline__ void compact_tile(V* const survivors, const long long n, unsigned* tile_counter,
                                             void* tile_status, const unsigned epoch, Aligned aligned,
                                             LoadRow load_row, Load load, Keep keep, Value value, Count count,
                                             Store store) {
  constexpr int kWarpTile = 32 * kRows * kVec;  // a warp's consecutive elements of the tile
  constexpr int kTile = kBlock / 32 * kWarpTile;
  __shared__ unsigned int warp_counts[kBlock / 32];
  __shared__ unsigned int tile_id;
  __shared__ unsigned long long tile_offset;
  // Dynamic tile id: tiles are numbered in the order their blocks start.
  if (threadIdx.x == 0) tile_id = draw_tile_id(tile_counter);
  __syncthreads();
  const long long tile = tile_id;
  const long long base = tile * kTile;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const long long warp_base = base + (long long)warp * kWarpTile;

  // Element by element, each checked against n: the last tile, misaligned inputs, kVec 1.
  const auto checked_loads = [&] {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const long long i = warp_base + (r * 32 + lane) * kVec + k;
        if (i < n) load(r, k, i);
      }
    }
  };
  if constexpr (kVec > 1) {
    if (base + kTile <= n && aligned()) {
      // A full tile of aligned inputs (every tile but the last): one coalesced vector load
      // per lane, row and input, no bounds checks.
#pragma unroll
      for (int r = 0; r < kRows; ++r) load_row(r, warp_base + (r * 32 + lane) * kVec);
    } else {
      checked_loads();
    }
  } else {
    checked_loads();
  }

  // Each survivor's rank among the warp's survivors, in input order (a ballot per element
  // of a row), and its value stored at that rank in the warp's part of the shared tile.
  WarpRanks<kVec> ranks;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    bool flags[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const long long i = warp_base + (r * 32 + lane) * kVec + k;
      flags[k] = i < n && keep(r, k, i);
    }
    unsigned int rank = ranks.rank_row(flags);  // of this lane's first survivor in the row
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const long long i = warp_base + (r * 32 + lane) * kVec + k;
      if (flags[k]) survivors[warp * kWarpTile + rank++] = value(r, k, i);
    }
  }
  if (lane == 0) warp_counts[warp] = ranks.kept;
  __syncthreads();
  // This warp's survivors start at warp_offset in the tile, which has tile_count.
  unsigned int warp_offset = 0, tile_count = 0;
#pragma unroll
  for (int v = 0; v < kBlock / 32; ++v) {
    if (v == warp) warp_offset = tile_count;
    tile_count += warp_counts[v];
  }

  // The tile's first output position: the survivors of all earlier tiles, from scan.cuh's
  // look-back over the tiles' counts (tile_exclusive_prefix: warp 0 publishes the tile's
  // count and folds its predecessors' in one fixed order). The grid has one block per
  // tile, so gridDim.x is the tile count (1 when n is 0). No stash: sums of counts reach
  // a group prefix within one window. The last tile writes the total count.
  if (warp == 0) {
    const ScanTileStatus<unsigned long long> status(tile_status, gridDim.x, epoch);
    const auto plus = [](const unsigned long long a, const unsigned long long b) { return a + b; };
    const unsigned long long exclusive =
        tile_exclusive_prefix(status, tile, (unsigned long long)tile_count, plus, 0ull,
                              static_cast<unsigned long long*>(nullptr), 0);
    if (lane == 0) {
      tile_offset = exclusive;
      if (base + kTile >= n) count(exclusive + tile_count);
    }
  }
  __syncthreads();

  // Coalesced stores: each warp writes its survivors to consecutive positions, the map
  // after the filter applied to each on the way.
  const unsigned int mine = warp_counts[warp];
  const long long first = (long long)(tile_offset + warp_offset);
  for (unsigned int s = lane; s < mine; s += 32) {
    const long long at = first + s;
    store(at, survivors[warp * kWarpTile + s]);
  }
}

}  // namespace ff
