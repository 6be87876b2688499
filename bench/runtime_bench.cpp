// Runtime numbers for issue 3 (not a test): NVRTC cold compile of a reduction-like
// kernel, disk-cache load in a fresh cache instance, and the host cost of an in-memory
// hit plus a launch. Prints medians; GPU parts are skipped without a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "fuseflow/runtime/low_level.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace ff = fuseflow;
using Clock = std::chrono::steady_clock;

namespace {

// Shaped like a generated chunked reduction: fused map, vector loads, warp shuffles,
// shared memory across warps, last-block combine of the partials.
const char* const reduction_source = R"(// bench variant @
struct ff_pair { float x; float y; };
__device__ float ff_map(float a, float b) { return a * b; }
__device__ float ff_warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}
__device__ float ff_block_reduce(float v) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = ff_warp_reduce(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
  if (warp == 0) v = ff_warp_reduce(v);
  return v;
}
extern "C" __global__ void ff_reduce_chunked_f32_dot(const float* __restrict__ x,
                                                     const float* __restrict__ y,
                                                     unsigned long long n, float* partials,
                                                     unsigned int* ticket, float* result) {
  float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long vec_n = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < vec_n; i += stride) {
    const float4 a = x4[i], b = y4[i];
    acc0 += ff_map(a.x, b.x);
    acc1 += ff_map(a.y, b.y);
    acc2 += ff_map(a.z, b.z);
    acc3 += ff_map(a.w, b.w);
  }
  for (unsigned long long i = vec_n * 4 + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < n; i += stride)
    acc0 += ff_map(x[i], y[i]);
  float v = ff_block_reduce((acc0 + acc1) + (acc2 + acc3));
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  float total = 0.0f;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += partials[b];
  total = ff_block_reduce(total);
  if (threadIdx.x == 0) { *result = total; *ticket = 0; }
}
)";

