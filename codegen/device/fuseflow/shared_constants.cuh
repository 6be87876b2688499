// fuseflow device helper library: the constants host and device share.
//
// Plain C++ with no includes, so that three compilers read the same text: NVRTC (embedded
// like the other device headers: `#include <fuseflow/shared_constants.cuh>`), the host
// (codegen/include/fuseflow/codegen/plan.hpp includes it: the planner sizes the look-back
// status and hands out tickets and epochs by these numbers) and the CPU emulator. Nothing
// here may be written a second time elsewhere: change it here and both sides follow.
//
// Namespace fuseflow::shared, not ff: on the host `ff` is the users' alias of fuseflow.
// scan.cuh brings these names into ff, plan.hpp into fuseflow::codegen.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FF_SHARED_CONSTEXPR __host__ __device__ constexpr
#else
#define FF_SHARED_CONSTEXPR constexpr
#endif

namespace fuseflow {
namespace shared {

// ---- look-back status (scan.cuh's StatusEntries) --------------------------------------

// A tile's (or a group's) status: nothing yet, its own aggregate, or its inclusive prefix
// (the combination of every element up to the end of the tile or group).
enum TileFlag : unsigned { kTileInvalid = 0, kTileAggregate = 1, kTilePrefix = 2 };

// Every 64-bit status word is (chunk << 32) | (epoch << kStatusFlagBits) | flag: a 32-bit
// chunk of the value beside a 32-bit tag of the launch's epoch and the entry's flag.
constexpr unsigned kStatusFlagBits = 2;
constexpr unsigned kStatusFlagMask = (1u << kStatusFlagBits) - 1;
// Epochs take the tag's other 30 bits: 1 ... kMaxLookbackEpoch, never 0, so zeroed status
// memory reads as nothing. The runtime hands them out in order and zeroes the status
// before it starts them again.
constexpr unsigned kMaxLookbackEpoch = (1u << (32 - kStatusFlagBits)) - 1;

// Tiles form groups of 32 consecutive tiles (a warp's width) for the look-back.
constexpr int kTilesPerGroup = 32;

// Bytes of look-back status for `tiles` tiles of values of `value_bytes` bytes: one entry
// per tile (its aggregate), then one per group (aggregate, then inclusive prefix); an
// entry is one 64-bit word per 4 bytes of value. The host sizes the status memory with it.
FF_SHARED_CONSTEXPR unsigned long long scan_status_bytes(unsigned long long value_bytes, unsigned long long tiles) {
  return ((value_bytes + 3) / 4) * 8 * (tiles + (tiles + kTilesPerGroup - 1) / kTilesPerGroup);
}

// ---- tiles in shared memory ----------------------------------------------------------

// A tile's shared-memory stage pads one slot per kSlotPadEvery elements (scan.cuh's
// tile_slot), so thread t reading element t * kItems + k does not collide with its
// neighbours' banks. The slots a stage of `tile` elements takes:
constexpr int kSlotPadEvery = 32;
FF_SHARED_CONSTEXPR long long stage_slots(long long tile) { return tile + tile / kSlotPadEvery; }

// ---- tickets: counters the runtime allocates once, zeroed, that kernels leave zeroed ----

constexpr int kTicketLastBlock = 0;   // the reductions' "last block combines" ticket (collectives.cuh)
constexpr int kTicketTileCounter = 1;  // the look-back scans' tile counter (scan.cuh's draw_tile_id)
constexpr int kTicketDeferred = 2;     // set by the segmented reduce's short pass when it leaves
                                       // segments to its second kernel (which zeroes it)
constexpr int kTickets = 3;            // how many there are

// ---- the stencil map (stencil.cuh, strategies/map_stencil.cpp) ------------------------

// A thread holds an input's elements of a chunk in one vector of this many bytes (one load).
constexpr int kStencilVectorBytes = 16;
// A shift whose neighbour is this many lanes away or more reads memory, not a shuffle.
constexpr int kStencilShuffleLanes = 32;
// How many lanes away (negative: before) element `element` of a lane's vector of `vec`
// elements finds its neighbour x[i + shift]: floor((element + shift) / vec). The host
// sizes the halo by it, the device picks the shuffle by it.
FF_SHARED_CONSTEXPR long long stencil_lanes_away(long long element, long long shift, long long vec) {
  return element + shift >= 0 ? (element + shift) / vec : -((-(element + shift) + vec - 1) / vec);
}

}  // namespace shared
}  // namespace fuseflow

#undef FF_SHARED_CONSTEXPR
