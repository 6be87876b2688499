// Included first (g++ -include) in every kernel the CPU emulator compiles: it makes
// fuseflow's generated CUDA ordinary C++. Each CUDA thread runs as a fiber of the
// emulator (cuda_emulator.cpp); the blocks of a launch run one after another, so
// __shared__ variables are function statics (one copy, reused by the next block), and
// every synchronising intrinsic (barriers, warp shuffles, votes) is a call into the
// emulator through the hook table it binds after loading the kernel.
//
// What this models: the kernel's logic, indexing, barriers and warp-synchronous steps,
// with blocks in launch order. What it does not: timing, concurrency between blocks, the
// memory model (every access is immediately visible), the hardware's limits.
#pragma once

#include <math.h>
#include <stdio.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

namespace ff_emu {

// The dynamic shared memory a launch may ask for (the opt-in maximum the emulator
// reports); a kernel's extern __shared__ array is a static array of this size.
constexpr unsigned kMaxDynamicSharedBytes = 227 * 1024;

struct uint3_ {
  unsigned x, y, z;
};

// The emulator's side, bound by ff_emu_bind when the kernel's library is loaded.
struct Hooks {
  uint3_ const* const* thread_idx;  // the running fiber's threadIdx
  const uint3_* block_idx;
  const uint3_* block_dim;
  const uint3_* grid_dim;
  void (*sync_block)();
  void (*sync_warp)();
  // Every lane of the warp offers `value` and gets lane `source`'s (its own when
  // `source` is outside the warp).
  unsigned (*shuffle)(unsigned value, int source);
  // Every lane offers `predicate` and gets the warp's ballot.
  unsigned (*ballot)(int predicate);
  // The thread waits for something other threads of the block do (an mbarrier's phase):
  // it yields, and runs again after every other thread has had its turn.
  void (*spin)();
  // Every lane offers `value` and gets the mask of the lanes that offered the same word.
  unsigned (*match)(unsigned value);
};
inline const Hooks* hooks = nullptr;

inline unsigned lane() { return (*hooks->thread_idx)->x % 32u; }

template <class T>
inline T shuffle_any(T value, int source) {
  static_assert(sizeof(T) % 4 == 0, "shuffled values are whole 32-bit words");
  unsigned words[sizeof(T) / 4];
  std::memcpy(words, &value, sizeof(T));
  for (unsigned& w : words) w = hooks->shuffle(w, source);
  std::memcpy(&value, words, sizeof(T));
  return value;
}

}  // namespace ff_emu

// CUDA's vector types.
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(8) int2 { int x, y; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };

#define threadIdx (**::ff_emu::hooks->thread_idx)
#define blockIdx (*::ff_emu::hooks->block_idx)
#define blockDim (*::ff_emu::hooks->block_dim)
#define gridDim (*::ff_emu::hooks->grid_dim)
#define warpSize 32

inline void __syncthreads() { ::ff_emu::hooks->sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::ff_emu::hooks->sync_warp(); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) {}

template <class T>
inline T __shfl_sync(unsigned, T value, int source, int = 32) {
  return ::ff_emu::shuffle_any(value, source);
}
template <class T>
inline T __shfl_up_sync(unsigned, T value, unsigned delta, int = 32) {
  return ::ff_emu::shuffle_any(value, static_cast<int>(::ff_emu::lane()) - static_cast<int>(delta));
}
template <class T>
inline T __shfl_down_sync(unsigned, T value, unsigned delta, int = 32) {
  return ::ff_emu::shuffle_any(value, static_cast<int>(::ff_emu::lane() + delta));
}
template <class T>
inline T __shfl_xor_sync(unsigned, T value, int mask, int = 32) {
  return ::ff_emu::shuffle_any(value, static_cast<int>(::ff_emu::lane()) ^ mask);
}
inline unsigned __ballot_sync(unsigned, int predicate) { return ::ff_emu::hooks->ballot(predicate); }
inline int __any_sync(unsigned, int predicate) { return ::ff_emu::hooks->ballot(predicate) != 0; }
inline int __all_sync(unsigned, int predicate) { return ::ff_emu::hooks->ballot(predicate) == 0xffffffffu; }
inline unsigned __activemask() { return 0xffffffffu; }
// The lanes holding the same value (4 or 8 bytes): one match per 32-bit word, masks ANDed.
template <class T>
inline unsigned __match_any_sync(unsigned, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync takes 32- or 64-bit values");
  unsigned words[sizeof(T) / 4];
  std::memcpy(words, &value, sizeof(T));
  unsigned mask = 0xffffffffu;
  for (unsigned w : words) mask &= ::ff_emu::hooks->match(w);
  return mask;
}

