// The executor: Runtime::run. Binds a program's inputs and parameters, plans it once per
// structure (programs built apart but equal share one prepared plan: see program_key),
// fetches its kernels from the kernel cache, lays out the
// scratch it needs (scalar slots, block partials), launches the kernels in order on the
// runtime's stream, and returns the results: scalars copied back in one transfer, arrays
// left on the device.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "bindings.hpp"
#include "device_target.hpp"
#include "nvtx.hpp"

namespace fuseflow {

// ---- Runtime::run -------------------------------------------------------------------

namespace {

const std::vector<Header>& embedded_headers() {
  static const std::vector<Header> headers = [] {
    std::vector<Header> out;
    for (const auto& h : codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return headers;
}

}  // namespace

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

}  // namespace detail

namespace {

// What decides whether two programs can share a plan and its kernels: the program's
// textual form (to_string: inputs and parameters by name and type in a fixed order, ops,
// constants, custom monoids in full; never node addresses, never parameter values, which
// are bound per run), the device's architecture and SM count, and the plan options. The
// plan does not depend on binding lengths (they reach the kernels as arguments), so they
// are not in the key. Names are part of the text, and harmless: the frontend refuses two
// leaves of one name in a program, so names identify leaves.
std::string program_key(const Program& program, const DeviceProperties& props, const codegen::PlanOptions& options) {
  return "target sm_" + std::to_string(props.cc_major) + std::to_string(props.cc_minor) + " x" +
         std::to_string(props.sm_count) + "\noptions " + plan_options_text(options) + "\n" + to_string(program);
}

std::shared_ptr<detail::PreparedProgram> prepare(Runtime& rt, detail::Executor& ex, const Program& program,
                                                 const std::shared_ptr<detail::DeviceContext>& context) {
  const DeviceProperties& props = rt.properties();
  const codegen::PlanOptions& options = *rt.options().plan;
  std::vector<const ExprNode*> outputs;
  for (const Expr& o : program.outputs()) outputs.push_back(o.get());
  const detail::Executor::KnownProgram* known = ex.keys.find(outputs);
  if (!known) known = &ex.keys.insert(outputs, {program, program_key(program, props, options)}, 1);
  const std::string& key = known->key;  // valid until ex.keys changes, which prepare does not do below
  if (std::shared_ptr<detail::PreparedProgram>* found = ex.programs.find(key)) return *found;
  auto p = std::make_shared<detail::PreparedProgram>(context);
  const codegen::Target target = detail::device_target(props);
  p->plan = detail::plan_with_options(program, target, options);
  p->range_name = p->plan.kernels.empty() ? "fuseflow run" : "fuseflow run " + p->plan.kernels.front().name;
  CompileOptions compile = rt.compile_options();
  if (p->plan.scalar_bytes) p->scalars = context->allocate(p->plan.scalar_bytes);
  if (!p->plan.checked_offsets.empty())
    p->invalid_flags = context->allocate(p->plan.checked_offsets.size() * sizeof(unsigned));
  for (const auto& op : p->plan.checked_offsets) {
    const auto& ops = program.ops();
    const auto at = std::find(ops.begin(), ops.end(), op);
    if (at == ops.end()) throw InternalError("prepare: a checked op of the plan is not among the program's ops");
    p->checked_op_index.push_back(static_cast<std::size_t>(at - ops.begin()));
  }
  detail::DeviceContext::Scope scope(*context);
  for (const auto& k : p->plan.kernels) {
    p->kernels.push_back(rt.load_kernel(k.source, k.name, compile, embedded_headers()));
    // Only a kernel that strides over its domain (any_grid) is launched with the resident
    // grid; the others (one block per tile) skip the occupancy query, which for more than
    // 48 KB of dynamic shared memory needs the kernel's opt-in first (Runtime::launch).
    int per_sm = 0;
    if (k.any_grid)
      rt.check(detail::driver_api()->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->kernels.back().function(),
                                                                                  k.block, k.shared_bytes),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    p->resident_grid.push_back(std::max(1, per_sm) * props.sm_count);
  }
  const std::size_t bytes = p->bytes() + key.size();
  return ex.programs.insert(key, std::move(p), bytes);
}

}  // namespace

RuntimeStats Runtime::stats() {
  RuntimeStats s;
  std::call_once(executor_once_, [this] { executor_ = std::make_shared<detail::Executor>(options_); });
  {
    std::lock_guard lock(executor_->mutex);
    s.programs = executor_->programs.stats();
  }
  {
    std::lock_guard lock(modules_mutex_);
    s.modules = modules_.stats();
  }
  s.kernels = cache_.stats();
  return s;
}

std::vector<Result> Runtime::run(const Program& program, const Bindings& bindings) {
  return execute(program, bindings, true);
}

std::vector<Result> Runtime::run_async(const Program& program, const Bindings& bindings) {
  return execute(program, bindings, false);
}

Result Runtime::run_async(const Expr& result, const Bindings& bindings) {
  auto all = run_async(Program(result), bindings);
  return std::move(all[0]);
}

std::vector<Result> Runtime::execute(const Program& program, const Bindings& bindings, bool wait) {
  ensure_usable();
  std::call_once(executor_once_, [this] { executor_ = std::make_shared<detail::Executor>(options_); });
  detail::Executor& ex = *executor_;
  std::lock_guard<std::mutex> lock(ex.mutex);

  // Bindings are checked before anything is compiled or launched.
  detail::BoundLeaves bound = detail::bind_leaves(program, bindings);
  const std::vector<CUdeviceptr>& input_ptrs = bound.input_ptrs;
  const std::vector<Value>& params = bound.params;
  // Held for the run: the cache may evict it meanwhile (another program's prepare), and a
  // pending scalar of run_async keeps it until read.
  const std::shared_ptr<detail::PreparedProgram> prepared = prepare(*this, ex, program, context_);
  detail::PreparedProgram& prep = *prepared;
  const codegen::Plan& plan = prep.plan;
  // Nsight shows each run and each kernel by name.
  nvtx::ScopedRange run_range(prep.range_name);
  std::vector<std::int64_t> lengths = detail::domain_lengths(program, plan, bound.input_lengths);
  detail::check_output_bindings(program, plan, bound, lengths);
  const std::int64_t n = lengths[0];
  if (!ex.tickets) {
    // Kept only once zeroed: a failed memset must not leave counters a later run trusts.
    auto tickets = std::make_unique<DeviceArray<unsigned>>(alloc<unsigned>(codegen::kTickets));
    zero(tickets->data(), codegen::kTickets * sizeof(unsigned));
    ex.tickets = std::move(tickets);
  }
  const codegen::Schedule schedule = plan.schedule(lengths);
  CUdeviceptr scratch_base = schedule.scratch_bytes ? scratch(schedule.scratch_bytes) : 0;
  for (const auto& [offset, bytes] : schedule.zeroed) zero(scratch_base + offset, bytes);
  std::size_t status_bytes = 0;
  for (const auto& launch : schedule.launches) status_bytes = std::max(status_bytes, launch.status_bytes);
  const CUdeviceptr status = status_bytes ? ex.lookback_status(*this, context_, status_bytes) : 0;

  // Array outputs are allocated per run and handed to the caller, or written into the
  // memory the caller bound them to. A counted output (a filter's survivors, reduce_by_key's
  // runs) gets room for its capacity and, after the elements, the 8-byte count its kernel
  // writes; the Result reads the count only when asked.
  std::vector<Result> results;
  std::vector<CUdeviceptr> output_ptrs(program.outputs().size(), 0), count_ptrs(program.outputs().size(), 0);
  std::vector<std::size_t> output_bytes(program.outputs().size(), 0), allocated_bytes(program.outputs().size(), 0);
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    if (plan.output_scalar[i] >= 0) continue;
    const Type& t = program.outputs()[i].type();
    // Elements of the output: n, or its own length (a histogram's bins, one per segment).
    const std::size_t count = detail::output_length(plan, i, lengths);
    const bool counted = !plan.output_shapes.empty() && plan.output_shapes[i].counted;
    output_bytes[i] = count * t.size();
    if (bound.output_bound(i)) {
      if (counted)
        throw GraphError("run: output " + std::to_string(i) + " is " + to_string(program.outputs()[i]) +
                         ", whose length only the device knows; it cannot be bound to caller memory, leave it unbound");
      output_ptrs[i] = bound.outputs[i].ptr;
      allocated_bytes[i] = output_bytes[i];
      results.push_back(Result::caller_array(context_, output_ptrs[i], count, t));
      continue;
    }
    const std::size_t count_offset = (output_bytes[i] + 7) / 8 * 8;
    allocated_bytes[i] = counted ? count_offset + sizeof(unsigned long long) : output_bytes[i];
    output_ptrs[i] = context_->allocate(allocated_bytes[i]);
    if (counted) count_ptrs[i] = output_ptrs[i] + count_offset;
    results.push_back(counted ? Result::counted_array(context_, output_ptrs[i], {count_ptrs[i], count}, t)
                              : Result::array(context_, output_ptrs[i], count, t));
  }

