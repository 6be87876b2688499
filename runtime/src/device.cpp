#include "fuseflow/runtime/device.hpp"

#include "fuseflow/runtime/compile_options.hpp"
#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/error.hpp"

namespace fuseflow {
namespace {

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS)
    throw CudaError(call, result, detail::cuda_error_name(result), "reading device properties");
}

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  check(detail::driver().cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
  return value;
}

}  // namespace

std::string DeviceProperties::arch() const { return arch_for(cc_major, cc_minor); }

bool gpu_available() noexcept {
  try {
    const detail::DriverApi& api = detail::driver();
    int count = 0;
    return api.cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
  } catch (...) {
    return false;
  }
}

int driver_version() {
  int version = 0;
  check(detail::driver().cuDriverGetVersion(&version), "cuDriverGetVersion");
  return version;
}

DeviceProperties read_device_properties(int ordinal) {
  const detail::DriverApi& api = detail::driver();
  int count = 0;
  check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw CudaError("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE,
                    detail::cuda_error_name(CUDA_ERROR_INVALID_DEVICE),
                    "device " + std::to_string(ordinal) + " does not exist (" +
                        std::to_string(count) + " GPU(s) found)");
  CUdevice device = 0;
  check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet");

  DeviceProperties p;
  p.ordinal = ordinal;
  char name[256] = {};
  check(api.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName");
  p.name = name;
  p.cc_major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.cc_minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.max_threads_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p.max_threads_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.warp_size = attribute(device, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  auto bytes = [&](CUdevice_attribute which) {
    return static_cast<std::size_t>(attribute(device, which));
  };
  p.shared_memory_per_block = bytes(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  p.shared_memory_per_block_optin = bytes(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  p.shared_memory_per_sm = bytes(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p.l2_cache_bytes = bytes(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  check(api.cuDeviceTotalMem(&p.total_memory_bytes, device), "cuDeviceTotalMem");
  return p;
}

}  // namespace fuseflow
