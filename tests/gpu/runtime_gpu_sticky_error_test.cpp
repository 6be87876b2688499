// After an error that corrupts the context (here an illegal address), every later call
// says the Runtime is unusable and why, instead of failing mysteriously.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fuseflow/runtime/low_level.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace ff = fuseflow;

TEST_CASE("after an illegal address every call says the Runtime is unusable and why") {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  ff::Runtime rt(options);
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, 
      "extern \"C\" __global__ void ff_crash(int* p) { p[threadIdx.x] = 1; }\n", "ff_crash");
  CUdeviceptr bad = 0x10;  // not a device allocation
  void* args[] = {&bad};
  ff::low_level::launch(rt, kernel, {1}, {32}, 0, args);
  try {
    rt.synchronize();
    FAIL("the illegal write was not reported");
  } catch (const ff::CudaError& e) {
    CHECK(e.code() == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(std::string(e.what()).find("unusable") != std::string::npos);
  }
  try {
    rt.upload(std::vector<int>{1, 2, 3});
    FAIL("the Runtime kept going after a sticky error");
  } catch (const ff::CudaError& e) {
    const std::string what = e.what();
    CHECK(what.find("the Runtime is unusable after an earlier error") != std::string::npos);
    CHECK(what.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
    CHECK(what.find("cuStreamSynchronize") != std::string::npos);
  }
  CHECK_THROWS_AS(ff::low_level::launch(rt, kernel, {1}, {32}, 0, args), ff::CudaError);
}
