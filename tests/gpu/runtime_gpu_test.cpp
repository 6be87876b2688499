// The runtime on a real GPU: memory round trips, compiled kernels writing every element
// of a poisoned buffer, user memory, errors, the disk cache across Runtimes and across
// processes, user streams.
#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "fuseflow/runtime/driver_api.hpp"
#include "fuseflow/runtime/low_level.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "runtime/cache_test_support.hpp"

namespace ff = fuseflow;

namespace {

struct Triple {  // an odd-sized tuple-like struct, as codegen emits for tuples
  std::int8_t a;
  std::int16_t b;
  float c;
  bool operator==(const Triple&) const = default;
};

constexpr std::size_t sizes[] = {0, 1, 1000, (std::size_t{1} << 20) + 3};
constexpr int poison = static_cast<int>(0xDEADBEEF);

ff::RuntimeOptions memory_only() {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  return options;
}

template <class T>
std::vector<T> pattern(std::size_t n) {
  std::vector<T> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, Triple>) {
      values[i] = Triple{static_cast<std::int8_t>(i), static_cast<std::int16_t>(3 * i),
                         static_cast<float>(i) * 0.5f};
    } else {
      values[i] = static_cast<T>(i * 7 + 1);
    }
  }
  return values;
}

// Fills out[i] = 7 + i through the runtime, checking every element changed from poison.
void fill_and_check(ff::Runtime& rt, ff::KernelHandle kernel, CUdeviceptr out, std::size_t n) {
  unsigned long long count = n;
  void* args[] = {&out, &count};
  const unsigned block = 256;
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  if (grid > 0) ff::low_level::launch(rt, kernel, {grid}, {block}, 0, args);
  rt.synchronize();
}

void check_filled(const std::vector<int>& values) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != 7 + static_cast<int>(i)) ++wrong;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE_TEMPLATE("upload then download returns the same values", T, std::int8_t, int, float,
                   double, std::uint64_t, Triple) {
  ff::Runtime rt(memory_only());
  for (std::size_t n : sizes) {
    CAPTURE(n);
    const std::vector<T> values = pattern<T>(n);
    ff::DeviceArray<T> array = rt.upload(values);
    CHECK(array.size() == n);
    CHECK((n == 0) == (array.data() == 0));
    CHECK(rt.download(array) == values);
    std::vector<T> into(n);
    array.download(std::span<T>(into));
    CHECK(into == values);
  }
}

TEST_CASE("device properties are read and plausible") {
  ff::Runtime rt(memory_only());
  const ff::DeviceProperties& p = rt.properties();
  CHECK(p.sm_count > 0);
  CHECK(p.arch().rfind("sm_", 0) == 0);
  CHECK(p.shared_memory_per_block == 48 * 1024);
  CHECK(p.shared_memory_per_block_optin >= p.shared_memory_per_block);
  CHECK(p.l2_cache_bytes > 0);
  CHECK(p.total_memory_bytes > (std::size_t{1} << 30));
  CHECK(p.max_threads_per_sm >= 1024);
}

TEST_CASE("a compiled kernel writes every element of a poisoned buffer") {
  ff::Runtime rt(memory_only());
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, ff::test::fill_kernel("ff_fill"), "ff_fill");
  REQUIRE(kernel);
  for (std::size_t n : sizes) {
    CAPTURE(n);
    ff::DeviceArray<int> out = rt.upload(std::vector<int>(n, poison));
    fill_and_check(rt, kernel, out.data(), n);
    check_filled(out.download());
  }
  // The second load of the same source is a memory hit and the same loaded kernel.
  const ff::KernelHandle again = ff::low_level::load_kernel(rt, ff::test::fill_kernel("ff_fill"), "ff_fill");
  CHECK(again.function() == kernel.function());
  CHECK(ff::low_level::cache(rt).stats().memory_hits == 1);
}

TEST_CASE("a kernel compiled to PTX is JIT-compiled by the driver and runs") {
  ff::RuntimeOptions options = memory_only();
  options.force_ptx = true;
  ff::Runtime rt(options);
  CHECK(ff::low_level::compile_options(rt).ptx);
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, ff::test::fill_kernel("ff_fill_ptx"), "ff_fill_ptx");
  ff::DeviceArray<int> out = rt.upload(std::vector<int>(1000, poison));
  fill_and_check(rt, kernel, out.data(), 1000);
  check_filled(out.download());
}

