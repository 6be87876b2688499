// The Runtime's caches and its configuration, on the CPU emulator (run only as
// emu_runtime_cache_test, with the emulator as driver and NVRTC): programs recognised by
// structure, LRU limits that keep host and "device" memory flat, RuntimeOptions against the
// environment. The emulator counts live allocations and modules (ff_emu_live_*), so a
// leak or an unbounded cache shows as a number that grows.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "cache_test_support.hpp"
#include "emu_hooks.hpp"

namespace ff = fuseflow;
using ff::test::ScopedEnv;

namespace {

// Host memory in use (resident set), in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// sum(x * p + 1): built afresh each call, the way code that builds its program inside a
// function does; p is a parameter, so its value is bound per run.
struct Affine {
  ff::Expr x = ff::input<float>("x");
  ff::Expr p = ff::param<float>("p");
  ff::Expr sum = ff::reduce(x * p + 1.0f, ff::plus);
};

// An expected sum computed here, not by fuseflow: sum over x of (x * p + 1).
float expected_affine(const std::vector<float>& xs, float p) {
  float s = 0;
  for (float x : xs) s += x * p + 1.0f;
  return s;
}

ff::RuntimeOptions memory_only() {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};  // no disk: what a test counts is this process's doing
  return options;
}

}  // namespace

TEST_CASE("two programs built apart but equal in structure share one prepared plan; a parameter never replans") {
  ff::Runtime rt(memory_only());
  const std::vector<float> host = {1, 2, 3, 4, 5};
  auto xs = rt.upload(host);
  const Affine first, second;
  CHECK(rt.run(first.sum, {{first.x, xs}, {first.p, 2.0f}}).as<float>() == expected_affine(host, 2));
  const ff::RuntimeStats after_first = rt.stats();
  CHECK(after_first.programs.misses == 1);
  CHECK(after_first.programs.entries == 1);
  CHECK(rt.run(second.sum, {{second.x, xs}, {second.p, 3.0f}}).as<float>() == expected_affine(host, 3));
  CHECK(rt.run(first.sum, {{first.x, xs}, {first.p, -1.5f}}).as<float>() == expected_affine(host, -1.5f));
  const ff::RuntimeStats s = rt.stats();
  CHECK(s.programs.misses == 1);
  CHECK(s.programs.hits == 2);
  CHECK(s.programs.entries == 1);
  // No kernel was asked of the kernel cache again, so none was compiled again.
  CHECK(s.kernels.misses == after_first.kernels.misses);
  CHECK(s.kernels.memory_hits == after_first.kernels.memory_hits);
  CHECK(s.kernels.compiles == after_first.kernels.compiles);

  // Another structure (a different constant) is another plan.
  const ff::Expr x = ff::input<float>("x"), p = ff::param<float>("p");
  CHECK(rt.run(ff::reduce(x * p + 2.0f, ff::plus), {{x, xs}, {p, 2.0f}}).as<float>() == expected_affine(host, 2) + 5);
  CHECK(rt.stats().programs.misses == 2);
  CHECK(rt.stats().programs.entries == 2);
}

TEST_CASE("RuntimeOptions take the environment as defaults; a field the caller sets wins; bad values throw") {
  {
    const ScopedEnv poison("FUSEFLOW_POISON", "1"), staged("FUSEFLOW_SCAN_STAGED_FROM", "4096"),
        epochs("FUSEFLOW_LOOKBACK_EPOCHS", "7");
    ff::Runtime from_environment;
    CHECK(from_environment.options().poison == true);
    CHECK(from_environment.options().lookback_epochs == 7u);
    REQUIRE(from_environment.options().plan.has_value());
    CHECK(from_environment.options().plan->scan_staged_from == 4096);
    ff::RuntimeOptions mine;
    mine.poison = false;
    mine.plan = ff::codegen::PlanOptions{};
    ff::Runtime overridden(mine);
    CHECK(overridden.options().poison == false);
    CHECK_FALSE(overridden.options().plan->scan_staged_from.has_value());
    CHECK(overridden.options().lookback_epochs == 7u);  // not set: from the environment
  }
  {
    const ScopedEnv tile("FUSEFLOW_SCAN_TILE", "abc");
    CHECK_THROWS_WITH_AS(ff::Runtime(), doctest::Contains("FUSEFLOW_SCAN_TILE='abc': expected <block>x<items>"),
                         ff::ConfigError);
  }
  ff::RuntimeOptions zero;
  zero.limits.programs = 0;
  CHECK_THROWS_WITH_AS(ff::Runtime{zero}, doctest::Contains("limits.programs is 0"), ff::ConfigError);
}

