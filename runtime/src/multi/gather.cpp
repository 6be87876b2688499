#include "gather.hpp"

#include <cstring>

#include "fuseflow/runtime/driver_api.hpp"

namespace fuseflow::detail {

namespace {
void check_driver(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw CudaError(what, r, cuda_error_name(r), "sharded run's combine");
}
}  // namespace

PinnedHost::~PinnedHost() {
  if (!ptr_) return;
  if (driver().cuCtxPushCurrent(context_) != CUDA_SUCCESS) return;
  driver().cuMemFreeHost(ptr_);
  CUcontext ignored = nullptr;
  driver().cuCtxPopCurrent(&ignored);
}

std::byte* PinnedHost::reserve(CUcontext context, std::size_t bytes) {
  if (bytes <= size_) return ptr_;
  if (ptr_) check_driver(driver().cuMemFreeHost(ptr_), "cuMemFreeHost");
  ptr_ = nullptr;
  size_ = 0;
  void* p = nullptr;
  check_driver(driver().cuMemHostAlloc(&p, bytes, 0), "cuMemHostAlloc");
  context_ = context;
  ptr_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return ptr_;
}

void Gathered::finish(Runtime& rt, const DeviceArray<std::byte>& recv, PinnedHost& pinned) {
  if (!total) return;
  std::byte* at = pinned.reserve(rt.context(), total);
  check_driver(driver().cuMemcpyDtoHAsync(at, recv.data(), total, rt.stream()), "cuMemcpyDtoHAsync");
  check_driver(driver().cuStreamSynchronize(rt.stream()), "cuStreamSynchronize");
  host = at;
}

GatherItem scalar_item(const Result& r) {
  GatherItem it;
  it.bytes = r.type().size();
  it.at = r.device_scalar();
  if (!it.at) {
    it.host.resize(it.bytes);
    r.value().to_bytes(it.host.data());
  }
  return it;
}

GatherItem count_item(const Result& r) {
  GatherItem it;
  it.bytes = sizeof(unsigned long long);
  it.at = r.device_count().at;
  if (!it.at) {
    const auto n = static_cast<unsigned long long>(r.size());
    it.host.resize(it.bytes);
    std::memcpy(it.host.data(), &n, it.bytes);
  }
  return it;
}

std::optional<CollectiveOp> all_reduce_op(const Monoid& m, const Type& t) {
  if (!t.is_scalar()) return std::nullopt;
  switch (t.scalar()) {
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::I64:
    case ScalarType::U64: break;
    default: return std::nullopt;
  }
  switch (m.kind()) {
    case MonoidKind::Plus: return CollectiveOp::Sum;
    case MonoidKind::Times: return CollectiveOp::Prod;
    case MonoidKind::Min: return CollectiveOp::Min;
    case MonoidKind::Max: return CollectiveOp::Max;
    default: return std::nullopt;
  }
}

Gathered gather(Runtime& rt, Communicator& comm, std::vector<GatherItem>& items, const std::vector<Histo>& histos,
                std::size_t extra, DeviceArray<std::byte>& send, DeviceArray<std::byte>& recv) {
  const auto world = static_cast<std::size_t>(comm.size());
  Gathered g;
  std::size_t staged = 0;
  for (const GatherItem& it : items) {
    if (!it.at) staged += aligned(it.bytes);
    g.block.push_back(g.total);
    g.total += aligned(it.bytes * (it.reduce ? 1 : world));
  }
  g.extra_at = g.total;
  g.total += extra;
  if (staged) {  // values the run left on the host (rare): one upload
    if (send.size() < staged) send = rt.alloc<std::byte>(staged);
    std::vector<std::byte> buf(send.size());  // the whole buffer: an upload fills it all
    std::size_t at = 0;
    for (GatherItem& it : items)
      if (!it.at) {
        std::memcpy(buf.data() + at, it.host.data(), it.bytes);
        it.at = send.data() + at;
        at += aligned(it.bytes);
      }
    send.upload(std::span<const std::byte>(buf));
  }
  if (recv.size() < g.total) recv = rt.alloc<std::byte>(g.total);
  comm.group_start();
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (items[k].reduce)
      comm.all_reduce(items[k].at, recv.data() + g.block[k], 1, items[k].type, *items[k].reduce, rt.stream());
    else
      comm.all_gather(items[k].at, recv.data() + g.block[k], items[k].bytes, rt.stream());
  }
  for (const Histo& h : histos)
    comm.all_reduce(h.bytes.ptr, h.bytes.ptr, h.bytes.count, h.type, CollectiveOp::Sum, rt.stream());
  comm.group_end();
  return g;
}

}  // namespace fuseflow::detail
