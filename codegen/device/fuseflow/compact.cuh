// fuseflow device helper library: stream compaction (filter as a program output).
//
// Embedded into the fuseflow binary like collectives.cuh. A compaction tile ranks its kept
// elements within each warp with ballots (WarpRanks), adds the warps' counts in the block,
// and finds its global output offset with scan.cuh's look-back (tile_exclusive_prefix)
// over the tiles' survivor counts, as 64-bit integers (a total beyond 2^32 survivors
// stays exact).
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

}  // namespace ff
