// fuseflow device helper library: warp and block collectives.
//
// Embedded into the fuseflow binary at build time and handed to NVRTC as the header
// <fuseflow/collectives.cuh>; nothing is read from disk at run time. Layered as in CUB:
// block collectives are built from warp collectives.
//
// Every combine here keeps element order: the left operand always covers lower indices.
// Commutative operators lose nothing by it, and non-commutative ones (maximum segment
// sum, matrix products, linear recurrences) stay correct.
#pragma once

namespace ff {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

// Moves any trivially copyable value through a warp shuffle one 32-bit word at a time,
// so tuples (plain structs) move as easily as floats; `shuffle` shuffles one word.
template <typename T, typename Shuffle>
__device__ __forceinline__ T shuffle_words(const T& value, Shuffle shuffle) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  unsigned words[kWords];
  memcpy(words, &value, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) words[k] = shuffle(words[k]);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// The value of the lane `delta` above (down), `delta` below (up), or of lane `lane` (idx).
template <typename T>
__device__ __forceinline__ T shfl_down(const T& value, unsigned delta) {
  return shuffle_words(value, [delta](unsigned w) { return __shfl_down_sync(kFullMask, w, delta); });
}
template <typename T>
__device__ __forceinline__ T shfl_up(const T& value, unsigned delta) {
  return shuffle_words(value, [delta](unsigned w) { return __shfl_up_sync(kFullMask, w, delta); });
}
template <typename T>
__device__ __forceinline__ T shfl_idx(const T& value, int lane) {
  return shuffle_words(value, [lane](unsigned w) { return __shfl_sync(kFullMask, w, lane); });
}

// Stores a value that is written once and not read again by this kernel (__stcs: evict
// first, so streams of results do not push the inputs' lines out of the caches). Plain
// structs go word by word; values of other sizes or alignments take a plain store.
template <typename T>
__device__ __forceinline__ void store_streaming(T* p, const T& value) {
  if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    unsigned words[sizeof(T) / 4];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / 4); ++k) __stcs(reinterpret_cast<unsigned*>(p) + k, words[k]);
  } else {
    *p = value;
  }
}

// Reduces a full warp in lane order; lane 0 ends with x0 . x1 . ... . x31.
// After the step with offset d, lanes that are multiples of 2d hold the combination of
// the 2d consecutive lanes starting at them, so operands are always adjacent ranges.
template <typename T, typename Combine>
__device__ __forceinline__ T warp_reduce(T value, Combine combine) {
#pragma unroll
  for (unsigned d = 1; d < kWarpSize; d *= 2) {
    T other = shfl_down(value, d);
    value = combine(value, other);
  }
  return value;
}

// Reduces a block of kThreads threads in thread order; the result is valid in thread 0.
// `scratch` holds kThreads / 32 values. Ends with a barrier so scratch can be reused.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T block_reduce(T value, Combine combine, T identity, T* scratch) {
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  value = warp_reduce(value, combine);
  if (kWarps == 1) return value;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kWarps ? scratch[lane] : identity;
    value = warp_reduce(value, combine);
  }
  __syncthreads();
  return value;
}

// Ticket for "the last block to finish combines the partials". Each block publishes its
// partial, fences so the partial is visible device-wide before the ticket is taken, and
// takes a ticket; the block that draws gridDim.x - 1 knows every partial is written.
// That block resets the counter to zero, so the next launch needs no memset.
__device__ __forceinline__ bool take_last_block_ticket(unsigned* ticket) {
  __shared__ bool is_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned drawn = atomicAdd(ticket, 1u);
    is_last = drawn == gridDim.x - 1;
    if (is_last) *ticket = 0u;
  }
  __syncthreads();
  if (is_last) __threadfence();  // order the partials' reads after the ticket
  return is_last;
}

// Reads a value other blocks wrote during this launch, bypassing the (incoherent) L1.
template <typename T>
__device__ __forceinline__ T load_global_coherent(const T* p) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  T out;
  if (sizeof(T) % 4 == 0) {
    unsigned words[kWords];
#pragma unroll
    for (int k = 0; k < kWords; ++k) words[k] = __ldcg(reinterpret_cast<const unsigned*>(p) + k);
    memcpy(&out, words, sizeof(T));
  } else {
    unsigned char bytes[sizeof(T)];
#pragma unroll
    for (int k = 0; k < (int)sizeof(T); ++k) bytes[k] = __ldcg(reinterpret_cast<const unsigned char*>(p) + k);
    memcpy(&out, bytes, sizeof(T));
  }
  return out;
}

