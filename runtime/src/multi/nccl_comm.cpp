// The NCCL communicator. libnccl is loaded at run time with dlopen (like the driver), so
// fuseflow builds and runs without NCCL and only a sharded run over NCCL needs it:
// FUSEFLOW_NCCL_LIBRARY names it, else libnccl.so.2 on the loader's path, else the copy
// in the pip nvidia-nccl package this build found (FUSEFLOW_NCCL_HINT). The types come
// from the NCCL header this build found (FUSEFLOW_HAVE_NCCL_H), else from nccl_abi.hpp.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/error.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "fuseflow/runtime/sharded_comm.hpp"

#if FUSEFLOW_HAVE_NCCL_H
#include <nccl.h>
#else
#include "nccl_abi.hpp"  // NCCL's C interface, declared here when nccl.h was not found
#endif

namespace fuseflow {

void disable_nvlink_multicast() noexcept {
  // Forced, whatever the caller's environment says: NVLink multicast (NVLS) can put a
  // shared host's GPUs out of service.
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  ::setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
}

namespace {

#define FUSEFLOW_NCCL_FUNCTIONS(X)                                                                  \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommInitAll) X(ncclCommDestroy) \
  X(ncclGetErrorString) X(ncclAllGather) X(ncclAllReduce) X(ncclBroadcast) X(ncclGroupStart)      \
  X(ncclGroupEnd)

struct NcclApi {
#define FUSEFLOW_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  FUSEFLOW_NCCL_FUNCTIONS(FUSEFLOW_NCCL_MEMBER)
#undef FUSEFLOW_NCCL_MEMBER
  bool ok = false;
  std::string error;
};

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (std::string env = read_sharded_environment().nccl_library; !env.empty()) return {env};
  out.push_back("libnccl.so.2");
#ifdef FUSEFLOW_NCCL_HINT
  out.push_back(std::string(FUSEFLOW_NCCL_HINT) + "/libnccl.so.2");
#endif
  return out;
}

NcclApi load() {
  disable_nvlink_multicast();  // before libnccl reads its environment
  NcclApi api;
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : candidates()) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) break;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
  }
  if (!library) {
    api.error = "NCCL was not found (" + tried +
                "); install it (pip install nvidia-nccl-cu13) or set FUSEFLOW_NCCL_LIBRARY to libnccl.so.2";
    return api;
  }
#define FUSEFLOW_NCCL_LOAD(name)                                                  \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(library, #name));         \
  if (!api.name) {                                                                \
    api.error = "the NCCL library lacks " #name "; it is older than fuseflow needs"; \
    return api;                                                                   \
  }
  FUSEFLOW_NCCL_FUNCTIONS(FUSEFLOW_NCCL_LOAD)
#undef FUSEFLOW_NCCL_LOAD
  api.ok = true;
  return api;
}

const NcclApi& loaded() {
  static const NcclApi api = load();
  return api;
}

const NcclApi& nccl() {
  const NcclApi& api = loaded();
  if (!api.ok) throw Error("fuseflow: " + api.error);
  return api;
}

void check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw Error(std::string("fuseflow: ") + call + " failed: " + nccl().ncclGetErrorString(r) + " (ncclResult_t " +
                std::to_string(static_cast<int>(r)) + ")");
}

ncclDataType_t nccl_type(ScalarType t) {
  switch (t) {
    case ScalarType::I8: return ncclInt8;
    case ScalarType::U8: return ncclUint8;
    case ScalarType::I32: return ncclInt32;
    case ScalarType::U32: return ncclUint32;
    case ScalarType::I64: return ncclInt64;
    case ScalarType::U64: return ncclUint64;
    case ScalarType::F32: return ncclFloat32;
    case ScalarType::F64: return ncclFloat64;
    default: throw GraphError("NCCL all_reduce: elements of type " + Type(t).name() + " are not supported");
  }
}

ncclRedOp_t nccl_op(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::Sum: return ncclSum;
    case CollectiveOp::Prod: return ncclProd;
    case CollectiveOp::Min: return ncclMin;
    case CollectiveOp::Max: return ncclMax;
  }
  return ncclSum;
}