TEST_CASE("a kernel needing more than 48 KB of dynamic shared memory launches") {
  ff::Runtime rt(memory_only());
  const std::string source =
      "extern \"C\" __global__ void ff_big_smem(int* out, unsigned long long n) {\n"
      "  extern __shared__ int tile[];\n"
      "  const unsigned words = 64 * 1024 / 4;\n"
      "  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) tile[i] = 7 + (int)i;\n"
      "  __syncthreads();\n"
      "  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[i % words];\n"
      "}\n";
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, source, "ff_big_smem");
  const std::size_t n = 64 * 1024 / 4;
  ff::DeviceArray<int> out = rt.upload(std::vector<int>(n, poison));
  CUdeviceptr ptr = out.data();
  unsigned long long count = n;
  void* args[] = {&ptr, &count};
  ff::low_level::launch(rt, kernel, {1}, {256}, 64 * 1024, args);
  rt.synchronize();
  check_filled(out.download());
  CHECK(kernel.kernel().dynamic_smem_limit == 64 * 1024);
}

TEST_CASE("exactly 48 KB of dynamic shared memory beside static shared memory launches (it needs the opt-in)") {
  // Found by the fuzzer (seed 439): a compaction of 16-byte tuples staged 3072 survivors,
  // 48 KB of dynamic memory, beside a few static bytes, and the launch failed with
  // CUDA_ERROR_INVALID_VALUE because the opt-in was asked only above 48 KB of dynamic memory.
  ff::Runtime rt(memory_only());
  const std::string source =
      "extern \"C\" __global__ void ff_smem_48k(int* out, unsigned long long n) {\n"
      "  __shared__ int own[256];\n"
      "  extern __shared__ int tile[];\n"
      "  const unsigned words = 48 * 1024 / 4;\n"
      "  own[threadIdx.x] = 7;\n"
      "  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) tile[i] = (int)i;\n"
      "  __syncthreads();\n"
      "  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) out[i] = own[i % 256] + tile[i % words];\n"
      "}\n";
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, source, "ff_smem_48k");
  CHECK(kernel.kernel().static_smem == 1024);
  CHECK(kernel.kernel().dynamic_smem_limit == 48 * 1024 - 1024);
  const std::size_t n = 48 * 1024 / 4;
  ff::DeviceArray<int> out = rt.upload(std::vector<int>(n, poison));
  CUdeviceptr ptr = out.data();
  unsigned long long count = n;
  void* args[] = {&ptr, &count};
  ff::low_level::launch(rt, kernel, {1}, {256}, 48 * 1024, args);
  rt.synchronize();
  const std::vector<int> got = out.download();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] == 7 + static_cast<int>(i) ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(kernel.kernel().dynamic_smem_limit == 48 * 1024);
}

TEST_CASE("device_span views memory allocated with cuMemAlloc directly") {
  ff::Runtime rt(memory_only());
  const ff::detail::DriverApi& cu = ff::detail::driver();
  const std::size_t n = 4097;
  CUdeviceptr raw = 0;
  REQUIRE(cu.cuCtxPushCurrent(rt.context()) == CUDA_SUCCESS);
  REQUIRE(cu.cuMemAlloc(&raw, n * sizeof(int)) == CUDA_SUCCESS);
  const ff::device_span<int> view(raw, n);
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, ff::test::fill_kernel("ff_fill"), "ff_fill");
  fill_and_check(rt, kernel, view.data(), n);
  check_filled(rt.download(view));
  const ff::device_span<int> by_pointer(reinterpret_cast<int*>(raw), n);
  CHECK(by_pointer.data() == raw);
  CHECK(cu.cuMemFree(raw) == CUDA_SUCCESS);
  CUcontext popped = nullptr;
  cu.cuCtxPopCurrent(&popped);
}

