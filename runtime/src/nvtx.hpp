#pragma once
// NVTX ranges, so that Nsight Systems shows fuseflow's work by name: a range per run
// (named after the program) and one per kernel launch (named after the kernel), in an
// NVTX domain called "fuseflow". NVTX v3 is header-only and costs a predictable branch
// per range when no profiler is attached: the library stays free of libnvToolsExt.
#include <string>

namespace fuseflow::nvtx {

// Pushes a range on construction and pops it on destruction, on the calling thread.
class ScopedRange {
 public:
  explicit ScopedRange(const std::string& name) : ScopedRange(name.c_str()) {}
  explicit ScopedRange(const char* name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace fuseflow::nvtx