  if (ex.poison) {
    detail::DeviceContext::Scope scope(*context_);
    auto fill = [&](CUdeviceptr p, std::size_t bytes) {
      if (bytes) check(detail::driver_api()->cuMemsetD8Async(p, 0xff, bytes, stream()), "cuMemsetD8Async");
    };
    fill(prep.scalars, plan.scalar_bytes);
    // Not the caller's memory: it may be an input the kernels read (in place).
    for (std::size_t i = 0; i < output_ptrs.size(); ++i)
      // Counts too: one not written reads as too large.
      if (output_ptrs[i] && !bound.output_bound(i)) fill(output_ptrs[i], allocated_bytes[i]);
  }
  // Outputs the kernels add into (histogram counts) start at zero.
  for (std::size_t i = 0; i < plan.output_shapes.size(); ++i)
    if (output_ptrs[i] && output_bytes[i] && plan.output_shapes[i].zeroed) zero(output_ptrs[i], output_bytes[i]);

  // Flags of input only the device can check (segment offsets): zeroed and read back by
  // run; run_async neither waits nor checks, so it adds no work to the stream for them.
  const std::size_t flag_bytes = plan.checked_offsets.size() * sizeof(unsigned);
  if (flag_bytes && wait) zero(prep.invalid_flags, flag_bytes);

