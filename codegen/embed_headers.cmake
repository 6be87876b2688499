# Writes OUT: a C++ file defining fuseflow::codegen::device_headers() with the text of
# every ROOT/fuseflow/*.cuh, so NVRTC gets them from memory and nothing is read from disk.
file(GLOB headers RELATIVE ${ROOT} ${ROOT}/fuseflow/*.cuh)
list(SORT headers)
set(body "")
foreach(h ${headers})
  file(READ ${ROOT}/${h} text)
  string(APPEND body "      {\"${h}\", R\"ffcuh(${text})ffcuh\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from codegen/device by embed_headers.cmake. Do not edit.
#include \"fuseflow/codegen/plan.hpp\"

namespace fuseflow::codegen {

const std::vector<DeviceHeader>& device_headers() {
  static const std::vector<DeviceHeader> headers = {
${body}  };
  return headers;
}

}  // namespace fuseflow::codegen
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
