#include "fuseflow/runtime/device_context.hpp"

#include <cstdio>

#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/error.hpp"

namespace fuseflow::detail {
namespace {

// Errors after which the context is corrupt: every later call on it would fail too, with
// messages that point nowhere near the cause.
bool is_sticky(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

std::string human_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.1f %s)", bytes, value, units[unit]);
  return text;
}

}  // namespace

DeviceContext::DeviceContext(int ordinal, CUstream user_stream) {
  const DriverApi& api = driver();
  int count = 0;
  check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    throw CudaError("cuDeviceGetCount", CUDA_ERROR_NO_DEVICE, cuda_error_name(CUDA_ERROR_NO_DEVICE),
                    "the CUDA driver found no GPU");
  check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  // From here a failing call gives back what was taken: the destructor does not run for
  // a constructor that throws.
  try {
    Scope scope(*this);
    if (user_stream) {
      stream_ = user_stream;
    } else {
      // A blocking stream, so work the user queued on the legacy default stream (e.g. a
      // cudaMemcpy filling a buffer we are about to read) is ordered before ours.
      check(api.cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
      owns_stream_ = true;
    }
    // Device memory comes from the stream-ordered allocator: an output array allocated and
    // freed every run costs no device-wide synchronisation (cuMemFree waits for the whole
    // GPU), and the pool keeps freed memory for reuse instead of returning it at each sync.
    CUmemoryPool pool = nullptr;
    check(api.cuDeviceGetDefaultMemPool(&pool, device_), "cuDeviceGetDefaultMemPool");
    cuuint64_t keep_everything = ~cuuint64_t{0};
    check(api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything),
          "cuMemPoolSetAttribute");
  } catch (...) {
    if (owns_stream_) api.cuStreamDestroy(stream_);
    api.cuDevicePrimaryCtxRelease(device_);
    throw;
  }
}

DeviceContext::~DeviceContext() {
  const DriverApi& api = *driver_api();
  {
    Scope scope(*this, std::nothrow);
    // The pool keeps whatever is freed while a Runtime lives (the release threshold
    // above); when it goes, what no one uses goes back to the device, so that other
    // processes and libraries (and a child process) can have it. Errors are ignored: a
    // destructor cannot report them, and after a sticky error the memory goes with the
    // context anyway.
    CUmemoryPool pool = nullptr;
    if (!unusable_.load(std::memory_order_acquire) && api.cuStreamSynchronize(stream_) == CUDA_SUCCESS &&
        api.cuDeviceGetDefaultMemPool(&pool, device_) == CUDA_SUCCESS)
      api.cuMemPoolTrimTo(pool, 0);
    if (owns_stream_) api.cuStreamDestroy(stream_);
  }
  api.cuDevicePrimaryCtxRelease(device_);
}

void DeviceContext::check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const std::string name = cuda_error_name(result);
  const char* description = nullptr;
  if (const DriverApi* api = driver_api()) api->cuGetErrorString(result, &description);
  std::string message = description ? description : "unknown error";
  if (is_sticky(result)) {
    std::lock_guard lock(sticky_mutex_);
    if (sticky_error_.empty()) sticky_error_ = std::string(call) + " failed with " + name + ": " + message;
    unusable_ = true;
    message += "; the GPU context is now unusable and this Runtime cannot run anything more "
               "(create a new process)";
  }
  throw CudaError(call, result, name, message);
}

void DeviceContext::ensure_usable() const {
  if (!unusable_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(sticky_mutex_);
  if (!sticky_error_.empty())
    throw CudaError("fuseflow::Runtime", CUDA_ERROR_ILLEGAL_STATE,
                    cuda_error_name(CUDA_ERROR_ILLEGAL_STATE),
                    "the Runtime is unusable after an earlier error: " + sticky_error_);
}

DeviceContext::Scope::Scope(const DeviceContext& context) {
  const DriverApi& api = *driver_api();
  CUcontext current = nullptr;
  CUresult result = api.cuCtxGetCurrent(&current);
  if (result == CUDA_SUCCESS && current != context.context()) {
    result = api.cuCtxPushCurrent(context.context());
    pushed_ = result == CUDA_SUCCESS;
    if (!pushed_)
      throw CudaError("cuCtxPushCurrent", result, cuda_error_name(result), "could not make the device's context current");
  }
  if (result != CUDA_SUCCESS)
    throw CudaError("cuCtxGetCurrent", result, cuda_error_name(result), "could not read the current context");
}

DeviceContext::Scope::Scope(const DeviceContext& context, std::nothrow_t) noexcept {
  const DriverApi& api = *driver_api();
  CUcontext current = nullptr;
  if (api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != context.context())
    pushed_ = api.cuCtxPushCurrent(context.context()) == CUDA_SUCCESS;
}

DeviceContext::Scope::~Scope() {
  if (pushed_) {
    CUcontext popped = nullptr;
    driver_api()->cuCtxPopCurrent(&popped);
  }
}

CUdeviceptr DeviceContext::allocate(std::size_t bytes) {
  ensure_usable();
  if (bytes == 0) return 0;
  Scope scope(*this);
  CUdeviceptr ptr = 0;
  const CUresult result = driver_api()->cuMemAllocAsync(&ptr, bytes, stream_);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    std::size_t free = 0, total = 0;
    driver_api()->cuMemGetInfo(&free, &total);
    throw CudaError("cuMemAllocAsync", result, cuda_error_name(result),
                    "out of device memory: asked for " + human_bytes(bytes) + ", " +
                        human_bytes(free) + " free of " + human_bytes(total));
  }
  check(result, "cuMemAllocAsync");
  return ptr;
}

void DeviceContext::free(CUdeviceptr ptr) noexcept {
  if (ptr == 0) return;
  Scope scope(*this, std::nothrow);
  // Errors are ignored: a destructor cannot report them, and after a sticky error the
  // memory goes with the context anyway.
  driver_api()->cuMemFreeAsync(ptr, stream_);
}

void* DeviceContext::allocate_host(std::size_t bytes, bool mapped) {
  ensure_usable();
  if (bytes == 0) return nullptr;
  Scope scope(*this);
  void* ptr = nullptr;
  const CUresult result = driver_api()->cuMemHostAlloc(&ptr, bytes, mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u);
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    throw CudaError("cuMemHostAlloc", result, cuda_error_name(result),
                    "out of page-locked host memory: asked for " + human_bytes(bytes));
  check(result, "cuMemHostAlloc");
  return ptr;
}

void DeviceContext::free_host(void* ptr) noexcept {
  if (!ptr) return;
  Scope scope(*this, std::nothrow);
  driver_api()->cuMemFreeHost(ptr);
}

bool DeviceContext::capturing() {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(driver_api()->cuStreamIsCapturing(stream_, &status), "cuStreamIsCapturing");
  // An invalidated capture counts as one: anything queued now would be lost with it.
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void DeviceContext::copy_to_device(CUdeviceptr dst, const void* src, std::size_t bytes) {
  ensure_usable();
  if (bytes == 0) return;
  Scope scope(*this);
  check(driver_api()->cuMemcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
  // Waiting makes the caller's buffer free to reuse at once, even when it is pinned.
  check(driver_api()->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void DeviceContext::copy_to_host(void* dst, CUdeviceptr src, std::size_t bytes) {
  ensure_usable();
  if (bytes == 0) return;
  Scope scope(*this);
  check(driver_api()->cuMemcpyDtoHAsync(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
  check(driver_api()->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void DeviceContext::synchronize() {
  ensure_usable();
  Scope scope(*this);
  check(driver_api()->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

}  // namespace fuseflow::detail
