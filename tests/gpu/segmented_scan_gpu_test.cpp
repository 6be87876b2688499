// GPU execution tests for the segmented scans and the by-key ops beyond the sweeps of
// segmented_gpu_test.cpp (helpers in segmented_gpu_support.hpp): i64 offsets, f32 and
// tuple keys, a length read from the device, the catalog's keyed programs, and bad
// offsets reported as the CPU reference reports them.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/segmented_gpu_support.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;
using namespace ff::test::segmented_support;
using ff::test::rng;
using ff::test::runtime;

TEST_CASE("segmented scans read i64 offsets; reduce_by_key compares f32 keys with == and tuple keys field by field") {
  const std::int64_t n = 100003;
  const std::vector<int> off32 = offsets_for(shapes()[2], n);
  const std::vector<long long> off64(off32.begin(), off32.end());
  ff::Runtime& rt = runtime();
  auto x = ff::input<int>("x");
  auto o = ff::input<long long>("offsets");
  const auto xs = ints(n, -100, 100);
  auto dx = rt.upload(xs);
  auto doff = rt.upload(off64);
  ff::HostBindings hb;
  hb.bind(x, ff::HostArray::from(xs));
  hb.bind(o, ff::HostArray::from(off64));
  const ff::Expr prog = ff::segmented_scan(x, o, ff::plus);
  CHECK(rt.run(prog, {{x, dx}, {o, doff}}).download<int>() == ff::evaluate(prog, hb)[0].array.to_vector<int>());

  // f32 keys: -0 and +0 are one run, each NaN a run of its own; (i32, f32) keys.
  std::vector<float> fkeys(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < fkeys.size(); ++i) {
    const std::size_t r = i / 5;
    fkeys[i] = r % 4 == 0 ? std::numeric_limits<float>::quiet_NaN() : (r % 4 == 1 ? (i % 2 ? -0.0f : 0.0f) : float(r % 3));
  }
  const std::vector<int> ikeys = keys_for(off32, n);
  auto fk = ff::input<float>("fk");
  auto ik = ff::input<int>("k");
  ff::KeyedResult by_float = ff::reduce_by_key(fk, x, ff::plus);
  Both f = run_both(ff::outputs(by_float.keys, by_float.values), {{x, &xs}}, {{fk, &fkeys}});
  CHECK(f.got[1].download<int>() == f.want[1].array.to_vector<int>());
  const std::vector<float> fgot = f.got[0].download<float>(), fwant = f.want[0].array.to_vector<float>();
  REQUIRE(fgot.size() == fwant.size());
  CHECK(std::memcmp(fgot.data(), fwant.data(), fgot.size() * sizeof(float)) == 0);  // NaNs and -0 bit for bit
  ff::KeyedResult by_pair = ff::reduce_by_key(ff::zip(ik, fk), x, ff::plus);
  Both p = run_both(ff::outputs(by_pair.values), {{x, &xs}, {ik, &ikeys}}, {{fk, &fkeys}});
  check_output<int>(p, 0, "reduce_by_key over (i32, f32) keys");
}

// reduce_by_key writes a tile's runs through shared memory where the tile holds more runs
// than its block has threads (two-phase scatter), else each head writes its own: stretches
// of runs of 1..3 elements beside stretches of runs of hundreds put tiles of both kinds,
// and tiles straddling the two, side by side; keys alone and values alone too.
TEST_CASE("reduce_by_key: tiles of many short runs beside tiles of few long ones, keys alone, values alone") {
  const std::int64_t n = std::min<std::int64_t>(300007, ff::test::max_elements());
  std::vector<int> keys(static_cast<std::size_t>(n));
  int key = -50;
  for (std::int64_t i = 0; i < n;) {
    const bool short_runs = (i / 7000) % 2 == 0;
    const std::int64_t length = short_runs ? std::uniform_int_distribution<std::int64_t>(1, 3)(rng())
                                           : std::uniform_int_distribution<std::int64_t>(200, 900)(rng());
    for (std::int64_t j = 0; j < length && i < n; ++j, ++i) keys[static_cast<std::size_t>(i)] = key;
    key += std::uniform_int_distribution<int>(1, 4)(rng());  // neighbours differ
  }
  const auto xs = ints(n, -100, 100);
  const std::vector<float> small(xs.begin(), xs.end());  // small integers: f32 sums are exact
  auto x = ff::input<int>("x");
  auto f = ff::input<float>("f");
  auto k = ff::input<int>("k");
  ff::KeyedResult sums = ff::reduce_by_key(k, x, ff::plus);
  Both both = run_both(ff::outputs(sums.keys, sums.values), {{x, &xs}, {k, &keys}});
  check_output<int>(both, 0, "keys beside i32 sums");
  check_output<int>(both, 1, "i32 sums beside keys");
  Both keys_alone = run_both(ff::outputs(sums.keys), {{x, &xs}, {k, &keys}});
  check_output<int>(keys_alone, 0, "keys alone");
  ff::KeyedResult fsums = ff::reduce_by_key(k, f, ff::plus);
  Both values_alone = run_both(ff::outputs(fsums.values), {{k, &keys}}, {{f, &small}});
  check_output<float>(values_alone, 0, "f32 sums alone");
  ff::KeyedResult maxima = ff::reduce_by_key(k, x, ff::max);
  Both most = run_both(ff::outputs(maxima.values, maxima.keys), {{x, &xs}, {k, &keys}});
  check_output<int>(most, 0, "i32 maxima before keys");
  check_output<int>(most, 1, "keys after i32 maxima");
}

