#pragma once
// NVRTC as a table of function pointers from a dlopen'ed libnvrtc, so fuseflow links no
// CUDA library at build time and a missing NVRTC is a clear error, not a loader failure.
#include <nvrtc.h>

namespace fuseflow::detail {

#define FUSEFLOW_NVRTC_FUNCTIONS(X)                                                        \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)      \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) \
  X(nvrtcGetPTX) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

struct NvrtcApi {
#define FUSEFLOW_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  FUSEFLOW_NVRTC_FUNCTIONS(FUSEFLOW_NVRTC_MEMBER)
#undef FUSEFLOW_NVRTC_MEMBER
};

// The loaded library; throws fuseflow::Error naming the library and what to install.
const NvrtcApi& nvrtc();

}  // namespace fuseflow::detail
