#pragma once
// The Runtime's low-level building blocks, for tools and benchmarks that run their own
// CUDA kernels beside fuseflow's: compile-or-fetch and load a kernel, launch it on the
// Runtime's stream, the Runtime's scratch buffer, memsets, the kernel cache. Programs
// need none of this (Runtime::run does it all); these bypass its checks.
//
// Not synchronised: call them from one thread at a time, and not while another thread
// runs programs on the same Runtime.
#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fuseflow/runtime/runtime.hpp"

namespace fuseflow::low_level {

// The phases of a run's host time, in the order a run passes them (run_phases).
enum class RunPhase {
  bind,     // the bindings checked against the program (inputs, parameters, outputs)
  capture,  // cuCtxGetCurrent + cuStreamIsCapturing: the context made current, a capture looked for
  lookup,   // the prepared program found: by output identity, else the structural key's walk + hash lookup
  checks,   // domain lengths, output bindings, the schedule for these lengths, scratch
  outputs,  // array outputs allocated, memsets queued (poison, zeroed scratch and counters)
  args,     // kernel arguments packed into the argument cells
  launch,   // cuLaunchKernel (all launches of the run)
  copy,     // cuMemcpyDtoHAsync of the scalars (none when kernels write them to mapped memory)
  wait,     // cuStreamSynchronize (run only): the device's time, as the host sees it
  results,  // the Results made (scalars read from the pinned buffer)
};
inline constexpr std::size_t kRunPhases = 10;
inline constexpr std::array<const char*, kRunPhases> kRunPhaseNames = {
    "bind", "capture", "lookup", "checks", "outputs", "args", "launch", "copy", "wait", "results"};

// Host time per phase, summed over the runs since the last reset_run_phases. Measured only
// when fuseflow was built with -DFUSEFLOW_RUN_PHASES=ON (for the benchmark: it reads the
// clock about ten times per run); otherwise `enabled` is false and everything is zero.
struct RunPhases {
  bool enabled = false;
  std::uint64_t runs = 0;
  std::array<double, kRunPhases> microseconds{};
  double per_run(RunPhase p) const {
    return runs ? microseconds[static_cast<std::size_t>(p)] / static_cast<double>(runs) : 0.0;
  }
};
struct Access {
  static RunPhases run_phases(Runtime& rt);  // executor/execute.cpp
  static void reset_run_phases(Runtime& rt);
  static CompileOptions compile_options(const Runtime& rt) { return rt.compile_options(); }
  static KernelHandle load_kernel(Runtime& rt, std::string_view source, std::string_view name,
                                  const CompileOptions& options, std::span<const Header> headers) {
    return rt.load_kernel(source, name, options, headers);
  }
  static void launch(Runtime& rt, const KernelHandle& k, Dim3 grid, Dim3 block, std::size_t smem, void** args) {
    rt.launch(k, grid, block, smem, args);
  }
  static CUdeviceptr scratch(Runtime& rt, std::size_t bytes) { return rt.scratch(bytes); }
  static void zero(Runtime& rt, CUdeviceptr ptr, std::size_t bytes) { rt.zero(ptr, bytes); }
  static KernelCache& cache(Runtime& rt) { return rt.cache_; }
};

// Options for this device: its sm_XX, and PTX when NVRTC is newer than the driver; as
// for generated kernels (CompileOptions::minimal: no textures, no device runtime).
inline CompileOptions compile_options(const Runtime& rt) { return Access::compile_options(rt); }
// Compiles (or fetches from the cache) `source` and loads `kernel_name` from it (an
// extern "C" __global__ function).
inline KernelHandle load_kernel(Runtime& rt, std::string_view source, std::string_view kernel_name,
                                const CompileOptions& options, std::span<const Header> headers = {}) {
  return Access::load_kernel(rt, source, kernel_name, options, headers);
}
inline KernelHandle load_kernel(Runtime& rt, std::string_view source, std::string_view kernel_name) {
  CompileOptions options = compile_options(rt);
  options.minimal = false;  // a hand-written kernel may use textures
  return Access::load_kernel(rt, source, kernel_name, options, {});
}
// Launches on the Runtime's stream; raises the kernel's dynamic shared memory limit when
// it needs more than 48 KB. `args` as for cuLaunchKernel.
inline void launch(Runtime& rt, const KernelHandle& kernel, Dim3 grid, Dim3 block, std::size_t dynamic_smem,
                   void** args) {
  Access::launch(rt, kernel, grid, block, dynamic_smem, args);
}
// Device scratch of at least `bytes`, valid until the next scratch() call (runs use it too).
inline CUdeviceptr scratch(Runtime& rt, std::size_t bytes) { return Access::scratch(rt, bytes); }
// Zeroes `bytes` at `ptr`, ordered on the Runtime's stream.
inline void zero(Runtime& rt, CUdeviceptr ptr, std::size_t bytes) { Access::zero(rt, ptr, bytes); }
// Host time per phase of the runs since the last reset (RunPhases above).
inline RunPhases run_phases(Runtime& rt) { return Access::run_phases(rt); }
inline void reset_run_phases(Runtime& rt) { Access::reset_run_phases(rt); }
// The Runtime's kernel cache (memory and disk): its stats(), disk_enabled(), get().
inline KernelCache& cache(Runtime& rt) { return Access::cache(rt); }

}  // namespace fuseflow::low_level
