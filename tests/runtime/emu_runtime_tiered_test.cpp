// Tiered compilation on the CPU emulator (run only as emu_runtime_tiered_test, with the
// emulator as driver and NVRTC; RuntimeOptions::tiered on here, FUSEFLOW_TIERED=0 in the
// other emulated tests): a first run on quickly compiled kernels, the optimised ones
// swapped in by a later run with the same results, only they on disk; a failing
// background compile keeps tier 0 and is counted; exit with a compile in flight.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "cache_test_support.hpp"
#include "emu_hooks.hpp"

namespace ff = fuseflow;

namespace {

ff::RuntimeOptions tiered(bool on, std::optional<std::filesystem::path> dir = std::nullopt) {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};  // memory only unless `dir`
  options.cache->disk_dir = std::move(dir);
  options.tiered = on;
  return options;
}

// An inclusive scan and a segmented sum (fixed-grid kernels: tiered) of random floats.
struct Case {
  ff::Expr x = ff::input<float>("x");
  ff::Expr offsets = ff::input<int>("offsets");
  ff::Expr prefix = ff::scan(x, ff::plus);
  ff::Expr segment_sums = ff::segmented_reduce(x, offsets, ff::plus);
  std::vector<float> xs;
  std::vector<int> bounds;
  Case() {
    std::mt19937 rng(22);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    xs.resize(5003);
    for (float& v : xs) v = value(rng);
    std::uniform_int_distribution<int> length(0, 40);
    bounds.push_back(0);
    while (bounds.back() < static_cast<int>(xs.size()))
      bounds.push_back(std::min<int>(bounds.back() + length(rng), static_cast<int>(xs.size())));
  }
  // Both programs' outputs, as bytes.
  std::vector<std::vector<float>> run(ff::Runtime& rt) const {
    auto dx = rt.upload(xs);
    auto doff = rt.upload(bounds);
    return {rt.run(prefix, {{x, dx}}).download<float>(),
            rt.run(segment_sums, {{x, dx}, {offsets, doff}}).download<float>()};
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs until this many kernels' background compiles came back (swapped in or failed), at
// most 10 minutes.
std::vector<std::vector<float>> run_until_tier1(ff::Runtime& rt, const Case& c, std::uint64_t swaps_or_failures) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  for (;;) {
    std::vector<std::vector<float>> got = c.run(rt);
    const ff::TierStats t = rt.stats().tiers;
    if (t.swaps + t.failures >= swaps_or_failures) return got;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

TEST_CASE("a first run runs tier 0; a later run swaps tier 1 in with the same bits; only tier 1 is on disk") {
  ff::test::TempDir dir;
  const Case c;
  ff::Runtime reference(tiered(false));
  const std::vector<std::vector<float>> expected = c.run(reference);
  CHECK(reference.stats().tiers.tier0_compiles == 0);
  // The scan's last prefix is the sum, worked out here in double.
  double total = 0;
  for (float v : c.xs) total += v;
  REQUIRE(expected[0].size() == c.xs.size());
  CHECK(std::abs(expected[0].back() - total) < 1e-3);

  std::size_t tier1_kernels = 0;
  {
    ff::Runtime rt(tiered(true, dir.path()));
    const std::vector<std::vector<float>> first = c.run(rt);
    const ff::TierStats at0 = rt.stats().tiers;
    CHECK(at0.tier0_compiles >= 2);  // at least one kernel of each program
    CHECK(at0.tier0_launches >= 1);
    CHECK(same_bits(first[0], expected[0]));
    CHECK(same_bits(first[1], expected[1]));

    // Each tier-0 kernel is swapped out once its program's compile is done.
    std::vector<std::vector<float>> later = run_until_tier1(rt, c, at0.tier0_compiles);
    later = c.run(rt);  // both programs on tier 1 now
    const ff::TierStats at1 = rt.stats().tiers;
    CHECK(at1.failures == 0);
    CHECK(at1.swaps == at0.tier0_compiles);
    CHECK(same_bits(later[0], expected[0]));
    CHECK(same_bits(later[1], expected[1]));
    // No tier-0 launch in the last run.
    const std::uint64_t launches = rt.stats().tiers.tier0_launches;
    (void)c.run(rt);
    CHECK(rt.stats().tiers.tier0_launches == launches);
    tier1_kernels = rt.stats().kernels.disk_writes;
    CHECK(tier1_kernels >= at0.tier0_compiles);
    CHECK(ff::test::file_count(dir.path()) == tier1_kernels);  // no tier-0 entry
  }
  // A fresh Runtime on the directory: tier 1 from disk, nothing compiled at any tier.
  ff::Runtime next(tiered(true, dir.path()));
  const std::vector<std::vector<float>> again = c.run(next);
  CHECK(next.stats().tiers.tier0_compiles == 0);
  CHECK(next.stats().kernels.compiles == 0);
  CHECK(same_bits(again[0], expected[0]));
  CHECK(same_bits(again[1], expected[1]));
}

TEST_CASE("a failing background compile keeps tier 0 (same results), warns once and is counted") {
  const ff::test::EmulatorHooks hooks;
  const Case c;
  const ff::Expr one = ff::segmented_scan(c.x, c.offsets, ff::plus);
  // The NVRTC calls of the program's compiles without tiering: a tiered first run makes as
  // many (one quick compile per kernel, the same calls), and only then starts tier 1.
  ff::Runtime plain(tiered(false));
  auto px = plain.upload(c.xs);
  auto poff = plain.upload(c.bounds);
  hooks.fail_nvrtc_call(0);
  const std::vector<float> want = plain.run(one, {{c.x, px}, {c.offsets, poff}}).download<float>();
  const long calls = hooks.nvrtc_calls();
  REQUIRE(plain.stats().kernels.compiles >= 1);

  ff::Runtime rt(tiered(true));
  auto dx = rt.upload(c.xs);
  auto doff = rt.upload(c.bounds);
  hooks.fail_nvrtc_call(calls + 1);  // the background compile's first call
  const std::vector<float> first = rt.run(one, {{c.x, dx}, {c.offsets, doff}}).download<float>();
  CHECK(rt.stats().tiers.tier0_compiles >= 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (rt.stats().tiers.failures == 0 && rt.stats().tiers.swaps == 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)rt.run(one, {{c.x, dx}, {c.offsets, doff}});
  }
  CHECK(hooks.last_fault() == "nvrtcCreateProgram");
  hooks.fail_nvrtc_call(0);
  const ff::TierStats t = rt.stats().tiers;
  CHECK(t.failures == 1);
  CHECK(t.swaps == 0);
  // Tier 0 stays, and keeps giving the same bits.
  const std::vector<float> later = rt.run(one, {{c.x, dx}, {c.offsets, doff}}).download<float>();
  CHECK(rt.stats().tiers.tier0_launches > t.tier0_launches);
  CHECK(rt.stats().tiers.failures == 1);
  CHECK(same_bits(first, want));
  CHECK(same_bits(later, want));
}

TEST_CASE("the process exits cleanly with a background compile in flight") {
  // In a child: a Runtime never destroyed, its first run leaving tier 1 compiling, then
  // exit(). The atexit handler waits for the compile; nothing crashes or hangs.
  const Case c;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto* rt = new ff::Runtime(tiered(true));
    auto dx = rt->upload(c.xs);
    (void)rt->run(c.prefix, {{c.x, dx}});
    const bool in_flight = rt->stats().tiers.tier0_compiles > 0 && rt->stats().tiers.swaps == 0;
    std::exit(in_flight ? 0 : 3);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  pid_t done = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) ::kill(child, SIGKILL);
  REQUIRE(done == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  // And a Runtime destroyed with a compile in flight joins it.
  {
    ff::Runtime rt(tiered(true));
    auto dx = rt.upload(c.xs);
    (void)rt.run(c.prefix, {{c.x, dx}});
    CHECK(rt.stats().tiers.tier0_compiles > 0);
  }
}
