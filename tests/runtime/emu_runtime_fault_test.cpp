// Faults injected through the CPU emulator (run only as emu_runtime_fault_test): the k-th
// driver call of a program's first run fails, for every k (context, allocation, copy,
// module load, launch, read-back), and the k-th NVRTC call of its first compile. Each must
// give a CudaError / CompileError naming the call, leak nothing (the emulator's counts of
// live allocations, modules, contexts and NVRTC programs back where they were), and leave
// fuseflow able to run the same program at once. A cache directory that refuses writes
// costs a warning, once, and nothing else.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fcntl.h>
#include <optional>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include "fuseflow/runtime/low_level.hpp"

#include "cache_test_support.hpp"
#include "emu_hooks.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<float> host = {1, 2, 3, 4};

struct Affine {
  ff::Expr x = ff::input<float>("x");
  ff::Expr p = ff::param<float>("p");
  ff::Expr sum = ff::reduce(x * p + 1.0f, ff::plus);
};

float expected(float p) {
  float s = 0;
  for (float x : host) s += x * p + 1.0f;
  return s;
}

struct Counts {
  long allocations, modules, contexts, programs;
  bool operator==(const Counts&) const = default;
};
Counts counts(const ff::test::EmulatorHooks& emu) {
  return {emu.live_allocations(), emu.live_modules(), emu.live_contexts(), emu.live_programs()};
}
std::string text(const Counts& c) {
  return std::to_string(c.allocations) + " allocations, " + std::to_string(c.modules) + " modules, " +
         std::to_string(c.contexts) + " contexts, " + std::to_string(c.programs) + " NVRTC programs";
}

// A first run: a Runtime, an upload, a run. Steps already done are kept, so after a fault
// calling it again continues on the same Runtime.
struct FirstRun {
  FirstRun() = default;
  explicit FirstRun(ff::RuntimeOptions o) : options(std::move(o)) {}
  std::optional<ff::RuntimeOptions> options;
  std::optional<ff::Runtime> rt;
  std::optional<ff::DeviceArray<float>> xs;
  Affine a;
  float operator()(float p) {
    if (!rt) options ? rt.emplace(*options) : rt.emplace();
    if (!xs) xs.emplace(rt->upload(host));
    return rt->run(a.sum, {{a.x, *xs}, {a.p, p}}).as<float>();
  }
};

}  // namespace

TEST_CASE("the k-th driver call of a first run fails: a CudaError naming it, nothing leaked, the next run succeeds") {
  ff::test::EmulatorHooks emu;
  {
    FirstRun warm;  // the kernel into the disk cache; cuInit, done once per process
    REQUIRE(warm(2) == expected(2));
  }
  long calls = 0;
  {
    FirstRun counting;
    emu.fail_driver_call(0);
    REQUIRE(counting(2) == expected(2));
    calls = emu.driver_calls();  // up to the result on the host; the teardown after is not failed
  }
  INFO("a first run makes ", calls, " driver calls");
  REQUIRE(calls >= 10);
  for (long k = 1; k <= calls; ++k) {
    const Counts before = counts(emu);
    std::string error, fault;
    {
      FirstRun run;
      emu.fail_driver_call(k);
      try {
        const float got = run(2);  // (CHECK would catch the exception itself)
        CHECK(got == expected(2));
      } catch (const ff::CudaError& e) {
        error = e.what();
      }
      fault = emu.last_fault();
      emu.fail_driver_call(0);
      INFO("call ", k, " (", fault, ") failed: ", error);
      CHECK_FALSE(fault.empty());
      CHECK(error.find(fault) != std::string::npos);
      CHECK(run(3) == expected(3));  // on what the failed run left: the same Runtime if it was made
    }
    INFO("call ", k, " (", fault, "): before ", text(before), "; after ", text(counts(emu)));
    CHECK(counts(emu) == before);
  }
}

