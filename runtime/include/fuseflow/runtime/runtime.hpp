#pragma once
// ff::Runtime: one GPU, its primary context, a stream, the kernel cache and a scratch
// pool. Everything the layers above need to turn CUDA source into results: upload,
// compile-or-fetch, launch, download. It knows nothing of the DSL; the executor adds
// run(program, bindings) in its own source file, using the members below.
#include <cuda.h>

#include <cstddef>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <thread>
#include <utility>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuseflow/codegen/plan_options.hpp"
#include "fuseflow/runtime/compile_options.hpp"
#include "fuseflow/runtime/compiler.hpp"
#include "fuseflow/runtime/device.hpp"
#include "fuseflow/runtime/device_array.hpp"
#include "fuseflow/runtime/device_context.hpp"
#include "fuseflow/runtime/error.hpp"
#include "fuseflow/runtime/execute.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"
#include "fuseflow/runtime/lru_cache.hpp"
#include "fuseflow/runtime/memory_pool.hpp"

namespace fuseflow {

class Runtime;
namespace detail {
struct Executor;
struct PreparedProgram;
std::shared_ptr<PreparedProgram> prepare(Runtime& rt, Executor& ex, const Program& program,
                                         const std::shared_ptr<DeviceContext>& context, bool capturing);
}  // namespace detail
namespace low_level {
struct Access;
}  // namespace low_level

// How many prepared programs and loaded modules a Runtime keeps, by count and by the bytes
// they hold; past a limit the least recently used go (a prepared program's device buffers
// are freed, a module no handle uses any more is unloaded). A limit of 0 is a ConfigError.
struct CacheLimits {
  std::size_t programs = 1024;                       // prepared programs (plans, kernels, buffers)
  std::size_t program_bytes = std::size_t{64} << 20;  // their device buffers and host text
  std::size_t modules = 1024;                        // loaded CUDA modules
  std::size_t module_bytes = std::size_t{256} << 20;  // their images
};

// Every setting also has a FUSEFLOW_* variable (config.hpp, README "Environment
// variables"), read when the Runtime is made; a field set here wins over it.
struct RuntimeOptions {
  int device = 0;
  // nullptr: the Runtime creates and owns a stream. Otherwise all work goes on this
  // stream, which the caller keeps alive for the Runtime's lifetime.
  CUstream stream = nullptr;
  // nullopt: from the environment (FUSEFLOW_CACHE, FUSEFLOW_CACHE_DIR, FUSEFLOW_DUMP,
  // FUSEFLOW_LOG).
  std::optional<CacheSettings> cache;
  // Always produce PTX and let the driver JIT it (normally only when NVRTC is newer
  // than the driver).
  bool force_ptx = false;
  // Fill scalar results and new output arrays with 0xff bytes before the kernels run
  // (FUSEFLOW_POISON), so an element a kernel failed to write shows up.
  std::optional<bool> poison;
  // Start the look-back epochs again after this many launches (FUSEFLOW_LOOKBACK_EPOCHS;
  // tests); 0: after codegen::kMaxLookbackEpoch.
  std::optional<unsigned> lookback_epochs;
  // The planner's overrides (FUSEFLOW_SCAN_TILE, FUSEFLOW_SCAN_STAGED_FROM, ...).
  std::optional<codegen::PlanOptions> plan;
  CacheLimits limits;
  // Tiered compilation (README "Tiered compilation"): a program whose kernels are in
  // neither cache runs first with quickly compiled kernels (tier 0, CompileOptions::quick)
  // while the fully optimised ones (tier 1) compile on a background thread; a later run
  // swaps them in, and only tier 1 is stored on disk. Both tiers compute the same bits
  // (CompileOptions::fmad is off for both; an untiered Runtime keeps NVRTC's default
  // contraction). Kernels that may run on any grid stay tier 1:
  // their grid follows the binary's occupancy, and a float reduction's bits the grid.
  // nullopt: FUSEFLOW_TIERED (default off).
  std::optional<bool> tiered;
};

// Tiered compilation's counters (RuntimeOptions::tiered).
struct TierStats {
  std::uint64_t tier0_compiles = 0;   // kernels compiled quickly for a first run
  std::uint64_t tier0_launches = 0;   // launches of such kernels
  std::uint64_t swaps = 0;            // tier-1 kernels swapped in for later runs
  std::uint64_t failures = 0;         // background compiles that failed (tier 0 kept; warned)
};

// What the Runtime's caches did and hold (Runtime::stats()).
struct RuntimeStats {
  LruStats programs;   // prepared programs, found by structure (a hit: no planning)
  LruStats modules;    // loaded modules (a hit: no cuModuleLoadData)
  CacheStats kernels;  // the kernel cache: memory, disk, NVRTC
  TierStats tiers;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// What Runtime::precompile did: the kernels of the programs' plans and how each was had.
struct PrecompileReport {
  std::size_t programs = 0;
  std::size_t kernels = 0;      // as planned (a kernel shared by two programs counts twice)
  std::size_t compiled = 0;     // NVRTC runs
  std::size_t disk_hits = 0;
  std::size_t memory_hits = 0;  // already compiled in this process
  double milliseconds = 0;      // planning + compiling, wall time
};

// A loaded module and its kernel. The module is unloaded when the last KernelHandle (and
// the Runtime's module cache) lets go of it.
struct LoadedKernel {
  std::string name;
  std::uint64_t hash = 0;
  std::shared_ptr<detail::DeviceContext> context;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::shared_ptr<const CompiledKernel> binary;
  std::size_t static_smem = 0;  // the function's own __shared__ bytes
  // The dynamic shared memory the function allows right now: without an opt-in, static
  // and dynamic together stay within 48 KB.
  std::size_t dynamic_smem_limit = 48 * 1024;

  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  ~LoadedKernel();  // cuModuleUnload
};

// A copyable reference to a LoadedKernel that keeps its module loaded while it lives.
class KernelHandle {
 public:
  KernelHandle() = default;
  explicit KernelHandle(std::shared_ptr<LoadedKernel> kernel) : kernel_(std::move(kernel)) {}
  explicit operator bool() const noexcept { return kernel_ != nullptr; }
  CUfunction function() const noexcept { return kernel_->function; }
  const std::string& name() const noexcept { return kernel_->name; }
  std::uint64_t hash() const noexcept { return kernel_->hash; }
  LoadedKernel& kernel() const noexcept { return *kernel_; }

