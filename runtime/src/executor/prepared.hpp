#pragma once
// Prepared programs: a plan for this Runtime's device and options, its kernels loaded, the
// buffers its runs share; and the Executor, the run state a Runtime keeps (the prepared
// programs by structure, tickets, look-back status).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "bindings.hpp"
#include "run_phases.hpp"
#include "structure.hpp"
#include "../tiered.hpp"

namespace fuseflow {
namespace detail {

// A planned program, its loaded kernels, and what its runs reuse: the device buffer its
// reductions write (scalars, then the invalid-offset flags, so one copy reads both back),
// a pinned host buffer that copy lands in, the schedule of the last lengths it ran with,
// and the argument cells of its launches. Shared by every program of its structure; freed
// (buffers, and modules no other program uses) when the program cache evicts it and no
// pending result still reads its scalars. Runs use it under the Executor's mutex.
struct PreparedProgram {
  std::shared_ptr<const ProgramKey> key;  // what the program cache finds it by
  codegen::Plan plan;
  std::vector<KernelHandle> kernels;
  std::vector<int> resident_grid;  // per kernel: blocks resident at once on the whole device
  std::string range_name;          // NVTX range of a run: "fuseflow run <first kernel>"
  std::shared_ptr<DeviceContext> context;
  CUdeviceptr scalars = 0;        // device: plan.scalar_bytes, then the flags
  CUdeviceptr invalid_flags = 0;  // one unsigned per plan.checked_offsets, inside `scalars`' buffer
  std::size_t flags_offset = 0;   // bytes from scalars to invalid_flags
  void* host = nullptr;           // pinned: flags_offset + the flags' bytes
  // run() has its kernels write the scalars straight into `host` (mapped into the device's
  // address space at the same address), so it waits once and copies nothing: when no
  // kernel reads a result back (Arg::Kind::Scalar), none adds into one with atomics and
  // there are no flags. On the H100 a launch + the mapped store + one wait measured about
  // 10 us against 12-18 us for launch + pinned copy + wait. run_async keeps `scalars`.
  bool direct_results = false;
  // Per plan.checked_offsets: the op's index in Program::ops(). The plan's own op belongs
  // to the program first prepared; a later program of this structure explains its error
  // with its own op (the same index), bound to its own inputs.
  std::vector<std::size_t> checked_op_index;

  // The schedule of the last lengths run (most runs repeat their sizes), with its zeroed
  // scratch ranges merged into few memsets and the look-back status it needs.
  std::vector<std::int64_t> schedule_lengths;
  codegen::Schedule schedule;
  std::vector<std::pair<std::size_t, std::size_t>> zero_ranges;
  std::size_t status_bytes = 0;
  bool has_schedule = false;
  // Reused by every run: argument cells (cuLaunchKernel copies them at the call) and the
  // outputs' pointers and sizes.
  std::vector<std::array<unsigned char, 16>> cells;
  std::vector<void*> args;
  std::vector<CUdeviceptr> output_ptrs, count_ptrs;
  std::vector<std::size_t> output_bytes, allocated_bytes;
  // Tiered compilation (tiered.hpp): per kernel, whether it is a tier-0 one; the tier-1
  // compile in flight; the tier-0 kernels swapped out, kept until the program goes.
  std::vector<bool> tier0;
  std::shared_ptr<TierUp> tier_up;
  std::vector<KernelHandle> retired;

  explicit PreparedProgram(std::shared_ptr<DeviceContext> ctx) : context(std::move(ctx)) {}
  PreparedProgram(const PreparedProgram&) = delete;
  PreparedProgram& operator=(const PreparedProgram&) = delete;
  ~PreparedProgram() {
    if (scalars) context->free(scalars);
    if (host) context->free_host(host);
  }
  // The schedule for `lengths`: the last one when they repeat, else made now.
  void schedule_for(const std::vector<std::int64_t>& lengths);
  // What the program cache counts against its byte limit: device and pinned buffers, host text.
  std::size_t bytes() const {
    std::size_t total = sizeof *this + 2 * flags_offset + plan.checked_offsets.size() * 2 * sizeof(unsigned);
    for (const auto& k : plan.kernels) total += k.source.size() + k.name.size() + k.args.size() * sizeof(codegen::Arg);
    return total + (key ? key->bytes() : 0);
  }
};

// The structural keys of programs run lately, by the addresses of their output nodes: a
// direct-mapped table, each slot overwritten by the next program whose outputs map to it.
// A slot holds the outputs (so their nodes, and addresses, stay taken while it lives) in a
// vector that keeps its capacity: remembering a new program allocates nothing once the
// slots have been used. A program that lost its slot is found again by a walk.
class ProgramsByIdentity {
 public:
  const std::shared_ptr<const ProgramKey>* find(const Program& program) const {
    const Slot& s = slots_[slot_of(program)];
    if (!s.key || s.outputs.size() != program.outputs().size()) return nullptr;
    for (std::size_t i = 0; i < s.outputs.size(); ++i)
      if (s.outputs[i].get() != program.outputs()[i].get()) return nullptr;
    return &s.key;
  }
  void remember(const Program& program, std::shared_ptr<const ProgramKey> key) {
    Slot& s = slots_[slot_of(program)];
    s.outputs.assign(program.outputs().begin(), program.outputs().end());
    s.key = std::move(key);
  }

