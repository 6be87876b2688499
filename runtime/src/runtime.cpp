#include "fuseflow/runtime/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/frontend/settings.hpp"
#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "executor/device_target.hpp"

namespace fuseflow {
namespace {

// Loading NVRTC (a ~100 MB library: 10-20 ms of dlopen) and creating the CUDA context
// are both needed before the first kernel; doing them at once hides the former, so a
// fresh process's first cache hit does not pay for NVRTC, nor its first compile for
// NVRTC's one-time set-up (Compiler::warm_up).
std::shared_ptr<detail::DeviceContext> open_device_loading_nvrtc(const RuntimeOptions& options) {
  std::future<NvrtcVersion> loading = std::async(std::launch::async, &Compiler::warm_up);
  auto context = std::make_shared<detail::DeviceContext>(options.device, options.stream);
  loading.get();  // rethrows "NVRTC could not be loaded"
  return context;
}

// The caller's options, with every setting left unset taken from the environment (read
// once, here); limits of 0 are refused.
RuntimeOptions resolve(RuntimeOptions options) {
  const EnvironmentConfig env = read_environment();
  if (!options.cache) options.cache = env.cache;
  if (!options.poison) options.poison = env.poison;
  if (!options.lookback_epochs) options.lookback_epochs = env.lookback_epochs;
  if (!options.plan) options.plan = env.plan;
  if (!options.tiered) options.tiered = env.tiered;
  // The frontend checks custom monoids' laws when a program is built: a process-wide
  // setting, which FUSEFLOW_CHECK_MONOIDS sets for the programs built from here on.
  if (env.check_monoids) set_monoid_checks(env.check_monoids);
  const CacheLimits& l = options.limits;
  for (auto [name, value] : {std::pair<const char*, std::size_t>{"limits.programs", l.programs},
                             {"limits.program_bytes", l.program_bytes},
                             {"limits.modules", l.modules},
                             {"limits.module_bytes", l.module_bytes},
                             {"cache->memory_entries", options.cache->memory_entries},
                             {"cache->memory_bytes", options.cache->memory_bytes}})
    if (value == 0)
      throw ConfigError(std::string("RuntimeOptions: ") + name +
                        " is 0; a cache limit must be at least 1 (an entry in use is always kept)");
  if (*options.lookback_epochs > codegen::kMaxLookbackEpoch)
    throw ConfigError("RuntimeOptions: lookback_epochs is " + std::to_string(*options.lookback_epochs) +
                      ", more than the " + std::to_string(codegen::kMaxLookbackEpoch) + " epochs there are");
  return options;
}

}  // namespace
Runtime::Runtime() : Runtime(RuntimeOptions{}) {}

Runtime::Runtime(RuntimeOptions options)
    : options_(resolve(std::move(options))),
      context_(open_device_loading_nvrtc(options_)),
      properties_(read_device_properties(options_.device)),
      // A cubin from an NVRTC newer than the driver may not load; PTX for compute_XX can
      // be JIT-compiled by the driver instead.
      ptx_fallback_(options_.force_ptx || Compiler::version().encoded() > driver_version()),
      cache_(*options_.cache),
      scratch_(context_),
      modules_(options_.limits.modules, options_.limits.module_bytes) {}

// Modules still used by a KernelHandle stay loaded until it goes (each holds the context).
// Precompiles in flight use the kernel cache: they finish first.
Runtime::~Runtime() {
  std::lock_guard lock(precompile_mutex_);
  for (PrecompileThread& p : precompiles_) p.thread.join();
}

LoadedKernel::~LoadedKernel() {
  if (!module || !context) return;
  detail::DeviceContext::Scope scope(*context, std::nothrow);
  detail::driver_api()->cuModuleUnload(module);
}

CompileOptions Runtime::compile_options() const {
  CompileOptions options;
  options.arch = properties_.arch();
  options.ptx = ptx_fallback_;
  // Tiered: no FMA contraction, at either tier, as which multiply-adds fuse depends on the
  // optimisation level (inlining, unrolling), so with it a quickly compiled kernel could
  // round differently from the optimised one (README "Tiered compilation"). Untiered:
  // NVRTC's default contraction, which is 2-2.5% faster on multiply-add chains.
  options.fmad = !*options_.tiered;
  options.minimal = true;  // generated kernels: no textures, no device runtime
  return options;
}

KernelHandle Runtime::load_kernel(std::string_view source, std::string_view kernel_name) {
  CompileOptions options = compile_options();
  options.minimal = false;  // a hand-written kernel may use textures
  return load_kernel(source, kernel_name, options);
}

KernelHandle Runtime::load_kernel(std::string_view source, std::string_view kernel_name,
                                  const CompileOptions& options, std::span<const Header> headers) {
  ensure_usable();
  return loaded(cache_.get(kernel_name, source, options, headers), kernel_name);
}

KernelHandle Runtime::loaded(const CacheResult& found, std::string_view kernel_name) {
  std::lock_guard lock(modules_mutex_);
  if (std::shared_ptr<LoadedKernel>* loaded = modules_.find(found.kernel.get())) return KernelHandle(*loaded);
  return KernelHandle(load_module(found, kernel_name));
}

std::shared_ptr<LoadedKernel> Runtime::load_module(const CacheResult& found, std::string_view kernel_name) {
  detail::DeviceContext::Scope scope(*context_);
  const detail::DriverApi& api = *detail::driver_api();
  auto kernel = std::make_shared<LoadedKernel>();
  kernel->name = std::string(kernel_name);
  kernel->hash = found.hash;
  kernel->binary = found.kernel;
  check(api.cuModuleLoadData(&kernel->module, found.kernel->image.data()), "cuModuleLoadData");
  kernel->context = context_;  // from here on the destructor unloads the module
  const CUresult got = api.cuModuleGetFunction(&kernel->function, kernel->module, kernel->name.c_str());
  if (got != CUDA_SUCCESS) {
    check(got, ("cuModuleGetFunction(" + kernel->name +
                "): is the kernel declared extern \"C\" __global__ with that name?")
                   .c_str());
  }
  int static_smem = 0;
  check(api.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel->function),
        "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  kernel->static_smem = static_cast<std::size_t>(std::max(0, static_smem));
  kernel->dynamic_smem_limit = 48 * 1024 - std::min<std::size_t>(48 * 1024, kernel->static_smem);
  const std::size_t bytes = found.kernel->image.size() + kernel->name.size() + sizeof(LoadedKernel);
  return modules_.insert(found.kernel.get(), std::move(kernel), bytes);
}

void Runtime::launch(const KernelHandle& handle, Dim3 grid, Dim3 block, std::size_t dynamic_smem,
                     void** args) {
  ensure_usable();
  detail::DeviceContext::Scope scope(*context_);
  launch_in_scope(handle, grid, block, dynamic_smem, args);
}

void Runtime::launch_in_scope(const KernelHandle& handle, Dim3 grid, Dim3 block, std::size_t dynamic_smem,
                              void** args) {
  LoadedKernel& kernel = handle.kernel();
  const detail::DriverApi& api = *detail::driver_api();
  if (dynamic_smem > kernel.dynamic_smem_limit) {
    if (kernel.static_smem + dynamic_smem > properties_.shared_memory_per_block_optin)
      throw CudaError("cuLaunchKernel(" + kernel.name + ")", CUDA_ERROR_INVALID_VALUE,
                      detail::cuda_error_name(CUDA_ERROR_INVALID_VALUE),
                      "kernel asks for " + std::to_string(dynamic_smem) + " bytes of dynamic shared memory beside its " +
                          std::to_string(kernel.static_smem) + " static bytes; this GPU allows at most " +
                          std::to_string(properties_.shared_memory_per_block_optin) + " in all");
    // Beyond 48 KB of static and dynamic shared memory together a kernel must opt in
    // (exactly 48 KB of dynamic memory beside a few static bytes too); the attribute
    // sticks to the function, so it is set once per new maximum.
    check(api.cuFuncSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(dynamic_smem)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    kernel.dynamic_smem_limit = dynamic_smem;
  }
  check(api.cuLaunchKernel(kernel.function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                           static_cast<unsigned>(dynamic_smem), context_->stream(), args, nullptr),
        "cuLaunchKernel");
}

void Runtime::synchronize() { context_->synchronize(); }

CUdeviceptr Runtime::scratch(std::size_t bytes) {
  ensure_usable();
  return scratch_.get(bytes);
}

void Runtime::zero(CUdeviceptr ptr, std::size_t bytes) {
  ensure_usable();
  if (bytes == 0) return;
  detail::DeviceContext::Scope scope(*context_);
  check(detail::driver_api()->cuMemsetD8Async(ptr, 0, bytes, context_->stream()), "cuMemsetD8Async");
}

}  // namespace fuseflow

// --- precompile ---------------------------------------------------------------------
// The executor's recipe (executor/prepared.cpp) up to the kernel cache: the plan for this
// device and options, each kernel with compile_options() and the embedded device headers
// in device_headers()' order, so that the keys are the ones a run looks up.

namespace fuseflow {

namespace {

// Background compiles still running when the process exits (a Runtime never destroyed):
// an atexit handler, registered after NVRTC and the caches' statics were made, waits for
// them before those statics are destroyed under them.
struct InFlight {
  std::mutex mutex;
  std::condition_variable idle;
  int count = 0;
};
InFlight& in_flight() {
  static InFlight* state = new InFlight;  // never destroyed: used by the atexit handler
  return *state;
}
void wait_for_background() {
  InFlight& f = in_flight();
  std::unique_lock lock(f.mutex);
  f.idle.wait(lock, [&] { return f.count == 0; });
}

}  // namespace

void Runtime::in_background(std::function<void()> work) {
  static const bool registered = [] { return std::atexit(wait_for_background) == 0; }();
  (void)registered;
  {
    std::lock_guard lock(in_flight().mutex);
    ++in_flight().count;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(precompile_mutex_);
  std::erase_if(precompiles_, [](PrecompileThread& p) {
    if (!p.done->load()) return false;
    p.thread.join();
    return true;
  });
  precompiles_.push_back({std::thread([work = std::move(work), done] {
                            work();  // catches its own errors
                            done->store(true);
                            InFlight& f = in_flight();
                            std::lock_guard flight(f.mutex);
                            if (--f.count == 0) f.idle.notify_all();
                          }),
                          done});
}

std::future<PrecompileReport> Runtime::precompile(const Program& program) {
  return precompile(std::vector<Program>{program});
}

std::future<PrecompileReport> Runtime::precompile(std::vector<Program> programs) {
  const codegen::Target target = detail::device_target(properties_);
  const codegen::PlanOptions plan_options = *options_.plan;
  const CompileOptions compile = compile_options();
  std::packaged_task<PrecompileReport()> task([this, programs = std::move(programs), target, plan_options, compile] {
    const auto start = std::chrono::steady_clock::now();
    std::vector<codegen::Plan> plans;
    for (const Program& program : programs) plans.push_back(codegen::plan(program, target, plan_options));
    std::vector<KernelSource> kernels;
    for (const codegen::Plan& plan : plans)
      for (const auto& k : plan.kernels) kernels.push_back({k.name, k.source});
    std::vector<Header> headers;
    for (const auto& h : codegen::device_headers()) headers.push_back({h.name, h.text});
    PrecompileReport report;
    report.programs = programs.size();
    report.kernels = kernels.size();
    for (const CacheResult& r : cache_.get_all(kernels, compile, headers)) {
      if (r.outcome == CacheOutcome::compiled) ++report.compiled;
      else if (r.outcome == CacheOutcome::disk_hit) ++report.disk_hits;
      else ++report.memory_hits;
    }
    report.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return report;
  });
  std::future<PrecompileReport> result = task.get_future();
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(precompile_mutex_);
  std::erase_if(precompiles_, [](PrecompileThread& p) {
    if (!p.done->load()) return false;
    p.thread.join();
    return true;
  });
  precompiles_.push_back({std::thread([task = std::move(task), done]() mutable {
                            task();
                            done->store(true);
                          }),
                          done});
  return result;
}

}  // namespace fuseflow
