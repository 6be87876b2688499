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

// The same sum as warp_bin_sum, from the lanes' bins in registers: `peers` is the mask of the
// lanes holding this lane's bin (__match_any_sync), `counted` whether this lane's bin is kept.
// Returns whether this lane is the lowest of its peers, and then `sum`, the peers' weights
// added in lane order (this lane's first). Every lane must call it (the loop is
// warp-uniform: one shuffle per peer of the largest group, usually 0 or 1 for random bins).
template <typename Acc>
__device__ __forceinline__ bool warp_peers_sum(unsigned peers, int lane, bool counted, Acc w, Acc& sum) {
  const bool lowest = (int)__ffs((int)peers) - 1 == lane;
  unsigned rest = lowest && counted ? peers & (peers - 1u) : 0u;  // the peers above this lane
  sum = w;
  while (__any_sync(0xffffffffu, rest != 0u)) {
    const int from = rest != 0u ? __ffs((int)rest) - 1 : lane;
    const Acc v = __shfl_sync(0xffffffffu, w, from);
    if (rest != 0u) {
      sum += v;
      rest &= rest - 1u;
    }
  }
  return lowest && counted;
}

// "weighted": sums of a weight per bin, the same bits on every run of the same n and grid,
// float sums included (no float atomics). Every warp owns a private copy of the sums in
// shared memory, which only it writes: a warp matches its 32 lanes' bins (__match_any_sync),
// and for each bin among them the lowest lane holding it adds the weights of the lanes
// holding it, in lane order, gathered by shuffles (warp_peers_sum), into the warp's copy. So every copy adds in a fixed order: its elements in
// the order the warp visits them (a fixed grid stride), each step's peers in lane order.
// The block then sums its warps' copies in warp order into its row of `partials` (grid x
// kBins), and the last block to finish sums the rows in block order into `sums`. Acc is the
// type summed in (an integer weight's unsigned twin, so sums wrap without overflow).
template <int kBlock, long long kBins, typename Acc, typename BinOf, typename WeightOf, typename T, typename... In>
__device__ __forceinline__ void histogram_weighted(long long n, BinOf bin_of, WeightOf weight_of, T* sums,
                                                   Acc* partials, unsigned* ticket, const In*... in) {
  static_assert(kBins < (1LL << 31), "bins are matched as int");
  constexpr int kWarps = kBlock / 32;
  __shared__ Acc warp_sums[kWarps * kBins];
  for (long long k = threadIdx.x; k < kWarps * kBins; k += kBlock) warp_sums[k] = Acc(0);
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc* mine = warp_sums + warp * kBins;
  // A warp's steps start at the same element for all its lanes: the loop is warp-uniform.
  for (long long base = (long long)blockIdx.x * kBlock + warp * 32; base < n; base += (long long)gridDim.x * kBlock) {
    const long long i = base + lane;
    int b = -1;  // dropped
    Acc w = Acc(0);
    if (i < n) {
      const long long bin = bin_of(in[i]..., i);
      if ((unsigned long long)bin < (unsigned long long)kBins) {
        b = (int)bin;
        w = (Acc)weight_of(in[i]..., i);
      }
    }
    Acc sum;
    if (warp_peers_sum(__match_any_sync(0xffffffffu, b), lane, b >= 0, w, sum)) mine[b] += sum;
    __syncwarp();  // this step's adds are seen by the lanes that add to the same bins next
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

// The fixed-order pass of the "weighted lanes" histogram (below). Thread t of the grid
// (T threads in all) takes the vectors of kVec consecutive elements v = t, t + T, t + 2T, ...
// in that order, then, if t < n % kVec, the element n / kVec * kVec + t: visit(i, x...) for
// each, in increasing i. Where every input is aligned to a whole vector a vector is one
// load, else kVec element loads: the same elements in the same order either way, so sums
// kept per thread do not depend on the inputs' alignment. kUnroll vectors per input are
// loaded together, and the next kUnroll are loaded before the current ones are visited.
template <typename X, int kVec, int kUnroll>
struct VecBatch {
  Vec<X, kVec> v[kUnroll];
};

// A batch of every input (a small tuple: Held<VecBatch<In>...>), applied to a visitor.
template <typename... B>
struct Held;
template <>
struct Held<> {
  template <typename F, typename... A>
  __device__ __forceinline__ void apply(F& f, const A&... a) const { f(a...); }
};
template <typename H, typename... R>
struct Held<H, R...> {
  H head;
  Held<R...> rest;
  template <typename F, typename... A>
  __device__ __forceinline__ void apply(F& f, const A&... a) const { rest.apply(f, a..., head); }
};

// load_vec as whole 16-, 8- or 4-byte words through the read-only path (a struct copy may
// be split into element loads).
template <int kN, typename T>
__device__ __forceinline__ Vec<T, kN> load_vec_words(const T* p) {
  using V = Vec<T, kN>;
  V out;
  if constexpr (sizeof(V) == 16 && alignof(V) == 16) {
    const uint4 word = __ldg(reinterpret_cast<const uint4*>(p));
    memcpy(&out, &word, sizeof(V));
  } else if constexpr (sizeof(V) == 8 && alignof(V) == 8) {
    const uint2 word = __ldg(reinterpret_cast<const uint2*>(p));
    memcpy(&out, &word, sizeof(V));
  } else {
    out = load_vec<kN>(p);
  }
  return out;
}

template <int kVec, int kUnroll, bool kAligned>
__device__ __forceinline__ Held<> load_batches(long long, long long) { return {}; }
template <int kVec, int kUnroll, bool kAligned, typename X, typename... R>
__device__ __forceinline__ Held<VecBatch<X, kVec, kUnroll>, VecBatch<R, kVec, kUnroll>...> load_batches(
    long long v, long long stride, const X* x, const R*... rest) {
  VecBatch<X, kVec, kUnroll> b;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const X* p = x + (v + u * stride) * kVec;
    if constexpr (kAligned) {
      b.v[u] = load_vec_words<kVec>(p);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) b.v[u].v[k] = p[k];
    }
  }
  return {b, load_batches<kVec, kUnroll, kAligned>(v, stride, rest...)};
}

