// The executor: Runtime::run. Binds a program's inputs and parameters, finds its prepared
// plan (prepared.cpp: planned once per structure, kernels loaded), lays out the scratch it
// needs (scalar slots, block partials), launches the kernels in order on the runtime's
// stream, and returns the results: scalars copied back in one transfer, arrays left on
// the device.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "../nvtx.hpp"
#include "bindings.hpp"
#include "fuseflow/runtime/low_level.hpp"
#include "prepared.hpp"

namespace fuseflow {

low_level::RunPhases low_level::Access::run_phases(Runtime& rt) {
  std::call_once(rt.executor_once_, [&rt] { rt.executor_ = std::make_shared<detail::Executor>(rt.options_); });
  std::lock_guard lock(rt.executor_->mutex);
  return rt.executor_->phases.read();
}

void low_level::Access::reset_run_phases(Runtime& rt) {
  std::call_once(rt.executor_once_, [&rt] { rt.executor_ = std::make_shared<detail::Executor>(rt.options_); });
  std::lock_guard lock(rt.executor_->mutex);
  rt.executor_->phases.reset();
}

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
  {
    std::lock_guard lock(executor_->mutex);
    s.tiers = executor_->tiers;
  }
  return s;
}

namespace {

// An array op's result that a later stage of the program reads (Plan::intermediates): in the
// program output it is as well, or in the run's scratch; its count after its n elements.
CUdeviceptr intermediate_ptr(const codegen::Plan& plan, const detail::PreparedProgram& prep,
                             const codegen::Schedule& schedule, CUdeviceptr scratch_base, const codegen::Arg& arg,
                             std::int64_t n) {
  const auto k = static_cast<std::size_t>(arg.index);
  const codegen::Intermediate& im = plan.intermediates.at(k);
  const bool count = arg.kind == codegen::Arg::Kind::IntermediateCount;
  if (im.output >= 0) {
    const auto o = static_cast<std::size_t>(im.output);
    return count ? prep.count_ptrs[o] : prep.output_ptrs[o];
  }
  return scratch_base + schedule.intermediates.at(k) + (count ? im.count_offset(n) : 0);
}

}  // namespace

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

namespace {

// A run's driver calls, made under one context scope (one cuCtxGetCurrent per run).
struct Calls {
  Runtime& rt;
  CUstream stream;
  const detail::DriverApi& api = *detail::driver_api();
  void memset(CUdeviceptr p, unsigned char value, std::size_t bytes) {
    if (bytes) rt.check(api.cuMemsetD8Async(p, value, bytes, stream), "cuMemsetD8Async");
  }
};

[[noreturn]] void throw_uncapturable(const std::string& what) {
  throw CudaError("run_async (stream capture)", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                  detail::cuda_error_name(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), what);
}

}  // namespace

