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
#include "prepared.hpp"

namespace fuseflow {

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
  const std::shared_ptr<detail::PreparedProgram> prepared = detail::prepare(*this, ex, program, context_);
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
    const codegen::KernelSpec& k = plan.kernels[static_cast<std::size_t>(launch.kernel)];
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
