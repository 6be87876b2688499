// fuseflow device helper library: the stencil map, element-wise outputs that read
// neighbours (ff::shift): `x - shift(x, -1, 0)` at copy speed, and stencils of several
// shifts reading x once per warp step.
//
// Each warp step is kUnroll chunks of 32 * kVec consecutive elements, lane l holding the
// kVec elements of vector l of each chunk: kUnroll 16-byte loads per input per thread,
// all issued before any is used (enough bytes in flight to cover the memory's latency),
// and the few lanes of the chunks before and after the step that the shifts reach (the
// halo). A shift's neighbour x[i + k] is then in this thread's registers, or in another
// lane's (a warp shuffle of this chunk's vector, or of the chunk before or after): no
// memory read at the warp's edges. Shifts of kStencilShuffleLanes vectors or more read
// memory (the cache); the fill outside [0, n). Outputs are 16-byte streaming stores.
// Pointers not aligned to 16 bytes take an element-wise loop instead.
//
// Layers: thread (a vector's load and store), warp (a neighbour from registers and
// shuffles), agent (the grid-strided warp steps, ff::stencil::map). The code generator
// (codegen/src/strategies/map_stencil.cpp) writes the fused expressions of one element
// and the one call of ff::stencil::map.
#pragma once

#include <fuseflow/collectives.cuh>
#include <fuseflow/shared_constants.cuh>

namespace ff {
namespace stencil {

using fuseflow::shared::kStencilShuffleLanes;
using fuseflow::shared::kStencilVectorBytes;
using fuseflow::shared::stencil_lanes_away;

// A compile-time element number: element E of a vector, so that register arrays are
// indexed by constants and a shift's lanes and slot are known when compiling.
template <int E>
struct Element {
  static constexpr int value = E;
};

// f(Element<0>{}), ..., f(Element<kN - 1>{}), in order.
template <int kN, typename F>
__device__ __forceinline__ void for_each_element(F& f) {
  if constexpr (kN > 0) {
    for_each_element<kN - 1>(f);
    f(Element<kN - 1>{});
  }
}

// ---- thread: vectors ------------------------------------------------------------------

// Vector v of p (elements v * kVec ..), those outside [0, n) zero.
template <int kVec, typename T>
__device__ __forceinline__ Vec<T, kVec> load_vector(const T* __restrict__ p, long long v, long long n) {
  const long long i = v * kVec;
  if (i >= 0 && i + kVec <= n) return *reinterpret_cast<const Vec<T, kVec>*>(p + i);
  Vec<T, kVec> x;
  for (int k = 0; k < kVec; ++k) x.v[k] = i + k >= 0 && i + k < n ? p[i + k] : T(0);
  return x;
}

// Stores vector v of p, its elements inside [0, n): one 16-byte streaming store (written
// once, not kept in the caches) when whole.
template <int kVec, typename T>
__device__ __forceinline__ void store_vector(T* __restrict__ p, const Vec<T, kVec>& y, long long v, long long n) {
  const long long i = v * kVec;
  if (i + kVec <= n) {
    float4 bits;
    memcpy(&bits, &y, sizeof bits);
    __stcs(reinterpret_cast<float4*>(p + i), bits);
  } else {
    for (int k = 0; k < kVec && i + k < n; ++k) p[i + k] = y.v[k];
  }
}

// An input of the stencil: a thread's kUnroll vectors of a warp step (x[u + 1]: chunk u)
// and, for the lanes whose neighbours the shifts reach, the halo: x[0] on the last
// kBefore lanes (the chunk before the step), x[kUnroll + 1] on the first kAfter lanes
// (the chunk after). `table` is the same array read element by element (table_n its
// length): the shifts that reach beyond the warp read it.
template <typename T, int kVec, int kUnroll, int kBefore, int kAfter>
struct Input {
  using Value = T;
  static constexpr int kElements = kVec;
  static constexpr int kHaloBefore = kBefore;
  static constexpr int kHaloAfter = kAfter;
  static_assert(kVec * sizeof(T) == kStencilVectorBytes, "a vector is one 16-byte load");
  const T* in;
  const T* table = nullptr;  // none where no shift reads the input
  long long table_n = 0;
  Vec<T, kVec> x[kUnroll + 2];

  __device__ __forceinline__ unsigned long long address() const { return (unsigned long long)in; }
  // The step's loads: every chunk's vector, then the halo lanes'.
  __device__ __forceinline__ void load(long long w, int lane, long long n) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u + 1] = load_vector<kVec>(in, w + 32 * u + lane, n);
    if constexpr (kBefore > 0)
      if (lane >= 32 - kBefore) x[0] = load_vector<kVec>(in, w - 32 + lane, n);
    if constexpr (kAfter > 0)
      if (lane < kAfter) x[kUnroll + 1] = load_vector<kVec>(in, w + 32 * kUnroll + lane, n);
  }
  __device__ __forceinline__ void store(long long, long long) const {}
  // Element E of this thread's vector of chunk u.
  template <int E>
  __device__ __forceinline__ T at(Element<E>, int u) const {
    return x[u + 1].v[E];
  }
};