// Writes a value for load_global_coherent, word by word, its padding included: a struct
// copy writes only the fields, and a reader of whole words would then read padding bytes
// nobody wrote (a tuple (i32, i64) has 4; compute-sanitizer's initcheck reports them).
template <typename T>
__device__ __forceinline__ void store_global_words(T* p, const T& value) {
  if (sizeof(T) % 4 == 0) {
    constexpr int kWords = (sizeof(T) + 3) / 4;
    unsigned words[kWords] = {};
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int k = 0; k < kWords; ++k) reinterpret_cast<unsigned*>(p)[k] = words[k];
  } else {
    *p = value;
  }
}

// Combines count partials in index order with a block: thread t folds a contiguous
// chunk, then the block reduces the per-thread values in thread order.
template <int kThreads, typename T, typename Combine>
__device__ __forceinline__ T combine_partials(const T* partials, unsigned count, Combine combine,
                                              T identity, T* scratch) {
  const unsigned per_thread = (count + kThreads - 1) / kThreads;
  const unsigned begin = threadIdx.x * per_thread;
  const unsigned end = min(begin + per_thread, count);
  T value = identity;
  for (unsigned i = begin; i < end; ++i) value = combine(value, load_global_coherent(partials + i));
  return block_reduce<kThreads>(value, combine, identity, scratch);
}

}  // namespace ff

namespace ff {

// kN consecutive elements loaded with one instruction (16 bytes wide for kN * sizeof(T)
// == 16), when the address is aligned to the whole vector. A size that is not a power of
// two (a 24-byte tuple) is aligned to its largest power-of-two divisor (alignas needs one).
template <typename T, int kN>
struct alignas((sizeof(T) * kN) & (~(sizeof(T) * kN) + 1)) Vec {
  T v[kN];
};

template <int kN, typename T>
__device__ __forceinline__ Vec<T, kN> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, kN>*>(p);
}

// Non-zero when p is not aligned to a whole vector of kN elements.
template <int kN, typename T>
__device__ __forceinline__ unsigned long long misalignment(const T* p) {
  return reinterpret_cast<unsigned long long>(p) % (sizeof(T) * kN);
}

// Calls f(Vec<In, kVec>...) with vector `at` of every input.
template <int kVec, typename F, typename... In>
__device__ __forceinline__ void with_vectors(long long at, F f, const In*... in) {
  f(ff::load_vec<kVec>(in + at * kVec)...);
}

// The grid-strided pass of a fixed grid over n elements of the inputs in... (the chunked
// reduce, the histogram): visit(k, i, x...) for every element i this thread takes, x...
// its inputs' elements, k its lane in a kVec-element vector (0 off the vector path), so a
// caller may keep one accumulator per lane. With kVec > 1 and every input aligned to a
// whole vector, a thread reads vectors (16 bytes for kVec * sizeof == 16) grid-strided,
// two in flight per input per iteration, then the last n % kVec elements one per
// thread; otherwise (a misaligned pointer is accepted too) element by element.
template <int kBlock, int kVec, typename Visit, typename... In>
__device__ __forceinline__ void for_each_strided(long long n, Visit visit, const In*... in) {
  const long long threads = (long long)gridDim.x * kBlock;
  const long long first = (long long)blockIdx.x * kBlock + threadIdx.x;
  const auto by_element = [&] {
    for (long long i = first; i < n; i += threads) visit(0, i, in[i]...);
  };
  if constexpr (kVec > 1) {
    // Vector loads need every input aligned to a whole vector. Any pointer is accepted:
    // a misaligned one takes the element-wise loop instead.
    if ((ff::misalignment<kVec>(in) | ...) == 0) {
      const long long vectors = n / kVec;
      long long v = first;
      // Two independent vector loads per input in flight per iteration.
      for (; v + threads < vectors; v += 2 * threads) {
        const long long v2 = v + threads;
        with_vectors<kVec>(v, [&](const Vec<In, kVec>&... a) {
          with_vectors<kVec>(v2, [&](const Vec<In, kVec>&... b) {
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
              visit(k, v * kVec + k, a.v[k]...);
              visit(k, v2 * kVec + k, b.v[k]...);
            }
          }, in...);
        }, in...);
      }
      if (v < vectors) {
        with_vectors<kVec>(v, [&](const Vec<In, kVec>&... c) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) visit(k, v * kVec + k, c.v[k]...);
        }, in...);
      }
      // The last n % kVec elements, one per thread.
      const long long tail = vectors * kVec + first;
      if (tail < n) visit(0, tail, in[tail]...);
    } else {
      by_element();
    }
  } else {
    by_element();
  }
}

}  // namespace ff
