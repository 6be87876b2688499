// fuseflow device helper library: the short-segment pass of the segmented reduction by
// offsets (a thread per segment of at most kShort elements), and the policies that tell the
// merge path (segmented.cuh's reduce_by_offsets) which segments are left to it. Included by
// segmented.cuh; split from it by topic.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {
namespace segmented {

// ---- Short segments first --------------------------------------------------------------
//
// Most segment-length shapes that are slow for the merge path are made of short segments
// (millions of segments of 3): there the tile's staging, head bytes, scans and barriers cost
// more than the bytes. So a first kernel, reduce_short_segments, takes every segment of at
// most kShort elements, one thread each: a warp reads 32 consecutive offsets at once (each
// offset once: a segment's end is the next lane's start), each thread folds its segment left
// to right with unrolled, predicated loads (the warp's loads land on a few consecutive cache
// lines), and the sums are written coalesced. A longer segment is left to the load-balanced
// kernel: its bit is set in a mask (one 32-bit word per 32 segments, every word written), and
// the block sets `any_deferred`. The load-balanced kernel then runs with DeferredSegments:
// it returns at once when no segment was left, skips every tile in which no left segment
// lies (without loading it), and writes only the left segments. A segment is either folded
// by one thread in order, or by the merge path in order: non-commutative monoids stay exact.

// Which segments reduce_by_offsets computes and writes: every one (no short-segment pass
// ran before it).
struct EverySegment {
  static constexpr bool kSkips = false;  // no tile is skipped
  __device__ __forceinline__ bool any() const { return true; }
  __device__ __forceinline__ bool writes(long long) const { return true; }
  __device__ __forceinline__ bool any_in(long long, long long) const { return true; }
  __device__ __forceinline__ void reset() const {}
};

// Only the segments reduce_short_segments left: bit s % 32 of mask[s / 32]. `any_deferred`
// is set when it left one; the last block of reduce_by_offsets zeroes it again. `every`:
// the short pass did not run (the schedule launches it only when the segments average at
// most its limit), so every segment is computed and written, as with EverySegment.
struct DeferredSegments {
  static constexpr bool kSkips = true;
  const unsigned* mask;
  unsigned* any_deferred;
  bool every;
  __device__ __forceinline__ bool any() const { return every || *any_deferred != 0u; }
  __device__ __forceinline__ bool writes(long long s) const { return every || ((mask[s >> 5] >> (s & 31)) & 1u); }
  // Whether a left segment is among segments lo .. hi (none when lo > hi). Every word is
  // read, with no early exit, so that the loads are in flight together.
  __device__ __forceinline__ bool any_in(long long lo, long long hi) const {
    if (every) return true;
    if (lo > hi) return false;
    const long long w0 = lo >> 5, w1 = hi >> 5;
    unsigned found = 0u;
#pragma unroll 4
    for (long long w = w0; w <= w1; ++w) {
      unsigned bits = mask[w];
      if (w == w0) bits &= ~0u << (lo & 31);
      if (w == w1) bits &= ~0u >> (31 - (hi & 31));
      found |= bits;
    }
    return found != 0u;
  }
  __device__ __forceinline__ void reset() const { *any_deferred = 0u; }
};

// One warp's share of the short-segment pass: chunks of kPerThread x 32 consecutive
// segments, thread `lane` taking segments chunk + lane + 32 j. Offsets are handled as
// `Offset`: int when every offset fits (n < 2^31), which halves the shuffles and the
// arithmetic per segment. Returns whether this warp left a segment.
template <typename Offset, int kThreads, int kPerThread, int kShort, typename T, typename ValueAt, typename OffsetAt,
          typename Combine>
__device__ __forceinline__ bool fold_short_segments(const long long segments, ValueAt value_at, OffsetAt offset_at,
                                                    Combine combine, const T identity, T* out, unsigned* deferred_mask,
                                                    unsigned* invalid) {
  constexpr int kChunk = kWarpSize * kPerThread;
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const long long stride = (long long)gridDim.x * kWarps * kChunk;
  bool deferred = false;
  bool decreasing = false;  // stored once, at the end: a store in the loop would slow it by 10%
  for (long long chunk = ((long long)blockIdx.x * kWarps + threadIdx.x / kWarpSize) * kChunk; chunk < segments;
       chunk += stride) {
    // Segment s = chunk + lane + 32 j spans [start[j], end[j]). Every load of offsets is
    // issued before the first is used: lane 31 also reads the offset after the chunk.
    Offset start[kPerThread], end[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const long long s = chunk + lane + kWarpSize * j;
      start[j] = s <= segments ? (Offset)offset_at(s) : 0;
    }
    Offset after = 0;
    if (lane == kWarpSize - 1 && chunk + kChunk <= segments) after = (Offset)offset_at(chunk + kChunk);
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      end[j] = shfl_down(start[j], 1);
      // Lane 31's end is the start of the next row's lane 0 (or the offset after the chunk).
      const Offset next_row = shfl_idx(start[j + 1 < kPerThread ? j + 1 : j], 0);
      if (lane == kWarpSize - 1) end[j] = j + 1 < kPerThread ? next_row : after;
    }
    // Each thread folds its segment in order, one load after the other: the first brings the
    // warp's few cache lines into L1, where the next ones find them. (Loading all of them
    // first, to have them in flight together, was 30% slower: each missed L1 on its own.)
    T sum[kPerThread];
    bool folded[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const long long s = chunk + lane + kWarpSize * j;
      const Offset length = end[j] - start[j];
      decreasing = decreasing || (s < segments && length < 0);
      folded[j] = s < segments && length >= 0 && length <= kShort;
      sum[j] = identity;
#pragma unroll
      for (int k = 0; k < kShort; ++k)
        if (folded[j] && k < length) sum[j] = combine(sum[j], value_at((long long)start[j] + k));
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const long long s = chunk + lane + kWarpSize * j;
      if (folded[j]) store_streaming(out + s, sum[j]);
      const unsigned left = __ballot_sync(kFullMask, s < segments && !folded[j] && end[j] >= start[j]);
      if (lane == 0 && chunk + kWarpSize * j < segments) deferred_mask[(chunk >> 5) + j] = left;
      deferred = deferred || left != 0u;
    }
  }
  if (decreasing) *invalid = 1u;
  return deferred;
}

