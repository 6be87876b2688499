// Loads libcuda.so.1 with dlopen, once. A missing driver is an ordinary state (CI, build
// machines), reported as a value by driver_api() and as a CudaError by driver().
#include "fuseflow/runtime/driver_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/error.hpp"

#define FUSEFLOW_STRINGIFY_EXPANDED(x) FUSEFLOW_STRINGIFY(x)
#define FUSEFLOW_STRINGIFY(x) #x

namespace fuseflow::detail {
namespace {

struct LoadedDriver {
  DriverApi api;
  bool ok = false;
  std::string error;
};

// libcuda.so.1, or the library FUSEFLOW_CUDA_LIBRARY names (the tests' CPU emulator).
std::string driver_library() {
  std::string name = read_library_environment().cuda_library;
  return name.empty() ? "libcuda.so.1" : name;
}

LoadedDriver load_driver() {
  LoadedDriver loaded;
  const std::string name = driver_library();
  // Never dlclose: the driver stays for the life of the process, as with static linking.
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    loaded.error = "no CUDA driver found (could not load " + name + ": " +
                   std::string(why ? why : "unknown reason") +
                   "); fuseflow needs an NVIDIA GPU with its driver installed to run kernels";
    return loaded;
  }
#define FUSEFLOW_DRIVER_LOAD(name)                                                          \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(                            \
      dlsym(library, FUSEFLOW_STRINGIFY_EXPANDED(name)));                                    \
  if (!loaded.api.name) {                                                                    \
    loaded.error = "the CUDA driver (" + driver_library() + ") lacks "                        \
                   FUSEFLOW_STRINGIFY_EXPANDED(name) "; update the NVIDIA driver";               \
    return loaded;                                                                           \
  }
  FUSEFLOW_DRIVER_FUNCTIONS(FUSEFLOW_DRIVER_LOAD)
#undef FUSEFLOW_DRIVER_LOAD
  loaded.ok = true;
  return loaded;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver loaded = load_driver();
  return loaded;
}

}  // namespace

const DriverApi* driver_api() noexcept {
  try {
    const LoadedDriver& loaded = loaded_driver();
    return loaded.ok ? &loaded.api : nullptr;
  } catch (...) {
    return nullptr;
  }
}

const std::string& driver_load_error() noexcept { return loaded_driver().error; }

const DriverApi& driver() {
  const DriverApi* api = driver_api();
  if (!api)
    throw CudaError("dlopen(libcuda.so.1)", CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
                    cuda_error_name(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED), driver_load_error());
  // cuInit is cheap after the first call and idempotent, so every caller gets an
  // initialised driver without a separate step.
  static const CUresult init = api->cuInit(0);
  if (init != CUDA_SUCCESS)
    throw CudaError("cuInit", init, cuda_error_name(init),
                    init == CUDA_ERROR_NO_DEVICE
                        ? "the CUDA driver loaded but found no GPU"
                        : "the CUDA driver failed to initialise (no usable GPU?)");
  return *api;
}

std::string cuda_error_name(CUresult code) {
  const DriverApi* api = driver_api();
  const char* name = nullptr;
  if (api && api->cuGetErrorName(code, &name) == CUDA_SUCCESS && name) return name;
  switch (code) {
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: return "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return "CUresult " + std::to_string(static_cast<int>(code));
  }
}

}  // namespace fuseflow::detail
