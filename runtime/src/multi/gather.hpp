#pragma once
// The sharded runtime's combine (gather.cpp): every rank's values gathered straight from
// device memory, grouped on the rank's stream, then one copy to the host.
#include <cstddef>
#include <optional>
#include <vector>

#include "fuseflow/runtime/runtime.hpp"
#include "fuseflow/runtime/sharded_comm.hpp"

namespace fuseflow::detail {

// One value of this rank to gather from every rank: where it lies on the device, or (when
// the run left it on the host) its bytes, staged through the rank's send buffer.
struct GatherItem {
  CUdeviceptr at = 0;
  std::size_t bytes = 0;
  std::vector<std::byte> host;  // at == 0: the value's bytes
  // Set: the ranks' values all-reduced instead (one value in the item's block), for the
  // built-in commutative integer monoids, where that is exact (all_reduce_op).
  std::optional<CollectiveOp> reduce;
  ScalarType type = ScalarType::I32;
};
inline GatherItem device_item(CUdeviceptr at, std::size_t bytes) {
  GatherItem it;
  it.at = at;
  it.bytes = bytes;
  return it;
}

// The collective that combines `m` over `t` exactly, in any order: plus, times, min, max
// of the integer types NCCL reduces (8, 32 and 64 bits). None for the others (floats
// round differently in another order; custom monoids): their partials are gathered and
// folded in rank order.
std::optional<CollectiveOp> all_reduce_op(const Monoid& m, const Type& t);

constexpr std::size_t kAlign = 16;
inline std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Every rank's items, gathered straight from device memory into this rank's `recv`
// (item k's block holds the ranks' values in rank order, or their all-reduced value: then
// read it as rank 0's), the histograms all-reduced in
// place, all in one NCCL group on the rank's stream. `extra` bytes after the blocks are
// left for the device folds (at `extra_at`). Nothing waits: finish() copies to the host.
// Page-locked host memory of one rank, kept from run to run: the combine's one copy lands
// there (an asynchronous copy and a wait, no staging through pageable memory). Made and
// freed with the rank's context current (`context`).
class PinnedHost {
 public:
  PinnedHost() = default;
  ~PinnedHost();
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  std::byte* reserve(CUcontext context, std::size_t bytes);  // the rank's context is current
 private:
  CUcontext context_ = nullptr;
  std::byte* ptr_ = nullptr;
  std::size_t size_ = 0;
};

struct Gathered {
  const std::byte* host = nullptr;  // after finish(): the copy, in the rank's pinned memory (until its next finish)
  std::vector<std::size_t> block;  // per item
  std::size_t extra_at = 0, total = 0;
  Value value(const Type& t, std::size_t item, std::size_t bytes, int rank) const {
    return Value::from_bytes(t, host + block[item] + bytes * static_cast<std::size_t>(rank));
  }
  // One copy of everything gathered (and folded) to the host, which waits for the stream.
  void finish(Runtime& rt, const DeviceArray<std::byte>& recv, PinnedHost& pinned);
};

struct Histo {
  DeviceBytes bytes;
  ScalarType type;
};

GatherItem scalar_item(const Result& r);  // a reduction's value (run_async's, on the device)
GatherItem count_item(const Result& r);   // a filter's survivor count (u64, on the device)
Gathered gather(Runtime& rt, Communicator& comm, std::vector<GatherItem>& items, const std::vector<Histo>& histos,
                std::size_t extra, DeviceArray<std::byte>& send, DeviceArray<std::byte>& recv);

}  // namespace fuseflow::detail
