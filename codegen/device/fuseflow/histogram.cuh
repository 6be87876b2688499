// fuseflow device helper library: histograms.
//
// A bin outside [0, bins) is dropped: it is counted nowhere and written nowhere. Counts
// are integers, so atomics on them give the same result in any order: deterministic.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {

// A block's private histogram in shared memory: kCopies copies of kBins 32-bit counts.
// Warp w adds into copy w % kCopies, so the warps of a block rarely contend for one word;
// the copies are summed when the block merges into the global counts. A block counts
// fewer than 2^32 elements (a fixed grid of about a thousand blocks covers 2^42), so its
// private counts cannot wrap before the merge.
template <int kThreads, long long kBins, int kCopies>
struct SharedHistogram {
  unsigned* counts;  // kCopies * kBins words of shared memory

  __device__ __forceinline__ void clear() {
    for (int k = threadIdx.x; k < kCopies * kBins; k += kThreads) counts[k] = 0u;
  }
  __device__ __forceinline__ void add(long long bin) {
    if ((unsigned long long)bin < (unsigned long long)kBins)
      atomicAdd(&counts[(threadIdx.x / 32) % kCopies * kBins + bin], 1u);
  }
  // This block's count of bin b: its copies summed.
  __device__ __forceinline__ unsigned total(int b) const {
    unsigned c = 0u;
#pragma unroll
    for (int k = 0; k < kCopies; ++k) c += counts[k * kBins + b];
    return c;
  }
  // Adds this block's counts into `global` (u32 or u64), one atomic per non-zero bin.
  template <typename Count>
  __device__ __forceinline__ void merge_into(Count* global) const {
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
      const unsigned c = total(b);
      if (c != 0u) atomicAdd(global + b, (Count)c);
    }
  }
  // Writes this block's counts, zeros included, as column `column` of the bin-major
  // matrix [kBins x columns] (a counting sort's tile counts): no atomics, every entry once.
  __device__ __forceinline__ void store_column(unsigned* matrix, long long column, long long columns) const {
    for (int b = threadIdx.x; b < kBins; b += kThreads) matrix[b * columns + column] = total(b);
  }
};

// One element counted straight into the global counts (bins that do not fit in shared
// memory).
template <typename Count>
__device__ __forceinline__ void count_global(Count* global, long long bin, long long bins) {
  if ((unsigned long long)bin < (unsigned long long)bins) atomicAdd(global + bin, (Count)1);
}

// The histogram kernels. bin_of(x..., i) is the fused bin expression of element i (x...
// its inputs' elements); counts (u32 or u64) were zeroed before the launch. A fixed grid
// strides through the inputs with vector loads (ff::for_each_strided).

// "shared": every block keeps kCopies private copies of the counts in shared memory,
// adds with shared-memory atomics, then adds its non-zero bins into the global counts
// with one global atomic each.
template <int kBlock, int kVec, long long kBins, int kCopies, typename BinOf, typename Count, typename... In>
__device__ __forceinline__ void histogram_shared(long long n, BinOf bin_of, Count* counts, const In*... in) {
  __shared__ unsigned int private_counts[kCopies * kBins];
  SharedHistogram<kBlock, kBins, kCopies> hist{private_counts};
  hist.clear();
  __syncthreads();
  ff::for_each_strided<kBlock, kVec>(n, [&](int, long long i, const In&... x) { hist.add(bin_of(x..., i)); }, in...);
  __syncthreads();
  // One global atomic per non-zero bin of this block.
  hist.merge_into(counts);
}

// "global" (the counts do not fit in shared memory): every element is one global atomic.
template <int kBlock, int kVec, long long kBins, typename BinOf, typename Count, typename... In>
__device__ __forceinline__ void histogram_global(long long n, BinOf bin_of, Count* counts, const In*... in) {
  ff::for_each_strided<kBlock, kVec>(
      n, [&](int, long long i, const In&... x) { count_global(counts, bin_of(x..., i), kBins); }, in...);
}

// The lane of a warp that adds for its bin, from the warp's 32 staged bins and weights
// (`bins`, `weights`): whether this lane (holding bin b, weight w) is the lowest one holding
// b, and then `sum`, the weights of the lanes holding b added in lane order.
template <typename Bin, typename Acc>
__device__ __forceinline__ bool warp_bin_sum(const Bin* bins, const Acc* weights, int lane, Bin b, Acc w, Acc& sum) {
  for (int l = 0; l < lane; ++l)
    if (bins[l] == b) return false;
  sum = w;
  for (int l = lane + 1; l < 32; ++l)
    if (bins[l] == b) sum += weights[l];
  return true;
}

// "weighted": sums of a weight per bin, the same bits on every run of the same n and grid,
// float sums included (no float atomics). Every warp owns a private copy of the sums in
// shared memory, which only it writes: a warp stages its 32 (bin, weight) pairs, and for
// each bin among them the lowest lane holding it adds the weights of the lanes holding it,
// in lane order, into the warp's copy. So every copy adds in a fixed order: its elements in
// the order the warp visits them (a fixed grid stride), each step's peers in lane order.
// The block then sums its warps' copies in warp order into its row of `partials` (grid x
// kBins), and the last block to finish sums the rows in block order into `sums`. Acc is the
// type summed in (an integer weight's unsigned twin, so sums wrap without overflow).
template <int kBlock, long long kBins, typename Acc, typename BinOf, typename WeightOf, typename T, typename... In>
__device__ __forceinline__ void histogram_weighted(long long n, BinOf bin_of, WeightOf weight_of, T* sums,
                                                   Acc* partials, unsigned* ticket, const In*... in) {
  constexpr int kWarps = kBlock / 32;
  __shared__ Acc warp_sums[kWarps * kBins];
  __shared__ long long staged_bin[kBlock];
  __shared__ Acc staged_weight[kBlock];
  for (long long k = threadIdx.x; k < kWarps * kBins; k += kBlock) warp_sums[k] = Acc(0);
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc* mine = warp_sums + warp * kBins;
  long long* bins = staged_bin + warp * 32;
  Acc* weights = staged_weight + warp * 32;
  // A warp's steps start at the same element for all its lanes: the loop is warp-uniform.
  for (long long base = (long long)blockIdx.x * kBlock + warp * 32; base < n; base += (long long)gridDim.x * kBlock) {
    const long long i = base + lane;
    long long b = -1;
    Acc w = Acc(0);
    if (i < n) {
      b = bin_of(in[i]..., i);
      if ((unsigned long long)b < (unsigned long long)kBins) w = (Acc)weight_of(in[i]..., i);
      else b = -1;  // dropped
    }
    bins[lane] = b;
    weights[lane] = w;
    __syncwarp();
    Acc sum;
    if (b >= 0 && warp_bin_sum(bins, weights, lane, b, w, sum)) mine[b] += sum;
    __syncwarp();  // the staged pairs are read before the next step overwrites them
  }
  __syncthreads();
  for (long long b = threadIdx.x; b < kBins; b += kBlock) {
    Acc s = Acc(0);
#pragma unroll
    for (int k = 0; k < kWarps; ++k) s += warp_sums[k * kBins + b];
    partials[(long long)blockIdx.x * kBins + b] = s;
  }
  if (take_last_block_ticket(ticket)) {
    for (long long b = threadIdx.x; b < kBins; b += kBlock) {
      Acc s = Acc(0);
      for (unsigned k = 0; k < gridDim.x; ++k) s += load_global_coherent(partials + (long long)k * kBins + b);
      sums[b] = (T)s;
    }
  }
}

}  // namespace ff