// Where a small run's time goes (run() of a one-kernel reduction, n = 1024, prepared):
// driver calls, in order (the emulator's call log, emu_runtime_fault_test, checks them):
//   cuCtxGetCurrent       the run's one context scope
//   cuStreamIsCapturing   whether this run is being captured into a graph
//   cuMemsetD8Async       only when the schedule zeroes scratch or the program checks offsets
//   cuLaunchKernel        one per launch
//   cuMemcpyDtoHAsync     scalars and flags together, into the prepared program's pinned
//                         buffer; none when the kernels write the scalars there themselves
//                         (PreparedProgram::direct_results: no flags, no result read back)
//   cuStreamSynchronize   the one wait
// Host work besides: the bindings checked (vectors, no maps), the prepared program found
// by the identity of the outputs (a hash of a few pointers) and then by its structural key
// (one hash lookup and a compare of the key's words), the schedule reused when the lengths
// repeat, the argument cells and output vectors reused. A run before this had one
// cuCtxGetCurrent per memset, launch and copy, a pageable copy (staged by the driver) and
// a std::map per binding check, and built the schedule and a vector of cells per run.
std::vector<Result> Runtime::execute(const Program& program, const Bindings& bindings, bool wait) {
  ensure_usable();
  std::call_once(executor_once_, [this] { executor_ = std::make_shared<detail::Executor>(options_); });
  detail::Executor& ex = *executor_;
  std::lock_guard<std::mutex> lock(ex.mutex);
  using Phase = low_level::RunPhase;
  detail::PhaseClock& clock = ex.phases;
  clock.start();

  // Bindings are checked before anything is compiled or launched.
  detail::BoundLeaves& bound = ex.bound;
  detail::bind_leaves(program, bindings, bound);
  clock.mark(Phase::bind);
  detail::DeviceContext::Scope scope(*context_);
  Calls calls{*this, context_->stream()};
  // Inside a CUDA graph capture every operation of the run must be capturable: no
  // planning, compiling, allocation or waiting. What is not throws, naming it, before
  // anything is queued (a capture is never invalidated without a message).
  const bool capturing = context_->capturing();
  if (capturing && wait)
    throw_uncapturable("run() waits for its results (cuMemcpyDtoHAsync + cuStreamSynchronize), which a stream "
                       "being captured cannot do; use run_async() inside the capture and read the results after "
                       "the graph ran");
  clock.mark(Phase::capture);
  // Held for the run: the cache may evict it meanwhile (another program's prepare), and a
  // pending scalar of run_async keeps it until read.
  const std::shared_ptr<detail::PreparedProgram> prepared = detail::prepare(*this, ex, program, context_, capturing);
  detail::PreparedProgram& prep = *prepared;
  clock.mark(Phase::lookup);
  const codegen::Plan& plan = prep.plan;
  // run() of a program whose kernels may write their scalars straight to the host.
  const bool direct = wait && prep.direct_results;
  // Nsight shows each run and each kernel by name.
  nvtx::ScopedRange run_range(prep.range_name);
  std::vector<std::int64_t>& lengths = ex.lengths;
  detail::domain_lengths(program, plan, bound, lengths);
  detail::check_output_bindings(program, plan, bound, lengths);
  const std::int64_t n = lengths[0];
  if (capturing)
    for (std::size_t i = 0; i < program.outputs().size(); ++i)
      if (plan.output_scalar[i] < 0 && !bound.output_bound(i))
        throw_uncapturable("output " + std::to_string(i) + " (" + to_string(program.outputs()[i]) +
                           ") would be allocated by the run (cuMemAllocAsync), and memory a graph allocates is not "
                           "the caller's to keep; bind it to an array of yours ({output, array}), or, for an output "
                           "whose length only the device knows (a compaction), run it outside the capture");
  if (!ex.tickets) {
    if (capturing) throw_uncapturable("the Runtime's first run allocates its counters (cuMemAllocAsync, cuMemsetD8Async); run any program once before cuStreamBeginCapture");
    // Kept only once zeroed: a failed memset must not leave counters a later run trusts.
    auto tickets = std::make_unique<DeviceArray<unsigned>>(alloc<unsigned>(codegen::kTickets));
    zero(tickets->data(), codegen::kTickets * sizeof(unsigned));
    ex.tickets = std::move(tickets);
  }
  prep.schedule_for(lengths);
  const codegen::Schedule& schedule = prep.schedule;
  if (capturing && schedule.scratch_bytes > scratch_.capacity())
    throw_uncapturable("this run needs " + std::to_string(schedule.scratch_bytes) + " bytes of scratch, more than the " +
                       std::to_string(scratch_.capacity()) + " the Runtime holds, and growing it (cuStreamSynchronize, "
                       "cuMemFreeAsync, cuMemAllocAsync) cannot be captured; run the program once with these sizes "
                       "before cuStreamBeginCapture");
  if (capturing && prep.status_bytes > (ex.status ? ex.status->capacity() : 0))
    throw_uncapturable("this run's look-back scan needs " + std::to_string(prep.status_bytes) +
                       " bytes of tile status, more than the Runtime holds, and growing it cannot be captured; run "
                       "the program once with these sizes before cuStreamBeginCapture");
  const CUdeviceptr scratch_base = schedule.scratch_bytes ? scratch(schedule.scratch_bytes) : 0;
  for (const auto& [offset, bytes] : prep.zero_ranges) calls.memset(scratch_base + offset, 0, bytes);
  CUdeviceptr status = 0;
  if (prep.status_bytes) {
    if (!ex.status) ex.status = std::make_unique<ScratchPool>(context_);
    status = ex.status->get(prep.status_bytes);
    // Memory new to the pool is zeroed: no launch has epoch 0.
    if (status != ex.status_ptr) calls.memset(status, 0, ex.status->capacity());
    ex.status_ptr = status;
  }

  clock.mark(Phase::checks);

  // Array outputs are allocated per run and handed to the caller, or written into the
  // memory the caller bound them to. A counted output (a filter's survivors, reduce_by_key's
  // runs) gets room for its capacity and, after the elements, the 8-byte count its kernel
  // writes; the Result reads the count only when asked.
  // `results` is what run returns, in the program's output order: arrays made here, each
  // scalar a placeholder until its value is known (after the wait, or pending on the device).
  const std::size_t outputs = program.outputs().size();
  std::vector<Result> results;
  results.reserve(outputs);
  std::fill(prep.output_ptrs.begin(), prep.output_ptrs.end(), 0);
  std::fill(prep.count_ptrs.begin(), prep.count_ptrs.end(), 0);
  std::fill(prep.output_bytes.begin(), prep.output_bytes.end(), 0);
  std::fill(prep.allocated_bytes.begin(), prep.allocated_bytes.end(), 0);
  for (std::size_t i = 0; i < outputs; ++i) {
    if (const int slot = plan.output_scalar[i]; slot >= 0) {
      // run_async's scalar is its device slot from the start; run's is read after the wait.
      const codegen::ScalarSlot& s = plan.scalars[static_cast<std::size_t>(slot)];
      results.push_back(wait ? Result::scalar(Value())
                             : Result::pending_scalar(context_, prep.scalars + s.offset, s.type, prepared, capturing));
      continue;
    }
    const Type& t = program.outputs()[i].type();
    // Elements of the output: n, or its own length (a histogram's bins, one per segment).
    const std::size_t count = detail::output_length(plan, i, lengths);
    const bool counted = !plan.output_shapes.empty() && plan.output_shapes[i].counted;
    prep.output_bytes[i] = count * t.size();
    if (bound.output_bound(i)) {
      if (counted)
        throw GraphError("run: output " + std::to_string(i) + " is " + to_string(program.outputs()[i]) +
                         ", whose length only the device knows; it cannot be bound to caller memory, leave it unbound");
      prep.output_ptrs[i] = bound.outputs[i].ptr;
      prep.allocated_bytes[i] = prep.output_bytes[i];
      results.push_back(Result::caller_array(context_, prep.output_ptrs[i], count, t));
      continue;
    }
    const std::size_t count_offset = (prep.output_bytes[i] + 7) / 8 * 8;
    prep.allocated_bytes[i] = counted ? count_offset + sizeof(unsigned long long) : prep.output_bytes[i];
    prep.output_ptrs[i] = context_->allocate(prep.allocated_bytes[i]);
    // The Result owns the array from here, so an exception below frees it.
    if (counted) prep.count_ptrs[i] = prep.output_ptrs[i] + count_offset;
    results.push_back(counted ? Result::counted_array(context_, prep.output_ptrs[i], {prep.count_ptrs[i], count}, t)
                              : Result::array(context_, prep.output_ptrs[i], count, t));
  }

  if (ex.poison) {
    calls.memset(prep.scalars, 0xff, plan.scalar_bytes);
    // Not the caller's memory: it may be an input the kernels read (in place).
    for (std::size_t i = 0; i < outputs; ++i)
      // Counts too: one not written reads as too large.
      if (prep.output_ptrs[i] && !bound.output_bound(i)) calls.memset(prep.output_ptrs[i], 0xff, prep.allocated_bytes[i]);
  }
  // Outputs the kernels add into (histogram counts) start at zero.
  for (std::size_t i = 0; i < plan.output_shapes.size(); ++i)
    if (prep.output_ptrs[i] && plan.output_shapes[i].zeroed) calls.memset(prep.output_ptrs[i], 0, prep.output_bytes[i]);

  // Flags of input only the device can check (segment offsets): zeroed and read back by
  // run; run_async neither waits nor checks, so it adds no work to the stream for them.
  const std::size_t flag_bytes = plan.checked_offsets.size() * sizeof(unsigned);
  if (flag_bytes && wait) calls.memset(prep.invalid_flags, 0, flag_bytes);

  clock.mark(Phase::outputs);

  // Arguments live in 16-byte cells; cuLaunchKernel reads each through its pointer when
  // called, so the prepared program's cells serve every launch in turn.
  for (const auto& launch : schedule.launches) {
    std::size_t next_scratch = 0;
    const codegen::KernelSpec& k = plan.kernels[static_cast<std::size_t>(launch.kernel)];
    // The look-back epoch. A captured launch's is baked into the graph and every replay
    // reuses it, so entries the previous replay left would read as published by this one:
    // captured launches take the reserved epoch 1, which no launch outside a capture gets,
    // after a captured memset that zeroes the status they use (each replay zeroes it
    // again). Outside a capture the epochs count from 2; when they run out the status is
    // zeroed and they start again, so no entry can carry the epoch handed out.
    unsigned epoch = 0;
    if (launch.status_bytes) {
      if (capturing) {
        calls.memset(status, 0, launch.status_bytes);
        epoch = detail::Executor::kCapturedEpoch;
      } else {
        if (ex.epoch >= ex.max_epoch) {
          calls.memset(ex.status_ptr, 0, ex.status->capacity());
          ex.epoch = detail::Executor::kCapturedEpoch;
        }
        epoch = ++ex.epoch;
      }
    }
    nvtx::ScopedRange kernel_range(k.name);
    for (std::size_t a = 0; a < k.args.size(); ++a) {
      const codegen::Arg& arg = k.args[a];
      unsigned char* cell = prep.cells[a].data();
      CUdeviceptr ptr = 0;
      switch (arg.kind) {
        case codegen::Arg::Kind::Input:
        case codegen::Arg::Kind::Table: ptr = bound.input_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::TableLength:
          std::memcpy(cell, &bound.input_lengths[static_cast<std::size_t>(arg.index)], sizeof launch.n);
          continue;
        case codegen::Arg::Kind::Length:
          std::memcpy(cell, arg.index == 0 ? &launch.n : &lengths[static_cast<std::size_t>(arg.index)], sizeof launch.n);
          continue;
        case codegen::Arg::Kind::IntermediateLength: {
          const std::int64_t count = plan.intermediates.at(static_cast<std::size_t>(arg.index)).length(lengths);
          std::memcpy(cell, &count, sizeof count);
          continue;
        }
        case codegen::Arg::Kind::Param: bound.params[static_cast<std::size_t>(arg.index)].to_bytes(cell); continue;
        case codegen::Arg::Kind::Scalar:
          ptr = prep.scalars + plan.scalars[static_cast<std::size_t>(arg.index)].offset;
          break;
        case codegen::Arg::Kind::ScalarOutput:
          ptr = (direct ? reinterpret_cast<CUdeviceptr>(prep.host) : prep.scalars) +
                plan.scalars[static_cast<std::size_t>(arg.index)].offset;
          break;
        case codegen::Arg::Kind::Output: ptr = prep.output_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::OutputCount: ptr = prep.count_ptrs[static_cast<std::size_t>(arg.index)]; break;
        case codegen::Arg::Kind::Scratch: ptr = scratch_base + launch.scratch.at(next_scratch++); break;
        case codegen::Arg::Kind::Ticket: ptr = ex.tickets->data() + arg.index * sizeof(unsigned); break;
        case codegen::Arg::Kind::TileStatus: ptr = status; break;
        case codegen::Arg::Kind::Epoch: std::memcpy(cell, &epoch, sizeof epoch); continue;
        case codegen::Arg::Kind::InvalidFlag: ptr = prep.invalid_flags + arg.index * sizeof(unsigned); break;
        case codegen::Arg::Kind::Intermediate:
        case codegen::Arg::Kind::IntermediateCount: ptr = intermediate_ptr(plan, prep, schedule, scratch_base, arg, n); break;
      }
      std::memcpy(cell, &ptr, sizeof ptr);
    }
    int grid = launch.grid;
    if (k.any_grid) grid = std::min(grid, prep.resident_grid[static_cast<std::size_t>(launch.kernel)]);
    ex.tiers.tier0_launches += prep.tier0[static_cast<std::size_t>(launch.kernel)];
    clock.mark(Phase::args);
    launch_in_scope(prep.kernels[static_cast<std::size_t>(launch.kernel)], Dim3{static_cast<unsigned>(grid), 1, 1},
                    Dim3{static_cast<unsigned>(k.block), 1, 1}, k.shared_bytes, prep.args.data());
    clock.mark(Phase::launch);
  }

  // Scalars and flags come back in one copy into pinned memory and one wait (run), or
  // the scalars stay on the device until read (run_async).
  const std::size_t back = flag_bytes ? prep.flags_offset + flag_bytes : plan.scalar_bytes;
  if (back && wait) {
    if (!direct) check(calls.api.cuMemcpyDtoHAsync(prep.host, prep.scalars, back, calls.stream), "cuMemcpyDtoHAsync");
    clock.mark(Phase::copy);
    check(calls.api.cuStreamSynchronize(calls.stream), "cuStreamSynchronize");
    clock.mark(Phase::wait);
  }
  const auto* host = static_cast<const unsigned char*>(prep.host);
  if (flag_bytes && wait) {
    for (std::size_t i = 0; i < plan.checked_offsets.size(); ++i) {
      unsigned flag = 0;
      std::memcpy(&flag, host + prep.flags_offset + i * sizeof(unsigned), sizeof flag);
      if (!flag) continue;
      if (!plan.checked_offsets[i]) detail::throw_invalid_gather(program, bound, *context_);
      detail::throw_invalid_offsets(program, *program.ops().at(prep.checked_op_index[i]), bound, n, *context_);
    }
  }
  for (std::size_t i = 0; wait && i < outputs; ++i) {
    const int slot = plan.output_scalar[i];
    if (slot < 0) continue;
    const codegen::ScalarSlot& s = plan.scalars[static_cast<std::size_t>(slot)];
    results[i] = Result::scalar(Value::from_bytes(s.type, host + s.offset));
  }
  clock.mark(Phase::results);
  clock.finish();
  return results;
}

Result Runtime::run(const Expr& result, const Bindings& bindings) {
  auto all = run(Program(result), bindings);
  return std::move(all[0]);
}

}  // namespace fuseflow
