#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cache_test_support.hpp"
#include "fuseflow/runtime/compiler.hpp"
#include "fuseflow/runtime/error.hpp"

namespace ff = fuseflow;

TEST_CASE("NVRTC compiles a known kernel to a cubin for sm_90") {
  ff::CompileOptions options;
  options.arch = "sm_90";
  const ff::CompiledKernel kernel =
      ff::Compiler::compile(ff::test::fill_kernel("ff_fill"), "ff_fill", options);
  CHECK(kernel.format == ff::BinaryFormat::cubin);
  REQUIRE(kernel.image.size() > 4);
  CHECK(kernel.image.substr(0, 4) == std::string("\x7f" "ELF"));  // cubins are ELF files
}

TEST_CASE("NVRTC compiles to PTX for compute_XX and the PTX names the kernel's entry") {
  ff::CompileOptions options;
  options.arch = "sm_80";
  const std::string ptx = ff::Compiler::ptx(ff::test::fill_kernel("ff_fill"), options);
  CHECK(ptx.find(".entry ff_fill") != std::string::npos);
  CHECK(ptx.find(".target sm_80") != std::string::npos);

  options.ptx = true;
  const ff::CompiledKernel kernel = ff::Compiler::compile(ff::test::fill_kernel("ff_fill"), "ff_fill", options);
  CHECK(kernel.format == ff::BinaryFormat::ptx);
  CHECK(kernel.image.find(".entry ff_fill") != std::string::npos);
  CHECK(kernel.image.back() == '\0');  // cuModuleLoadData needs the terminator
}

TEST_CASE("a compile error carries the NVRTC log and the numbered lines around it") {
  const std::string source =
      "extern \"C\" __global__ void ff_broken(float* x) {\n"
      "  // line 2\n"
      "  float v = foo(x);\n"
      "  x[0] = v;\n"
      "}\n";
  try {
    ff::Compiler::compile(source, "ff_broken", ff::CompileOptions{});
    FAIL("expected a CompileError");
  } catch (const ff::CompileError& e) {
    CHECK(e.kernel() == "ff_broken");
    CHECK(e.log().find("ff_broken.cu(3)") != std::string::npos);
    CHECK(e.log().find("foo") != std::string::npos);
    CHECK(e.source().find("> 3 |   float v = foo(x);") != std::string::npos);
    CHECK(e.source().find("  2 |   // line 2") != std::string::npos);
    CHECK(e.source().find("  5 | }") != std::string::npos);
    const std::string what = e.what();
    CHECK(what.find("ff_broken") != std::string::npos);
    CHECK(what.find("sm_90") != std::string::npos);
    CHECK(what.find("> 3 |   float v = foo(x);") != std::string::npos);
  }
}

TEST_CASE("line numbers are right-aligned when the window crosses a power of ten") {
  std::string source = "extern \"C\" __global__ void ff_long(int* x) {\n";
  for (int i = 2; i <= 9; ++i) source += "  x[" + std::to_string(i) + "] = 0;\n";
  source += "  x[10] = undefined_name;\n}\n";
  try {
    ff::Compiler::compile(source, "ff_long", ff::CompileOptions{});
    FAIL("expected a CompileError");
  } catch (const ff::CompileError& e) {
    CHECK(e.source().find("> 10 |   x[10] = undefined_name;") != std::string::npos);
    CHECK(e.source().find("   9 |   x[9] = 0;") != std::string::npos);
  }
}

TEST_CASE("a header handed over in memory is found by #include") {
  const std::vector<ff::Header> headers = {
      {"ff_helpers.cuh", "inline int ff_twice(int v) { return 2 * v; }\n"}};
  const std::string source =
      "#include \"ff_helpers.cuh\"\n"
      "extern \"C\" __global__ void ff_use(int* x) { x[threadIdx.x] = ff_twice(x[threadIdx.x]); }\n";
  const std::string ptx = ff::Compiler::ptx(source, ff::CompileOptions{}, headers, "ff_use");
  CHECK(ptx.find(".entry ff_use") != std::string::npos);
  CHECK_THROWS_AS(ff::Compiler::ptx(source, ff::CompileOptions{}, {}, "ff_use"), ff::CompileError);
}

TEST_CASE("an error inside an in-memory header is shown from the header's text") {
  const std::vector<ff::Header> headers = {
      {"ff_bad.cuh", "// helper\ninline int ff_bad(int v) { return v + missing; }\n"}};
  const std::string source =
      "#include \"ff_bad.cuh\"\n"
      "extern \"C\" __global__ void ff_k(int* x) { x[0] = ff_bad(x[0]); }\n";
  try {
    ff::Compiler::compile(source, "ff_k", ff::CompileOptions{}, headers);
    FAIL("expected a CompileError");
  } catch (const ff::CompileError& e) {
    CHECK(e.source().find("ff_bad.cuh:2:") != std::string::npos);
    CHECK(e.source().find("> 2 | inline int ff_bad(int v) { return v + missing; }") !=
          std::string::npos);
  }
}

