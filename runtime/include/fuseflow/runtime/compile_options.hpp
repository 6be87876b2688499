#pragma once
// Everything that changes what NVRTC produces, as one explicit value. Its key() goes into
// the kernel cache key, so two option sets that could give different code never share an
// entry.
#include <string>
#include <vector>

namespace fuseflow {

struct CompileOptions {
  // Target architecture as "sm_XX" (or "sm_XXa"). A cubin is produced for it unless
  // ptx is set, in which case PTX for the matching "compute_XX" is produced and the
  // driver JIT-compiles it at load time.
  std::string arch = "sm_90";
  bool ptx = false;
  int cxx_standard = 17;
  bool fast_math = false;
  bool line_info = false;
  // Let NVVM and ptxas fuse a multiply and a following add into one FMA (NVRTC's default,
  // --fmad=true). A tiered Runtime turns it off (--fmad=false), so no optimisation level can
  // round a program's arithmetic differently: see `quick` and README "Tiered compilation".
  bool fmad = true;
  // Compile fast rather than well (NVRTC's -Ofc=mid: less inlining and
  // unrolling, a quicker ptxas): tier 0 of tiered compilation, run until the fully
  // optimised binary (tier 1) is ready. Never stored in the disk cache.
  bool quick = false;
  // NVRTC's -minimal: no texture/surface functions and types, no cudaDevice* (device
  // runtime) declarations in the implicit headers: a quarter less front end (2-4 ms a
  // kernel), the same binary. The Runtime sets it for generated kernels, which use none of
  // those; off by default, as a hand-written kernel (Runtime::load_kernel) may.
  bool minimal = false;
  // Preprocessor definitions, "NAME" or "NAME=VALUE", passed as -D in this order.
  std::vector<std::string> defines;

  // The architecture NVRTC is asked for: arch, or compute_XX when ptx is set.
  std::string target() const;
  // The exact NVRTC command-line options these settings produce.
  std::vector<std::string> nvrtc_flags() const;
  // A stable text form of every field; equal keys <=> equal flags.
  std::string key() const;
};

// "sm_90" for compute capability 9.0.
std::string arch_for(int cc_major, int cc_minor);

}  // namespace fuseflow