// An output of the stencil: the vector of the chunk being computed, stored once all its
// elements are set.
template <typename T, int kVec>
struct Output {
  static_assert(kVec * sizeof(T) == kStencilVectorBytes, "a vector is one 16-byte store");
  T* out;
  Vec<T, kVec> y;

  __device__ __forceinline__ unsigned long long address() const { return (unsigned long long)out; }
  __device__ __forceinline__ void load(long long, int, long long) {}
  __device__ __forceinline__ void store(long long v, long long n) const { store_vector<kVec>(out, y, v, n); }
  template <int E>
  __device__ __forceinline__ void set(Element<E>, const T value) {
    y.v[E] = value;
  }
};

// ---- warp: neighbours -----------------------------------------------------------------

// x[i + K] for element E of chunk u (i its index), or `fill` outside [0, x.table_n).
// The neighbour is element (E + K) mod kVec of the vector d = floor((E + K) / kVec) lanes
// away: this thread's own (d = 0); another lane's of this chunk, or for the lanes at the
// warp's edge the chunk before (after), which for u = 0 (kUnroll - 1) is the halo: two
// shuffles and a select; |d| >= kStencilShuffleLanes: memory. Every lane calls it (the
// steps are warp-uniform), so the shuffles see the whole warp.
template <long long K, typename In, int E>
__device__ __forceinline__ typename In::Value shifted(const In& x, Element<E>, int u, long long i,
                                                      const typename In::Value fill) {
  using T = typename In::Value;
  constexpr int kVec = In::kElements;
  constexpr long long d = stencil_lanes_away(E, K, kVec);
  constexpr int slot = static_cast<int>(E + K - d * kVec);
  const long long at = i + K;
  const bool inside = at >= 0 && at < x.table_n;
  if constexpr (d == 0) {
    return inside ? x.x[u + 1].v[slot] : fill;
  } else if constexpr (d <= -kStencilShuffleLanes || d >= kStencilShuffleLanes) {
    return inside ? x.table[at] : fill;
  } else {
    const int lane = threadIdx.x % 32;
    constexpr int lanes = d < 0 ? static_cast<int>(-d) : static_cast<int>(d);
    if constexpr (d < 0) {
      static_assert(lanes <= In::kHaloBefore, "the halo before the step covers the shift");
      const T nb = __shfl_up_sync(0xffffffffu, x.x[u + 1].v[slot], lanes);
      const T edge = __shfl_sync(0xffffffffu, x.x[u].v[slot], (lane - lanes) & 31);
      return inside ? (lane < lanes ? edge : nb) : fill;
    } else {
      static_assert(lanes <= In::kHaloAfter, "the halo after the step covers the shift");
      const T nb = __shfl_down_sync(0xffffffffu, x.x[u + 1].v[slot], lanes);
      const T edge = __shfl_sync(0xffffffffu, x.x[u + 2].v[slot], (lane + lanes) & 31);
      return inside ? (lane >= 32 - lanes ? edge : nb) : fill;
    }
  }
}

// ---- agent: the grid-strided warp steps -----------------------------------------------

// The stencil map over n elements. `streams` are the Inputs and Outputs. With every
// stream aligned to 16 bytes: warp-uniform steps of kUnroll chunks (chunk u holds the
// warp's vectors w + 32u .. w + 32u + 31, lane l's vector w + 32u + l): the inputs' loads
// (all before any use), then per chunk vector_element(e, u, i) for its kVec elements
// (Element<0> .. Element<kVec - 1>; it reads the Inputs, sets the Outputs) and the
// Outputs' stores. Otherwise scalar_element(i) for every element, grid-strided.
template <int kBlock, int kVec, int kUnroll, typename VectorElement, typename ScalarElement, typename... Streams>
__device__ __forceinline__ void map(const long long n, VectorElement vector_element, ScalarElement scalar_element,
                                    Streams&... streams) {
  const int lane = threadIdx.x % 32;
  if ((streams.address() | ...) % kStencilVectorBytes == 0) {
    const long long vectors = (n + kVec - 1) / kVec;
    for (long long w = ((long long)blockIdx.x * kBlock + threadIdx.x - lane) * kUnroll; w < vectors;
         w += (long long)gridDim.x * kBlock * kUnroll) {
      (streams.load(w, lane, n), ...);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const long long i0 = (w + 32 * u + lane) * kVec;
        const auto element = [&](auto e) { vector_element(e, u, i0 + e.value); };
        for_each_element<kVec>(element);
        (streams.store(w + 32 * u + lane, n), ...);
      }
    }
  } else {
    for (long long i = (long long)blockIdx.x * kBlock + threadIdx.x; i < n; i += (long long)gridDim.x * kBlock)
      scalar_element(i);
  }
}

}  // namespace stencil
}  // namespace ff