TEST_CASE("reduce_by_key stages a tile's runs over a stage the key does not read, or keys in an array of their own") {
  // Short runs (1..3): every full tile has more runs than threads, so each stages its runs.
  const std::int64_t n = std::min<std::int64_t>(100003, ff::test::max_elements());
  std::vector<int> keys(static_cast<std::size_t>(n));
  int key = 7;
  for (std::int64_t i = 0; i < n;) {
    const std::int64_t length = std::uniform_int_distribution<std::int64_t>(1, 3)(rng());
    for (std::int64_t j = 0; j < length && i < n; ++j, ++i) keys[static_cast<std::size_t>(i)] = key;
    key -= std::uniform_int_distribution<int>(1, 5)(rng());  // neighbours differ
  }
  const auto xs = ints(n, -1000, 1000);
  // k is the first input: the keys go over x's stage, after it; the values over k's, before them.
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  ff::KeyedResult sums = ff::reduce_by_key(k, x, ff::plus);
  Both after = run_both(ff::outputs(sums.keys, sums.values), {{k, &keys}, {x, &xs}});
  check_output<int>(after, 0, "keys staged after the values");
  check_output<int>(after, 1, "sums staged before the keys");
  // The key reads the only stage: its keys in an array of their own, the values over the stage.
  ff::KeyedResult own = ff::reduce_by_key(k, k * 3 + 1, ff::plus);
  Both own_keys = run_both(ff::outputs(own.keys, own.values), {{k, &keys}});
  check_output<int>(own_keys, 0, "keys in an array of their own");
  check_output<int>(own_keys, 1, "sums over the one stage");
  // The key reads both stages: the same.
  ff::KeyedResult both_stages = ff::reduce_by_key(k + x - x, x, ff::max);
  Both read_both = run_both(ff::outputs(both_stages.keys, both_stages.values), {{k, &keys}, {x, &xs}});
  check_output<int>(read_both, 0, "keys read from both stages");
  check_output<int>(read_both, 1, "maxima beside keys read from both stages");
}

TEST_CASE("reduce_by_key's length is read from the device when asked: run_async, array(), n = 0") {
  ff::Runtime& rt = runtime();
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  const std::vector<int> keys = {1, 1, 2, 2, 2, 1}, xs = {1, 2, 3, 4, 5, 6};
  auto dk = rt.upload(keys);
  auto dx = rt.upload(xs);
  ff::KeyedResult r = ff::reduce_by_key(k, x, ff::plus);
  std::vector<ff::Result> got = rt.run_async(ff::outputs(r.keys, r.values), {{k, dk}, {x, dx}});
  CHECK(got[0].size() == 3);
  CHECK(got[0].download<int>() == std::vector<int>{1, 2, 1});
  ff::DeviceArray<int> sums = got[1].array<int>();
  CHECK(sums.size() == 3);
  CHECK(sums.download() == std::vector<int>{3, 12, 6});
  auto empty_k = rt.upload(std::vector<int>{});
  auto empty_x = rt.upload(std::vector<int>{});
  CHECK(rt.run(r.values, {{k, empty_k}, {x, empty_x}}).size() == 0);
}