std::string variant(int i) {
  std::string text = reduction_source;
  text.replace(text.find('@'), 1, std::to_string(i));
  return text;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class F>
double time_ms(F&& f) {
  const Clock::time_point start = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

// Child mode: the first lookup in a brand-new process, as a user's second program run
// pays it. Prints "<setup ms> <first lookup ms>": setup is NVRTC's load alone without a
// GPU, Runtime construction (context + NVRTC, overlapped) with one; the lookup is a disk
// hit, plus cuModuleLoadData with a GPU.
int disk_hit_child(const char* dir, const char* arch) {
  ff::CacheSettings disk;
  disk.disk_dir = dir;
  ff::CompileOptions options;
  options.arch = arch;
  const std::string source = variant(100);
  const char* kernel = "ff_reduce_chunked_f32_dot";
  if (ff::gpu_available()) {
    ff::RuntimeOptions rt_options;
    rt_options.cache = disk;
    std::optional<ff::Runtime> rt;
    const double setup = time_ms([&] { rt.emplace(rt_options); });
    const double lookup = time_ms([&] { ff::low_level::load_kernel(*rt, source, kernel, options); });
    std::printf("%.3f %.3f %llu\n", setup, lookup,
                static_cast<unsigned long long>(ff::low_level::cache(*rt).stats().disk_hits));
  } else {
    const double setup = time_ms([] { ff::Compiler::version(); });
    ff::KernelCache cache(disk);
    const double lookup = time_ms([&] { cache.get(kernel, source, options); });
    std::printf("%.3f %.3f %llu\n", setup, lookup,
                static_cast<unsigned long long>(cache.stats().disk_hits));
  }
  return 0;
}

void report_fresh_process(const std::filesystem::path& dir, const std::string& arch, bool gpu) {
  std::vector<double> setup_ms, lookup_ms;
  for (int i = 0; i < 5; ++i) {
    const std::string command =
        "/proc/" + std::to_string(::getpid()) + "/exe --disk-hit-child " + dir.string() + " " + arch;
    FILE* child = ::popen(command.c_str(), "r");
    double setup = 0, lookup = 0;
    unsigned long long hits = 0;
    if (child && std::fscanf(child, "%lf %lf %llu", &setup, &lookup, &hits) == 3 && hits == 1) {
      setup_ms.push_back(setup);
      lookup_ms.push_back(lookup);
    }
    if (child) ::pclose(child);
  }
  if (setup_ms.empty()) {
    std::printf("fresh process: child failed\n");
    return;
  }
  std::printf("fresh process, median of 5: %s %.1f ms, then first lookup (disk hit%s) %.3f ms\n",
              gpu ? "Runtime construction (context + NVRTC load)" : "NVRTC load", median(setup_ms),
              gpu ? " + cuModuleLoadData" : "", median(lookup_ms));
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--disk-hit-child") return disk_hit_child(argv[2], argv[3]);
  const bool gpu = ff::gpu_available();
  ff::CompileOptions options;
  if (gpu) options.arch = ff::read_device_properties(0).arch();
  const ff::NvrtcVersion nvrtc = ff::Compiler::version();
  std::printf("fuseflow runtime bench: NVRTC %d.%d, arch %s, %s\n", nvrtc.major, nvrtc.minor,
              options.arch.c_str(), gpu ? ff::read_device_properties(0).name.c_str() : "no GPU");
  const char* kernel = "ff_reduce_chunked_f32_dot";

  // 1. Cold NVRTC compile: a distinct source each time so nothing is reused.
  std::vector<double> compile_ms;
  ff::Compiler::compile(variant(-1), kernel, options);  // loads NVRTC, not counted
  for (int i = 0; i < 5; ++i)
    compile_ms.push_back(time_ms([&] { ff::Compiler::compile(variant(i), kernel, options); }));
  std::printf("cold NVRTC compile (~60-line reduction, cubin), median of 5: %.1f ms\n",
              median(compile_ms));

  // 2. Disk hit in a fresh cache instance (what a new process pays).
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fuseflow-bench-" + std::to_string(::getpid()));
  ff::CacheSettings disk;
  disk.disk_dir = dir;
  const std::string source = variant(100);
  ff::KernelCache(disk).get(kernel, source, options);
  std::vector<double> disk_ms;
  for (int i = 0; i < 20; ++i) {
    ff::KernelCache fresh(disk);
    const ff::CacheResult r = fresh.get(kernel, source, options);
    if (r.outcome != ff::CacheOutcome::disk_hit) std::printf("unexpected: %s\n", ff::to_string(r.outcome));
    disk_ms.push_back(r.milliseconds);
  }
  std::printf("disk-cache hit, fresh KernelCache, median of 20: %.3f ms\n", median(disk_ms));
  report_fresh_process(dir, options.arch, gpu);

  // 3. In-memory hit alone.
  ff::KernelCache memory(disk);
  memory.get(kernel, source, options);
  std::vector<double> hit_us;
  for (int i = 0; i < 2000; ++i)
    hit_us.push_back(1000 * time_ms([&] { memory.get(kernel, source, options); }));
  std::printf("in-memory hit (KernelCache::get), median of 2000: %.2f us\n", median(hit_us));

  if (!gpu) {
    std::printf("no GPU: module load and launch overhead not measured\n");
  } else {
    ff::RuntimeOptions rt_options;
    rt_options.cache = disk;
    std::vector<double> load_ms;
    for (int i = 0; i < 5; ++i) {
      ff::Runtime fresh(rt_options);
      load_ms.push_back(time_ms([&] { ff::low_level::load_kernel(fresh, source, kernel, options); }));
    }
    std::printf("disk hit + cuModuleLoadData in a fresh Runtime, median of 5: %.3f ms\n",
                median(load_ms));

    ff::Runtime rt(rt_options);
    const std::size_t n = 1 << 20;
    ff::DeviceArray<float> x = rt.upload(std::vector<float>(n, 1.0f));
    ff::DeviceArray<float> y = rt.upload(std::vector<float>(n, 2.0f));
    const unsigned grid = static_cast<unsigned>(rt.properties().sm_count) * 4;
    ff::DeviceArray<float> partials = rt.alloc<float>(grid);
    ff::DeviceArray<unsigned> ticket = rt.upload(std::vector<unsigned>{0});
    ff::DeviceArray<float> result = rt.alloc<float>(1);
    CUdeviceptr px = x.data(), py = y.data(), pp = partials.data(), pt = ticket.data(),
                pr = result.data();
    unsigned long long count = n;
    void* args[] = {&px, &py, &count, &pp, &pt, &pr};
    std::vector<double> launch_us;
    for (int i = 0; i < 5000; ++i) {
      launch_us.push_back(1000 * time_ms([&] {
        const ff::KernelHandle k = ff::low_level::load_kernel(rt, source, kernel, options);
        ff::low_level::launch(rt, k, {grid}, {256}, 0, args);
      }));
      if (i % 256 == 255) rt.synchronize();  // keep the launch queue from filling
    }
    rt.synchronize();
    const ff::KernelHandle handle = ff::low_level::load_kernel(rt, source, kernel, options);
    std::vector<double> launch_only_us;
    for (int i = 0; i < 5000; ++i) {
      launch_only_us.push_back(1000 * time_ms([&] { ff::low_level::launch(rt, handle, {grid}, {256}, 0, args); }));
      if (i % 256 == 255) rt.synchronize();
    }
    rt.synchronize();
    std::printf("launch alone (Runtime::launch), host time, median of 5000: %.2f us\n",
                median(launch_only_us));
    std::printf("in-memory hit + launch, host time, median of 5000: %.2f us (result %.0f, expect %.0f)\n",
                median(launch_us), static_cast<double>(result.download()[0]), 2.0 * n);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}
