// Preparing a program: its plan for this device and options, made once per structure
// (structure.hpp), its kernels compiled or fetched and loaded, its scalar and flag buffers.
#include <algorithm>

#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "device_target.hpp"
#include "prepared.hpp"

namespace fuseflow {

namespace {

const std::vector<Header>& embedded_headers() {
  static const std::vector<Header> headers = [] {
    std::vector<Header> out;
    for (const auto& h : codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return headers;
}

[[noreturn]] void throw_not_prepared() {
  throw CudaError("run_async (stream capture)", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                  detail::cuda_error_name(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
                  "this program has not run on this Runtime yet, and preparing it (planning, compiling, "
                  "cuModuleLoadData, allocating its buffers) cannot be captured into a CUDA graph; run it once, "
                  "with the sizes the graph will use, before cuStreamBeginCapture");
}

}  // namespace

namespace detail {

void PreparedProgram::schedule_for(const std::vector<std::int64_t>& lengths) {
  if (has_schedule && lengths == schedule_lengths) return;
  has_schedule = false;
  schedule = plan.schedule(lengths);
  schedule_lengths = lengths;
  // Zeroed scratch ranges a little apart become one memset: what lies between them is
  // scratch too, whose contents no kernel expects.
  zero_ranges.clear();
  std::vector<std::pair<std::size_t, std::size_t>> ranges = schedule.zeroed;
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [offset, bytes] : ranges) {
    if (!zero_ranges.empty()) {
      auto& [last, last_bytes] = zero_ranges.back();
      if (offset <= last + last_bytes + 4096) {
        last_bytes = std::max(last_bytes, offset + bytes - last);
        continue;
      }
    }
    zero_ranges.emplace_back(offset, bytes);
  }
  status_bytes = 0;
  for (const auto& launch : schedule.launches) status_bytes = std::max(status_bytes, launch.status_bytes);
  has_schedule = true;
}

std::shared_ptr<PreparedProgram> prepare(Runtime& rt, Executor& ex, const Program& program,
                                         const std::shared_ptr<DeviceContext>& context, bool capturing) {
  const DeviceProperties& props = rt.properties();
  const codegen::PlanOptions& options = *rt.options().plan;
  // The same Program object (or one with the same output nodes) as lately: its key without
  // a walk. Otherwise the walk, and the structure found in the cache or prepared.
  std::shared_ptr<const ProgramKey> key;
  // A program running on tier-0 kernels swaps in tier 1 once it is ready (tiered.hpp).
  const auto tier_up = [&](std::shared_ptr<PreparedProgram>& found) -> std::shared_ptr<PreparedProgram>& {
    if (found->tier_up)
      swap_in_tier1(*found, ex, [&rt](const CacheResult& r, std::string_view name) { return rt.loaded(r, name); },
                    capturing);
    return found;
  };
  if (const std::shared_ptr<const ProgramKey>* known = ex.known.find(program)) {
    if (std::shared_ptr<PreparedProgram>* found = ex.programs.find(*known)) return tier_up(*found);
    key = *known;  // evicted since: prepared again below
  } else {
    structural_key(program, ex.walked);
    if (std::shared_ptr<PreparedProgram>* found = ex.programs.find(ex.walked)) {
      ex.known.remember(program, (*found)->key);
      return tier_up(*found);
    }
    key = std::make_shared<const ProgramKey>(ex.walked);
  }
  if (capturing) throw_not_prepared();
  auto p = std::make_shared<PreparedProgram>(context);
  p->key = std::move(key);
  const codegen::Target target = device_target(props);
  p->plan = codegen::plan(program, target, options);
  p->range_name = p->plan.kernels.empty() ? "fuseflow run" : "fuseflow run " + p->plan.kernels.front().name;
  CompileOptions compile = rt.compile_options();
  const std::size_t flag_bytes = p->plan.checked_offsets.size() * sizeof(unsigned);
  p->flags_offset = (p->plan.scalar_bytes + 15) / 16 * 16;
  if (p->flags_offset + flag_bytes) {
    p->scalars = context->allocate(p->flags_offset + flag_bytes);
    p->invalid_flags = flag_bytes ? p->scalars + p->flags_offset : 0;
    bool direct = flag_bytes == 0;
    for (const auto& k : p->plan.kernels) {
      if (k.strategy == Strategy::Atomic) direct = false;
      for (const auto& a : k.args)
        if (a.kind == codegen::Arg::Kind::Scalar) direct = false;
    }
    p->direct_results = direct;
    p->host = context->allocate_host(p->flags_offset + flag_bytes, direct);
  }
  for (const auto& op : p->plan.checked_offsets) {
    if (!op) {  // the gathers' flag
      p->checked_op_index.push_back(0);
      continue;
    }
    const auto& ops = program.ops();
    const auto at = std::find(ops.begin(), ops.end(), op);
    if (at == ops.end()) throw InternalError("prepare: a checked op of the plan is not among the program's ops");
    p->checked_op_index.push_back(static_cast<std::size_t>(at - ops.begin()));
  }
  std::size_t most_args = 0;
  DeviceContext::Scope scope(*context);
  // The kernels are found or compiled as one batch: a program of several kernels compiles
  // its misses in parallel, one NVRTC program per thread and each distinct kernel once
  // (KernelCache::get_all), or tiered (tiered.hpp); then each is loaded.
  rt.ensure_usable();
  const std::vector<CacheResult> found =
      find_kernels(rt.cache_, *p, ex, compile, embedded_headers(), *rt.options().tiered,
                   [&rt](std::function<void()> work) { rt.in_background(std::move(work)); });
  for (std::size_t i = 0; i < p->plan.kernels.size(); ++i) {
    const codegen::KernelSpec& k = p->plan.kernels[i];
    most_args = std::max(most_args, k.args.size());
    p->kernels.push_back(rt.loaded(found[i], k.name));
    // Only a kernel that strides over its domain (any_grid) is launched with the resident
    // grid; the others (one block per tile) skip the occupancy query, which for more than
    // 48 KB of dynamic shared memory needs the kernel's opt-in first (Runtime::launch).
    int per_sm = 0;
    if (k.any_grid)
      rt.check(driver_api()->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p->kernels.back().function(), k.block,
                                                                         k.shared_bytes),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    p->resident_grid.push_back(std::max(1, per_sm) * props.sm_count);
  }
  p->cells.resize(most_args);
  p->args.resize(most_args);
  for (std::size_t a = 0; a < most_args; ++a) p->args[a] = p->cells[a].data();
  const std::size_t outputs = program.outputs().size();
  p->output_ptrs.resize(outputs);
  p->count_ptrs.resize(outputs);
  p->output_bytes.resize(outputs);
  p->allocated_bytes.resize(outputs);
  const std::size_t bytes = p->bytes();
  const std::shared_ptr<const ProgramKey> cached_key = p->key;
  std::shared_ptr<PreparedProgram> cached = ex.programs.insert(cached_key, std::move(p), bytes);
  ex.known.remember(program, cached_key);
  return cached;
}

}  // namespace detail

}  // namespace fuseflow