TEST_CASE("a run_async scalar stays readable after its program is evicted") {
  ff::RuntimeOptions options = memory_only();
  options.limits.programs = 1;
  ff::Runtime rt(options);
  const std::vector<float> host = {1, 2, 3};
  auto xs = rt.upload(host);
  const Affine a;
  ff::Result pending = rt.run_async(a.sum, {{a.x, xs}, {a.p, 4.0f}});
  const ff::Expr x = ff::input<float>("x");
  CHECK(rt.run(ff::reduce(x, ff::max), {{x, xs}}).as<float>() == 3.0f);  // evicts the first
  CHECK(rt.stats().programs.evictions == 1);
  CHECK(pending.as<float>() == expected_affine(host, 4));
}

TEST_CASE("1,000,000 programs equal in structure keep host and device memory flat") {
  ff::Runtime rt(memory_only());
  ff::test::EmulatorHooks emu;
  const std::vector<float> host = {0.5f, 1.5f, 2.5f};
  auto xs = rt.upload(host);
  // Most runs are over no elements (no launch), so that a million programs take seconds on
  // the emulator, whose kernels run on the CPU; every 50,000th is over `host` and checked.
  // The empty and the full runs share one plan: lengths are bound per run.
  auto empty = rt.alloc<float>(0);
  const long programs = std::getenv("FUSEFLOW_TEST_EQUAL_PROGRAMS") ? std::atol(std::getenv("FUSEFLOW_TEST_EQUAL_PROGRAMS")) : 1000000;
  std::size_t rss_after_warmup = 0;
  long allocations_after_warmup = 0;
  for (long i = 0; i < programs; ++i) {
    const ff::Expr x = ff::input<float>("x"), p = ff::param<float>("p");
    const ff::Expr y = x * p + 1.0f;  // a new program, equal to the one before
    const float value = static_cast<float>(i % 7);
    if (i % 50000 == 0 || i == programs - 1) {
      const std::vector<float> got = rt.run(y, {{x, xs}, {p, value}}).download<float>();
      REQUIRE(got.size() == host.size());
      for (std::size_t k = 0; k < host.size(); ++k) REQUIRE(got[k] == host[k] * value + 1.0f);
    } else {
      (void)rt.run_async(y, {{x, empty}, {p, value}});
    }
    if (i == 1000) {
      rss_after_warmup = resident_bytes();
      allocations_after_warmup = emu.live_allocations();
    }
  }
  const ff::RuntimeStats s = rt.stats();
  CHECK(s.programs.entries == 1);
  CHECK(s.programs.misses == 1);
  CHECK(s.programs.hits == static_cast<std::uint64_t>(programs - 1));
  CHECK(s.modules.entries == 1);
  CHECK(s.kernels.compiles + s.kernels.disk_hits + s.kernels.memory_hits == 1);
  CHECK(emu.live_allocations() == allocations_after_warmup);
  // Before: about 7 KB per program kept (7 GB for a million). Allow 16 MB of allocator noise.
  const std::size_t rss = resident_bytes();
  INFO("resident after warm-up ", rss_after_warmup, " bytes, at the end ", rss);
  CHECK(rss < rss_after_warmup + (std::size_t{16} << 20));
}

