// GPU execution tests for the radix sort (ff::sort, sort_by_key without a bin count) of
// u32, i32 and f32 keys: fresh random inputs, outputs poisoned (FUSEFLOW_POISON=1), and
// an oracle of its own: std::stable_sort of the indices by the documented key order
// (integers by value; floats by value with -0.0 before +0.0 and every NaN last; a bit range
// by that digit of the ordered bits). The values are the element indices, so the values
// that come out are the permutation, and stability is checked with them. Keys compare by
// their bits (NaN payloads and the sign of zero included).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include <fuseflow/runtime/low_level.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// Onesweep's tile is 6144 elements of u32 keys (with or without u32 values): one tile
// exactly, and one element past two.
const std::vector<std::int64_t> kSizes =
    ff::test::capped({0, 1, 31, 33, 1000, 1025, 4097, 6144, 12289, (1 << 16) + 3});
// In the suite "long" (label gpu-long).
const std::vector<std::int64_t> kLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});

using ff::test::rng;
using ff::test::runtime;

template <class T>
std::uint32_t bits_of(T v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return b;
}

// The order the sort promises over all 32 bits, written from its definition.
template <class T>
bool key_less(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    if (a == b) return std::signbit(a) && !std::signbit(b);  // -0.0 before +0.0
  }
  return a < b;
}

// The digit of bits [begin, end) of the ordered form (README: flip the sign bit of i32, of
// a positive f32, every bit of a negative f32; NaNs the largest word).
template <class T>
std::uint32_t digit_of(T v, int begin, int end) {
  std::uint32_t b = bits_of(v);
  if constexpr (std::is_same_v<T, int>) b ^= 0x80000000u;
  if constexpr (std::is_same_v<T, float>) b = std::isnan(v) ? 0xffffffffu : (b >> 31 ? ~b : b | 0x80000000u);
  const std::uint32_t mask = end - begin == 32 ? 0xffffffffu : (1u << (end - begin)) - 1u;
  return (b >> begin) & mask;
}

// The permutation a stable sort of `keys` by bits [begin, end) makes.
template <class T>
std::vector<std::uint32_t> oracle(const std::vector<T>& keys, int begin, int end) {
  std::vector<std::uint32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0u);
  if (begin == 0 && end == 32)
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t i, std::uint32_t j) { return key_less(keys[i], keys[j]); });
  else
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t i, std::uint32_t j) {
      return digit_of(keys[i], begin, end) < digit_of(keys[j], begin, end);
    });
  return order;
}

// Sorts `keys` (keys alone, and with their indices as u32 values) by bits [begin, end) on
// the device and checks both against the oracle.
template <class T>
void check_radix(const std::vector<T>& keys, int begin, int end, const std::string& what) {
  INFO(what << ", n = " << keys.size() << ", bits [" << begin << ", " << end << ")");
  const auto k = ff::input<T>("k");
  const ff::DeviceArray<T> device_keys = runtime().upload(keys);
  const std::vector<std::uint32_t> want = oracle(keys, begin, end);
  const ff::KeyedResult sorted = ff::sort_by_key(k, ff::cast<std::uint32_t>(ff::index()), {begin, end});
  std::vector<ff::Result> got = runtime().run(ff::Program(ff::outputs(sorted.keys, sorted.values)), {{k, device_keys}});
  REQUIRE(got.size() == 2);
  const std::vector<T> got_keys = got[0].template download<T>();
  const std::vector<std::uint32_t> got_order = got[1].download<std::uint32_t>();
  REQUIRE(got_keys.size() == keys.size());
  REQUIRE(got_order.size() == keys.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if ((got_order[i] != want[i] || bits_of(got_keys[i]) != bits_of(keys[want[i]])) && wrong++ == 0) first = i;
  INFO("sort_by_key: " << wrong << " of " << keys.size() << " elements differ, the first at " << first);
  CHECK(wrong == 0);
  // Keys alone.
  const std::vector<T> alone = runtime().run(ff::sort(k, {begin, end}), {{k, device_keys}}).template download<T>();
  REQUIRE(alone.size() == keys.size());
  wrong = 0;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (bits_of(alone[i]) != bits_of(keys[want[i]]) && wrong++ == 0) first = i;
  INFO("sort: " << wrong << " of " << keys.size() << " keys differ, the first at " << first);
  CHECK(wrong == 0);
}

template <class T>
T random_key() {
  const std::uint32_t b = static_cast<std::uint32_t>(rng()());
  if constexpr (std::is_same_v<T, float>) {
    // Mostly finite values of every magnitude and sign, some specials.
    const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(), -1.0f};
    if (b % 16 == 0) return specials[(b >> 4) % 8];
    float f = 0.0f;
    const std::uint32_t finite = b % 0x7f000000u | (b & 0x80000000u);
    std::memcpy(&f, &finite, 4);
    return f;
  } else {
    return static_cast<T>(b);
  }
}