 private:
  static constexpr std::size_t kSlots = 128;
  struct Slot {
    std::vector<Expr> outputs;
    std::shared_ptr<const ProgramKey> key;
  };
  static std::size_t slot_of(const Program& program) {
    std::uint64_t h = program.outputs().size();
    for (const Expr& o : program.outputs())
      h = (h ^ (reinterpret_cast<std::uintptr_t>(o.get()) >> 4)) * 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(h >> 57) % kSlots;
  }
  std::array<Slot, kSlots> slots_;
};

struct Executor {
  explicit Executor(const RuntimeOptions& options)
      : poison(*options.poison),
        max_epoch(*options.lookback_epochs ? *options.lookback_epochs : codegen::kMaxLookbackEpoch),
        programs(options.limits.programs, options.limits.program_bytes) {}

  // Poison (RuntimeOptions::poison, FUSEFLOW_POISON=1; the GPU tests set it): scalar slots
  // and new output arrays (not those in the caller's memory) are filled with 0xff bytes
  // before the kernels run, so an element a kernel failed to write shows up as a wrong
  // answer instead of a lucky zero.
  const bool poison;
  // Start the epochs again after this many launches (RuntimeOptions::lookback_epochs,
  // FUSEFLOW_LOOKBACK_EPOCHS; tests reach the restart this way).
  const unsigned max_epoch;
  std::mutex mutex;
  // By structure (structure.hpp), not object identity, so a program rebuilt in a loop
  // finds the plan of the one before it.
  LruCache<SharedProgramKey, std::shared_ptr<PreparedProgram>, ProgramKeyHash, ProgramKeyEqual> programs;
  // The key of a program run lately, by the identity of its outputs (ProgramsByIdentity),
  // so that running the same Program object again costs a lookup instead of a walk.
  ProgramsByIdentity known;
  ProgramKey walked;                          // reused by each walk
  // A run's bindings and domain lengths, reused by the next run (no allocation once sized).
  BoundLeaves bound;
  std::vector<std::int64_t> lengths;
  PhaseClock phases;  // host time per phase of a run (FUSEFLOW_RUN_PHASES builds only)
  // Counters kernels leave zeroed (Arg::Kind::Ticket): [0] the reductions' last-block
  // ticket, [1] the look-back scans' tile counter, [2] the segmented reduce's "segments
  // left to the merge path" flag.
  std::unique_ptr<DeviceArray<unsigned>> tickets;
  // Look-back status (scan.cuh's ScanTileStatus), kept across runs and never cleared
  // between launches: each launch writes and accepts only entries of its own epoch.
  std::unique_ptr<ScratchPool> status;
  CUdeviceptr status_ptr = 0;
  // The last launch's epoch. Epoch 1 is kept for launches captured into a CUDA graph
  // (execute.cpp): they zero the status they use first, since every replay of the graph
  // runs with the epoch baked in at capture; the others count from 2.
  static constexpr unsigned kCapturedEpoch = 1;
  unsigned epoch = kCapturedEpoch;
  TierStats tiers;  // tiered compilation's counters (tiered.cpp)
};

// The prepared program of `program`'s structure: from the cache, or planned, compiled
// (or fetched) and loaded now and cached. While the stream is being captured (`capturing`)
// nothing may be planned, compiled or allocated: a program not prepared yet throws.
std::shared_ptr<PreparedProgram> prepare(Runtime& rt, Executor& ex, const Program& program,
                                         const std::shared_ptr<DeviceContext>& context, bool capturing);

}  // namespace detail

}  // namespace fuseflow
