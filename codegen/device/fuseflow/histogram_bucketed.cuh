// fuseflow device helper library: weighted histograms of many bins from (bin, weight) pairs
// sorted stably by a coarse bucket, bin >> kBucketBits (strategies/histogram_bucketed.cpp).
// One stable Onesweep pass (onesweep.cuh) has put each bucket's pairs in one run, in element
// order; its digit histogram (`bucket_counts`) gives each bucket's count. The two kernels
// here add every bin in a fixed order, with no atomics on the sums: the same bits on every
// run of the same inputs, whatever the grid.
//
// The order each bin's weights are added in: the pairs of its bucket (element order) are cut
// into slices of kSlice pairs (the last shorter), numbered bucket by bucket; a slice into
// kWarps consecutive parts (a part a multiple of 32 pairs), one per warp; a warp takes its
// part in steps of 32 pairs, adding each step's pairs of one bin in lane order (element
// order, ff::warp_peers_sum) and that step sum into its private copy of the bucket's sums
// (starting at +0); the block adds its warps' copies in warp order (from +0) into the
// slice's row; the bin kernel adds the bucket's slice rows in slice order (from +0).
#pragma once

#include <fuseflow/collectives.cuh>
#include <fuseflow/histogram.cuh>

namespace ff {

// The slices of the buckets, in shared memory, by warp 0 of the block: start[c] is bucket c's
// first pair (start[kBuckets] = n), first_slice[c] its first slice (bucket c has
// ceil(count / kSlice) slices; first_slice[kBuckets] is their number). A warp scan over the
// buckets in chunks of 32.
template <int kBuckets, long long kSlice>
__device__ __forceinline__ void bucket_slices(const unsigned long long* bucket_counts, long long* start,
                                              long long* first_slice) {
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  long long pairs = 0, slices = 0;  // of the chunks before
  for (int c0 = 0; c0 < kBuckets; c0 += 32) {
    const int c = c0 + lane;
    const long long count = c < kBuckets ? (long long)bucket_counts[c] : 0;
    const long long own = (count + kSlice - 1) / kSlice;
    long long p = count, s = own;  // inclusive scans over the lanes
    for (int d = 1; d < 32; d *= 2) {
      const long long up_p = shfl_up(p, d), up_s = shfl_up(s, d);
      if (lane >= d) {
        p += up_p;
        s += up_s;
      }
    }
    if (c < kBuckets) {
      start[c] = pairs + p - count;
      first_slice[c] = slices + s - own;
    }
    pairs += shfl_idx(p, 31);
    slices += shfl_idx(s, 31);
  }
  if (lane == 0) {
    start[kBuckets] = pairs;
    first_slice[kBuckets] = slices;
  }
}

// Slice j's row of kBucketBins sums: the first kBuckets rows in `bucket_rows` (a fixed
// buffer), the others in `slice_rows` (at most ceil(n / kSlice) of them).
template <int kBuckets, int kBucketBins, typename Acc>
__device__ __forceinline__ Acc* slice_row(Acc* bucket_rows, Acc* slice_rows, long long j) {
  return j < kBuckets ? bucket_rows + j * kBucketBins : slice_rows + (j - kBuckets) * kBucketBins;
}

// The first kernel: a fixed grid strides over the slices (block b takes slices b, b + grid,
// ...). Each warp adds its part of the slice into its copy of the bucket's sums in `warp_sums`
// (kWarps x kBucketBins, dynamic shared memory), kUnroll steps of 32 pairs loaded at once;
// the block adds the copies in warp order into the slice's row (clearing them for the next
// slice). Block 0 writes the slice table (first_slice, kBuckets + 1 entries) for the bin
// kernel. A key >= kBins is a dropped element (the sort keyed it 0xffffffff): not added.
template <int kBlock, int kBuckets, int kBucketBits, long long kSlice, long long kBins, int kUnroll, typename Acc>
__device__ __forceinline__ void histogram_bucketed_slices(const unsigned* keys, const Acc* values,
                                                          const unsigned long long* bucket_counts, long long* slice_table,
                                                          Acc* bucket_rows, Acc* slice_rows, Acc* warp_sums) {
  constexpr int kWarps = kBlock / 32;
  constexpr int kBucketBins = 1 << kBucketBits;
  __shared__ long long start[kBuckets + 1];
  __shared__ long long first_slice[kBuckets + 1];
  bucket_slices<kBuckets, kSlice>(bucket_counts, start, first_slice);
  for (int k = threadIdx.x; k < kWarps * kBucketBins; k += kBlock) warp_sums[k] = Acc(0);
  __syncthreads();
  if (blockIdx.x == 0)
    for (int c = threadIdx.x; c <= kBuckets; c += kBlock) slice_table[c] = first_slice[c];
  const long long slices = first_slice[kBuckets];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc* mine = warp_sums + warp * kBucketBins;
  for (long long j = blockIdx.x; j < slices; j += gridDim.x) {
    // Its bucket: the last one whose first slice is <= j (an empty bucket has no slice).
    int lo = 0, hi = kBuckets - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_slice[mid] <= j) lo = mid;
      else hi = mid - 1;
    }
    const long long begin = start[lo] + (j - first_slice[lo]) * kSlice;
    const long long end = begin + kSlice < start[lo + 1] ? begin + kSlice : start[lo + 1];
    const long long part = ((end - begin + kWarps - 1) / kWarps + 31) / 32 * 32;
    const long long part_begin = begin + warp * part;
    const long long part_end = part_begin + part < end ? part_begin + part : end;
    // The loop is warp-uniform: a warp's lanes take the same steps.
    for (long long base = part_begin; base < part_end; base += 32 * kUnroll) {
      unsigned key[kUnroll];
      Acc w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const long long i = base + u * 32 + lane;
        key[u] = i < part_end ? keys[i] : 0xffffffffu;
        w[u] = i < part_end ? values[i] : Acc(0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const bool counted = (long long)key[u] < kBins;
        const int b = counted ? (int)(key[u] & (kBucketBins - 1)) : -1;
        Acc sum;
        if (warp_peers_sum(__match_any_sync(0xffffffffu, b), lane, counted, w[u], sum)) mine[b] += sum;
        __syncwarp();  // this step's adds are seen by the lanes that add to the same bins next
      }
    }
    __syncthreads();
    Acc* row = slice_row<kBuckets, kBucketBins>(bucket_rows, slice_rows, j);
    for (int b = threadIdx.x; b < kBucketBins; b += kBlock) {
      Acc s = Acc(0);
#pragma unroll
      for (int k = 0; k < kWarps; ++k) {
        s += warp_sums[k * kBucketBins + b];
        warp_sums[k * kBucketBins + b] = Acc(0);
      }
      row[b] = s;
    }
    __syncthreads();
  }
}

// The second kernel: bin b (a thread each, a grid stride) adds its bucket's slice rows in
// slice order and writes its sum as T (0 for a bin of an empty bucket).
template <int kBlock, int kBuckets, int kBucketBits, long long kBins, typename Acc, typename T>
__device__ __forceinline__ void histogram_bucketed_bins(const long long* slice_table, const Acc* bucket_rows,
                                                        const Acc* slice_rows, T* sums) {
  constexpr int kBucketBins = 1 << kBucketBits;
  for (long long b = (long long)blockIdx.x * kBlock + threadIdx.x; b < kBins; b += (long long)gridDim.x * kBlock) {
    const long long c = b >> kBucketBits, local = b & (kBucketBins - 1);
    const long long first = slice_table[c], last = slice_table[c + 1];
    Acc s = Acc(0);
    for (long long j = first; j < last; ++j) s += slice_row<kBuckets, kBucketBins>(bucket_rows, slice_rows, j)[local];
    sums[b] = (T)s;
  }
}

}  // namespace ff
