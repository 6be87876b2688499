#pragma once
// NVRTC wrapper: CUDA source text in, cubin or PTX out. Works with no GPU and no driver
// (only libnvrtc), which is what lets CI compile every generated kernel.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fuseflow/runtime/compile_options.hpp"

namespace fuseflow {

// A header handed to NVRTC from memory, found by `#include "name"`; nothing is read from
// disk at run time (the device helper library is embedded in the binary).
struct Header {
  std::string name;
  std::string content;
};

enum class BinaryFormat : std::uint8_t { cubin = 1, ptx = 2 };

struct CompiledKernel {
  BinaryFormat format = BinaryFormat::cubin;
  std::string image;  // cubin bytes, or PTX text (NUL-terminated for cuModuleLoadData)
  std::string log;    // NVRTC's log; warnings may appear even on success
};

// Where one NVRTC compile spent its time, from NVRTC's own `--time` table (CUDA 12.x+):
// the C++ front end (preprocess, parse, instantiate), the NVVM optimiser, and the PTX to
// SASS translation (ptxas; 0 for PTX output). total_ms is the wall time of
// nvrtcCreateProgram + nvrtcCompileProgram + fetching the image, measured here; what the
// three phases do not cover is NVRTC's own set-up.
struct CompilePhases {
  double front_end_ms = 0;
  double optimizer_ms = 0;
  double ptxas_ms = 0;
  double total_ms = 0;
  bool measured = false;  // NVRTC reported the phases
};

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
  // In cuDriverGetVersion's encoding (13.0 -> 13000), to compare with the driver.
  int encoded() const { return major * 1000 + minor * 10; }
};

class Compiler {
 public:
  // Compiles `source` (named `<kernel_name>.cu` in NVRTC's messages). Throws CompileError
  // when NVRTC rejects it, Error when NVRTC cannot be loaded.
  // With `phases`, NVRTC also times its phases (--time; the table is taken out of the
  // log again, so the result is the same as without).
  static CompiledKernel compile(std::string_view source, std::string_view kernel_name,
                                const CompileOptions& options,
                                std::span<const Header> headers = {},
                                CompilePhases* phases = nullptr);
  // The PTX for the same source and options (compute_XX), whatever options.ptx says:
  // for FUSEFLOW_DUMP and for golden tests that check instructions.
  static std::string ptx(std::string_view source, const CompileOptions& options,
                         std::span<const Header> headers = {},
                         std::string_view kernel_name = "kernel");
  static NvrtcVersion version();
  // version(), after (once per process) compiling an empty kernel: NVRTC's first compile in
  // a process pays its one-time set-up (builtin headers, its compute-cache hookup; 8 ms on
  // the 2-core CI machine), which the Runtime pays here, behind the CUDA context's creation,
  // instead of in a program's first run. Never throws for the compile; the CPU emulator's
  // NVRTC (version 0.x) is not warmed.
  static NvrtcVersion warm_up();
};

}  // namespace fuseflow