TEST_CASE("running out of device memory says how much was asked and how much is free") {
  ff::Runtime rt(memory_only());
  const std::size_t tebibyte = std::size_t{1} << 40;
  try {
    ff::DeviceArray<char> huge = rt.alloc<char>(tebibyte);
    FAIL("a 1 TiB allocation succeeded");
  } catch (const ff::CudaError& e) {
    CHECK(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
    const std::string what = e.what();
    CHECK(what.find("asked for 1099511627776 bytes (1.0 TiB)") != std::string::npos);
    CHECK(what.find(" free of ") != std::string::npos);
  }
  // Running out of memory is not fatal: the Runtime still works.
  CHECK(rt.download(rt.upload(std::vector<int>{1, 2, 3})) == std::vector<int>{1, 2, 3});
}

// Issue 20: most of the device's memory taken first (in 1 GiB pieces, then the rest but
// 256 MiB), a run whose 512 MiB output does not fit throws CudaError naming the size it
// asked for; with the memory given back the same run succeeds. The whole device's memory:
// runtime_gpu_test is RUN_SERIAL (tests/gpu/CMakeLists.txt).
TEST_CASE("with most of the device's memory taken, a run whose output does not fit says the size it asked for") {
  ff::Runtime rt(memory_only());
  const std::size_t n = std::size_t{1} << 27, output_bytes = n * sizeof(float);
  ff::DeviceArray<float> input = rt.upload(std::vector<float>(n, 1.5f));
  const auto free_bytes = [&rt] {
    rt.synchronize();
    const ff::detail::DriverApi& api = *ff::detail::driver_api();
    REQUIRE(api.cuCtxPushCurrent(rt.context()) == CUDA_SUCCESS);
    std::size_t free = 0, total = 0;
    const CUresult got = api.cuMemGetInfo(&free, &total);
    CUcontext popped = nullptr;
    api.cuCtxPopCurrent(&popped);
    REQUIRE(got == CUDA_SUCCESS);
    return free;
  };
  const std::size_t gib = std::size_t{1} << 30, keep = std::size_t{256} << 20;
  auto x = ff::input<float>("x");
  {
    std::vector<ff::DeviceArray<char>> taken;
    while (free_bytes() > gib + keep) taken.push_back(rt.alloc<char>(gib));
    if (const std::size_t free = free_bytes(); free > keep) taken.push_back(rt.alloc<char>(free - keep));
    INFO(taken.size() << " pieces taken, " << free_bytes() << " bytes free");
    REQUIRE(free_bytes() < output_bytes);
    try {
      (void)rt.run(x * 2.0f, {{x, input}});
      FAIL("a run needing 512 MiB succeeded with less than that free");
    } catch (const ff::CudaError& e) {
      CHECK(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("asked for " + std::to_string(output_bytes) + " bytes") != std::string::npos);
    }
  }
  const std::vector<float> doubled = rt.run(x * 2.0f, {{x, input}}).download<float>();
  REQUIRE(doubled.size() == n);
  CHECK(doubled.front() == 3.0f);
  CHECK(doubled.back() == 3.0f);
}

TEST_CASE("a fresh Runtime loads a kernel from the disk cache without compiling") {
  ff::test::TempDir dir;
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  options.cache->disk_dir = dir.path();
  const std::string source = ff::test::fill_kernel("ff_fill_disk", 7);
  {
    ff::Runtime first(options);
    ff::low_level::load_kernel(first, source, "ff_fill_disk");
    CHECK(ff::low_level::cache(first).stats().compiles == 1);
  }
  ff::Runtime second(options);
  const ff::KernelHandle kernel = ff::low_level::load_kernel(second, source, "ff_fill_disk");
  CHECK(ff::low_level::cache(second).stats().disk_hits == 1);
  CHECK(ff::low_level::cache(second).stats().compiles == 0);
  ff::DeviceArray<int> out = second.upload(std::vector<int>(1000, poison));
  fill_and_check(second, kernel, out.data(), 1000);
  check_filled(out.download());
}

// The disk cache across processes: the parent compiles into a fresh directory, then runs
// this same executable (posix_spawn: no fork after CUDA is initialised) with only the
// "child: " test case selected and the directory in FUSEFLOW_TEST_CHILD_CACHE_DIR.
constexpr const char* child_cache_dir_env = "FUSEFLOW_TEST_CHILD_CACHE_DIR";
constexpr const char* child_ms_file = "child-load-ms";  // the child's proof that it ran
const std::string child_source = ff::test::fill_kernel("ff_fill_child", 7);

TEST_CASE("a second process loads the kernel from the disk cache") {
  ff::test::TempDir dir;
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  options.cache->disk_dir = dir.path();
  {
    ff::Runtime rt(options);
    const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, child_source, "ff_fill_child");
    REQUIRE(ff::low_level::cache(rt).stats().compiles == 1);
    ff::DeviceArray<int> out = rt.upload(std::vector<int>(1000, poison));
    fill_and_check(rt, kernel, out.data(), 1000);
    check_filled(out.download());
  }
  std::vector<std::string> env_strings = {std::string(child_cache_dir_env) + "=" + dir.path().string()};
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = "runtime_gpu_test", arg1 = "--test-case=child: *";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Without this file a filter matching nothing would also exit 0.
  const std::string child_ms = ff::test::read_bytes(dir.path() / child_ms_file);
  REQUIRE(!child_ms.empty());
  MESSAGE("the child process loaded the kernel from the disk cache in " << child_ms << " ms");
}