  // Arguments live in 16-byte cells; cuLaunchKernel reads each through its pointer.
  for (const auto& launch : schedule.launches) {
    std::size_t next_scratch = 0;
    const codegen::Kernel& k = plan.kernels[static_cast<std::size_t>(launch.kernel)];
    const unsigned epoch = launch.status_bytes ? ex.next_epoch(*this) : 0;
    nvtx::ScopedRange kernel_range(k.name);
    std::vector<std::array<unsigned char, 16>> cells(k.args.size());
    std::vector<void*> args;
    for (std::size_t a = 0; a < k.args.size(); ++a) {
      const codegen::Arg& arg = k.args[a];
      auto put = [&](const void* p, std::size_t bytes) { std::memcpy(cells[a].data(), p, bytes); };
      CUdeviceptr ptr = 0;
      switch (arg.kind) {
        case codegen::Arg::Kind::Input: ptr = input_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::Length:
          put(arg.index == 0 ? &launch.n : &lengths[static_cast<std::size_t>(arg.index)], sizeof launch.n);
          break;
        case codegen::Arg::Kind::Param: params[static_cast<std::size_t>(arg.index)].to_bytes(cells[a].data()); break;
        case codegen::Arg::Kind::Scalar:
        case codegen::Arg::Kind::ScalarOutput:
          ptr = prep.scalars + plan.scalars[static_cast<std::size_t>(arg.index)].offset;
          break;
        case codegen::Arg::Kind::Output: ptr = output_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::OutputCount: ptr = count_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::Scratch: ptr = scratch_base + launch.scratch.at(next_scratch++); break;
        case codegen::Arg::Kind::Ticket: ptr = ex.tickets->data() + arg.index * sizeof(unsigned); break;
        case codegen::Arg::Kind::TileStatus: ptr = status; break;
        case codegen::Arg::Kind::Epoch: put(&epoch, sizeof epoch); break;
        case codegen::Arg::Kind::InvalidFlag: ptr = prep.invalid_flags + arg.index * sizeof(unsigned); break;
      }
      if (arg.kind != codegen::Arg::Kind::Length && arg.kind != codegen::Arg::Kind::Param &&
          arg.kind != codegen::Arg::Kind::Epoch)
        put(&ptr, sizeof ptr);
      args.push_back(cells[a].data());
    }
    int grid = launch.grid;
    if (k.any_grid) grid = std::min(grid, prep.resident_grid[static_cast<std::size_t>(launch.kernel)]);
    launch_kernel(prep.kernels[static_cast<std::size_t>(launch.kernel)], grid, k.block, k.shared_bytes, args.data());
  }

  if (flag_bytes && wait) {
    std::vector<unsigned> flags(plan.checked_offsets.size());
    context_->copy_to_host(flags.data(), prep.invalid_flags, flag_bytes);
    for (std::size_t i = 0; i < flags.size(); ++i)
      if (flags[i]) detail::throw_invalid_offsets(program, *program.ops().at(prep.checked_op_index[i]), bound, n, *context_);
  }
  // Scalars come back in one copy (run), or stay on the device until read (run_async).
  std::vector<unsigned char> host(plan.scalar_bytes);
  if (plan.scalar_bytes && wait) context_->copy_to_host(host.data(), prep.scalars, plan.scalar_bytes);
  std::vector<Result> ordered;
  std::size_t next_array = 0;
  for (std::size_t i = 0; i < program.outputs().size(); ++i) {
    int slot = plan.output_scalar[i];
    if (slot < 0) {
      ordered.push_back(std::move(results[next_array++]));
    } else {
      const codegen::ScalarSlot& s = plan.scalars[static_cast<std::size_t>(slot)];
      ordered.push_back(wait ? Result::scalar(Value::from_bytes(s.type, host.data() + s.offset))
                             : Result::pending_scalar(context_, prep.scalars + s.offset, s.type, prepared));
    }
  }
  return ordered;
}

Result Runtime::run(const Expr& result, const Bindings& bindings) {
  auto all = run(Program(result), bindings);
  return std::move(all[0]);
}

void Runtime::launch_kernel(const KernelHandle& kernel, int grid, int block, std::size_t smem, void** args) {
  launch(kernel, Dim3{static_cast<unsigned>(grid), 1, 1}, Dim3{static_cast<unsigned>(block), 1, 1}, smem, args);
}

}  // namespace fuseflow