// The short-segment pass, called by every thread of every block of the grid (any grid:
// warps stride over chunks of segments). offset_at(s) is offsets[s] clamped to [0, n]; a
// segment whose end is below its start sets *invalid (and is neither folded nor left).
template <int kThreads, int kPerThread, int kShort, typename T, typename ValueAt, typename OffsetAt, typename Combine>
__device__ __forceinline__ void reduce_short_segments(const long long n, const long long segments, ValueAt value_at,
                                                      OffsetAt offset_at, Combine combine, const T identity, T* out,
                                                      unsigned* deferred_mask, unsigned* any_deferred,
                                                      unsigned* invalid) {
  static_assert(kThreads % kWarpSize == 0, "whole warps");
  constexpr int kWarps = kThreads / kWarpSize;
  __shared__ bool warp_deferred[kWarps];
  const bool deferred =
      n <= 0x7fffffffLL
          ? fold_short_segments<int, kThreads, kPerThread, kShort>(segments, value_at, offset_at, combine, identity, out,
                                                                    deferred_mask, invalid)
          : fold_short_segments<long long, kThreads, kPerThread, kShort>(segments, value_at, offset_at, combine, identity,
                                                                          out, deferred_mask, invalid);
  // `deferred` is the same in the whole warp (it comes from ballots): one flag per warp, one
  // store per block at most.
  if (threadIdx.x % kWarpSize == 0) warp_deferred[threadIdx.x / kWarpSize] = deferred;
  __syncthreads();
  if (threadIdx.x == 0) {
    bool any = false;
    for (int w = 0; w < kWarps; ++w) any = any || warp_deferred[w];
    if (any) *any_deferred = 1u;
  }
}

}  // namespace segmented
}  // namespace ff