// Key shapes: random, all equal, already sorted, reversed, few distinct.
template <class T>
std::vector<std::pair<std::string, std::vector<T>>> shapes(std::int64_t n) {
  std::vector<T> random(static_cast<std::size_t>(n)), few(random.size());
  for (auto& k : random) k = random_key<T>();
  std::vector<T> sorted = random, reversed;
  std::stable_sort(sorted.begin(), sorted.end(), [](T a, T b) { return key_less(a, b); });
  reversed.assign(sorted.rbegin(), sorted.rend());
  const std::vector<T> equal(random.size(), random.empty() ? T{} : random.front());
  T distinct[5];
  for (auto& d : distinct) d = random_key<T>();
  for (auto& k : few) k = distinct[rng()() % 5];
  return {{"random", random}, {"all equal", equal}, {"already sorted", sorted}, {"reversed", reversed},
          {"five distinct", few}};
}

template <class T>
void sweep(const std::vector<std::int64_t>& sizes, const std::string& type) {
  for (std::int64_t n : sizes)
    for (const auto& [name, keys] : shapes<T>(n)) check_radix(keys, 0, 32, type + " " + name);
}

}  // namespace

TEST_CASE("sort and sort_by_key of u32, i32 and f32 keys match a stable std::sort at every shape and size up to 2^16 + 3") {
  sweep<unsigned>(kSizes, "u32");
  sweep<int>(kSizes, "i32");
  sweep<float>(kSizes, "f32");
}

TEST_CASE("sort of u32, i32 and f32 keys at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  sweep<unsigned>(kLongSizes, "u32");
  sweep<int>(kLongSizes, "i32");
  sweep<float>(kLongSizes, "f32");
}

namespace {

// Keys of the three types, sorted by bits [begin, end) (sort_by_key and sort) at each size.
// Each (type, range) is a program of its own (one Onesweep kernel per digit of at most 8
// bits, the bits compiled in, a compile of its own): all 21 (type, range) pairs, 42
// programs, took 30.5 s on an H100 (-j 4), so the label gpu runs six pairs (every type;
// one pass, several passes of uneven widths, the sign bit, the lowest bit) and the suite
// "long" the other fifteen.
struct BitRanges {
  std::vector<std::pair<int, int>> u32, i32, f32;
};

void check_bit_ranges(const BitRanges& ranges) {
  for (std::int64_t n : ff::test::capped({0, 1000, 5000, (1 << 16) + 3})) {
    std::vector<unsigned> u(static_cast<std::size_t>(n));
    std::vector<int> i(u.size());
    std::vector<float> f(u.size());
    for (std::size_t j = 0; j < u.size(); ++j) {
      u[j] = random_key<unsigned>();
      i[j] = random_key<int>();
      f[j] = random_key<float>();
    }
    for (const auto& [begin, end] : ranges.u32) check_radix(u, begin, end, "u32");
    for (const auto& [begin, end] : ranges.i32) check_radix(i, begin, end, "i32");
    for (const auto& [begin, end] : ranges.f32) check_radix(f, begin, end, "f32");
  }
}

// Every range of the sweep: {0, 8}, {4, 12}, {8, 32}, {0, 1}, {31, 32}, {3, 29}, {0, 20}
// for each type, split between the two cases below.
const BitRanges kShortRanges = {{{4, 12}, {3, 29}}, {{31, 32}, {0, 20}}, {{0, 1}, {8, 32}}};
const BitRanges kLongRanges = {{{0, 8}, {8, 32}, {0, 1}, {31, 32}, {0, 20}},
                               {{0, 8}, {4, 12}, {8, 32}, {0, 1}, {3, 29}},
                               {{0, 8}, {4, 12}, {31, 32}, {3, 29}, {0, 20}}};

}  // namespace

