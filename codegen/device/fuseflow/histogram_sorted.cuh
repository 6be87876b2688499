// fuseflow device helper library: weighted histograms of many bins from (bin, weight) pairs
// sorted by bin (strategies/histogram_sorted.cpp). A stable radix sort (onesweep.cuh) has
// put each bin's weights in one run of consecutive elements, in element order; the two
// kernels here add each run in a fixed order and write every bin's sum, zeros included.
// No atomics on the sums: the same bits on every run of the same n.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {

// The first kernel. The sorted keys are cut into pieces of kPiece elements, one warp per
// piece (the pieces strided over the grid's warps):
//   - each run's head (i == 0 or keys[i - 1] != keys[i]) writes its start into
//     runs[2 * key], its tail (i == n - 1 or keys[i + 1] != keys[i]) its end into
//     runs[2 * key + 1]: a bin has at most one run, so every entry is written once at most
//     (`runs` was zeroed: an empty bin is [0, 0));
//   - piece_sums[p] is the sum of piece p's elements whose key is its first key (a prefix
//     of the piece: its part of the run it starts in), each lane adding its elements in
//     order (a stride of 32), then the lanes in a fixed tree (ff::warp_reduce).
template <int kBlock, int kPiece, typename Acc>
__device__ __forceinline__ void histogram_sorted_runs(long long n, const unsigned* keys, const Acc* values,
                                                      long long* runs, Acc* piece_sums) {
  constexpr int kWarps = kBlock / 32;
  const int lane = threadIdx.x % 32;
  const long long pieces = (n + kPiece - 1) / kPiece;
  // The loop is warp-uniform: a warp's lanes take the same piece.
  for (long long p = (long long)blockIdx.x * kWarps + threadIdx.x / 32; p < pieces; p += (long long)gridDim.x * kWarps) {
    const long long begin = p * kPiece;
    const long long end = begin + kPiece < n ? begin + kPiece : n;
    const unsigned first = keys[begin];
    Acc sum = Acc(0);
    for (long long i = begin + lane; i < end; i += 32) {
      const unsigned k = keys[i];
      if (i == 0 || keys[i - 1] != k) runs[2 * (long long)k] = i;
      if (i == n - 1 || keys[i + 1] != k) runs[2 * (long long)k + 1] = i + 1;
      if (k == first) sum += values[i];
    }
    sum = warp_reduce(sum, [](const Acc& a, const Acc& b) { return Acc(a + b); });
    if (lane == 0) piece_sums[p] = sum;
  }
}

// Bin b's run [start, end) added by the whole warp (a long run): its elements in the piece
// where it starts (up to the next piece's start), then the piece sums of the pieces that
// start inside it (each the run's elements in that piece); each lane adds its share in order
// (a stride of 32), then the lanes in a fixed tree. Every lane gets the sum.
template <int kPiece, typename Acc>
__device__ __forceinline__ Acc histogram_sorted_long_run(const Acc* values, const Acc* piece_sums, long long start,
                                                         long long end, int lane) {
  const long long next_piece = (start + kPiece - 1) / kPiece;  // the first piece starting at or after start
  const long long head_end = next_piece * kPiece < end ? next_piece * kPiece : end;
  Acc sum = Acc(0);
  for (long long i = start + lane; i < head_end; i += 32) sum += values[i];
  for (long long q = next_piece + lane; q * kPiece < end; q += 32) sum += piece_sums[q];
  sum = warp_reduce(sum, [](const Acc& a, const Acc& x) { return Acc(a + x); });
  return shfl_idx(sum, 0);
}

// The second kernel: every bin's sum, written as T (0 for an empty bin). A warp takes 32
// consecutive bins (strided over the grid's warps), a lane each: a lane adds a run of at
// most kShort elements alone, in element order; the runs longer than that the warp adds
// together, one after another (histogram_sorted_long_run). Whether a run is long depends
// only on its length, so each bin's sum is the same bits on every run of the same n.
template <int kBlock, int kPiece, long long kBins, typename Acc, typename T>
__device__ __forceinline__ void histogram_sorted_bins(const Acc* values, const long long* runs, const Acc* piece_sums,
                                                      T* sums) {
  constexpr int kWarps = kBlock / 32;
  constexpr long long kShort = 128;
  const int lane = threadIdx.x % 32;
  // The loop is warp-uniform: a warp's lanes take 32 consecutive bins.
  for (long long first = ((long long)blockIdx.x * kWarps + threadIdx.x / 32) * 32; first < kBins;
       first += (long long)gridDim.x * kWarps * 32) {
    const long long b = first + lane;
    long long start = 0, end = 0;
    if (b < kBins) {
      start = runs[2 * b];
      end = runs[2 * b + 1];
    }
    const bool is_long = end - start > kShort;
    Acc sum = Acc(0);
    if (!is_long)
      for (long long i = start; i < end; ++i) sum += values[i];
    for (unsigned long_lanes = __ballot_sync(0xffffffffu, is_long); long_lanes != 0u; long_lanes &= long_lanes - 1u) {
      const int l = __ffs((int)long_lanes) - 1;
      const Acc run = histogram_sorted_long_run<kPiece>(values, piece_sums, shfl_idx(start, l), shfl_idx(end, l), lane);
      if (lane == l) sum = run;
    }
    if (b < kBins) sums[b] = (T)sum;
  }
}

}  // namespace ff
