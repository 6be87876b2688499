// Device memory types and runtime errors that need no GPU: views, type-erased bytes,
// error messages, and what a Runtime says when there is no driver.
#include <doctest/doctest.h>

#include <string>

#include "fuseflow/runtime/runtime.hpp"

namespace ff = fuseflow;

namespace {
struct Pair {
  int a;
  float b;
};
}  // namespace

TEST_CASE("device_span rejects a null pointer with a nonzero length") {
  CHECK_THROWS_WITH_AS(ff::device_span<float>(CUdeviceptr{0}, 10),
                       "fuseflow: device_span: null device pointer with length 10; pass a valid device address, "
                       "or length 0",
                       ff::GraphError);
  CHECK_THROWS_AS(ff::device_span<float>(static_cast<float*>(nullptr), 1), ff::GraphError);
  CHECK(ff::device_span<float>(CUdeviceptr{0}, 0).size() == 0);
}

TEST_CASE("device_span keeps the address and length it was given, from a CUdeviceptr or a T*") {
  const ff::device_span<Pair> by_address(CUdeviceptr{0x10000}, 3);
  CHECK(by_address.data() == 0x10000);
  CHECK(by_address.size_bytes() == 3 * sizeof(Pair));
  auto* fake = reinterpret_cast<double*>(std::uintptr_t{0x20000});
  const ff::device_span<double> by_pointer(fake, 5);
  CHECK(by_pointer.data() == 0x20000);
  const ff::DeviceBytes bytes = by_pointer.bytes();
  CHECK(bytes.ptr == 0x20000);
  CHECK(bytes.count == 5);
  CHECK(bytes.element_size == sizeof(double));
  CHECK(bytes.size_bytes() == 40);
}

TEST_CASE("a default DeviceArray is empty and owns nothing") {
  ff::DeviceArray<int> array;
  CHECK(array.empty());
  CHECK(array.data() == 0);
  CHECK(array.download().empty());
  ff::DeviceArray<int> moved = std::move(array);
  CHECK(moved.size() == 0);
}

TEST_CASE("CudaError names the call, the code and its name") {
  const ff::CudaError error("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
                            "asked for 8 bytes");
  CHECK(error.call() == "cuMemAlloc");
  CHECK(error.code() == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(error.code_name() == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(std::string(error.what()) ==
        "fuseflow: cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY (2): asked for 8 bytes");
}

TEST_CASE("without a driver or GPU, gpu_available is false and a Runtime says why") {
  if (ff::gpu_available()) {
    MESSAGE("a GPU is present: the no-driver path is not exercised here");
    return;
  }
  CHECK_FALSE(ff::gpu_available());
  try {
    ff::Runtime rt;
    FAIL("a Runtime was created without a GPU");
  } catch (const ff::CudaError& e) {
    const std::string what = e.what();
    const bool says_why = what.find("no CUDA driver") != std::string::npos ||
                          what.find("no GPU") != std::string::npos;
    CHECK_MESSAGE(says_why, what);
  }
}
