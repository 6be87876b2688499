#pragma once
// The CUDA driver API as a table of function pointers filled from libcuda.so.1 at run
// time. fuseflow must build, and compile kernels with NVRTC, on machines that have the
// toolkit but no driver (CI), so nothing links libcuda at build time.
#include <cuda.h>

#include <string>

namespace fuseflow::detail {

// cuda.h maps versioned entry points with macros (cuMemAlloc -> cuMemAlloc_v2); the member
// names below go through the same macros, and the loader looks up the expanded names.
#define FUSEFLOW_DRIVER_FUNCTIONS(X)                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                   \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)           \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)            \
  X(cuCtxGetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent)                               \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                             \
  X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo)                                              \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)                            \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)                            \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel)                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                          \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuDeviceGetDefaultMemPool) X(cuMemPoolSetAttribute)      \
  X(cuMemPoolTrimTo) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuStreamIsCapturing)

struct DriverApi {
#define FUSEFLOW_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  FUSEFLOW_DRIVER_FUNCTIONS(FUSEFLOW_DRIVER_MEMBER)
#undef FUSEFLOW_DRIVER_MEMBER
};

// The loaded table, or nullptr when libcuda.so.1 is missing or lacks a symbol (then
// driver_load_error() says why). Loaded once; thread-safe; never throws.
const DriverApi* driver_api() noexcept;
const std::string& driver_load_error() noexcept;

// The loaded and initialised (cuInit) driver, or a CudaError saying no driver was found.
const DriverApi& driver();

// "CUDA_ERROR_OUT_OF_MEMORY"; works (with a generic name) even without a driver.
std::string cuda_error_name(CUresult code);

}  // namespace fuseflow::detail
