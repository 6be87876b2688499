#pragma once
// Communicators: how the ranks of a sharded run (one GPU each) exchange data. The
// interface is NCCL's shape (rank, size, all_gather, all_reduce, broadcast, groups) over
// device memory ordered on a stream; two implementations:
//   - NCCL (nccl_communicators, nccl_communicator): the real thing, libnccl loaded at run
//     time like the driver (FUSEFLOW_NCCL_LIBRARY, else libnccl.so.2, else the pip
//     nvidia-nccl package this build found), so single-GPU users need no NCCL.
//   - in process (thread_communicators): ranks are threads of one process; the data goes
//     through host memory. For the CPU emulator (CI tests of the combine logic with any
//     world size) and as a slow fallback without NCCL.
// Every NCCL process must keep NVLink multicast off: the NCCL loader sets
// NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 in the
// process environment before any communicator exists, and nothing here calls
// cuMulticastCreate.
#include <cuda.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fuseflow/frontend/error.hpp"
#include "fuseflow/frontend/type.hpp"

namespace fuseflow {

class Runtime;

// The element-wise reductions of all_reduce (NCCL's built-in ops).
enum class CollectiveOp : std::uint8_t { Sum, Prod, Min, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "nccl", "in-process"

  // All collective calls: every rank calls them in the same order; buffers are device
  // memory of this rank's device; the work is ordered on `stream` (the in-process
  // communicator waits for the stream, copies and returns when done).
  // recv[r * bytes .. (r+1) * bytes) = rank r's send, on every rank.
  virtual void all_gather(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, CUstream stream) = 0;
  // recv[i] = op over the ranks (in rank order) of send[i]; count elements of type t.
  virtual void all_reduce(CUdeviceptr send, CUdeviceptr recv, std::size_t count, ScalarType t, CollectiveOp op,
                          CUstream stream) = 0;
  // recv = root's send (root may pass send == recv).
  virtual void broadcast(CUdeviceptr send, CUdeviceptr recv, std::size_t bytes, int root, CUstream stream) = 0;
  // Calls between group_start and group_end are issued together (ncclGroupStart/End); one
  // thread driving several ranks must group their calls. A no-op in process.
  virtual void group_start() {}
  virtual void group_end() {}
  // Whether a collective waits, on the calling thread, for the other ranks to call it (the
  // in-process communicator outside grouped mode): then one thread cannot drive several
  // ranks, and a ShardedRuntime gives each local rank a thread. NCCL's calls only queue
  // work (inside a group), so one thread issues every local rank's.
  virtual bool blocking() const { return false; }
};

// How many GPUs the driver reports (0 without a driver). Never throws.
int gpu_count() noexcept;

// ---- in process ------------------------------------------------------------------------
// `world` communicators of one in-process world, rank r at index r; each is used by one
// thread at a time. If a rank fails between collectives, abort_world() lets the others'
// waits throw instead of hanging. `grouped`: one thread drives every rank, as with NCCL in
// one process: a collective only queues, and the queued ones run (for every rank, in rank
// order, with the context current at each call) once every rank has called them and no
// group is open (group_end of the outermost group); for tests of that path on the emulator.
std::vector<std::unique_ptr<Communicator>> thread_communicators(int world, bool grouped = false);
void abort_world(Communicator& any_rank_of_an_in_process_world) noexcept;

// ---- NCCL ------------------------------------------------------------------------------
// Whether libnccl could be loaded (and this build has NCCL's header); nccl_load_error()
// says why not.
bool nccl_available() noexcept;
std::string nccl_load_error();
int nccl_version();  // e.g. 22805; throws Error when NCCL is missing

// The id every rank of a one-process-per-GPU world needs (ncclUniqueId), made by one rank
// and handed to the others however the user likes: MPI, a socket, a shared file.
struct NcclId {
  std::array<char, 128> bytes{};
};
NcclId nccl_unique_id();  // ncclGetUniqueId
// Writes the id to `path` atomically (a temporary file, then rename), and reads it back,
// waiting up to `timeout` for it to appear (Error naming the path after that).
void write_nccl_id(const NcclId& id, const std::string& path);
NcclId read_nccl_id(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(60));

// One process driving all of `runtimes` (one per GPU, rank i = runtimes[i]): ncclCommInitAll
// over their devices. One process per GPU: this process's rank of `world`, on
// `runtime`'s device (ncclCommInitRank). Both throw Error when NCCL is missing.
std::vector<std::unique_ptr<Communicator>> nccl_communicators(const std::vector<Runtime*>& runtimes);
std::unique_ptr<Communicator> nccl_communicator(const NcclId& id, int rank, int world, Runtime& runtime);

// NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, forced
// (NVLink multicast can take a shared machine's GPUs down). Called by the NCCL loader;
// tests and benchmarks call it first thing too.
void disable_nvlink_multicast() noexcept;

}  // namespace fuseflow
