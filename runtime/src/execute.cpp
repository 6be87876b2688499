// The executor: Runtime::run. Binds a program's inputs and parameters, plans it once
// (memoised per program), fetches its kernels from the kernel cache, lays out the
// scratch it needs (scalar slots, block partials), launches the kernels in order on the
// runtime's stream, and returns the results: scalars copied back in one transfer, arrays
// left on the device.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "bindings.hpp"
#include "nvtx.hpp"

namespace fuseflow {

// ---- Result -------------------------------------------------------------------------

Result Result::scalar(Value v) {
  Result r;
  r.value_ = std::move(v);
  r.type_ = r.value_.type();
  return r;
}

Result Result::array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t) {
  Result r;
  r.is_array_ = true;
  r.ctx_ = std::move(ctx);
  r.ptr_ = ptr;
  r.owns_ = true;
  r.size_ = n;
  r.type_ = std::move(t);
  return r;
}

Result Result::counted_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, DeviceCount count, Type t) {
  Result r = array(std::move(ctx), ptr, count.capacity, std::move(t));
  // With no room there is nothing to count (and no kernel may have run: reduce_by_key of
  // no elements launches none).
  if (count.capacity > 0) r.count_ = count;
  return r;
}

Result Result::caller_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t) {
  Result r = array(std::move(ctx), ptr, n, std::move(t));
  r.owns_ = false;
  r.caller_memory_ = true;
  return r;
}

Result Result::pending_scalar(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, Type t) {
  Result r;
  r.ctx_ = std::move(ctx);
  r.pending_ = ptr;
  r.type_ = std::move(t);
  return r;
}

Result::Result(Result&& o) noexcept
    : value_(std::move(o.value_)), pending_(std::exchange(o.pending_, 0)), ctx_(std::move(o.ctx_)), is_array_(o.is_array_), ptr_(std::exchange(o.ptr_, 0)),
      owns_(std::exchange(o.owns_, false)), moved_out_(o.moved_out_), caller_memory_(o.caller_memory_), size_(o.size_),
      count_(std::exchange(o.count_, {})), type_(std::move(o.type_)) {}

Result& Result::operator=(Result&& o) noexcept {
  if (this != &o) {
    if (owns_ && ptr_) ctx_->free(ptr_);
    value_ = std::move(o.value_);
    pending_ = std::exchange(o.pending_, 0);
    ctx_ = std::move(o.ctx_);
    is_array_ = o.is_array_;
    ptr_ = std::exchange(o.ptr_, 0);
    owns_ = std::exchange(o.owns_, false);
    moved_out_ = o.moved_out_;
    caller_memory_ = o.caller_memory_;
    size_ = o.size_;
    count_ = std::exchange(o.count_, {});
    type_ = std::move(o.type_);
  }
  return *this;
}

Result::~Result() {
  if (owns_ && ptr_) ctx_->free(ptr_);
}

const Type& Result::type() const { return type_; }

const Value& Result::value() const {
  if (is_array_) throw GraphError("result: this result is an array of " + type_.name() + " on the device, not a scalar; use .array<T>() or .download<T>()");
  if (pending_) {
    std::vector<unsigned char> bytes(type_.size());
    ctx_->copy_to_host(bytes.data(), pending_, bytes.size());
    value_ = Value::from_bytes(type_, bytes.data());
    pending_ = 0;
  }
  return value_;
}

std::size_t Result::size() const {
  if (!is_array_) throw GraphError("result: this result is a scalar " + type_.name() + ", not an array");
  if (moved_out_) throw GraphError("result: the array was already moved out");
  if (count_.at != 0) {
    size_ = detail::read_device_count(*ctx_, count_);
    count_ = {};
  }
  return size_;
}

Result::Released Result::release(const Type& want) {
  if (!is_array_) throw GraphError("result: this result is a scalar " + type_.name() + ", not an array");
  if (want != type_) throw GraphError("result: the array holds " + type_.name() + ", asked for " + want.name());
  if (caller_memory_)
    throw GraphError("result: the array was written into the memory it was bound to, which the caller owns; use that "
                     "memory (or download<T>())");
  if (moved_out_) throw GraphError("result: the array was already moved out");
  owns_ = false;
  moved_out_ = true;
  return {ctx_, std::exchange(ptr_, 0), size_, std::exchange(count_, {})};
}

void Result::copy_out(const Type& want, void* host) const {
  size();
  if (want != type_) throw GraphError("result: the array holds " + type_.name() + ", asked for " + want.name());
  if (size() != 0) ctx_->copy_to_host(host, ptr_, size_ * type_.size());
}

namespace detail {

std::size_t read_device_count(DeviceContext& context, const DeviceCount& count) {
  unsigned long long n = 0;
  context.copy_to_host(&n, count.at, sizeof n);
  if (n > count.capacity)
    throw Error("fuseflow: an array's element count on the device is " + std::to_string(n) + ", more than its " +
                std::to_string(count.capacity) + " elements of room: the kernel that counts it did not write it");
  return static_cast<std::size_t>(n);
}

}  // namespace detail

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
struct PreparedProgram {
  Program program;
  codegen::Plan plan;
  std::vector<KernelHandle> kernels;
  std::vector<int> resident_grid;  // per kernel: blocks resident at once on the whole device
  std::string range_name;          // NVTX range of a run: "fuseflow run <first kernel>"
  std::shared_ptr<DeviceContext> context;
  CUdeviceptr scalars = 0;  // plan.scalar_bytes
  CUdeviceptr invalid_flags = 0;  // one unsigned per plan.checked_offsets

