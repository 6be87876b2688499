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
#pragma once

#include <fuseflow/scan.cuh>

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
// (count when there is none), for non-decreasing offsets. One full warp searches 32
// pivots per step, so it takes log32(count) dependent reads instead of log2(count), and
// every lane gets the answer. Unsorted offsets give some s in [0, count]; it always ends.
template <typename OffsetAt>
__device__ __forceinline__ long long warp_lower_bound(long long count, long long key, OffsetAt offset_at) {
  const int lane = threadIdx.x % kWarpSize;
  long long lo = 0, hi = count;  // the answer lies in [lo, hi]
  while (lo < hi) {
    const long long step = (hi - lo + kWarpSize - 1) / kWarpSize;
    // Lane l tests pivot lo + (l + 1) * step - 1; the lanes whose pivot is below `key`
    // come first, so their count k says the answer is in [lo + k * step, pivot of lane k].
    const long long pivot = lo + (lane + 1) * step - 1;
    const bool below = pivot < hi && offset_at(pivot) < key;
    const int k = __popc(__ballot_sync(kFullMask, below));
    const long long bound = lo + (k + 1) * step - 1;
    lo += k * step;
    if (bound < hi) hi = bound;
  }
  return lo;
}

}  // namespace segmented
}  // namespace ff