TEST_CASE("programs of distinct structure stay within the cache limits; eviction frees their buffers and modules") {
  ff::RuntimeOptions options = memory_only();
  options.limits.programs = 8;
  options.limits.modules = 4;
  options.cache->memory_entries = 4;
  ff::Runtime rt(options);
  ff::test::EmulatorHooks emu;
  const std::vector<float> host = {1, 2, 3};
  auto xs = rt.upload(host);
  const long modules_before = emu.live_modules();
  const long allocations_before = emu.live_allocations();
  // Each distinct structure is a distinct kernel, compiled by the emulator's host compiler
  // in about a second: 40 here, not the 10,000 of a GPU run (FUSEFLOW_TEST_DISTINCT_PROGRAMS
  // asks for more).
  const long distinct = std::getenv("FUSEFLOW_TEST_DISTINCT_PROGRAMS") ? std::atol(std::getenv("FUSEFLOW_TEST_DISTINCT_PROGRAMS")) : 40;
  std::size_t rss_after_warmup = 0;
  for (long c = 1; c <= distinct; ++c) {
    const ff::Expr x = ff::input<float>("x");
    const float scale = static_cast<float>(c);
    REQUIRE(rt.run(ff::reduce(x * scale, ff::plus), {{x, xs}}).as<float>() == 6.0f * scale);
    if (c == 10) rss_after_warmup = resident_bytes();
  }
  const ff::RuntimeStats s = rt.stats();
  CHECK(s.programs.entries == 8);
  CHECK(s.programs.misses == static_cast<std::uint64_t>(distinct));
  CHECK(s.programs.evictions == static_cast<std::uint64_t>(distinct - 8));
  CHECK(s.programs.bytes <= options.limits.program_bytes);
  CHECK(s.modules.entries == 4);
  CHECK(s.modules.evictions == static_cast<std::uint64_t>(distinct - 4));
  CHECK(s.kernels.memory_entries == 4);
  CHECK(s.kernels.evictions == static_cast<std::uint64_t>(distinct - 4));
  CHECK(s.kernels.compiles == static_cast<std::uint64_t>(distinct));
  // Loaded: the 8 cached programs' kernels (one each; the module cache's 4 are among them).
  CHECK(emu.live_modules() - modules_before == 8);
  // Held: the 8 programs' scalar slots and their pinned host buffers (the emulator counts
  // both), plus the tickets and scratch made by the first run.
  CHECK(emu.live_allocations() - allocations_before <= 2 * 8 + 4);
  // The emulator never truly unloads a module's library (see cuModuleUnload there), so
  // some growth is its own; fuseflow's would be the programs' plans and sources.
  const std::size_t rss = resident_bytes();
  INFO("resident after 10 programs ", rss_after_warmup, " bytes, after ", distinct, ": ", rss);
  CHECK(rss < rss_after_warmup + (std::size_t{32} << 20));

  // An evicted program runs again: planned and compiled again, then cached.
  const ff::Expr x = ff::input<float>("x");
  CHECK(rt.run(ff::reduce(x * 1.0f, ff::plus), {{x, xs}}).as<float>() == 6.0f);
  CHECK(rt.stats().programs.misses == static_cast<std::uint64_t>(distinct + 1));
}

TEST_CASE("programs that differ only in an operator or a tuple field's type get plans of their own") {
  ff::Runtime rt(memory_only());
  const std::vector<float> hx = {1, 5, 2, 8}, hy = {3, 1, 4, 1};
  auto xs = rt.upload(hx);
  auto ys = rt.upload(hy);
  // Operators are packed into one token of the key: each must still tell programs apart.
  const auto run = [&](auto f) {
    const ff::Expr x = ff::input<float>("x"), y = ff::input<float>("y");
    return rt.run(ff::reduce(f(x, y), ff::plus), {{x, xs}, {y, ys}}).template as<float>();
  };
  const auto expected = [&](auto f) {  // computed here, element by element
    float s = 0;
    for (std::size_t i = 0; i < hx.size(); ++i) s += f(hx[i], hy[i]);
    return s;
  };
  CHECK(run([](const ff::Expr& x, const ff::Expr& y) { return x + y; }) == expected(std::plus<float>()));
  CHECK(run([](const ff::Expr& x, const ff::Expr& y) { return x - y; }) == expected(std::minus<float>()));
  CHECK(run([](const ff::Expr& x, const ff::Expr& y) { return ff::max(x, y); }) ==
        expected([](float a, float b) { return std::max(a, b); }));
  CHECK(run([](const ff::Expr& x, const ff::Expr& y) { return ff::min(x, y); }) ==
        expected([](float a, float b) { return std::min(a, b); }));
  CHECK(rt.stats().programs.misses == 4);
  // (f32, i64) and (f32, i32) pairs: tuple types of scalars are packed into one token too.
  const ff::Expr x = ff::input<float>("x");
  const ff::Value wide = rt.run(ff::reduce(ff::zip(x, ff::index()), ff::argmax), {{x, xs}}).value();
  const ff::Value narrow =
      rt.run(ff::reduce(ff::zip(x, ff::cast<int>(ff::index())), ff::argmax), {{x, xs}}).value();
  CHECK(wide.type() == ff::Type::tuple({ff::ScalarType::F32, ff::ScalarType::I64}));
  CHECK(narrow.type() == ff::Type::tuple({ff::ScalarType::F32, ff::ScalarType::I32}));
  CHECK(wide[1].as_int() == 3);
  CHECK(narrow[1].as_int() == 3);
  CHECK(rt.stats().programs.misses == 6);
}

