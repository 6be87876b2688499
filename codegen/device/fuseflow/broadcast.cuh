// fuseflow device helper library: the map of the general per-segment broadcast (codegen/src/
// strategies/broadcast.cpp), where each element reads its segment's results.
//
// Embedded into the fuseflow binary at build time and handed to NVRTC as the header
// <fuseflow/broadcast.cuh>. Each warp takes 32 x kItems consecutive elements per step (lane
// l the elements l, l + 32, ...: coalesced loads and stores); a thread finds its first
// element's segment by a binary search over the offsets and then walks forward with its
// elements (ff::rows::segment_from: one load of the next offset per element inside a
// segment, a gallop over empty and short ones). A search per thread rather than a pass
// writing each element's segment id: the ids would be 4 to 8 more bytes per element written
// and read again, where the search reads the offsets, mostly from the cache.
#pragma once

#include <fuseflow/rows.cuh>

namespace ff {
namespace broadcast {

// Every element must be in a segment (first offset 0, last offset n): else the offsets are
// flagged (one thread of the grid checks) and the run reports them.
template <typename Offset>
__device__ __forceinline__ void check_offsets(const Offset* __restrict__ off, long long segments, long long n,
                                              unsigned int* __restrict__ invalid) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    if (segments < 1 || (long long)off[0] != 0 || (long long)off[segments] != n) *invalid = 1u;
}

// Calls f(i, s) for every element i < n with its segment s over `segments` segments given
// by `off` (segments + 1 offsets), grid-strided, kItems elements per thread per step, 32
// apart. The grid is made of blocks of kBlock threads.
template <int kBlock, int kItems, typename Offset, typename F>
__device__ __forceinline__ void for_each_element(const Offset* __restrict__ off, long long segments, long long n,
                                                 F&& f) {
  const int lane = threadIdx.x % 32;
  for (long long base = ((long long)blockIdx.x * kBlock + threadIdx.x - lane) * kItems; base < n;
       base += (long long)gridDim.x * kBlock * kItems) {
    // The segment of this thread's first element, then forward with its elements.
    long long s = ff::rows::segment_of(off, segments, base + lane);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const long long i = base + k * 32 + lane;
      if (i < n) {
        s = ff::rows::segment_from(off, segments, s, i);
        f(i, s);
      }
    }
  }
}

}  // namespace broadcast
}  // namespace ff
