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

// The combination of every thread's `value` in thread order, in every thread. `scratch`
// holds kThreads / 32 + 1 values; the next call may reuse it at once (block_reduce's
// barriers order the slot this one reads before the next call writes it).
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T all_reduce(T value, Combine combine, T identity, T* scratch) {
  constexpr int kWarps = kThreads / kWarpSize;
  value = ff::block_reduce<kThreads>(value, combine, identity, scratch);
  if (threadIdx.x == 0) scratch[kWarps] = value;
  __syncthreads();
  return scratch[kWarps];
}

}  // namespace rows
}  // namespace ff
