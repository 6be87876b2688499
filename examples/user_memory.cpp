// user_memory: fuseflow on memory and a stream that belong to the user's own code.
//
// An application that already has its data on the GPU hands fuseflow a view of it,
// ff::device_span<T>(pointer, length): nothing is copied, and fuseflow never frees it.
// RuntimeOptions::stream puts all of fuseflow's work on the application's stream,
// so it is ordered with the application's own copies and kernels on that stream.
//
// The application here uses the CUDA runtime API (cudaMalloc is cuMemAlloc in the
// device's primary context, which fuseflow shares; a CUdeviceptr from cuMemAlloc works
// the same way). It links cudart statically, which loads the driver only when called,
// so without a GPU the example still starts, prints and compiles.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

namespace {
void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, cudaGetErrorString(status));
    std::exit(1);
  }
}
}  // namespace

int main() {
  auto x = ff::input<float>("x");
  auto program = ff::outputs(ff::reduce(x, ff::plus), ff::reduce(x, ff::max));
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 1'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;

  // The application's own stream and buffer, filled by the application on its stream.
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  float* data = nullptr;
  check(cudaMalloc(&data, n * sizeof(float)), "cudaMalloc");
  check(cudaMemcpyAsync(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");

  bool ok = true;
  {
    // cudaStream_t and CUstream are the same type. The stream must outlive the Runtime.
    ff::RuntimeOptions options;
    options.stream = stream;
    ff::Runtime rt(options);
    auto [sum, max] = rt.run(program, {{x, ff::device_span<float>(data, n)}});
    // A view of the second half only: any offset, any length.
    auto [half_sum, half_max] = rt.run(program, {{x, ff::device_span<float>(data + n / 2, n - n / 2)}});

    double want = 0, want_half = 0;
    for (std::size_t i = 0; i < n; ++i) (i < n / 2 ? want : want_half) += host[i];
    want += want_half;
    ok = std::fabs(sum.as<float>() - want) <= 1e-5 * want && std::fabs(half_sum.as<float>() - want_half) <= 1e-5 * want_half &&
         max.as<float>() == 499.5f && half_max.as<float>() == 499.5f;
    std::printf("on the user's buffer and stream: sum %.1f (host %.1f), max %.1f; second half: sum %.1f (host %.1f): %s\n",
                sum.as<float>(), want, max.as<float>(), half_sum.as<float>(), want_half, ok ? "ok" : "WRONG");
  }
  // The Runtime is gone; the buffer and the stream are still the application's.
  check(cudaFree(data), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return ok ? 0 : 1;
}