TEST_CASE("sort by a range of key bits orders by that digit alone, stably") {
  check_bit_ranges(kShortRanges);
}

TEST_CASE("sort by a range of key bits: the other ranges of each type" * doctest::test_suite("long")) {
  check_bit_ranges(kLongRanges);
}

TEST_CASE("a radix sort fuses its key map and carries tuple values through its passes") {
  const auto x = ff::input<float>("x");
  const auto v = ff::input<int>("v");
  for (std::int64_t n : ff::test::capped({1, 1000, 70000})) {
    std::vector<float> xs(static_cast<std::size_t>(n));
    std::vector<int> vs(xs.size());
    for (std::size_t j = 0; j < xs.size(); ++j) {
      xs[j] = static_cast<float>(static_cast<int>(rng()() % 2001) - 1000) * 0.25f;
      vs[j] = static_cast<int>(rng()() % 100000);
    }
    // Keys x * 2 - 1, values (v, index) as a tuple: the reference evaluator is the oracle.
    const ff::KeyedResult sorted = ff::sort_by_key(x * 2.0f - 1.0f, ff::zip(v, ff::index()));
    const ff::Program program = ff::outputs(sorted.keys, sorted.values);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xs));
    host.bind(v, ff::HostArray::from(vs));
    const auto dx = runtime().upload(xs);
    const auto dv = runtime().upload(vs);
    std::vector<ff::Result> got = runtime().run(program, {{x, dx}, {v, dv}});
    std::vector<ff::HostResult> want = ff::evaluate(program, host);
    REQUIRE(got.size() == 2);
    CHECK(got[0].download<float>() == want[0].array.to_vector<float>());
    using Pair = ff::Tuple<std::int32_t, long long>;
    const std::vector<Pair> g = got[1].download<Pair>();
    const std::vector<Pair> w = want[1].array.to_vector<Pair>();
    REQUIRE(g.size() == w.size());
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < g.size(); ++j)
      if (!(g[j] == w[j])) ++wrong;
    INFO("n = " << n << ": " << wrong << " tuple values differ");
    CHECK(wrong == 0);
  }
}