TEST_CASE("the k-th NVRTC call of a first compile fails: a CompileError naming it, nothing leaked, the next run succeeds") {
  ff::test::EmulatorHooks emu;
  ff::RuntimeOptions memory_only;
  memory_only.cache = ff::CacheSettings{};  // no disk: every Runtime compiles
  long calls = 0;
  {
    FirstRun counting{memory_only};
    (void)ff::Compiler::version();  // nvrtcVersion: once per process, not part of a compile
    emu.fail_nvrtc_call(0);
    REQUIRE(counting(2) == expected(2));
    calls = emu.nvrtc_calls();
  }
  INFO("a first compile makes ", calls, " NVRTC calls");
  REQUIRE(calls >= 4);
  for (long k = 1; k <= calls; ++k) {
    const Counts before = counts(emu);
    std::string error, fault;
    {
      FirstRun run{memory_only};
      emu.fail_nvrtc_call(k);
      try {
        const float got = run(2);  // (CHECK would catch the exception itself)
        CHECK(got == expected(2));
      } catch (const ff::CompileError& e) {
        error = e.what();
      }
      fault = emu.last_fault();
      emu.fail_nvrtc_call(0);
      INFO("NVRTC call ", k, " (", fault, ") failed: ", error);
      CHECK_FALSE(fault.empty());
      CHECK(error.find(fault + " failed") != std::string::npos);
      CHECK(run(3) == expected(3));
    }
    INFO("NVRTC call ", k, " (", fault, "): before ", text(before), "; after ", text(counts(emu)));
    CHECK(counts(emu) == before);
  }
}

