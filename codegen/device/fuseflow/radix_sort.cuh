// fuseflow device helper library: stable LSD radix sort of 32-bit keys (ff::sort,
// sort_by_key without a bin count).
//
// A key is sorted by its ordered bits: an unsigned word whose unsigned order is the key's
// order (u32 as it is; i32 with the sign bit flipped; f32 with the sign bit flipped when
// the sign is clear and every bit flipped when it is set, so -0.0 < +0.0, and every NaN
// mapped to the largest word, after +inf, whatever its sign or payload). The bits
// [begin, end) of that word are sorted by passes over digits of at most 8 bits, least
// significant first; each pass is a stable counting sort by its digit (counting_sort.cuh's
// *_by kernels with RadixDigit as their bins), so after the pass over bits [s, s + w) the
// elements are in order of bits [begin, s + w), equal ones in input order. The passes move
// the keys as they are (not their ordered bits) and the values alike between two scratch
// arrays, the last into the outputs.
#pragma once

#include <fuseflow/counting_sort.cuh>

namespace ff {
namespace sort {

__device__ __forceinline__ unsigned ordered_bits(const unsigned key) { return key; }
__device__ __forceinline__ unsigned ordered_bits(const int key) { return static_cast<unsigned>(key) ^ 0x80000000u; }
__device__ __forceinline__ unsigned ordered_bits(const float key) {
  const unsigned b = __float_as_uint(key);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // a NaN: after +inf (0xff800000)
  return (b & 0x80000000u) ? ~b : (b ^ 0x80000000u);
}

// The bins of one pass: digit (ordered_bits(key) >> kShift) mod 2^kWidth.
template <int kShift, int kWidth>
struct RadixDigit {
  static_assert(kWidth >= 1 && kWidth <= 8 && kShift >= 0 && kShift + kWidth <= 32, "a digit of 1 to 8 key bits");
  static constexpr int kCount = 1 << kWidth;
  template <typename Key>
  __device__ __forceinline__ int operator()(const Key key) const {
    return static_cast<int>((ordered_bits(key) >> kShift) & static_cast<unsigned>(kCount - 1));
  }
};

}  // namespace sort
}  // namespace ff
