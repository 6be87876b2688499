#include "nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

namespace fuseflow::nvtx {

namespace {
// One domain for all of fuseflow's ranges, so a profiler can show or hide them together.
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("fuseflow");
  return handle;
}
}  // namespace

ScopedRange::ScopedRange(const char* name) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;  // copied by the tool, if one is attached
  nvtxDomainRangePushEx(domain(), &attributes);
}

ScopedRange::~ScopedRange() { nvtxDomainRangePop(domain()); }

}  // namespace fuseflow::nvtx