TEST_CASE("child: loads the disk-cached kernel (a no-op unless run by the test above)") {
  const char* cache_dir = std::getenv(child_cache_dir_env);
  if (cache_dir == nullptr) {
    MESSAGE("no-op: runs only as the child process of \"a second process loads the kernel "
            "from the disk cache\"");
    return;
  }
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  options.cache->disk_dir = cache_dir;
  ff::Runtime rt(options);
  ff::CompileOptions options_of_load = ff::low_level::compile_options(rt);
  options_of_load.minimal = false;  // as low_level::load_kernel compiles a hand-written kernel
  const ff::CacheResult found = ff::low_level::cache(rt).get("ff_fill_child", child_source, options_of_load);
  CHECK(found.outcome == ff::CacheOutcome::disk_hit);
  const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, child_source, "ff_fill_child");  // memory hit
  CHECK(ff::low_level::cache(rt).stats().disk_hits == 1);
  CHECK(ff::low_level::cache(rt).stats().compiles == 0);
  ff::DeviceArray<int> out = rt.upload(std::vector<int>(1000, poison));
  fill_and_check(rt, kernel, out.data(), 1000);
  check_filled(out.download());
  MESSAGE("child: disk-hit load took " << found.milliseconds << " ms");
  ff::test::write_bytes(std::filesystem::path(cache_dir) / child_ms_file,
                        std::to_string(found.milliseconds));
}

TEST_CASE("a Runtime works on a stream the user supplies") {
  const ff::detail::DriverApi& cu = ff::detail::driver();
  // Keeps the primary context alive for the whole test: the user's stream belongs to it.
  ff::Runtime owner(memory_only());
  REQUIRE(cu.cuCtxPushCurrent(owner.context()) == CUDA_SUCCESS);
  CUstream user = nullptr;
  REQUIRE(cu.cuStreamCreate(&user, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  {
    ff::RuntimeOptions options = memory_only();
    options.stream = user;
    ff::Runtime rt(options);
    CHECK(rt.stream() == user);
    const ff::KernelHandle kernel = ff::low_level::load_kernel(rt, ff::test::fill_kernel("ff_fill"), "ff_fill");
    ff::DeviceArray<int> out = rt.upload(std::vector<int>(5000, poison));
    fill_and_check(rt, kernel, out.data(), 5000);
    check_filled(out.download());
  }
  // The Runtime left the user's stream alone: it is still valid and can be destroyed.
  CHECK(cu.cuStreamSynchronize(user) == CUDA_SUCCESS);
  CHECK(cu.cuStreamDestroy(user) == CUDA_SUCCESS);
  CUcontext popped = nullptr;
  cu.cuCtxPopCurrent(&popped);
}

TEST_CASE("scratch memory is reused while it is big enough and grows when asked for more") {
  ff::Runtime rt(memory_only());
  const CUdeviceptr first = ff::low_level::scratch(rt, 1000);
  CHECK(first != 0);
  CHECK(first % 256 == 0);
  CHECK(ff::low_level::scratch(rt, 10) == first);
  const CUdeviceptr grown = ff::low_level::scratch(rt, std::size_t{1} << 24);
  CHECK(grown != 0);
  // Zeroing through the runtime's stream is visible to a download on it.
  ff::low_level::zero(rt, grown, 4096);
  std::vector<std::uint8_t> bytes(4096, 0xff);
  ff::device_span<std::uint8_t> view(grown, bytes.size());
  CHECK(rt.download(view) == std::vector<std::uint8_t>(4096, 0));
}

TEST_CASE("a DeviceArray outlives its Runtime safely") {
  ff::DeviceArray<int> kept;
  {
    ff::Runtime rt(memory_only());
    kept = rt.upload(std::vector<int>{4, 5, 6});
  }
  CHECK(kept.download() == std::vector<int>{4, 5, 6});
}
