// NVRTC missing at run time: CTest runs this with FUSEFLOW_NVRTC_LIBRARY naming a library
// that does not exist. Everything that needs NVRTC says so, naming what it tried and what
// to install, and nothing crashes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "cache_test_support.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace ff = fuseflow;

namespace {

const std::string major = std::to_string(CUDA_VERSION / 1000);
const std::string minor = std::to_string(CUDA_VERSION % 1000 / 10);

std::string expected_message() {
  return "fuseflow: NVRTC (libnvrtc.so." + major + ") could not be loaded (tried " +
         std::getenv("FUSEFLOW_NVRTC_LIBRARY") +
         ", as FUSEFLOW_NVRTC_LIBRARY says). fuseflow compiles kernels at run time and needs the CUDA " + major +
         " NVRTC library: install the CUDA toolkit's NVRTC package (e.g. cuda-nvrtc-" + major + "-" + minor +
         ") or set CUDA_PATH to the toolkit directory";
}

}  // namespace

TEST_CASE("the test runs with a missing NVRTC") {
  const char* chosen = std::getenv("FUSEFLOW_NVRTC_LIBRARY");
  REQUIRE(chosen != nullptr);
  CHECK(std::string(chosen).find("missing") != std::string::npos);
}

TEST_CASE("asking NVRTC's version or compiling says NVRTC could not be loaded and what to install") {
  CHECK_THROWS_WITH_AS(ff::Compiler::version(), expected_message().c_str(), ff::Error);
  CHECK_THROWS_WITH_AS(ff::Compiler::compile(ff::test::fill_kernel("ff_k"), "ff_k", ff::CompileOptions{}),
                       expected_message().c_str(), ff::Error);
}

TEST_CASE("a kernel cache lookup gives the same error, and the cache stays usable for a retry") {
  ff::KernelCache cache(ff::CacheSettings{});
  CHECK_THROWS_WITH_AS(cache.get("ff_k", ff::test::fill_kernel("ff_k"), ff::CompileOptions{}),
                       expected_message().c_str(), ff::Error);
  CHECK_THROWS_WITH_AS(cache.get("ff_k", ff::test::fill_kernel("ff_k"), ff::CompileOptions{}),
                       expected_message().c_str(), ff::Error);
  CHECK(cache.stats().compiles == 0);
}

TEST_CASE("creating a Runtime fails with the NVRTC error on a GPU machine, the driver's without one") {
  if (!ff::gpu_available()) {
    CHECK_THROWS_AS(ff::Runtime(), ff::CudaError);  // no driver: said first, as before
    return;
  }
  CHECK_THROWS_WITH_AS(ff::Runtime(), expected_message().c_str(), ff::Error);
}