// A custom monoid's combine graph is keyed on its own (structure.cpp) and kept per node: a
// program rebuilt with a monoid traced again (one lambda: the same node) finds its plan, and
// monoids that differ only inside their combine, their identity or their order get plans of
// their own, each with the right answer.
TEST_CASE("programs with custom monoids: rebuilt ones share a plan; monoids differing inside get their own") {
  ff::Runtime rt(memory_only());
  const std::vector<int> host = {3, -1, 4, -1, 5};
  auto xs = rt.upload(host);
  const auto sum_with = [&](const ff::Monoid& m) {
    const ff::Expr x = ff::input<int>("x");
    return rt.run(ff::reduce(x, m), {{x, xs}}).as<int>();
  };
  const auto plus = [](int identity) {
    return ff::monoid<int>([](const ff::Expr& a, const ff::Expr& b) { return a + b; }, identity, ff::commutative, "p");
  };
  const auto larger = [](int identity) {
    return ff::monoid<int>([](const ff::Expr& a, const ff::Expr& b) { return ff::max(a, b); }, identity,
                           ff::commutative, "p");
  };
  for (int i = 0; i < 3; ++i) CHECK(sum_with(plus(0)) == 10);
  CHECK(rt.stats().programs.misses == 1);
  CHECK(sum_with(larger(-100)) == 5);  // same name and type, another combine
  CHECK(rt.stats().programs.misses == 2);
  CHECK(sum_with(larger(-1000)) == 5);  // another identity (both are identities for these values)
  CHECK(rt.stats().programs.misses == 3);
  CHECK(sum_with(larger(-100)) == 5);  // traced anew (the memo held -1000): the second plan again
  CHECK(sum_with(plus(0)) == 10);
  CHECK(rt.stats().programs.misses == 3);
}

// The scale, in CI: 10,000 programs of distinct structure. Structures differ in
// what the plan and the kernels do not depend on (each input's declared length, which is
// part of the key and checked at every run) as well as in what they do (the scale, a
// constant in the kernel): 8 kernels, each shared by 1,250 structures, so the emulator's
// host compiler runs 8 times instead of 10,000 (about 0.2 s of CPU each). Every program is
// still its own prepared program (planned, loaded, its buffers allocated), evicted 8 runs
// later; the kernels and modules pass through their own caches (4 each) as the scale
// changes.
TEST_CASE("10,000 programs of distinct structure sharing 8 kernels: every one prepared and evicted, memory flat") {
  ff::RuntimeOptions options = memory_only();
  options.limits.programs = 8;
  options.limits.modules = 4;
  options.cache->memory_entries = 4;
  ff::Runtime rt(options);
  ff::test::EmulatorHooks emu;
  const long per_kernel = 1250, kernels = 8;
  std::vector<float> host(static_cast<std::size_t>(per_kernel));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 7 + 1);
  auto xs = rt.upload(host);
  const long modules_before = emu.live_modules();
  const long allocations_before = emu.live_allocations();
  std::size_t rss_after_first_kernel = 0;
  long runs = 0;
  for (long k = 1; k <= kernels; ++k) {
    const float scale = static_cast<float>(k);
    float prefix = 0;  // sum of host[0, length), exact in f32 (integers below 2^24)
    for (long length = 1; length <= per_kernel; ++length) {
      prefix += host[static_cast<std::size_t>(length - 1)];
      const ff::Expr x = ff::input<float>("x", length);
      const ff::device_span<float> first(xs.data(), static_cast<std::size_t>(length));
      const float got = rt.run(ff::reduce(x * scale, ff::plus), {{x, first}}).as<float>();
      if (got != prefix * scale) {
        INFO("scale ", scale, ", declared length ", length);
        REQUIRE(got == prefix * scale);
      }
      ++runs;
    }
    if (k == 1) rss_after_first_kernel = resident_bytes();
  }
  const ff::RuntimeStats s = rt.stats();
  CHECK(runs == kernels * per_kernel);
  CHECK(s.programs.misses == static_cast<std::uint64_t>(runs));  // each structure prepared once
  CHECK(s.programs.hits == 0);
  CHECK(s.programs.entries == 8);
  CHECK(s.programs.evictions == static_cast<std::uint64_t>(runs - 8));
  CHECK(s.programs.bytes <= options.limits.program_bytes);
  CHECK(s.kernels.compiles == static_cast<std::uint64_t>(kernels));
  CHECK(s.kernels.memory_entries == 4);
  CHECK(s.kernels.evictions == static_cast<std::uint64_t>(kernels - 4));
  CHECK(s.modules.entries == 4);
  CHECK(s.modules.evictions == static_cast<std::uint64_t>(kernels - 4));
  // Loaded: the module cache's 4 (the 8 cached programs' one kernel among them).
  CHECK(emu.live_modules() - modules_before == 4);
  // Held: the 8 programs' scalar slots and pinned host buffers, the tickets and scratch.
  CHECK(emu.live_allocations() - allocations_before <= 2 * 8 + 4);
  // 8,750 programs after the first 1,250: what an evicted program held is freed.
  const std::size_t rss = resident_bytes();
  INFO("resident after ", per_kernel, " programs ", rss_after_first_kernel, " bytes, after ", runs, ": ", rss);
  CHECK(rss < rss_after_first_kernel + (std::size_t{16} << 20));
}

