// GPU execution tests for counting_sort and sort_by_key: fresh random inputs, outputs
// poisoned (FUSEFLOW_POISON=1), keys and values compared exactly with the CPU reference
// evaluator. Stability is checked through the values: each value is its element's index,
// so equal keys must come out with increasing values. Every size of the reduce issue,
// bin counts 1 to 8192 (staged and direct scatters), key shapes (random, all equal,
// sorted, reversed, outside the bins), fused key and value maps, and one sort of more
// than 2^31 elements.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 16) + 3});
// The same sweeps at 2^20 + 7 and 2^24 elements, in the suite "long" (label gpu-long;
// gpu_test_support.hpp).
const std::vector<std::int64_t> kLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});

using ff::test::rng;
using ff::test::runtime;

// A shape of keys: key i of n over `bins` bins.
struct KeyShape {
  std::string name;
  std::function<int(std::int64_t i, std::int64_t n, std::int64_t bins)> key;
};

int uniform_int(std::int64_t lo, std::int64_t hi) {
  return static_cast<int>(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng()));
}

const std::vector<KeyShape>& shapes() {
  static const std::vector<KeyShape> all = {
      {"random", [](std::int64_t, std::int64_t, std::int64_t b) { return uniform_int(0, b - 1); }},
      {"all equal", [](std::int64_t, std::int64_t, std::int64_t b) { return static_cast<int>(b / 2); }},
      {"already sorted", [](std::int64_t i, std::int64_t n, std::int64_t b) { return static_cast<int>(i * b / n); }},
      {"reversed", [](std::int64_t i, std::int64_t n, std::int64_t b) { return static_cast<int>(b - 1 - i * b / n); }},
      // A quarter outside [0, bins) on either side: they sort last, in input order.
      {"some outside the bins", [](std::int64_t, std::int64_t, std::int64_t b) {
         return uniform_int(-(b / 8) - 3, b + b / 8 + 3);
       }},
  };
  return all;
}

std::vector<int> keys_of(const KeyShape& s, std::int64_t n, std::int64_t bins) {
  std::vector<int> k(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) k[static_cast<std::size_t>(i)] = s.key(i, n, bins);
  return k;
}

// The same arrays bound on the device (uploaded, kept alive here) and on the host.
struct Bound {
  ff::Bindings device;
  ff::HostBindings host;
  std::vector<std::shared_ptr<void>> arrays;

  template <class T>
  Bound& bind(const ff::Expr& input, const std::vector<T>& values) {
    auto array = std::make_shared<ff::DeviceArray<T>>(runtime().upload(values));
    device.push_back({input, *array});
    host.bind(input, ff::HostArray::from(values));
    arrays.push_back(array);
    return *this;
  }
};

// Runs `program` (its results of C++ types Rs...) on the GPU and on the CPU, and compares
// every element of every result exactly.
template <class... Rs>
void check_sort(const ff::Program& program, const Bound& b, const std::string& what) {
  std::vector<ff::Result> got = runtime().run(program, b.device);
  std::vector<ff::HostResult> want = ff::evaluate(program, b.host);
  REQUIRE(got.size() == sizeof...(Rs));
  std::size_t r = 0;
  const auto compare = [&](auto tag) {
    using R = decltype(tag);
    const std::vector<R> g = got[r].template download<R>();
    const std::vector<R> w = want[r].array.template to_vector<R>();
    REQUIRE(g.size() == w.size());
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (!(g[i] == w[i]) && wrong++ == 0) first = i;
    INFO(what << ", result " << r << ": " << wrong << " of " << g.size() << " elements differ, the first at "
              << first);
    CHECK(wrong == 0);
    ++r;
  };
  (compare(Rs{}), ...);
}

// sort_by_key(k, index()) and counting_sort(k) of i32 keys over `bins`: keys and
// indices (stability) against the reference.
void check_keys(const std::vector<int>& keys, std::int64_t bins, const std::string& what) {
  auto k = ff::input<int>("k");
  const ff::KeyedResult sorted = ff::sort_by_key(k, ff::index(), bins);
  Bound b;
  b.bind(k, keys);
  check_sort<int, long long>(ff::outputs(sorted.keys, sorted.values), b, what + ", sort_by_key");
  check_sort<int>(ff::counting_sort(k, bins), b, what + ", counting_sort");
}

