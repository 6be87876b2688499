#include "nvrtc_api.hpp"

#include <cuda.h>  // CUDA_VERSION: the toolkit we were built against
#include <dlfcn.h>

#include <string>
#include <vector>

#include "fuseflow/frontend/error.hpp"
#include "fuseflow/runtime/config.hpp"

namespace fuseflow::detail {
namespace {

// The soname of the NVRTC that matches the headers we were built with comes first; an
// unversioned name and the toolkit's own directories cover installs off the loader path.
// FUSEFLOW_NVRTC_LIBRARY (a path or a soname) replaces them all.
std::vector<std::string> candidates(const LibraryConfig& config) {
  if (!config.nvrtc_library.empty()) return {config.nvrtc_library};
  const std::string versioned = "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000);
  std::vector<std::string> names = {versioned, "libnvrtc.so"};
  std::vector<std::string> dirs;
  if (!config.cuda_path.empty()) dirs.push_back(config.cuda_path + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  for (const std::string& dir : dirs) {
    names.push_back(dir + versioned);
    names.push_back(dir + "libnvrtc.so");
  }
  return names;
}

struct LoadedNvrtc {
  NvrtcApi api;
  std::string error;  // empty when loaded
};

LoadedNvrtc load_nvrtc() {
  LoadedNvrtc loaded;
  void* library = nullptr;
  std::string tried;
  const LibraryConfig config = read_library_environment();
  for (const std::string& name : candidates(config)) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) break;
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (!library) {
    loaded.error = "fuseflow: NVRTC (libnvrtc.so." + std::to_string(CUDA_VERSION / 1000) +
                   ") could not be loaded (tried " + tried +
                   (config.nvrtc_library.empty() ? "" : ", as FUSEFLOW_NVRTC_LIBRARY says") +
                   "). fuseflow compiles kernels at run time and needs the CUDA " +
                   std::to_string(CUDA_VERSION / 1000) +
                   " NVRTC library: install the CUDA toolkit's NVRTC package (e.g. "
                   "cuda-nvrtc-" + std::to_string(CUDA_VERSION / 1000) + "-" +
                   std::to_string(CUDA_VERSION % 1000 / 10) +
                   ") or set CUDA_PATH to the toolkit directory";
    return loaded;
  }
#define FUSEFLOW_NVRTC_LOAD(name)                                                    \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(dlsym(library, #name)); \
  if (!loaded.api.name) {                                                            \
    loaded.error = "fuseflow: the loaded NVRTC library lacks " #name;                \
    return loaded;                                                                   \
  }
  FUSEFLOW_NVRTC_FUNCTIONS(FUSEFLOW_NVRTC_LOAD)
#undef FUSEFLOW_NVRTC_LOAD
  return loaded;
}

}  // namespace

const NvrtcApi& nvrtc() {
  static const LoadedNvrtc loaded = load_nvrtc();
  if (!loaded.error.empty()) throw Error(loaded.error);
  return loaded.api;
}

}  // namespace fuseflow::detail