TEST_CASE("options become the documented NVRTC flags") {
  ff::CompileOptions options;
  options.arch = "sm_80";
  options.fast_math = true;
  options.line_info = true;
  options.minimal = true;
  options.defines = {"FF_BLOCK=256", "FF_DEBUG"};
  const std::vector<std::string> expected = {"--gpu-architecture=sm_80", "-std=c++17",
                                             "-default-device",          "-minimal",
                                             "--use_fast_math",          "-lineinfo",
                                             "-DFF_BLOCK=256",           "-DFF_DEBUG"};
  CHECK(options.nvrtc_flags() == expected);
  std::string joined;
  for (const std::string& flag : expected) joined += flag + "\n";
  CHECK(options.key() == joined);
  options.ptx = true;
  CHECK(options.target() == "compute_80");
  CHECK(ff::arch_for(9, 0) == "sm_90");
}

TEST_CASE("a define reaches the compiled source") {
  ff::CompileOptions options;
  options.defines = {"FF_VALUE=41"};
  const std::string source =
      "extern \"C\" __global__ void ff_def(int* x) { x[0] = FF_VALUE + 1; }\n";
  CHECK(ff::Compiler::ptx(source, options, {}, "ff_def").find("42") != std::string::npos);
}

TEST_CASE("a malformed arch is rejected with a message naming it") {
  ff::CompileOptions options;
  options.arch = "hopper";
  CHECK_THROWS_WITH_AS(options.nvrtc_flags(), doctest::Contains("\"hopper\""), ff::Error);
}

TEST_CASE("the NVRTC version is known and encoded like the driver's") {
  const ff::NvrtcVersion v = ff::Compiler::version();
  CHECK(v.major >= 12);
  CHECK(v.encoded() == v.major * 1000 + v.minor * 10);
}

TEST_CASE("asked for its phases, NVRTC times them and the log and image are as without") {
  ff::CompileOptions options;
  options.arch = "sm_90";
  ff::CompilePhases phases;
  const ff::CompiledKernel timed =
      ff::Compiler::compile(ff::test::fill_kernel("ff_fill"), "ff_fill", options, {}, &phases);
  const ff::CompiledKernel plain = ff::Compiler::compile(ff::test::fill_kernel("ff_fill"), "ff_fill", options);
  REQUIRE(phases.measured);
  CHECK(phases.front_end_ms >= 0);
  CHECK(phases.ptxas_ms >= 0);
  // The wall time covers the phases NVRTC reports (its figures are whole milliseconds).
  CHECK(phases.total_ms + 3 >= phases.front_end_ms + phases.optimizer_ms + phases.ptxas_ms);
  CHECK(phases.total_ms > 0);
  CHECK(timed.log.find("phase name") == std::string::npos);
  CHECK(timed.log == plain.log);
  CHECK(timed.image.size() == plain.image.size());
}

TEST_CASE("warming NVRTC up gives its version, and compiles afterwards are as without it") {
  const ff::NvrtcVersion v = ff::Compiler::warm_up();
  CHECK(v.major == ff::Compiler::version().major);
  CHECK(v.minor == ff::Compiler::version().minor);
  (void)ff::Compiler::warm_up();  // once per process: a second call is only version()
  ff::CompileOptions options;
  const ff::CompiledKernel kernel = ff::Compiler::compile(ff::test::fill_kernel("ff_fill"), "ff_fill", options);
  CHECK(kernel.image.substr(0, 4) == std::string("\x7f" "ELF"));
}

TEST_CASE("-minimal (generated kernels) gives the same binary as without it, under another cache key") {
  ff::CompileOptions full, minimal;
  minimal.minimal = true;
  CHECK(full.key() != minimal.key());
  // A kernel on the device library's collectives, as generated kernels are.
  const std::string source =
      "#include <fuseflow/lib.cuh>\n"
      "extern \"C\" __global__ void ff_min(const float* in, float* out) {\n"
      "  out[threadIdx.x] = ff_twice(in[threadIdx.x]) + __shfl_down_sync(0xffffffffu, in[threadIdx.x], 1);\n"
      "}\n";
  const std::vector<ff::Header> headers = {{"fuseflow/lib.cuh", "inline float ff_twice(float v) { return 2 * v; }\n"}};
  const ff::CompiledKernel a = ff::Compiler::compile(source, "ff_min", full, headers);
  const ff::CompiledKernel b = ff::Compiler::compile(source, "ff_min", minimal, headers);
  CHECK(a.image == b.image);
}