void check_random_keys(const std::vector<std::int64_t>& sizes) {
  for (std::int64_t bins : {1LL, 2LL, 16LL, 256LL, 1024LL, 4096LL})
    for (std::int64_t n : sizes)
      check_keys(keys_of(shapes()[0], n, bins), bins, "random, " + std::to_string(bins) + " bins, n = " + std::to_string(n));
}

void check_shaped_keys(const std::vector<std::int64_t>& sizes) {
  for (std::size_t s = 1; s < shapes().size(); ++s)
    for (std::int64_t bins : {16LL, 256LL, 4096LL})
      for (std::int64_t n : sizes)
        check_keys(keys_of(shapes()[s], n, bins), bins,
                   shapes()[s].name + ", " + std::to_string(bins) + " bins, n = " + std::to_string(n));
}

// x in [-0.25, 1.25): keys -2 .. 9, so some fall outside [0, 8) and sort last.
void check_fused_key_map(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<float>("x");
  const ff::KeyedResult sorted = ff::sort_by_key(ff::cast<int>(x * 8.0f), ff::zip(x, ff::index()), 8);
  const ff::Program program = ff::outputs(sorted.keys, sorted.values);
  for (std::int64_t n : sizes) {
    Bound b;
    b.bind(x, ff::test::random_values<float>(n, -0.25, 1.25));
    check_sort<int, ff::Tuple<float, long long>>(program, b, "cast<i32>(x * 8), n = " + std::to_string(n));
  }
}

}  // namespace

TEST_CASE("sort_by_key of random keys over 1 to 4096 bins matches the reference at every size up to 2^16 + 3, stably") {
  check_random_keys(kSizes);
}

TEST_CASE("sort_by_key of random keys over 1 to 4096 bins at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_random_keys(kLongSizes);
}

TEST_CASE("all keys equal, already sorted, reversed, and keys outside the bins, at every size up to 2^16 + 3") {
  check_shaped_keys(kSizes);
}

TEST_CASE("all keys equal, already sorted, reversed, and keys outside the bins, at 2^20 + 7 and 2^24 elements" *
          doctest::test_suite("long")) {
  check_shaped_keys(kLongSizes);
}

TEST_CASE("8192 bins, the most a counting sort takes, sort from registers with small blocks") {
  for (std::int64_t n : ff::test::capped({1025LL, (1LL << 16) + 3, (1LL << 20) + 7}))
    check_keys(keys_of(shapes()[4], n, 8192), 8192, "8192 bins, n = " + std::to_string(n));
}

TEST_CASE("a fused key map cast<i32>(x * 8) sorts f32 values with their index, stably") {
  check_fused_key_map(kSizes);
}

TEST_CASE("a fused key map cast<i32>(x * 8) sorts f32 values with their index at 2^20 + 7 and 2^24 elements" *
          doctest::test_suite("long")) {
  check_fused_key_map(kLongSizes);
}

TEST_CASE("x % 16 of i32 (negative remainders sort last) carries u32 values; u8, u16 and i64 keys") {
  auto x = ff::input<int>("x");
  auto v = ff::input<unsigned>("v");
  for (std::int64_t n : ff::test::capped({0LL, 33LL, 1025LL, (1LL << 16) + 3, (1LL << 20) + 7})) {
    std::vector<int> hx(static_cast<std::size_t>(n));
    std::vector<unsigned> hv(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < hx.size(); ++i) {
      hx[i] = uniform_int(-1000, 1000);
      hv[i] = static_cast<unsigned>(i);
    }
    Bound both, x_only;
    both.bind(x, hx).bind(v, hv);
    x_only.bind(x, hx);
    const ff::KeyedResult mod = ff::sort_by_key(x % 16, v, 16);
    check_sort<int, unsigned>(ff::outputs(mod.keys, mod.values), both, "x % 16, n = " + std::to_string(n));
    const ff::KeyedResult u8 = ff::sort_by_key(ff::cast<std::uint8_t>(x), v, 256);
    check_sort<std::uint8_t, unsigned>(ff::outputs(u8.keys, u8.values), both, "u8 keys, n = " + std::to_string(n));
    const ff::KeyedResult u16 = ff::sort_by_key(ff::cast<std::uint16_t>(x + 1000), v, 1024);
    check_sort<std::uint16_t, unsigned>(ff::outputs(u16.keys, u16.values), both, "u16 keys, n = " + std::to_string(n));
    check_sort<long long>(ff::counting_sort(ff::cast<long long>(x) * 3000000000LL, 256), x_only,
                          "i64 keys, most outside, n = " + std::to_string(n));
  }
}