TEST_CASE("explain prints the plan for this device and, given bindings, the launches for their sizes") {
  ff::Runtime rt(memory_only());
  const std::vector<float> host(5000, 1.0f);
  auto xs = rt.upload(host);
  const Affine a;
  const std::string plan = rt.explain(a.sum);
  INFO(plan);
  CHECK(plan.find("fuseflow CPU emulator") != std::string::npos);  // the device's name
  CHECK(plan.find("(sm_90, 8 SMs)") != std::string::npos);        // what the emulator reports
  CHECK(plan.find("ff_reduce") != std::string::npos);
  CHECK(plan.find("a run with") == std::string::npos);
  const std::string run = rt.explain(a.sum, {{a.x, xs}, {a.p, 2.0f}});
  INFO(run);
  CHECK(run.find("a run with n = 5000: ") != std::string::npos);
  CHECK(run.find("x 256 threads") != std::string::npos);
  CHECK(rt.stats().programs.misses == 0);  // explaining prepares nothing
  CHECK_THROWS_WITH_AS(rt.explain(a.sum, {{a.x, xs}}), doctest::Contains("'p' is not bound"), ff::GraphError);
}

TEST_CASE("invalid segment offsets in a program that shares an earlier one's plan are explained with its own inputs") {
  ff::Runtime rt(memory_only());
  auto xs = rt.upload(std::vector<float>{1, 2, 3, 4, 5, 6});
  auto good = rt.upload(std::vector<int>{0, 2, 6});
  auto bad = rt.upload(std::vector<int>{0, 4, 3});
  auto segmented = [&](const ff::DeviceArray<int>& offsets) {
    const ff::Expr x = ff::input<float>("x"), o = ff::input<int>("o");
    return rt.run(ff::segmented_reduce(x, o, ff::plus), {{x, xs}, {o, offsets}}).download<float>();
  };
  CHECK(segmented(good) == std::vector<float>{3, 18});
  CHECK_THROWS_WITH_AS(segmented(bad), doctest::Contains("offset 2 is 3, less than offset 1 (4)"), ff::GraphError);
  CHECK(rt.stats().programs.misses == 1);  // the second program is the first's structure
}

TEST_CASE("Runtime::check_bindings checks as run does, against this device's plan") {
  ff::Runtime rt(memory_only());
  auto xs = rt.upload(std::vector<float>{1, 2, 3});
  auto short_ys = rt.upload(std::vector<float>{1, 2});
  const ff::Expr x = ff::input<float>("x"), y = ff::input<float>("y");
  const ff::Expr sum = ff::reduce(x * y, ff::plus);
  CHECK_NOTHROW(rt.check_bindings(sum, {{x, xs}, {y, xs}}));
  CHECK_THROWS_WITH_AS(rt.check_bindings(sum, {{x, xs}, {y, short_ys}}),
                       doctest::Contains("arrays of different lengths"), ff::GraphError);
  CHECK_THROWS_WITH_AS(rt.check_bindings(sum, {{x, xs}}), doctest::Contains("input 'y' is not bound"), ff::GraphError);
  CHECK(rt.stats().programs.misses == 0);  // nothing prepared
}
