// fuseflow device helper library: per-row programs (the rows strategy, codegen/src/
// strategies/rows.cpp).
//
// Embedded into the fuseflow binary at build time and handed to NVRTC as the header
// <fuseflow/rows.cuh>. A block takes one row of kColumns elements at a time and holds it in
// registers: thread t the kItems consecutive elements [t * kItems, t * kItems + kItems), so
// a thread's fold followed by the block's reduction in thread order combines the row in
// element order (non-commutative monoids stay correct), and a thread's elements are one or
// more 16-byte vectors when the row is aligned. Every per-row reduction is an all-reduce
// (each thread gets the row's result), so later reductions and the outputs read it from a
// register: the row is read from global memory once and written once.
#pragma once

#include <fuseflow/collectives.cuh>

namespace ff {
namespace rows {

// Elements per 16-byte vector of T (1 when T's size does not divide 16).
template <typename T>
struct VecWidth {
  static constexpr int value = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? int(16 / sizeof(T)) : 1;
};

// A compile-time flag for the per-row kernel's row program: Full<true> for a whole row of
// kColumns elements (no element checks), Full<false> for the short last row.
template <bool kFull>
struct Full {
  static constexpr bool value = kFull;
};

// Thread threadIdx.x's kItems elements of a row of `count` elements starting at `row`:
// elements past the row's end are T{} (the caller masks them). Vector loads when the
// thread's elements are all inside the row, kItems is a whole number of vectors and the
// address is aligned; element loads otherwise (the last row, an unaligned input).
template <int kItems, typename T>
__device__ __forceinline__ void load(T (&x)[kItems], const T* __restrict__ row, int count) {
  const int first = threadIdx.x * kItems;
  constexpr int kVec = VecWidth<T>::value;
  if constexpr (kVec > 1 && kItems % kVec == 0) {
    if (first + kItems <= count && ff::misalignment<kVec>(row + first) == 0) {
#pragma unroll
      for (int v = 0; v < kItems / kVec; ++v) {
        const ff::Vec<T, kVec> a = ff::load_vec<kVec>(row + first + v * kVec);
#pragma unroll
        for (int k = 0; k < kVec; ++k) x[v * kVec + k] = a.v[k];
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) x[k] = first + k < count ? row[first + k] : T{};
}

// Stores the thread's elements of the row that are inside it (vector stores as load).
template <int kItems, typename T>
__device__ __forceinline__ void store(T* __restrict__ row, const T (&y)[kItems], int count) {
  const int first = threadIdx.x * kItems;
  constexpr int kVec = VecWidth<T>::value;
  if constexpr (kVec > 1 && kItems % kVec == 0) {
    if (first + kItems <= count && ff::misalignment<kVec>(row + first) == 0) {
#pragma unroll
      for (int v = 0; v < kItems / kVec; ++v) {
        ff::Vec<T, kVec> a;
#pragma unroll
        for (int k = 0; k < kVec; ++k) a.v[k] = y[v * kVec + k];
        *reinterpret_cast<ff::Vec<T, kVec>*>(row + first + v * kVec) = a;
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (first + k < count) row[first + k] = y[k];
}

// e^d for f32 (the rows kernel's exp(a - row result), d <= 0 in softmax): 2^(d log2 e) by
// the SFU (ex2.approx.ftz), one multiply and one MUFU.EX2 where expf takes about ten
// instructions. Relative error about |d| 2^-24 + 2 ulps (under 4e-6 for |d| <= 60;
// rows_gpu_test's f32 softmax bound is 2e-5); results below FLT_MIN are 0 (expf's are
// subnormal). Hosts (the CPU emulator) compute the same rounded argument with exp2f.
__device__ __forceinline__ float exp_approx(const float d) {
  const float t = d * 1.44269504f;  // log2(e), rounded to f32
#ifdef __CUDA_ARCH__
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
#else
  const float r = exp2f(t);
  return r < 1.17549435e-38f ? 0.0f : r;  // flushed as ex2.approx.ftz flushes
#endif
}

// The combination of every thread's `value` in thread order, in every thread, after one
// barrier: each warp reduces itself by shuffles, lane 0 stores the warp's value, and after
// the barrier every warp folds the kThreads / 32 values in order itself (a short loop, or a
// shuffle reduction when there are more than 8). `scratch` holds 2 x kThreads / 32 values,
// used alternately by even and odd `parity` (the caller's row count): a call writes the
// half the call two rows before read, and the barrier of the call between them (the other
// half) has ordered those reads first; so one barrier per call, not three.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T all_reduce(T value, Combine combine, T identity, T* scratch, unsigned parity) {
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  value = ff::warp_reduce(value, combine);  // the warp's value, in lane 0
  if constexpr (kWarps == 1) {
    return ff::shfl_idx(value, 0);
  } else {
    T* slots = scratch + (parity & 1u) * kWarps;
    if (lane == 0) slots[threadIdx.x / kWarpSize] = value;
    __syncthreads();
    if constexpr (kWarps <= 8) {
      T all = slots[0];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) all = combine(all, slots[w]);
      return all;
    } else {
      T all = lane < kWarps ? slots[lane] : identity;
      all = ff::warp_reduce(all, combine);
      return ff::shfl_idx(all, 0);
    }
  }
}

// ---- Segments by offsets (the broadcast strategy, codegen/src/strategies/broadcast.cpp) ----
// Segment s is the elements [offsets[s], offsets[s + 1]); an element's segment is the
// last s < segments with offsets[s] <= i (empty segments before it are skipped). Offsets
// that decrease give some s in [0, segments) (never outside: the buffers read with it
// stay in bounds); the segmented reduction flags them.

// The segment of element i, searching forward from segment `from` (offsets[from] <= i):
// a gallop (1, 2, 4 ... segments ahead) then a binary search, so a thread walking its
// elements in order pays one load per element inside a segment and O(log gap) when it
// crosses segments, empty ones included.
template <typename O>
__device__ __forceinline__ long long segment_from(const O* __restrict__ offsets, const long long segments,
                                                  const long long from, const long long i) {
  if (segments <= 0) return 0;
  long long lo = from < 0 ? 0 : (from >= segments ? segments - 1 : from);
  long long step = 1, hi = lo + 1;
  while (hi < segments && (long long)offsets[hi] <= i) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  if (hi > segments) hi = segments;
  while (hi - lo > 1) {  // offsets[lo] <= i (or lo == from), and offsets[hi] > i or hi == segments
    const long long mid = lo + (hi - lo) / 2;
    if ((long long)offsets[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The segment of element i: a binary search over all the offsets.
template <typename O>
__device__ __forceinline__ long long segment_of(const O* __restrict__ offsets, const long long segments,
                                                const long long i) {
  if (segments <= 0) return 0;
  long long lo = 0, hi = segments;
  while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    if ((long long)offsets[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace rows
}  // namespace ff
