// The in-process communicator: the ranks of a world are threads of this process, and the
// data of a collective goes through host memory (copied out of each rank's device,
// combined, copied back). For the CPU emulator, where device memory is host memory, and
// as a slow fallback on GPUs without NCCL.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/error.hpp"
#include "fuseflow/runtime/sharded_comm.hpp"

namespace fuseflow {
namespace {

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS)
    throw CudaError(call, r, detail::cuda_error_name(r), std::string("in-process communicator: ") + call + " failed");
}

void to_host(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  const auto& d = detail::driver();
  if (bytes) check(d.cuMemcpyDtoHAsync(dst, src, bytes, stream), "cuMemcpyDtoHAsync");
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void to_device(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream) {
  const auto& d = detail::driver();
  if (bytes) check(d.cuMemcpyHtoDAsync(dst, src, bytes, stream), "cuMemcpyHtoDAsync");
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void combine(std::byte* acc, const std::byte* in, std::size_t count, ScalarType t, CollectiveOp op);

// A collective queued by a rank of a grouped world (one thread drives every rank).
struct Queued {
  enum class Kind : std::uint8_t { Gather, Reduce, Broadcast } kind;
  CUdeviceptr send = 0, recv = 0;
  std::size_t bytes = 0, count = 0;
  ScalarType type = ScalarType::I32;
  CollectiveOp op = CollectiveOp::Sum;
  int root = 0;
  CUstream stream = nullptr;
  CUcontext context = nullptr;  // current at the call; current again while it runs
};

// Makes a context current for a scope (none: leaves the current one).
class Current {
 public:
  explicit Current(CUcontext c) : pushed_(c != nullptr) {
    if (pushed_) check(detail::driver().cuCtxPushCurrent(c), "cuCtxPushCurrent");
  }
  ~Current() {
    CUcontext ignored = nullptr;
    if (pushed_) detail::driver().cuCtxPopCurrent(&ignored);
  }
  Current(const Current&) = delete;
  Current& operator=(const Current&) = delete;

 private:
  bool pushed_;
};

// The shared state of one world: a slot per rank and a reusable barrier; grouped, the
// queued collectives of every rank.
struct World {
  World(int n, bool g) : size(n), grouped(g), slots(static_cast<std::size_t>(n)), queued(static_cast<std::size_t>(n)) {}
  const int size;
  const bool grouped;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  unsigned long long generation = 0;
  bool aborted = false;
  std::vector<std::vector<std::byte>> slots;
  std::vector<std::deque<Queued>> queued;
  int depth = 0;  // open groups

  // Grouped: runs the collectives every rank has queued, in order, unless a group is open.
  void progress() {
    if (depth > 0) return;
    for (;;) {
      for (const auto& q : queued)
        if (q.empty()) return;
      std::vector<Queued> ops;
      for (auto& q : queued) {
        ops.push_back(q.front());
        q.pop_front();
      }
      run(ops);
    }
  }
  void run(const std::vector<Queued>& ops) {
    const Queued& a = ops[0];
    for (const Queued& o : ops)
      if (o.kind != a.kind || o.bytes != a.bytes || o.count != a.count || o.root != a.root)
        throw GraphError("in-process communicator (grouped): the ranks queued different collectives");
    const std::size_t per = a.kind == Queued::Kind::Reduce ? a.count * Type(a.type).size() : a.bytes;
    for (std::size_t r = 0; r < ops.size(); ++r) {
      if (a.kind == Queued::Kind::Broadcast && static_cast<int>(r) != a.root) continue;
      Current c(ops[r].context);
      slots[r].resize(per);
      to_host(slots[r].data(), ops[r].send, per, ops[r].stream);
    }
    std::vector<std::byte> out;
    if (a.kind == Queued::Kind::Gather) {
      for (const auto& slot : slots) out.insert(out.end(), slot.begin(), slot.begin() + static_cast<std::ptrdiff_t>(per));
    } else if (a.kind == Queued::Kind::Reduce) {
      out = slots[0];
      for (std::size_t r = 1; r < ops.size(); ++r) combine(out.data(), slots[r].data(), a.count, a.type, a.op);
    } else {
      out = slots[static_cast<std::size_t>(a.root)];
    }
    for (const Queued& o : ops) {
      Current c(o.context);
      to_device(o.recv, out.data(), out.size(), o.stream);
    }
  }

  void barrier() {
    std::unique_lock lock(mutex);
    if (aborted) throw Error("in-process communicator: another rank failed; this collective was abandoned");
    const unsigned long long mine = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != mine || aborted; });
    if (generation == mine) throw Error("in-process communicator: another rank failed; this collective was abandoned");
  }
  void abort() {
    std::lock_guard lock(mutex);
    aborted = true;
    cv.notify_all();
  }
};

template <class T>
void combine_typed(std::byte* acc, const std::byte* in, std::size_t count, CollectiveOp op) {
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in + i * sizeof(T), sizeof(T));
    T r = a;
    switch (op) {
      case CollectiveOp::Sum: r = static_cast<T>(a + b); break;
      case CollectiveOp::Prod: r = static_cast<T>(a * b); break;
      case CollectiveOp::Min: r = b < a ? b : a; break;
      case CollectiveOp::Max: r = a < b ? b : a; break;
    }
    std::memcpy(acc + i * sizeof(T), &r, sizeof(T));
  }
}

