#pragma once
// What the code generator needs to know about the GPU it writes for. The runtime fills
// it from the device's properties; without a GPU (golden tests, fuseflow-dump) a named
// preset stands in.
#include <cstddef>
#include <string>

namespace fuseflow::codegen {

struct Target {
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  int max_threads_per_sm = 2048;
  std::size_t shared_per_block_optin = 227 * 1024;

  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
  // Presets: "sm_90" (H100 SXM, 132 SMs), "sm_80" (A100, 108 SMs).
  static Target preset(const std::string& arch);
};

}  // namespace fuseflow::codegen