 private:
  std::shared_ptr<LoadedKernel> kernel_;
};

// Thread safety: run, run_async, alloc, upload and download (and low_level::load_kernel)
// may be called from several host threads at once on one Runtime. Runs are serialised (one mutex per
// Runtime, held while a run binds, compiles, launches and, for run, copies its scalars
// back), so they execute one after another on the Runtime's stream; compiling a program
// for the first time holds up other threads' runs meanwhile. The low-level building blocks
// (fuseflow/runtime/low_level.hpp: launch, scratch, zero) are not synchronised. Two Runtimes are
// independent (each has its own stream) and may be used concurrently, also on one device.
class Runtime {
 public:
  // Throws CudaError when there is no CUDA driver or no GPU.
  Runtime();
  explicit Runtime(RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // --- memory -------------------------------------------------------------------
  template <class T>
  DeviceArray<T> alloc(std::size_t n) {
    ensure_usable();
    return DeviceArray<T>(context_, n);
  }
  template <class T>
  DeviceArray<T> upload(std::span<const T> values) {
    DeviceArray<T> array = alloc<T>(values.size());
    array.upload(values);
    return array;
  }
  template <class T>
  DeviceArray<T> upload(const std::vector<T>& values) {
    return upload(std::span<const T>(values));
  }
  template <class T>
  std::vector<T> download(const DeviceArray<T>& array) {
    return array.download();
  }
  template <class T>
  std::vector<T> download(device_span<T> view) {
    std::vector<T> out(view.size());
    if (!out.empty()) context_->copy_to_host(out.data(), view.data(), view.size_bytes());
    return out;
  }
  void synchronize();

  // --- programs (execute.cpp) --------------------------------------------------
  // Runs a program: binds its inputs ({x, device_array} or {x, device_span}) and
  // parameters ({t, 0.5f}), plans and compiles it on first use (then from the caches),
  // launches its kernels on this runtime's stream. Scalars come back to the host;
  // arrays stay on the device. Thread-safe: runs on one Runtime are serialised.
  // A run of a segmented op waits for its kernels and throws GraphError (the CPU
  // reference's message) when the device found its offsets invalid.
  Result run(const Expr& result, const Bindings& bindings = {});
  std::vector<Result> run(const Program& program, const Bindings& bindings = {});
  template <std::size_t N>
  std::array<Result, N> run(const Outputs<N>& program, const Bindings& bindings = {}) {
    std::vector<Result> all = run(static_cast<const Program&>(program), bindings);
    return move_to_array(all, std::make_index_sequence<N>{});
  }

  // Like run, without waiting: the kernels are queued on the stream and run_async
  // returns at once. A scalar result stays on the device until its value() is read
  // (which waits); it is overwritten when the same program runs again, so read it
  // before that. Arrays are ready once the stream reaches them. Not waiting, it does not
  // report invalid segment offsets: the kernels still stay in bounds, and the results of
  // the segments concerned are unspecified.
  //
  // CUDA graphs: run_async may be called while the Runtime's stream is being captured
  // (cuStreamBeginCapture / cudaStreamBeginCapture). Every operation of the run is then
  // captured: memsets, launches. Nothing may be planned, compiled, allocated or waited for,
  // so the program must have run once before on this Runtime with the same sizes, and its
  // array results must be bound to the caller's memory ({result, array}); otherwise, and
  // for run() (which waits), a CudaError (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) says which
  // operation cannot be captured and why, before anything is queued. A scalar result of a
  // captured run reads the device at every value(): after each launch of the graph (on this
  // stream, or ordered before the read) it gives that launch's value. The graph uses the
  // Runtime's scratch, counters and look-back status: launch it on this stream, not beside
  // other runs of this Runtime. Look-back scans zero their status in the graph, so replays
  // never read an earlier replay's entries.
  Result run_async(const Expr& result, const Bindings& bindings = {});
  std::vector<Result> run_async(const Program& program, const Bindings& bindings = {});

  // The plan of `program` for this device and these options, as text: the kernels, their
  // strategies and why. Given bindings (checked as run checks them), also the launches a
  // run with their sizes makes: grids, blocks, shared memory, scratch. Compiles nothing.
  std::string explain(const Program& program, const Bindings& bindings = {});
  // The checks run makes of `bindings` before it launches anything (GraphError naming what
  // is wrong), against the plan for this device; ff::check_bindings, without a device,
  // checks against sm_90's.
  void check_bindings(const Program& program, const Bindings& bindings);

  // --- ahead of time (runtime.cpp, "precompile") -------------------------------
  // Plans `programs` for this device and options and compiles their kernels into the
  // kernel cache (memory, and the disk unless it is read-only) on a thread of its own,
  // the kernels in parallel; nothing is loaded or launched. A later run of such a program
  // then finds its kernels in memory (in this process) or on disk (in the next): no NVRTC.
  // Plans do not depend on the lengths of the arrays a run binds, so no shapes are
  // needed. The future holds the report, or the first GraphError/CompileError. Runs may
  // go on meanwhile; destroying the Runtime waits for precompiles in flight.
  std::future<PrecompileReport> precompile(const Program& program);
  std::future<PrecompileReport> precompile(std::vector<Program> programs);

  // --- state --------------------------------------------------------------------
  const DeviceProperties& properties() const noexcept { return properties_; }
  // The options in force: the caller's, with what was left unset from the environment.
  const RuntimeOptions& options() const noexcept { return options_; }
  // Hits, misses, evictions and bytes held of the prepared programs, the loaded modules
  // and the kernel cache.
  RuntimeStats stats();
  CUstream stream() const noexcept { return context_->stream(); }
  CUcontext context() const noexcept { return context_->context(); }
  // Throws CudaError when an earlier error left the device unusable.
  void ensure_usable() const { context_->ensure_usable(); }
  // For the executor: the checks every driver call goes through.
  void check(CUresult result, const char* call) { context_->check(result, call); }

 private:
  // The low-level building blocks (fuseflow/runtime/low_level.hpp: ff::low_level::load_kernel,
  // launch, scratch, zero, cache, compile_options); the executor uses them too.
  friend struct low_level::Access;
  friend std::shared_ptr<detail::PreparedProgram> detail::prepare(Runtime&, detail::Executor&, const Program&,
                                                                  const std::shared_ptr<detail::DeviceContext>&, bool);
  // Device scratch of at least `bytes`, valid until the next scratch() call.
  CUdeviceptr scratch(std::size_t bytes);
  // Zeroes `bytes` at `ptr`, ordered on the stream (e.g. tickets in scratch).
  void zero(CUdeviceptr ptr, std::size_t bytes);

  // Options for this device: its sm_XX, and PTX when NVRTC is newer than the driver.
  CompileOptions compile_options() const;
  // Compiles (or fetches from the cache) `source` and loads `kernel_name` from it
  // (an extern "C" __global__ function).
  KernelHandle load_kernel(std::string_view source, std::string_view kernel_name,
                           const CompileOptions& options, std::span<const Header> headers = {});
  KernelHandle load_kernel(std::string_view source, std::string_view kernel_name);
  // Launches on the runtime's stream; raises the kernel's dynamic shared memory limit
  // when it needs more than 48 KB. `args` as for cuLaunchKernel.
  void launch(const KernelHandle& kernel, Dim3 grid, Dim3 block, std::size_t dynamic_smem,
              void** args);
  std::shared_ptr<LoadedKernel> load_module(const CacheResult& found, std::string_view kernel_name);
  // Runs `work` on a thread of its own, joined by the destructor (a tier-1 compile).
  void in_background(std::function<void()> work);
  // The loaded module of a kernel the cache has found or compiled (load_kernel's second half).
  KernelHandle loaded(const CacheResult& found, std::string_view kernel_name);
  std::vector<Result> execute(const Program& program, const Bindings& bindings, bool wait);
  // launch, with the context current already (a run makes it current once).
  void launch_in_scope(const KernelHandle& kernel, Dim3 grid, Dim3 block, std::size_t dynamic_smem, void** args);
  template <std::size_t... I>
  static std::array<Result, sizeof...(I)> move_to_array(std::vector<Result>& all, std::index_sequence<I...>) {
    return {std::move(all[I])...};
  }
  RuntimeOptions options_;  // first: the members below are made from it
  std::once_flag executor_once_;  // the executor is made by the first run, once
  std::shared_ptr<detail::Executor> executor_;

  std::shared_ptr<detail::DeviceContext> context_;
  DeviceProperties properties_;
  bool ptx_fallback_ = false;
  KernelCache cache_;
  ScratchPool scratch_;
  // Keyed by the cached binary object: a module holds its binary, so while the entry
  // lives no other kernel can have that address (no hash collision risk either).
  std::mutex modules_mutex_;
  detail::LruCache<const CompiledKernel*, std::shared_ptr<LoadedKernel>> modules_;

  // precompile's threads, each with a flag set when it is done (finished ones are joined
  // at the next precompile, the rest by the destructor).
  struct PrecompileThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex precompile_mutex_;
  std::vector<PrecompileThread> precompiles_;
};

}  // namespace fuseflow
