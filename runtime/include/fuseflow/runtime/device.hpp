#pragma once
// What codegen needs to know about the GPU to choose tuning constants, read once.
#include <cstddef>
#include <string>

namespace fuseflow {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int warp_size = 32;
  std::size_t shared_memory_per_block = 0;        // without opting in (48 KB)
  std::size_t shared_memory_per_block_optin = 0;  // with the dynamic-smem attribute
  std::size_t shared_memory_per_sm = 0;
  std::size_t l2_cache_bytes = 0;
  std::size_t total_memory_bytes = 0;

  std::string arch() const;  // "sm_90"
};

// True when a CUDA driver loads, initialises and reports at least one device. Never
// throws: tests use it to skip themselves.
bool gpu_available() noexcept;

// cuDriverGetVersion (13000 for CUDA 13.0); throws CudaError without a driver.
int driver_version();

// Throws CudaError without a driver, or when `ordinal` names no device.
DeviceProperties read_device_properties(int ordinal);

}  // namespace fuseflow
