#pragma once
// Prepared programs: a plan for this Runtime's device and options, its kernels loaded, the
// buffers its runs share; and the Executor, the run state a Runtime keeps (the prepared
// programs by structure, tickets, look-back status).
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace fuseflow {
namespace detail {

// A planned program, its loaded kernels, and the device buffer its reductions write.
// Shared by every program of its structure; freed (buffers, and modules no other program
// uses) when the program cache evicts it and no pending result still reads its scalars.
struct PreparedProgram {
  codegen::Plan plan;
  std::vector<KernelHandle> kernels;
  std::vector<int> resident_grid;  // per kernel: blocks resident at once on the whole device
  std::string range_name;          // NVTX range of a run: "fuseflow run <first kernel>"
  std::shared_ptr<DeviceContext> context;
  CUdeviceptr scalars = 0;  // plan.scalar_bytes
  CUdeviceptr invalid_flags = 0;  // one unsigned per plan.checked_offsets
  // Per plan.checked_offsets: the op's index in Program::ops(). The plan's own op belongs
  // to the program first prepared; a later program of this structure explains its error
  // with its own op (the same index), bound to its own inputs.
  std::vector<std::size_t> checked_op_index;

  explicit PreparedProgram(std::shared_ptr<DeviceContext> ctx) : context(std::move(ctx)) {}
  PreparedProgram(const PreparedProgram&) = delete;
  PreparedProgram& operator=(const PreparedProgram&) = delete;
  ~PreparedProgram() {
    if (scalars) context->free(scalars);
    if (invalid_flags) context->free(invalid_flags);
  }
  // What the program cache counts against its byte limit: device buffers and host text.
  std::size_t bytes() const {
    std::size_t total = sizeof *this + plan.scalar_bytes + plan.checked_offsets.size() * sizeof(unsigned);
    for (const auto& k : plan.kernels) total += k.source.size() + k.name.size() + k.args.size() * sizeof(codegen::Arg);
    return total;
  }
};

struct Executor {
  explicit Executor(const RuntimeOptions& options)
      : poison(*options.poison),
        max_epoch(*options.lookback_epochs ? *options.lookback_epochs : codegen::kMaxLookbackEpoch),
        programs(options.limits.programs, options.limits.program_bytes),
        keys(kProgramsByIdentity, SIZE_MAX) {}

  // Poison (RuntimeOptions::poison, FUSEFLOW_POISON=1; the GPU tests set it): scalar slots
  // and new output arrays (not those in the caller's memory) are filled with 0xff bytes
  // before the kernels run, so an element a kernel failed to write shows up as a wrong
  // answer instead of a lucky zero.
  const bool poison;
  // Start the epochs again after this many launches (RuntimeOptions::lookback_epochs,
  // FUSEFLOW_LOOKBACK_EPOCHS; tests reach the restart this way).
  const unsigned max_epoch;
  std::mutex mutex;
  // By program_key: structure, not object identity, so a program rebuilt in a loop finds
  // the plan of the one before it.
  LruCache<std::string, std::shared_ptr<PreparedProgram>> programs;
  // The key of a program run lately, by the identity of its outputs, so that running the
  // same Program object again costs a lookup instead of printing it. Each entry holds the
  // program, so its nodes (and addresses) stay taken while the entry lives.
  struct KnownProgram {
    Program program;
    std::string key;
  };
  struct NodesHash {
    std::size_t operator()(const std::vector<const ExprNode*>& nodes) const noexcept {
      std::size_t h = nodes.size();
      for (const ExprNode* n : nodes) h = h * 0x9e3779b97f4a7c15ULL + std::hash<const ExprNode*>{}(n);
      return h;
    }
  };
  static constexpr std::size_t kProgramsByIdentity = 64;
  LruCache<std::vector<const ExprNode*>, KnownProgram, NodesHash> keys;
  // Counters kernels leave zeroed (Arg::Kind::Ticket): [0] the reductions' last-block
  // ticket, [1] the look-back scans' tile counter, [2] the segmented reduce's "segments
  // left to the merge path" flag.
  std::unique_ptr<DeviceArray<unsigned>> tickets;
  // Look-back status (scan.cuh's ScanTileStatus), kept across runs and never cleared
  // between launches: each launch writes and accepts only entries of its own epoch.
  std::unique_ptr<ScratchPool> status;
  CUdeviceptr status_ptr = 0;
  unsigned epoch = 0;  // the last launch's

  // Status memory of at least `bytes`. Memory new to the pool is zeroed: epoch 0 is no
  // launch's.
  CUdeviceptr lookback_status(Runtime& rt, const std::shared_ptr<DeviceContext>& context, std::size_t bytes) {
    if (!status) status = std::make_unique<ScratchPool>(context);
    const CUdeviceptr p = status->get(bytes);
    if (p != status_ptr) rt.zero(p, status->capacity());
    status_ptr = p;
    return p;
  }

  // The next launch's epoch. When they run out the status is zeroed and they start again
  // at 1, so no entry in it can carry the epoch handed out.
  unsigned next_epoch(Runtime& rt) {
    if (epoch == max_epoch) {
      rt.zero(status_ptr, status->capacity());
      epoch = 0;
    }
    return ++epoch;
  }
};

// The prepared program of `program`'s structure: from the cache, or planned, compiled
// (or fetched) and loaded now and cached.
std::shared_ptr<PreparedProgram> prepare(Runtime& rt, Executor& ex, const Program& program,
                                         const std::shared_ptr<DeviceContext>& context);

}  // namespace detail

}  // namespace fuseflow