  PreparedProgram(Program p, std::shared_ptr<DeviceContext> ctx) : program(std::move(p)), context(std::move(ctx)) {}
  PreparedProgram(const PreparedProgram&) = delete;
  PreparedProgram& operator=(const PreparedProgram&) = delete;
  ~PreparedProgram() {
    if (scalars) context->free(scalars);
    if (invalid_flags) context->free(invalid_flags);
  }
};

struct Executor {
  // FUSEFLOW_POISON=1 (the GPU tests set it): scalar slots and new output arrays (not
  // those in the caller's memory) are filled with 0xff bytes before the kernels run, so
  // an element a kernel failed to write shows up as a wrong answer instead of a lucky zero.
  bool poison = [] {
    const char* v = std::getenv("FUSEFLOW_POISON");
    return v && std::string(v) == "1";
  }();
  std::mutex mutex;
  std::map<std::vector<const ExprNode*>, std::unique_ptr<PreparedProgram>> programs;
  // Counters kernels leave zeroed (Arg::Kind::Ticket): [0] the reductions' last-block
  // ticket, [1] the look-back scans' tile counter, [2] the segmented reduce's "segments
  // left to the merge path" flag.
  std::unique_ptr<DeviceArray<unsigned>> tickets;
  // Look-back status (scan.cuh's ScanTileStatus), kept across runs and never cleared
  // between launches: each launch writes and accepts only entries of its own epoch.
  std::unique_ptr<ScratchPool> status;
  CUdeviceptr status_ptr = 0;
  unsigned epoch = 0;  // the last launch's
  // FUSEFLOW_LOOKBACK_EPOCHS=N (tests): start the epochs again after N launches instead of
  // codegen::kMaxLookbackEpoch, so that a test reaches the restart.
  unsigned max_epoch = [] {
    const char* v = std::getenv("FUSEFLOW_LOOKBACK_EPOCHS");
    const unsigned long long n = v && *v ? std::strtoull(v, nullptr, 10) : 0;
    return n >= 1 && n < codegen::kMaxLookbackEpoch ? static_cast<unsigned>(n) : codegen::kMaxLookbackEpoch;
  }();

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

namespace detail {
// TRANSITIONAL (issue 19, plan_options_env.cpp): the FUSEFLOW_* tuning variables as plan
// options, until the runtime's configuration (config.cpp) provides them.
codegen::PlanOptions plan_options_from_environment();
}  // namespace detail

namespace {

detail::PreparedProgram& prepare(Runtime& rt, detail::Executor& ex, const Program& program,
                                 const std::shared_ptr<detail::DeviceContext>& context) {
  std::vector<const ExprNode*> key;
  for (const auto& o : program.outputs()) key.push_back(o.get());
  auto it = ex.programs.find(key);
  if (it != ex.programs.end()) return *it->second;
  auto p = std::make_unique<detail::PreparedProgram>(program, context);
  const DeviceProperties& props = rt.properties();
  codegen::Target target;
  target.cc_major = props.cc_major;
  target.cc_minor = props.cc_minor;
  target.sm_count = props.sm_count;
  target.max_threads_per_sm = props.max_threads_per_sm;
  target.shared_per_block_optin = props.shared_memory_per_block_optin;
  p->plan = codegen::plan(program, target, detail::plan_options_from_environment());
  p->range_name = p->plan.kernels.empty() ? "fuseflow run" : "fuseflow run " + p->plan.kernels.front().name;
  CompileOptions options = rt.compile_options();
  if (p->plan.scalar_bytes) p->scalars = context->allocate(p->plan.scalar_bytes);
  if (!p->plan.checked_offsets.empty())
    p->invalid_flags = context->allocate(p->plan.checked_offsets.size() * sizeof(unsigned));
  detail::DeviceContext::Scope scope(*context);
  for (const auto& k : p->plan.kernels) {
    p->kernels.push_back(rt.load_kernel(k.source, k.name, options, embedded_headers()));
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
  return *ex.programs.emplace(std::move(key), std::move(p)).first->second;
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

std::vector<Result> Runtime::execute(const Program& program, const Bindings& bindings, bool wait) {
  ensure_usable();
  std::call_once(executor_once_, [this] { executor_ = std::make_shared<detail::Executor>(); });
  detail::Executor& ex = *executor_;
  std::lock_guard<std::mutex> lock(ex.mutex);

  // Bindings are checked before anything is compiled or launched.
  detail::BoundLeaves bound = detail::bind_leaves(program, bindings);
  const std::vector<CUdeviceptr>& input_ptrs = bound.input_ptrs;
  const std::vector<Value>& params = bound.params;
  detail::PreparedProgram& prep = prepare(*this, ex, program, context_);
  const codegen::Plan& plan = prep.plan;
  // Nsight shows each run and each kernel by name.
  nvtx::ScopedRange run_range(prep.range_name);
  std::vector<std::int64_t> lengths = detail::domain_lengths(program, plan, bound.input_lengths);
  detail::check_output_bindings(program, plan, bound, lengths);
  const std::int64_t n = lengths[0];
  if (!ex.tickets) {
    ex.tickets = std::make_unique<DeviceArray<unsigned>>(alloc<unsigned>(codegen::kTickets));
    zero(ex.tickets->data(), codegen::kTickets * sizeof(unsigned));
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
      if (flags[i]) detail::throw_invalid_offsets(program, *plan.checked_offsets[i], bound, n, *context_);
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
                             : Result::pending_scalar(context_, prep.scalars + s.offset, s.type));
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
