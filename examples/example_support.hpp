#pragma once
// What every example does on a machine without a GPU: print the plan and the generated
// CUDA, compile each kernel for sm_90 through the kernel cache (NVRTC needs no GPU, and
// a second run finds the binaries on disk), and say that nothing was run.
//
//   if (example::no_gpu(program)) return 0;   // no GPU: shown and compiled
//   ff::Runtime rt;                            // a GPU: run it and check the answer
#include <cstdio>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

namespace example {

namespace ff = fuseflow;

// The device helper library (fuseflow/collectives.cuh ...) as in-memory NVRTC headers.
inline const std::vector<ff::Header>& device_headers() {
  static const std::vector<ff::Header> headers = [] {
    std::vector<ff::Header> out;
    for (const auto& h : ff::codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return headers;
}

// Compiles every kernel of `program` for `arch` through the kernel cache, as a Runtime
// would, and prints one line per kernel. Throws ff::CompileError if NVRTC rejects one.
inline void compile(const ff::Program& program, const std::string& arch = "sm_90") {
  static ff::KernelCache cache;  // FUSEFLOW_CACHE_DIR, else ~/.cache/fuseflow
  ff::CompileOptions options;
  options.arch = arch;
  for (const auto& k : ff::codegen::plan(program, ff::codegen::Target::preset(arch)).kernels) {
    ff::CacheResult got = cache.get(k.name, k.source, options, device_headers());
    const char* how = got.outcome == ff::CacheOutcome::compiled ? "compiled by NVRTC" : "found in the kernel cache";
    std::printf("compiled %s for %s: %zu bytes of cubin (%s)\n", k.name.c_str(), arch.c_str(), got.kernel->image.size(),
                how);
  }
}

// Prints the plan (which starts with the program) and the CUDA, then compiles it.
inline void show(const ff::Program& program) {
  std::printf("%s\n%s\n", ff::explain(program).c_str(), ff::cuda_source(program).c_str());
  compile(program);
}

// True when there is no GPU, after showing and compiling `program`: the example stops.
inline bool no_gpu(const ff::Program& program) {
  if (ff::gpu_available()) return false;
  show(program);
  std::printf("no GPU found: the program was not run\n");
  return true;
}

}  // namespace example
