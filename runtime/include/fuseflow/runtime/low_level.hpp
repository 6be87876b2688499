#pragma once
// The Runtime's low-level building blocks, for tools and benchmarks that run their own
// CUDA kernels beside fuseflow's: compile-or-fetch and load a kernel, launch it on the
// Runtime's stream, the Runtime's scratch buffer, memsets, the kernel cache. Programs
// need none of this (Runtime::run does it all); these bypass its checks.
//
// Not synchronised: call them from one thread at a time, and not while another thread
// runs programs on the same Runtime.
#include <cuda.h>

#include <cstddef>
#include <span>
#include <string_view>

#include "fuseflow/runtime/runtime.hpp"

namespace fuseflow::low_level {

struct Access {
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

// Options for this device: its sm_XX, and PTX when NVRTC is newer than the driver.
inline CompileOptions compile_options(const Runtime& rt) { return Access::compile_options(rt); }
// Compiles (or fetches from the cache) `source` and loads `kernel_name` from it (an
// extern "C" __global__ function).
inline KernelHandle load_kernel(Runtime& rt, std::string_view source, std::string_view kernel_name,
                                const CompileOptions& options, std::span<const Header> headers = {}) {
  return Access::load_kernel(rt, source, kernel_name, options, headers);
}
inline KernelHandle load_kernel(Runtime& rt, std::string_view source, std::string_view kernel_name) {
  return Access::load_kernel(rt, source, kernel_name, compile_options(rt), {});
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
// The Runtime's kernel cache (memory and disk): its stats(), disk_enabled(), get().
inline KernelCache& cache(Runtime& rt) { return Access::cache(rt); }

}  // namespace fuseflow::low_level