template <int kBlock, int kVec, int kUnroll, bool kAligned, typename Visit, typename... In>
__device__ __forceinline__ void for_each_in_order_loads(long long n, Visit& visit, const In*... in) {
  const long long threads = (long long)gridDim.x * kBlock;
  const long long vectors = n / kVec;
  long long v = (long long)blockIdx.x * kBlock + threadIdx.x;
  if (v + (kUnroll - 1) * threads < vectors) {
    auto current = load_batches<kVec, kUnroll, kAligned>(v, threads, in...);
    for (;;) {
      const long long next_v = v + kUnroll * threads;
      const bool more = next_v + (kUnroll - 1) * threads < vectors;
      auto next = current;
      if (more) next = load_batches<kVec, kUnroll, kAligned>(next_v, threads, in...);
      auto each = [&](const VecBatch<In, kVec, kUnroll>&... b) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int k = 0; k < kVec; ++k) visit((v + u * threads) * kVec + k, b.v[u].v[k]...);
      };
      current.apply(each);
      v = next_v;
      if (!more) break;
      current = next;
    }
  }
  for (; v < vectors; v += threads) {  // fewer than kUnroll vectors left
    auto each = [&](const VecBatch<In, kVec, 1>&... b) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) visit(v * kVec + k, b.v[0].v[k]...);
    };
    load_batches<kVec, 1, kAligned>(v, threads, in...).apply(each);
  }
  const long long tail = vectors * kVec + (long long)blockIdx.x * kBlock + threadIdx.x;
  if (tail < n) visit(tail, in[tail]...);  // n - vectors * kVec < kVec: threads 0 .. n % kVec - 1
}

template <int kBlock, int kVec, int kUnroll, typename Visit, typename... In>
__device__ __forceinline__ void for_each_in_order(long long n, Visit visit, const In*... in) {
  if ((ff::misalignment<kVec>(in) | ... | 0ull) == 0)
    for_each_in_order_loads<kBlock, kVec, kUnroll, true>(n, visit, in...);
  else
    for_each_in_order_loads<kBlock, kVec, kUnroll, false>(n, visit, in...);
}

// "weighted lanes" (few bins: kBins sums per thread fit in shared memory), the same bits on
// every run of the same n and grid, float sums included, with no atomics at all. Every
// thread owns a private column of kBins sums in dynamic shared memory (`lane_sums`, bin b of
// thread t at b * kBlock + t: the 32 lanes of a warp always touch 32 different banks, so
// an element costs one conflict-free shared load and store) that only it writes, adding its
// elements in the fixed order of for_each_in_order. The block then sums each bin's kBlock
// columns in a fixed order (warp w takes bins w, w + kWarps, ...: lane l adds threads l,
// l + 32, ... in order, then the lanes in a shuffle tree) into its row of `partials`
// (grid x kBins), and the last block to finish sums the rows in block order into `sums`.
// Acc as for histogram_weighted.
template <int kBlock, int kVec, int kUnroll, long long kBins, typename Acc, typename BinOf, typename WeightOf,
          typename T, typename... In>
__device__ __forceinline__ void histogram_weighted_lanes(long long n, BinOf bin_of, WeightOf weight_of, T* sums,
                                                         Acc* partials, unsigned* ticket, Acc* lane_sums,
                                                         const In*... in) {
  static_assert(kBlock % 32 == 0, "whole warps");
  static_assert(kBins * kBlock < (1LL << 31), "lane sums are indexed by int");
  constexpr int kWarps = kBlock / 32;
  Acc* mine = lane_sums + threadIdx.x;
  // Each thread zeroes its own column: no barrier before its adds.
#pragma unroll 16
  for (int b = 0; b < (int)kBins; ++b) mine[b * kBlock] = Acc(0);
  const auto add = [&](long long i, const In&... x) {
    const long long b = bin_of(x..., i);
    if ((unsigned long long)b < (unsigned long long)kBins) mine[(int)b * kBlock] += weight_of(x..., i);
  };
  for_each_in_order<kBlock, kVec, kUnroll>(n, add, in...);
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int b = warp; b < (int)kBins; b += kWarps) {
    const Acc* column = lane_sums + b * kBlock;
    Acc s = column[lane];
#pragma unroll
    for (int t = lane + 32; t < kBlock; t += 32) s += column[t];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) partials[(long long)blockIdx.x * kBins + b] = s;
  }
  if (take_last_block_ticket(ticket)) {
    for (long long b = threadIdx.x; b < kBins; b += kBlock) {
      Acc s = Acc(0);
#pragma unroll 8
      for (unsigned k = 0; k < gridDim.x; ++k) s += load_global_coherent(partials + (long long)k * kBins + b);
      sums[b] = (T)s;
    }
  }
}

}  // namespace ff