TEST_CASE("the catalog's segmented scans and keyed programs run and match the reference") {
  const std::int64_t n = 100003;
  const std::vector<int> offsets = offsets_for(shapes()[2], n);
  const std::vector<int> keys = keys_for(offsets, n);
  const auto xs = ints(n, -100, 100);
  const std::vector<float> small(xs.begin(), xs.end());  // small integers: f32 sums are exact
  for (const char* name : {"segmented_scan_sum", "segmented_scan_exclusive_i32", "scan_by_key_sum", "scan_by_key_mssp",
                           "reduce_by_key_sum", "reduce_by_key_mssp"}) {
    const ff::Program p = ff::catalog::find(name).build();
    std::vector<std::pair<ff::Expr, const std::vector<int>*>> int_inputs;
    std::vector<std::pair<ff::Expr, const std::vector<float>*>> float_inputs;
    std::vector<float> parity(keys.begin(), keys.end());
    for (float& v : parity) v = v < 0 ? v : float(int(v) % 2);  // "c": constant within each run of k
    for (const auto& in : p.inputs()) {
      const std::string& id = in.node().name;
      if (in.type() == ff::type_of<float>()) float_inputs.push_back({in, id == "c" ? &parity : &small});
      else int_inputs.push_back({in, id == "offsets" ? &offsets : (id == "k" ? &keys : &xs)});
    }
    Both r = run_both(p, int_inputs, float_inputs);
    for (std::size_t i = 0; i < r.got.size(); ++i) {
      const ff::Type& t = p.outputs()[i].type();
      const std::string what = std::string(name) + " output " + std::to_string(i);
      if (t == ff::type_of<float>()) check_output<float>(r, i, what);
      else if (t == ff::type_of<int>()) check_output<int>(r, i, what);
      else check_output<I4>(r, i, what);
    }
  }
}

// Bad offsets only the device sees: the segmented scan clamps them (no access out of
// bounds), flags them, and Runtime::run throws what the CPU reference throws, word for word.
TEST_CASE("segmented_scan reports decreasing or out-of-range offsets after the run, as the reference does") {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("o");
  const ff::Expr scan = ff::segmented_scan(x, o, ff::plus);
  ff::Runtime& rt = runtime();
  auto verdicts = [&](const std::vector<int>& xs, const std::vector<int>& offsets) {
    auto dx = rt.upload(xs);
    auto doff = rt.upload(offsets);
    const std::string device = ff::test::graph_error_of([&] { (void)rt.run(scan, {{x, dx}, {o, doff}}); });
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(xs));
    b.bind(o, ff::HostArray::from(offsets));
    return std::make_pair(device, ff::test::graph_error_of([&] { (void)ff::evaluate(ff::Program(scan), b); }));
  };
  const std::vector<int> ten(10, 1);
  auto [device, reference] = verdicts(ten, {0, 4, 3, 10});
  CHECK(device == "fuseflow: segmented_scan: offset 2 is 3, less than offset 1 (4); offsets must be non-decreasing");
  CHECK(device == reference);
  std::tie(device, reference) = verdicts(ten, {0, 5, 11});
  CHECK(device == "fuseflow: segmented_scan: offset 2 is 11, beyond the end of the 10 values");
  CHECK(device == reference);
  std::tie(device, reference) = verdicts(ten, {-1, 5, 10});
  CHECK(device == reference);
  CHECK(device != "(no GraphError thrown)");
  // One decreasing pair anywhere among many offsets, in any tile (and past the last
  // element's tile: more offsets than elements), is found.
  const std::int64_t n = std::min<std::int64_t>((1 << 20) + 7, ff::test::max_elements());
  const std::vector<int> xs(static_cast<std::size_t>(n), 1);
  // Trials 6 and 7: the first pair, and the last (among the offsets past the last tile's).
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<int> off;
    for (std::int64_t s = 0; s <= n + 5000; s += trial % 2 ? 1 : 7) off.push_back(static_cast<int>(std::min(s, n)));
    const std::size_t at = trial == 6   ? 1
                           : trial == 7 ? off.size() - 1
                                        : std::uniform_int_distribution<std::size_t>(1, off.size() - 1)(rng());
    off[at] = off[at - 1] - 1;
    std::tie(device, reference) = verdicts(xs, off);
    INFO("trial " << trial << ", offset " << at << " of " << off.size());
    CHECK(device == reference);
    CHECK(device != "(no GraphError thrown)");
  }
  // The Runtime works on.
  auto dx = rt.upload(std::vector<int>{1, 2, 3, 4, 5});
  auto doff = rt.upload(std::vector<int>{0, 2, 2, 5});
  CHECK(rt.run(scan, {{x, dx}, {o, doff}}).download<int>() == std::vector<int>{1, 3, 3, 7, 12});
}
