#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "cache_test_support.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"

namespace ff = fuseflow;
using ff::test::TempDir;

namespace {

const std::string source = ff::test::fill_kernel("ff_race", 3);
// The kernels the racing processes share: each compiles all of them, in its own order.
const std::vector<std::string> kernel_names = {"ff_race_a", "ff_race_b", "ff_race_c"};

ff::CacheSettings disk_settings(const std::filesystem::path& dir) {
  ff::CacheSettings settings;
  settings.disk_dir = dir;
  return settings;
}

// After any race the directory holds exactly one valid entry and no temporary files.
void check_single_valid_entry(const std::filesystem::path& dir) {
  CHECK(ff::test::file_count(dir) == 1);
  ff::KernelCache reader(disk_settings(dir));
  CHECK(reader.get("ff_race", source, ff::CompileOptions{}).outcome == ff::CacheOutcome::disk_hit);
  CHECK(reader.stats().rejected_entries == 0);
}

}  // namespace

TEST_CASE("8 processes racing to compile and cache the same kernels all succeed and leave valid entries") {
  TempDir dir;
  constexpr int processes = 8;
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      // Released together when the parent closes the pipe, so the compiles overlap.
      (void)::read(gate[0], &byte, 1);
      int status = 1;
      try {
        ff::KernelCache cache(disk_settings(dir.path()));
        status = 0;
        for (std::size_t k = 0; k < kernel_names.size(); ++k) {
          const std::string& name = kernel_names[(k + static_cast<std::size_t>(i)) % kernel_names.size()];
          const ff::CacheResult r = cache.get(name, ff::test::fill_kernel(name, 3), ff::CompileOptions{});
          if (!r.kernel || r.kernel->image.empty()) status = 2;
        }
      } catch (...) {
        status = 3;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  // One valid entry per kernel, no temporary file, each loaded without a compile, and each
  // the same binary a compile gives now.
  CHECK(ff::test::file_count(dir.path()) == kernel_names.size());
  ff::KernelCache reader(disk_settings(dir.path()));
  ff::KernelCache fresh(ff::CacheSettings{});
  for (const std::string& name : kernel_names) {
    const ff::CacheResult r = reader.get(name, ff::test::fill_kernel(name, 3), ff::CompileOptions{});
    CHECK(r.outcome == ff::CacheOutcome::disk_hit);
    CHECK(r.kernel->image == fresh.get(name, ff::test::fill_kernel(name, 3), ff::CompileOptions{}).kernel->image);
  }
  CHECK(reader.stats().rejected_entries == 0);
  CHECK(reader.stats().compiles == 0);
}

TEST_CASE("threads with separate cache instances racing on one key all succeed") {
  TempDir dir;
  constexpr int threads = 6;
  std::vector<int> ok(threads, 0);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      ff::KernelCache cache(disk_settings(dir.path()));
      ok[static_cast<std::size_t>(i)] =
          !cache.get("ff_race", source, ff::CompileOptions{}).kernel->image.empty();
    });
  for (std::thread& t : pool) t.join();
  for (int v : ok) CHECK(v == 1);
  check_single_valid_entry(dir.path());
}

TEST_CASE("threads sharing one cache all get the same kernel object") {
  ff::KernelCache cache(ff::CacheSettings{});
  constexpr int threads = 6;
  std::vector<const ff::CompiledKernel*> got(threads, nullptr);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      got[static_cast<std::size_t>(i)] = cache.get("ff_race", source, ff::CompileOptions{}).kernel.get();
    });
  for (std::thread& t : pool) t.join();
  for (const ff::CompiledKernel* k : got) CHECK(k == got[0]);
  CHECK(cache.stats().memory_hits + cache.stats().misses == threads);
}