void combine(std::byte* acc, const std::byte* in, std::size_t count, ScalarType t, CollectiveOp op) {
  switch (t) {
    case ScalarType::I8: return combine_typed<std::int8_t>(acc, in, count, op);
    case ScalarType::U8: return combine_typed<std::uint8_t>(acc, in, count, op);
    case ScalarType::I16: return combine_typed<std::int16_t>(acc, in, count, op);
    case ScalarType::U16: return combine_typed<std::uint16_t>(acc, in, count, op);
    case ScalarType::I32: return combine_typed<std::int32_t>(acc, in, count, op);
    case ScalarType::U32: return combine_typed<std::uint32_t>(acc, in, count, op);
    case ScalarType::I64: return combine_typed<std::int64_t>(acc, in, count, op);
    case ScalarType::U64: return combine_typed<std::uint64_t>(acc, in, count, op);
    case ScalarType::F32: return combine_typed<float>(acc, in, count, op);
    case ScalarType::F64: return combine_typed<double>(acc, in, count, op);
    default: throw GraphError("all_reduce: elements of type " + Type(t).name() + " are not supported");
  }
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<World> world, int rank) : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size; }
  std::string backend() const override { return "in-process"; }
  bool blocking() const override { return !world_->grouped; }
  void group_start() override {
    if (world_->grouped) ++world_->depth;
  }
  void group_end() override {
    if (!world_->grouped) return;
    if (world_->depth > 0) --world_->depth;
    world_->progress();
  }

  void all_gather(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, CUstream stream) override {
    if (world_->grouped) return queue({Queued::Kind::Gather, send, recv, bytes, 0, ScalarType::I32, {}, 0, stream, nullptr});
    auto& mine = world_->slots[static_cast<std::size_t>(rank_)];
    mine.resize(bytes);
    to_host(mine.data(), send, bytes, stream);
    world_->barrier();
    std::vector<std::byte> all(bytes * static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) {
      const auto& slot = world_->slots[static_cast<std::size_t>(r)];
      if (slot.size() != bytes) fail("all_gather", "sizes differ between ranks");
      if (bytes) std::memcpy(all.data() + static_cast<std::size_t>(r) * bytes, slot.data(), bytes);
    }
    world_->barrier();  // every rank has read every slot
    to_device(recv, all.data(), all.size(), stream);
  }

  void all_reduce(CUdeviceptr send, CUdeviceptr recv, std::size_t count, ScalarType t, CollectiveOp op,
                  CUstream stream) override {
    if (world_->grouped) return queue({Queued::Kind::Reduce, send, recv, 0, count, t, op, 0, stream, nullptr});
    const std::size_t bytes = count * Type(t).size();
    auto& mine = world_->slots[static_cast<std::size_t>(rank_)];
    mine.resize(bytes);
    to_host(mine.data(), send, bytes, stream);
    world_->barrier();
    std::vector<std::byte> acc = world_->slots[0];
    for (int r = 1; r < size(); ++r) {
      const auto& slot = world_->slots[static_cast<std::size_t>(r)];
      if (slot.size() != bytes) fail("all_reduce", "counts differ between ranks");
      combine(acc.data(), slot.data(), count, t, op);
    }
    world_->barrier();
    to_device(recv, acc.data(), bytes, stream);
  }

  void broadcast(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, int root, CUstream stream) override {
    if (root < 0 || root >= size()) fail("broadcast", "root " + std::to_string(root) + " is not a rank");
    if (world_->grouped) return queue({Queued::Kind::Broadcast, send, recv, bytes, 0, ScalarType::I32, {}, root, stream, nullptr});
    if (rank_ == root) {
      auto& mine = world_->slots[static_cast<std::size_t>(rank_)];
      mine.resize(bytes);
      to_host(mine.data(), send, bytes, stream);
    }
    world_->barrier();
    std::vector<std::byte> got = world_->slots[static_cast<std::size_t>(root)];
    world_->barrier();
    if (got.size() != bytes) fail("broadcast", "sizes differ between ranks");
    to_device(recv, got.data(), bytes, stream);
  }

  void abort() {
    world_->abort();
    if (world_->grouped) {  // what was queued will never run
      for (auto& q : world_->queued) q.clear();
      world_->depth = 0;
    }
  }

 private:
  void queue(Queued q) {
    check(detail::driver().cuCtxGetCurrent(&q.context), "cuCtxGetCurrent");
    world_->queued[static_cast<std::size_t>(rank_)].push_back(q);
    world_->progress();
  }
  [[noreturn]] void fail(const char* call, const std::string& why) {
    world_->abort();
    throw GraphError(std::string("in-process communicator: ") + call + " on rank " + std::to_string(rank_) + ": " + why);
  }
  std::shared_ptr<World> world_;
  int rank_;
};

}  // namespace

int gpu_count() noexcept {
  try {
    int n = 0;
    return detail::driver().cuDeviceGetCount(&n) == CUDA_SUCCESS ? n : 0;
  } catch (...) {
    return 0;
  }
}

std::vector<std::unique_ptr<Communicator>> thread_communicators(int world, bool grouped) {
  if (world < 1) throw GraphError("thread_communicators: a world needs at least one rank, not " + std::to_string(world));
  auto shared = std::make_shared<World>(world, grouped);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < world; ++r) out.push_back(std::make_unique<ThreadCommunicator>(shared, r));
  return out;
}

void abort_world(Communicator& any) noexcept {
  if (auto* t = dynamic_cast<ThreadCommunicator*>(&any)) t->abort();
}

}  // namespace fuseflow