namespace {

// Runs a plan's schedule by hand (ff::low_level): scratch zeroed where the schedule says,
// every kernel argument bound by its kind, the launches in order. Each kernel's source
// has `edit` applied first.
std::vector<std::vector<std::uint32_t>> run_by_hand(const ff::codegen::Plan& plan, const ff::codegen::Schedule& s,
                                                    const std::vector<const ff::DeviceArray<std::uint32_t>*>& bound,
                                                    std::size_t outputs, std::int64_t n,
                                                    const std::function<std::string(std::string)>& edit) {
  ff::Runtime& rt = runtime();
  std::vector<ff::Header> headers;
  for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
  ff::DeviceArray<unsigned char> scratch = rt.alloc<unsigned char>(std::max<std::size_t>(s.scratch_bytes, 1));
  ff::DeviceArray<unsigned> tickets = rt.upload(std::vector<unsigned>(8, 0u));
  for (const auto& [offset, bytes] : s.zeroed) ff::low_level::zero(rt, scratch.data() + offset, bytes);
  std::vector<ff::DeviceArray<std::uint32_t>> out;
  for (std::size_t o = 0; o < outputs; ++o) out.push_back(rt.upload(std::vector<std::uint32_t>(static_cast<std::size_t>(n), 0xdeadbeefu)));
  for (const auto& launch : s.launches) {
    const ff::codegen::KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(launch.kernel));
    const ff::KernelHandle handle =
        ff::low_level::load_kernel(rt, edit(k.source), k.name, ff::low_level::compile_options(rt), headers);
    std::vector<CUdeviceptr> pointers(k.args.size());
    long long length = launch.n;
    std::vector<void*> args;
    for (std::size_t j = 0; j < k.args.size(); ++j) {
      const ff::codegen::Arg& a = k.args[j];
      switch (a.kind) {
        case ff::codegen::Arg::Kind::Input: pointers[j] = bound.at(static_cast<std::size_t>(a.index))->data(); break;
        case ff::codegen::Arg::Kind::Output: pointers[j] = out.at(static_cast<std::size_t>(a.index)).data(); break;
        case ff::codegen::Arg::Kind::Scratch:
          pointers[j] = scratch.data() + launch.scratch.at(static_cast<std::size_t>(a.index));
          break;
        case ff::codegen::Arg::Kind::Ticket:
          pointers[j] = tickets.data() + static_cast<std::size_t>(a.index) * sizeof(unsigned);
          break;
        case ff::codegen::Arg::Kind::Length: break;
        default: FAIL("a sort kernel's argument " << a.name << " of an unexpected kind");
      }
      args.push_back(a.kind == ff::codegen::Arg::Kind::Length ? static_cast<void*>(&length)
                                                               : static_cast<void*>(&pointers[j]));
    }
    ff::low_level::launch(rt, handle, {static_cast<unsigned>(launch.grid)}, {static_cast<unsigned>(k.block)}, 0,
                          args.data());
  }
  rt.synchronize();
  std::vector<std::vector<std::uint32_t>> got;
  for (const auto& o : out) got.push_back(o.download());
  CHECK(tickets.download() == std::vector<unsigned>(8, 0u));  // the tile counter left zeroed
  return got;
}

}  // namespace

TEST_CASE("Onesweep passes split into portions of tiles (one launch each) sort as one") {
  // The 30-bit look-back counts hold below 2^30 elements; beyond, each pass runs as
  // several launches over portions of the tiles, each portion's bin starts written by the
  // last tile of the portion before. Portions of 2 tiles here, so a small n takes several.
  const auto k = ff::input<std::uint32_t>("k");
  const auto v = ff::input<std::uint32_t>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v, {0, 16});
  const ff::Program program = ff::outputs(sorted.keys, sorted.values);
  ff::codegen::Plan plan = ff::codegen::plan(program, ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 3);  // the histogram, two passes
  const std::int64_t tile = plan.kernels[1].items_per_block_step;
  for (auto& kernel : plan.kernels)
    for (auto& [name, value] : kernel.tuning)
      if (name == "portion_tiles") value = 2;
  const auto two_tiles = [](std::string source) {
    const std::string from = "constexpr long long kPortionTiles = ";
    const std::size_t at = source.find(from);
    if (at == std::string::npos) return source;  // the histogram
    source.replace(at + from.size(), source.find(';', at) - at - from.size(), "2");
    return source;
  };
  for (const std::int64_t n : ff::test::capped({5 * tile + 17, 4 * tile, 2 * tile + 1})) {
    INFO("n = " << n << ", " << (n + tile - 1) / tile << " tiles in portions of 2");
    std::vector<std::uint32_t> keys(static_cast<std::size_t>(n)), values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = static_cast<std::uint32_t>(rng()()) % (i % 3 == 0 ? 7u : 70000u);  // many equal keys, some wide
      values[i] = static_cast<std::uint32_t>(i);
    }
    const ff::codegen::Schedule s = plan.schedule(n);
    const std::int64_t portions = ((n + tile - 1) / tile + 1) / 2;
    REQUIRE(s.launches.size() == static_cast<std::size_t>(1 + 2 * portions));
    const auto dk = runtime().upload(keys);
    const auto dv = runtime().upload(values);
    std::vector<const ff::DeviceArray<std::uint32_t>*> bound;
    for (const auto& in : program.inputs()) bound.push_back(in.node().name == "k" ? &dk : &dv);
    const auto got = run_by_hand(plan, s, bound, 2, n, two_tiles);
    // The oracle: a stable sort of the indices by bits [0, 16).
    std::vector<std::uint32_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return (keys[a] & 0xffffu) < (keys[b] & 0xffffu); });
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (got[0][i] != keys[order[i]] || got[1][i] != order[i]) ++wrong;
    CHECK(wrong == 0);
  }
}