TEST_CASE("a cache directory that refuses writes: the runs succeed, one warning, nothing half-written") {
  ff::test::TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "cache";
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  options.cache->disk_dir = dir;
  ff::Runtime rt(options);
  REQUIRE(ff::low_level::cache(rt).disk_enabled());
  // The directory goes and a file takes its name: every write from now on fails (as on a
  // full or read-only disk; a full disk under a file size limit: cache_fault_test.cpp).
  std::filesystem::remove_all(dir);
  ff::test::write_bytes(dir, "not a directory");
  const std::filesystem::path log = tmp.path() / "stderr.txt";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  ::dup2(fd, 2);
  float sum = 0, largest = 0;
  {
    auto xs = rt.upload(host);
    const Affine a;
    sum = rt.run(a.sum, {{a.x, xs}, {a.p, 2.0f}}).as<float>();
    const ff::Expr x = ff::input<float>("x");
    largest = rt.run(ff::reduce(x, ff::max), {{x, xs}}).as<float>();
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  CHECK(sum == expected(2));
  CHECK(largest == 4.0f);
  const std::string output = ff::test::read_bytes(log);
  INFO("stderr: ", output);
  std::size_t warnings = 0;
  for (std::size_t at = output.find("warning"); at != std::string::npos; at = output.find("warning", at + 1)) ++warnings;
  CHECK(warnings == 1);
  CHECK(output.find(dir.string()) != std::string::npos);
  const ff::CacheStats stats = rt.stats().kernels;
  CHECK(stats.disk_writes == 0);
  CHECK(stats.disk_write_failures == 1);  // then the disk is off: no second try, no second warning
  CHECK_FALSE(ff::low_level::cache(rt).disk_enabled());
  CHECK(ff::test::read_bytes(dir) == "not a directory");
  CHECK(ff::test::file_count(tmp.path()) == 2);  // the file and the log: no temporary left
}

namespace {
std::size_t occurrences(const std::string& log, const std::string& call) {
  std::size_t n = 0;
  for (std::size_t at = log.find(call + " "); at != std::string::npos; at = log.find(call + " ", at + 1))
    if (at == 0 || log[at - 1] == ' ') ++n;
  return n;
}
std::size_t words(const std::string& log) {
  std::size_t n = 0;
  for (char c : log) n += c == ' ';
  return n;
}
}  // namespace

TEST_CASE("a prepared run: one launch writing its result into mapped pinned memory, one wait; no copy, no allocation, no module load") {
  const ff::test::EmulatorHooks emu;
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  ff::Runtime rt(options);
  auto xs = rt.upload(host);
  const Affine a;
  CHECK(rt.run(a.sum, {{a.x, xs}, {a.p, 2.0f}}).as<float>() == expected(2));  // prepares
  const Counts before = counts(emu);
  for (const bool rebuilt : {false, true}) {
    INFO("rebuilt: ", rebuilt);
    const Affine b;
    const Affine& p = rebuilt ? b : a;
    emu.fail_driver_call(0);  // restarts the count and the log
    CHECK(rt.run(p.sum, {{p.x, xs}, {p.p, 3.0f}}).as<float>() == expected(3));
    const std::string log = emu.driver_call_log();
    INFO("driver calls: ", log);
    // The reduction over 4 elements is one kernel: its launch, which stores the scalar
    // straight into the prepared program's mapped pinned buffer, and the wait, beside the
    // context check and the capture query. No copy back, nothing else.
    CHECK(occurrences(log, "cuLaunchKernel") == 1);
    CHECK(occurrences(log, "cuMemcpyDtoHAsync") == 0);
    CHECK(occurrences(log, "cuStreamSynchronize") == 1);
    CHECK(occurrences(log, "cuCtxGetCurrent") == 1);
    CHECK(occurrences(log, "cuStreamIsCapturing") == 1);
    CHECK(words(log) == 4);
    CHECK(counts(emu) == before);
  }
  CHECK(rt.stats().programs.misses == 1);
  {
    // A result that a later kernel reads stays in device memory, so that run copies the
    // scalars back: sum(x - sum(x)) = 10 - 4 * 10 over {1, 2, 3, 4}.
    const ff::Expr x = ff::input<float>("x");
    const ff::Expr centred = ff::reduce(x - ff::reduce(x, ff::plus), ff::plus);
    CHECK(rt.run(centred, {{x, xs}}).as<float>() == -30.0f);  // prepares
    emu.fail_driver_call(0);
    CHECK(rt.run(centred, {{x, xs}}).as<float>() == -30.0f);
    CHECK(occurrences(emu.driver_call_log(), "cuMemcpyDtoHAsync") == 1);
  }
  emu.fail_driver_call(0);
  ff::Result pending = rt.run_async(a.sum, {{a.x, xs}, {a.p, 4.0f}});
  const std::string log = emu.driver_call_log();
  INFO("run_async's driver calls: ", log);
  CHECK(occurrences(log, "cuLaunchKernel") == 1);
  CHECK(words(log) == 3);  // context check, capture query, launch: no copy, no wait
  CHECK(pending.as<float>() == expected(4));
}

TEST_CASE("inside a stream capture: what cannot be captured throws, naming it, before anything is queued") {
  const ff::test::EmulatorHooks emu;
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  ff::Runtime rt(options);
  auto xs = rt.upload(host);
  const Affine a;
  CHECK(rt.run(a.sum, {{a.x, xs}, {a.p, 2.0f}}).as<float>() == expected(2));  // prepared before the capture
  const ff::Expr x = ff::input<float>("x");
  const ff::Expr doubled = x * 2.0f;
  const ff::Expr kept = ff::filter(x, x > 2.0f);
  struct Capturing {
    const ff::test::EmulatorHooks& emu;
    explicit Capturing(const ff::test::EmulatorHooks& e) : emu(e) { emu.set_capturing(true); }
    ~Capturing() { emu.set_capturing(false); }
  };
  auto message = [&](auto&& f) -> std::string {
    const Capturing capturing(emu);
    emu.fail_driver_call(0);
    try {
      f();
    } catch (const ff::CudaError& e) {
      // Nothing reached the stream: a real capture would still be valid.
      const std::string log = emu.driver_call_log();
      CHECK_MESSAGE(log.find("cuLaunchKernel") == std::string::npos, log);
      CHECK_MESSAGE(log.find("cuMemsetD8Async") == std::string::npos, log);
      CHECK_MESSAGE(log.find("cuMemAllocAsync") == std::string::npos, log);
      CHECK(e.code() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      return e.what();
    }
    FAIL("no error");
    return "";
  };
  CHECK(message([&] { (void)rt.run(a.sum, {{a.x, xs}, {a.p, 1.0f}}); }).find("run() waits for its results") !=
        std::string::npos);
  CHECK(message([&] { (void)rt.run_async(ff::reduce(x, ff::max), {{x, xs}}); }).find("has not run on this Runtime yet") !=
        std::string::npos);
  (void)rt.run(doubled, {{x, xs}});
  CHECK(message([&] { (void)rt.run_async(doubled, {{x, xs}}); }).find("bind it to an array of yours") != std::string::npos);
  (void)rt.run(kept, {{x, xs}}).size();
  CHECK(message([&] { (void)rt.run_async(kept, {{x, xs}}); }).find("a compaction") != std::string::npos);
  // What can be captured runs: the prepared sum, and the map into the caller's memory.
  auto out = rt.alloc<float>(host.size());
  ff::Result sum = [&] {
    const Capturing capturing(emu);
    (void)rt.run_async(doubled, {{x, xs}, {doubled, out}});
    return rt.run_async(a.sum, {{a.x, xs}, {a.p, 5.0f}});
  }();
  CHECK(sum.as<float>() == expected(5));
  CHECK(rt.download(out) == std::vector<float>{2, 4, 6, 8});
}