// Atomics: one OS thread runs every fiber, so a plain read-modify-write is atomic.
template <class T, class U>
inline T atomicAdd(T* p, U v) {
  T old = *p;
  *p = static_cast<T>(old + static_cast<T>(v));
  return old;
}
template <class T, class U>
inline T atomicSub(T* p, U v) {
  T old = *p;
  *p = static_cast<T>(old - static_cast<T>(v));
  return old;
}
template <class T, class U>
inline T atomicMax(T* p, U v) {
  T old = *p;
  if (static_cast<T>(v) > old) *p = static_cast<T>(v);
  return old;
}
template <class T, class U>
inline T atomicMin(T* p, U v) {
  T old = *p;
  if (static_cast<T>(v) < old) *p = static_cast<T>(v);
  return old;
}
template <class T, class U>
inline T atomicExch(T* p, U v) {
  T old = *p;
  *p = static_cast<T>(v);
  return old;
}
template <class T, class U, class V>
inline T atomicCAS(T* p, U compare, V v) {
  T old = *p;
  if (old == static_cast<T>(compare)) *p = static_cast<T>(v);
  return old;
}
template <class T, class U>
inline T atomicAnd(T* p, U v) {
  T old = *p;
  *p = old & static_cast<T>(v);
  return old;
}
template <class T, class U>
inline T atomicOr(T* p, U v) {
  T old = *p;
  *p = old | static_cast<T>(v);
  return old;
}
template <class T, class U>
inline T atomicXor(T* p, U v) {
  T old = *p;
  *p = old ^ static_cast<T>(v);
  return old;
}

// Cache-hinted loads and stores are plain accesses here.
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}

// Integer and bit intrinsics.
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((__int128)a * b >> 64); }
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }

// Reinterpretations.
template <class To, class From>
inline To ff_emu_bits(From v) {
  To out;
  std::memcpy(&out, &v, sizeof(To));
  return out;
}
inline int __float_as_int(float v) { return ff_emu_bits<int>(v); }
inline unsigned __float_as_uint(float v) { return ff_emu_bits<unsigned>(v); }
inline float __int_as_float(int v) { return ff_emu_bits<float>(v); }
inline float __uint_as_float(unsigned v) { return ff_emu_bits<float>(v); }
inline long long __double_as_longlong(double v) { return ff_emu_bits<long long>(v); }
inline double __longlong_as_double(long long v) { return ff_emu_bits<double>(v); }

// Fast-math spellings, computed exactly.
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// CUDA's min and max for mixed arithmetic types (the device headers use them unqualified).
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

// scan_pipeline.cuh's mbarriers and bulk copies, without PTX. A barrier's 64-bit word:
// bits 0-15 the arrivals a phase needs, 16-31 the arrivals still missing, 32-62 the bytes
// of copies still expected, 63 the parity of the phase in progress. A bulk copy is a
// memcpy that completes its bytes at once (every access is immediately visible here).
#define FF_HOST_BARRIERS 1
namespace ff {
namespace emu_barrier {
constexpr unsigned long long kCount = 0xffffull, kMissingShift = 16, kBytesShift = 32, kPhaseBit = 1ull << 63;
inline unsigned long long missing(unsigned long long b) { return (b >> kMissingShift) & 0xffffull; }
inline unsigned long long bytes(unsigned long long b) { return (b >> kBytesShift) & 0x7fffffffull; }
inline void settle(unsigned long long* bar, unsigned long long missing_now, unsigned long long bytes_now) {
  unsigned long long b = *bar;
  if (missing_now == 0 && bytes_now == 0) {  // the phase completes: the next one starts
    missing_now = b & kCount;
    b ^= kPhaseBit;
  }
  *bar = (b & (kPhaseBit | kCount)) | (missing_now << kMissingShift) | (bytes_now << kBytesShift);
}
}  // namespace emu_barrier
inline void barrier_init(unsigned long long* bar, unsigned arrivals) {
  *bar = static_cast<unsigned long long>(arrivals) | (static_cast<unsigned long long>(arrivals) << 16);
}
inline void barrier_arrive(unsigned long long* bar) {
  emu_barrier::settle(bar, emu_barrier::missing(*bar) - 1, emu_barrier::bytes(*bar));
}
inline void barrier_arrive_expect(unsigned long long* bar, unsigned bytes) {
  emu_barrier::settle(bar, emu_barrier::missing(*bar) - 1, emu_barrier::bytes(*bar) + bytes);
}
inline bool barrier_done(unsigned long long* bar, unsigned parity) {
  const bool done = (*bar >> 63) != parity;
  if (!done) ::ff_emu::hooks->spin();
  return done;
}
inline void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  std::memcpy(dst, src, bytes);
  emu_barrier::settle(bar, emu_barrier::missing(*bar), emu_barrier::bytes(*bar) - bytes);
}
inline void fence_barrier_init() {}
inline void fence_proxy_async() {}
}  // namespace ff

// Calls kernel f with the argument values cuLaunchKernel's `args` point to.
template <class... A, std::size_t... I>
inline void ff_emu_call(void (*f)(A...), void** args, std::index_sequence<I...>) {
  f(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}
template <class... A>
inline void ff_emu_invoke(void (*f)(A...), void** args) {
  ff_emu_call(f, args, std::index_sequence_for<A...>{});
}

extern "C" void ff_emu_bind(const ff_emu::Hooks* h) { ff_emu::hooks = h; }
