// The Runtime's caches on the GPU (issue 20): programs rebuilt in a loop share one plan,
// and under small limits programs of distinct structure keep host memory (RSS) and device
// memory (cuMemGetInfo) flat. The same checks run on the CPU emulator in CI
// (tests/runtime/emu_runtime_cache_test.cpp), which also counts live allocations.
// FUSEFLOW_TEST_EQUAL_PROGRAMS and FUSEFLOW_TEST_DISTINCT_PROGRAMS change the counts
// (1,000,000 and 1,000: each distinct program is an NVRTC compile of ~0.1 s). The 1,000,000
// equal and 1,000 distinct programs are in the suite "long" (label gpu-long); 100,000 and
// 40 run under the label gpu.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include "fuseflow/runtime/driver_api.hpp"

namespace ff = fuseflow;

namespace {

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Device memory in use on the Runtime's GPU (total - free).
std::size_t device_used(ff::Runtime& rt) {
  rt.synchronize();
  const ff::detail::DriverApi& api = *ff::detail::driver_api();
  REQUIRE(api.cuCtxPushCurrent(rt.context()) == CUDA_SUCCESS);
  std::size_t free = 0, total = 0;
  const CUresult got = api.cuMemGetInfo(&free, &total);
  CUcontext popped = nullptr;
  api.cuCtxPopCurrent(&popped);
  REQUIRE(got == CUDA_SUCCESS);
  return total - free;
}

long count_from(const char* variable, long fallback) {
  const char* v = std::getenv(variable);
  return v && *v ? std::atol(v) : fallback;
}

ff::RuntimeOptions memory_only() {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  return options;
}

// `programs` programs equal in structure, each built anew and run (~15 us each on an H100):
// one plan, one compile; memory measured after the first 1,000 stays flat.
void check_equal_programs(long programs) {
  REQUIRE(programs > 1000);
  ff::Runtime rt(memory_only());
  const std::vector<float> host = {0.5f, 1.5f, 2.5f, 3.5f};
  auto xs = rt.upload(host);
  std::size_t rss_warm = 0, device_warm = 0;
  for (long i = 0; i < programs; ++i) {
    const ff::Expr x = ff::input<float>("x"), p = ff::param<float>("p");
    const ff::Expr sum = ff::reduce(x * x + p, ff::plus);
    const float value = static_cast<float>(i % 5);
    const float got = rt.run(sum, {{x, xs}, {p, value}}).as<float>();
    if (i % 10000 == 0) REQUIRE(got == 0.25f + 2.25f + 6.25f + 12.25f + 4 * value);
    if (i == 1000) {
      rss_warm = resident_bytes();
      device_warm = device_used(rt);
    }
  }
  const ff::RuntimeStats s = rt.stats();
  CHECK(s.programs.misses == 1);
  CHECK(s.programs.entries == 1);
  CHECK(s.kernels.compiles == 1);
  INFO("host ", rss_warm, " -> ", resident_bytes(), " bytes; device ", device_warm, " -> ", device_used(rt));
  CHECK(resident_bytes() < rss_warm + (std::size_t{16} << 20));
  CHECK(device_used(rt) <= device_warm + (std::size_t{4} << 20));
}

}  // namespace

// 100,000 under the label gpu (1,000,000 took 14.9 s); the million in the suite "long".
TEST_CASE("programs equal in structure, rebuilt every run, share one plan and keep memory flat") {
  check_equal_programs(count_from("FUSEFLOW_TEST_EQUAL_PROGRAMS", 100000));
}

TEST_CASE("1,000,000 programs equal in structure, rebuilt every run, share one plan and keep memory flat" *
          doctest::test_suite("long")) {
  check_equal_programs(count_from("FUSEFLOW_TEST_EQUAL_PROGRAMS", 1000000));
}

namespace {

// `distinct` programs of distinct structure through a Runtime that keeps 16 of each: every
// one is planned and compiled (~0.1 s each), 16 stay; memory measured after the first
// `warm` stays flat.
void check_distinct_programs(long distinct, long warm) {
  REQUIRE(distinct > warm);
  REQUIRE(warm >= 16);
  ff::RuntimeOptions options = memory_only();
  options.limits.programs = 16;
  options.limits.modules = 16;
  options.cache->memory_entries = 16;
  ff::Runtime rt(options);
  const std::vector<float> host = {1, 2, 3};
  auto xs = rt.upload(host);
  std::size_t rss_warm = 0, device_warm = 0;
  for (long c = 1; c <= distinct; ++c) {
    const ff::Expr x = ff::input<float>("x");
    const float scale = static_cast<float>(c);
    REQUIRE(rt.run(ff::reduce(x * scale, ff::plus), {{x, xs}}).as<float>() == 6.0f * scale);
    if (c == warm) {
      rss_warm = resident_bytes();
      device_warm = device_used(rt);
    }
  }
  const ff::RuntimeStats s = rt.stats();
  CHECK(s.programs.entries == 16);
  CHECK(s.programs.evictions == static_cast<std::uint64_t>(distinct - 16));
  CHECK(s.modules.entries == 16);
  CHECK(s.kernels.memory_entries == 16);
  INFO("host ", rss_warm, " -> ", resident_bytes(), " bytes; device ", device_warm, " -> ", device_used(rt));
  CHECK(resident_bytes() < rss_warm + (std::size_t{32} << 20));
  CHECK(device_used(rt) <= device_warm + (std::size_t{16} << 20));
}

}  // namespace

TEST_CASE("40 programs of distinct structure stay within the limits of 16; host and device memory stay flat") {
  check_distinct_programs(40, 20);
}

// ~1,000 NVRTC compiles: 2-3 minutes, so in the suite "long" (label gpu-long).
TEST_CASE("1,000 programs of distinct structure stay within the limits; host and device memory stay flat" *
          doctest::test_suite("long")) {
  check_distinct_programs(count_from("FUSEFLOW_TEST_DISTINCT_PROGRAMS", 1000), 100);
}