TEST_CASE("only the values of sort_by_key, and the catalog's sort_by_key_256") {
  auto k = ff::input<unsigned>("k");
  auto v = ff::input<unsigned>("v");
  const ff::Program values_only(ff::sort_by_key(k, v, 256).values);
  const ff::Program catalog = ff::catalog::find("sort_by_key_256").build();
  for (std::int64_t n : ff::test::capped({1LL, 1025LL, (1LL << 16) + 3, (1LL << 20) + 7})) {
    std::vector<unsigned> hk(static_cast<std::size_t>(n)), hv(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < hk.size(); ++i) {
      hk[i] = static_cast<unsigned>(uniform_int(0, 255));
      hv[i] = static_cast<unsigned>(i);
    }
    Bound mine, theirs;
    mine.bind(k, hk).bind(v, hv);
    check_sort<unsigned>(values_only, mine, "values only, n = " + std::to_string(n));
    // The catalog's inputs, by name (a program lists them in the order it reaches them).
    for (const ff::Expr& in : catalog.inputs()) theirs.bind(in, in.node().name == "k" ? hk : hv);
    check_sort<unsigned, unsigned>(catalog, theirs, "catalog sort_by_key_256, n = " + std::to_string(n));
  }
}

TEST_CASE("a counting sort gives the same output on every run (scratch reused, counters re-zeroed)") {
  auto k = ff::input<int>("k");
  const ff::KeyedResult sorted = ff::sort_by_key(k, ff::index(), 256);
  const ff::Program program = ff::outputs(sorted.keys, sorted.values);
  auto dev = runtime().upload(keys_of(shapes()[0], 1 << 22, 256));
  std::vector<ff::Result> first = runtime().run(program, {{k, dev}});
  const std::vector<long long> values = first[1].download<long long>();
  for (int i = 0; i < 5; ++i) {
    std::vector<ff::Result> again = runtime().run(program, {{k, dev}});
    CHECK(again[1].download<long long>() == values);
  }
}

TEST_CASE("a sort_by_key of more than 2^31 u8 keys uses 64-bit positions and stays stable" * doctest::test_suite("long")) {
  const std::int64_t n = (1LL << 31) + 17;
  FF_TEST_NEEDS_ELEMENTS(n);
  std::vector<std::uint8_t> host(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> count(256, 0);
  std::uint64_t state = rng()();
  for (auto& v : host) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<std::uint8_t>(state >> 56);
    ++count[v];
  }
  auto k = ff::input<std::uint8_t>("k");
  const ff::KeyedResult sorted = ff::sort_by_key(k, ff::cast<std::uint32_t>(ff::index()), 256);
  std::vector<std::uint8_t> keys;
  std::vector<std::uint32_t> index;
  {
    auto dev = runtime().upload(host);
    auto got = runtime().run(ff::outputs(sorted.keys, sorted.values), {{k, dev}});
    keys = got[0].download<std::uint8_t>();
    index = got[1].download<std::uint32_t>();
  }
  REQUIRE(keys.size() == host.size());
  REQUIRE(index.size() == host.size());
  // Checked by a plain loop (the reference would need tens of GB here): the keys are the
  // runs the counts give, each element's index points at an element with its key, and
  // within a run the indices increase. With the counts right, that is the stable sort.
  std::size_t bad = 0, first = 0, at = 0;
  for (int key = 0; key < 256; ++key) {
    for (std::uint64_t c = 0; c < count[static_cast<std::size_t>(key)]; ++c, ++at) {
      const bool ok = keys[at] == key && index[at] < host.size() && host[index[at]] == key &&
                      (c == 0 || index[at] > index[at - 1]);
      if (!ok && bad++ == 0) first = at;
    }
  }
  INFO(bad << " elements wrong, the first at " << first);
  CHECK(bad == 0);
}