TEST_CASE("passes of different tiles (8-byte values, a narrow last digit) launch their own tiles, run after run") {
  // Bits [0, 20) of u32 keys with f64 values: the last pass's digit has 16 bins, whose
  // smaller shared-memory counts leave room for a larger tile than the 256-bin pass's. Each
  // pass must launch exactly its own tiles: a block past them would draw a tile id after
  // the pass reset its counter, and the next launch would wait on entries nobody writes
  // (the weighted histogram of many bins hung so on its second run).
  const auto k = ff::input<std::uint32_t>("k");
  const auto d = ff::input<double>("d");
  const ff::KeyedResult sorted = ff::sort_by_key(k, d, {0, 20});
  const ff::Program program = ff::outputs(sorted.keys, sorted.values);
  const ff::codegen::Plan plan = ff::codegen::plan(program, ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 4);  // the histogram, three passes (8, 8 and 4 bits)
  const std::int64_t tile0 = plan.kernels[1].items_per_block_step, tile1 = plan.kernels[3].items_per_block_step;
  CHECK(tile0 != tile1);  // the case this test is about
  for (const std::int64_t n : ff::test::capped({1, 3 * std::max(tile0, tile1), 10 * std::max(tile0, tile1)})) {
    INFO("n = " << n << ", tiles of " << tile0 << " and " << tile1);
    const ff::codegen::Schedule s = plan.schedule(n);
    std::int64_t blocks[2] = {0, 0};
    for (const auto& l : s.launches)
      if (l.kernel == 1 || l.kernel == 3) blocks[l.kernel == 1 ? 0 : 1] += l.grid;
    CHECK(blocks[0] == (n + tile0 - 1) / tile0);
    CHECK(blocks[1] == (n + tile1 - 1) / tile1);
    std::vector<std::uint32_t> keys(static_cast<std::size_t>(n));
    std::vector<double> values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = static_cast<std::uint32_t>(rng()());  // bits past 20 ignored by the sort
      values[i] = static_cast<double>(i) + 0.5;
    }
    ff::HostBindings host;
    host.bind(k, ff::HostArray::from(keys));
    host.bind(d, ff::HostArray::from(values));
    const std::vector<ff::HostResult> want = ff::evaluate(program, host);
    const auto dk = runtime().upload(keys);
    const auto dd = runtime().upload(values);
    for (int run = 0; run < 3; ++run) {  // the same runtime, scratch and counters again
      INFO("run " << run);
      std::vector<ff::Result> got = runtime().run(program, {{k, dk}, {d, dd}});
      REQUIRE(got.size() == 2);
      CHECK(got[0].download<std::uint32_t>() == want[0].array.to_vector<std::uint32_t>());
      CHECK(got[1].download<double>() == want[1].array.to_vector<double>());
    }
  }
}
