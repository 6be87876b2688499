// GPU execution tests for histograms: fresh random inputs, outputs poisoned
// (FUSEFLOW_POISON=1), counts compared exactly with the CPU reference evaluator, on the
// shared-memory (privatised) path and the global-atomics path, u32 and u64 counts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes =
    ff::test::sizes_within_limit({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 20) + 7, 1 << 24});

using ff::test::rng;
using ff::test::runtime;

template <class T>
std::vector<T> uniform(std::int64_t n, T lo, T hi) {
  std::vector<T> v(static_cast<std::size_t>(n));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<T> d(lo, hi);
    for (auto& x : v) x = d(rng());
  } else {
    std::uniform_real_distribution<T> d(lo, hi);
    for (auto& x : v) x = d(rng());
  }
  return v;
}

// Runs `prog` (a histogram of input x, maybe with parameters) on the GPU and on the CPU
// and compares every count.
template <class T, class C>
void check_histogram(const ff::Expr& prog, const ff::Expr& x, const std::vector<T>& host, const ff::Bindings& params,
                     const std::string& what) {
  ff::Runtime& rt = runtime();
  auto dev = rt.upload(host);
  ff::Bindings b = params;
  b.push_back({x, dev});
  std::vector<C> got = rt.run(prog, b).template download<C>();
  ff::HostBindings hb;
  hb.bind(x, ff::HostArray::from(host));
  for (const auto& [leaf, binding] : params) hb.bind(leaf, binding.scalar());
  std::vector<C> want = ff::evaluate(prog, hb)[0].array.template to_vector<C>();
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && wrong++ == 0) first = i;
  INFO(what << ": " << wrong << " wrong bins; first " << first << ": got " << (wrong ? got[first] : 0) << ", want "
            << (wrong ? want[first] : 0));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a 256-bin histogram of i32 low bytes counts exactly with u32 and u64 counts") {
  auto x = ff::input<int>("x");
  ff::Expr h32 = ff::histogram(x & 255, 256);
  ff::Expr h64 = ff::histogram(x & 255, 256, ff::ScalarType::U64);
  for (std::int64_t n : kSizes) {
    auto host = uniform<int>(n, 0, 1 << 30);
    check_histogram<int, std::uint32_t>(h32, x, host, {}, "x & 255, u32, n = " + std::to_string(n));
    check_histogram<int, std::uint64_t>(h64, x, host, {}, "x & 255, u64, n = " + std::to_string(n));
  }
}

TEST_CASE("x % 256 over non-negative values and the catalog's histogram_256 agree with the reference") {
  auto x = ff::input<int>("x");
  ff::Expr h = ff::histogram(x % 256, 256);
  const ff::Program catalog = ff::catalog::find("histogram_256").build();
  for (std::int64_t n : {33LL, 1025LL, (1LL << 20) + 7}) {
    auto host = uniform<int>(n, 0, 1 << 30);
    check_histogram<int, std::uint32_t>(h, x, host, {}, "x % 256, n = " + std::to_string(n));
    check_histogram<int, std::uint32_t>(catalog.outputs()[0], catalog.inputs()[0], host, {},
                                        "histogram_256, n = " + std::to_string(n));
  }
}

TEST_CASE("a fused f32 bin expression drops bins below 0 and at or above nbins") {
  auto x = ff::input<float>("x");
  auto lo = ff::param<float>("lo");
  auto scale = ff::param<float>("scale");
  ff::Expr h = ff::histogram(ff::cast<int>((x - lo) * scale), 100);
  for (std::int64_t n : kSizes) {
    // (x - 0.25) * 100 spans [-75, 125): a quarter of the values fall outside.
    auto host = uniform<float>(n, -0.5f, 1.5f);
    check_histogram<float, std::uint32_t>(h, x, host, {{lo, 0.25f}, {scale, 100.0f}},
                                          "f32 bins, n = " + std::to_string(n));
  }
}

TEST_CASE("every element in one bin: the heaviest atomic contention") {
  auto x = ff::input<int>("x");
  for (std::int64_t n : kSizes) {
    std::vector<int> host(static_cast<std::size_t>(n), 7);
    check_histogram<int, std::uint32_t>(ff::histogram(x & 255, 256), x, host, {}, "one bin, n = " + std::to_string(n));
    check_histogram<int, std::uint64_t>(ff::histogram(x, 65536, ff::ScalarType::U64), x, host, {},
                                        "one bin of 65536, n = " + std::to_string(n));
  }
}

TEST_CASE("65536 bins take the global-atomics path, out-of-range values on both sides dropped") {
  auto x = ff::input<int>("x");
  ff::Expr h32 = ff::histogram(x, 65536);
  ff::Expr h64 = ff::histogram(x, 65536, ff::ScalarType::U64);
  for (std::int64_t n : kSizes) {
    auto host = uniform<int>(n, -1000, 70000);
    check_histogram<int, std::uint32_t>(h32, x, host, {}, "65536 bins u32, n = " + std::to_string(n));
    check_histogram<int, std::uint64_t>(h64, x, host, {}, "65536 bins u64, n = " + std::to_string(n));
  }
}

TEST_CASE("4096 and 12288 bins stay in shared memory with fewer private copies") {
  auto x = ff::input<int>("x");
  for (std::int64_t bins : {4096LL, 12288LL, 12289LL}) {
    ff::Expr h = ff::histogram(x, bins);
    for (std::int64_t n : {1025LL, (1LL << 20) + 7}) {
      auto host = uniform<int>(n, -10, static_cast<int>(bins) + 10);
      check_histogram<int, std::uint32_t>(h, x, host, {},
                                          std::to_string(bins) + " bins, n = " + std::to_string(n));
    }
  }
}

TEST_CASE("a misaligned input takes the element-wise loop and counts the same") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<int>("x");
  ff::Expr h = ff::histogram(x & 255, 256);
  const std::int64_t n = (1 << 20) + 7;
  auto host = uniform<int>(n + 1, 0, 1 << 30);
  auto dev = rt.upload(host);
  ff::device_span<int> shifted(dev.data() + sizeof(int), static_cast<std::size_t>(n));
  std::vector<std::uint32_t> got = rt.run(h, {{x, shifted}}).download<std::uint32_t>();
  std::vector<int> tail(host.begin() + 1, host.end());
  ff::HostBindings hb;
  hb.bind(x, ff::HostArray::from(tail));
  CHECK(got == ff::evaluate(h, hb)[0].array.to_vector<std::uint32_t>());
}

TEST_CASE("a histogram runs again with the same counts: the output is zeroed each run") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<int>("x");
  ff::Expr h = ff::histogram(x & 255, 256);
  auto host = uniform<int>(100000, 0, 1 << 30);
  auto dev = rt.upload(host);
  std::vector<std::uint32_t> first = rt.run(h, {{x, dev}}).download<std::uint32_t>();
  std::vector<std::uint32_t> second = rt.run(h, {{x, dev}}).download<std::uint32_t>();
  CHECK(first == second);
  std::uint64_t total = 0;
  for (auto c : second) total += c;
  CHECK(total == 100000);
}
