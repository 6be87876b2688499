#include "fuseflow/runtime/compile_options.hpp"

#include "fuseflow/frontend/error.hpp"

namespace fuseflow {
namespace {

// Tier 0's optimisation level (bench/RESULTS.md, "First-run compile": the quick tier).
constexpr const char* kQuickFlag = "-Ofc=mid";

}  // namespace

std::string CompileOptions::target() const {
  if (arch.rfind("sm_", 0) != 0 || arch.size() <= 3)
    throw Error("fuseflow: CompileOptions::arch must look like \"sm_90\", got \"" + arch + "\"");
  if (!ptx) return arch;
  // PTX is architecture-generic within a family: sm_90a -> compute_90a, sm_90 -> compute_90.
  return "compute_" + arch.substr(3);
}

std::vector<std::string> CompileOptions::nvrtc_flags() const {
  std::vector<std::string> flags = {
      "--gpu-architecture=" + target(),
      "-std=c++" + std::to_string(cxx_standard),
      // Every function is device code: generated kernels and the helper library need no
      // __device__ on each helper, and no host headers are involved.
      "-default-device",
  };
  if (minimal) flags.push_back("-minimal");
  if (fast_math) flags.push_back("--use_fast_math");
  if (line_info) flags.push_back("-lineinfo");
  if (!fmad) flags.push_back("--fmad=false");
  if (quick) flags.push_back(kQuickFlag);
  for (const std::string& define : defines) flags.push_back("-D" + define);
  return flags;
}

std::string CompileOptions::key() const {
  // Built directly rather than from nvrtc_flags(): this runs on every cache lookup.
  std::string key;
  key.reserve(64);
  key += "--gpu-architecture=";
  key += target();
  key += "\n-std=c++";
  key += std::to_string(cxx_standard);
  key += "\n-default-device\n";
  if (minimal) key += "-minimal\n";
  if (fast_math) key += "--use_fast_math\n";
  if (line_info) key += "-lineinfo\n";
  if (!fmad) key += "--fmad=false\n";
  if (quick) {
    key += kQuickFlag;
    key += '\n';
  }
  for (const std::string& define : defines) {
    key += "-D";
    key += define;
    key += '\n';  // cannot occur inside a flag, so the join is unambiguous
  }
  return key;
}

std::string arch_for(int cc_major, int cc_minor) {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

}  // namespace fuseflow