// Makes a Runtime's context current on this thread for a scope (NCCL uses the current
// device).
class ContextScope {
 public:
  explicit ContextScope(CUcontext c) {
    const auto& d = detail::driver();
    CUresult r = d.cuCtxPushCurrent(c);
    if (r != CUDA_SUCCESS) throw CudaError("cuCtxPushCurrent", r, detail::cuda_error_name(r), "NCCL setup");
  }
  ~ContextScope() {
    CUcontext ignored = nullptr;
    detail::driver().cuCtxPopCurrent(&ignored);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclCommunicator() override {
    if (comm_) nccl().ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  void all_gather(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, CUstream stream) override {
    check(nccl().ncclAllGather(reinterpret_cast<const void*>(send), reinterpret_cast<void*>(recv), bytes, ncclInt8,
                               comm_, reinterpret_cast<cudaStream_t>(stream)),
          "ncclAllGather");
  }
  void all_reduce(CUdeviceptr send, CUdeviceptr recv, std::size_t count, ScalarType t, CollectiveOp op,
                  CUstream stream) override {
    check(nccl().ncclAllReduce(reinterpret_cast<const void*>(send), reinterpret_cast<void*>(recv), count,
                               nccl_type(t), nccl_op(op), comm_, reinterpret_cast<cudaStream_t>(stream)),
          "ncclAllReduce");
  }
  void broadcast(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, int root, CUstream stream) override {
    check(nccl().ncclBroadcast(reinterpret_cast<const void*>(send), reinterpret_cast<void*>(recv), bytes, ncclInt8,
                               root, comm_, reinterpret_cast<cudaStream_t>(stream)),
          "ncclBroadcast");
  }
  void group_start() override { check(nccl().ncclGroupStart(), "ncclGroupStart"); }
  void group_end() override { check(nccl().ncclGroupEnd(), "ncclGroupEnd"); }

 private:
  ncclComm_t comm_;
  int rank_, size_;
};

}  // namespace

bool nccl_available() noexcept {
  try {
    return loaded().ok;
  } catch (...) {
    return false;
  }
}
std::string nccl_load_error() { return loaded().ok ? std::string() : loaded().error; }
int nccl_version() {
  int v = 0;
  check(nccl().ncclGetVersion(&v), "ncclGetVersion");
  return v;
}

NcclId nccl_unique_id() {
  ncclUniqueId id;
  check(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclId out;
  static_assert(sizeof(id.internal) == sizeof(out.bytes));
  std::memcpy(out.bytes.data(), id.internal, sizeof(id.internal));
  return out;
}

std::vector<std::unique_ptr<Communicator>> nccl_communicators(const std::vector<Runtime*>& runtimes) {
  const int n = static_cast<int>(runtimes.size());
  if (n < 1) throw GraphError("nccl_communicators: no runtimes given");
  std::vector<int> devices;
  for (Runtime* rt : runtimes) devices.push_back(rt->options().device);
  std::vector<ncclComm_t> comms(runtimes.size());
  {
    ContextScope scope(runtimes[0]->context());
    check(nccl().ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
  }
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NcclCommunicator>(comms[static_cast<std::size_t>(r)], r, n));
  return out;
}

std::unique_ptr<Communicator> nccl_communicator(const NcclId& id, int rank, int world, Runtime& runtime) {
  if (world < 1 || rank < 0 || rank >= world)
    throw GraphError("nccl_communicator: rank " + std::to_string(rank) + " of a world of " + std::to_string(world) +
                     " does not exist");
  ncclUniqueId nid;
  std::memcpy(nid.internal, id.bytes.data(), sizeof(nid.internal));
  ncclComm_t comm = nullptr;
  ContextScope scope(runtime.context());
  check(nccl().ncclCommInitRank(&comm, world, nid, rank), "ncclCommInitRank");
  return std::make_unique<NcclCommunicator>(comm, rank, world);
}


void write_nccl_id(const NcclId& id, const std::string& path) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(id.bytes.data(), static_cast<std::streamsize>(id.bytes.size()));
    if (!out) throw Error("write_nccl_id: cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("write_nccl_id: cannot rename " + tmp + " to " + path + ": " + ec.message());
}

NcclId read_nccl_id(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    NcclId id;
    if (in && in.read(id.bytes.data(), static_cast<std::streamsize>(id.bytes.size()))) return id;
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error("read_nccl_id: no complete NCCL id in " + path + " after " + std::to_string(timeout.count()) +
                  " ms; did rank 0 write it (write_nccl_id)?");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace fuseflow
