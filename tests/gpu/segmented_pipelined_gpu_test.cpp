// GPU execution tests for the pipelined segmented scans and reduce_by_key (segmented_scan
// by offsets, scan_by_key and reduce_by_key on sm_90: strategies/segmented_scan_pipelined.cpp,
// device segmented_scan_pipeline.cuh). The pipelined kernel is the second kernel of those ops,
// launched from the scan policy's staged_from elements; scan_staged_from = 0
// (FUSEFLOW_SCAN_STAGED_FROM) gives it to every size here, so the sizes cover one partial
// tile, whole tiles, one element either side of a tile's end (12288 elements per tile by
// offsets, 6144 by key with two inputs) and many tiles per block. Every result against the
// CPU reference (segmented_gpu_support.hpp: integers and MSSP exactly, f32 against f64).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/segmented_gpu_support.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;
using namespace ff::test::segmented_support;
using ff::test::rng;
using ff::test::runtime;

namespace {

ff::codegen::PlanOptions pipelined_everywhere() {
  ff::codegen::PlanOptions options;
  options.scan_staged_from = 0;
  options.segmented_pipeline = true;  // opt-in
  return options;
}

// The shapes of the benchmark's rows (issue 21): lengths 1..3, 10..50, 1000..10000,
// power law (Zipf, s = 1.2, lengths up to 10^6), one segment (its own case below).
const std::vector<Shape>& bench_shapes() {
  static const std::vector<Shape> all = {
      {"lengths 1..3", [] { return std::uniform_int_distribution<std::int64_t>(1, 3)(rng()); }},
      {"lengths 10..50", [] { return std::uniform_int_distribution<std::int64_t>(10, 50)(rng()); }},
      {"lengths 1000..10000", [] { return std::uniform_int_distribution<std::int64_t>(1000, 10000)(rng()); }},
      {"power law (s = 1.2 density), max 1e6", [] {
         // P(length >= l) ~ l^-0.2 (the density of Zipf with s = 1.2), capped at 10^6.
         const double u = std::uniform_real_distribution<double>(1e-12, 1.0)(rng());
         return std::min<std::int64_t>(1000000, static_cast<std::int64_t>(std::pow(u, -1.0 / 0.2)));
       }},
  };
  return all;
}

const std::vector<std::int64_t>& pipelined_sizes() {
  static const std::vector<std::int64_t> sizes =
      ff::test::capped({0, 1, 1000, 6143, 6145, 12288, 12289, 3 * 12288 + 5, 150007});
  return sizes;
}

// The plans: with the opt-in plan option on sm_90, the pipelined kernel is the second of
// segmented scans, scans by key and reduce_by_key with 4-byte inputs and values; not
// without the option, not on sm_80, not for 8-byte values.
TEST_CASE("pipelined segmented scans: where the plan takes them") {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("offsets");
  auto k = ff::input<int>("k");
  auto d = ff::input<double>("d");
  ff::codegen::PlanOptions opted_in;
  opted_in.segmented_pipeline = true;  // opt-in (FUSEFLOW_SEGMENTED_PIPELINE=1)
  const auto kernels = [&](const ff::Program& p, const char* target, bool opt_in = true) {
    const ff::codegen::Plan plan =
        ff::codegen::plan(p, ff::codegen::Target::preset(target), opt_in ? opted_in : ff::codegen::PlanOptions{});
    std::vector<std::string> names;
    for (const auto& kernel : plan.kernels) names.push_back(kernel.name);
    return names;
  };
  const ff::Program by_offsets(ff::segmented_scan(x, o, ff::plus));
  const ff::Program by_key(ff::scan_by_key(k, x, ff::plus, ff::exclusive));
  const ff::Program by_runs(ff::reduce_by_key(k, x, ff::plus).values);
  for (const ff::Program* p : {&by_offsets, &by_key, &by_runs}) {
    CHECK(kernels(*p, "sm_90", false).size() == 1);  // without the option: the one kernel
    const auto sm90 = kernels(*p, "sm_90");
    REQUIRE(sm90.size() == 2);
    CHECK(sm90[1].find("_pipelined") != std::string::npos);
    const auto sm80 = kernels(*p, "sm_80");
    REQUIRE(sm80.size() == 1);
    CHECK(sm80[0].find("_pipelined") == std::string::npos);
  }
  CHECK(kernels(ff::Program(ff::segmented_scan(d, o, ff::plus)), "sm_90").size() == 1);
  CHECK(kernels(ff::Program(ff::scan_by_key(k, d, ff::plus)), "sm_90").size() == 1);
  CHECK(kernels(ff::Program(ff::reduce_by_key(k, d, ff::plus).values), "sm_90").size() == 1);
}

TEST_CASE("pipelined segmented scans, scans by key and reduce_by_key: every shape and size against the reference") {
  ff::test::PlanVariant pipelined(pipelined_everywhere());
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("offsets");
  auto k = ff::input<int>("k");
  auto dx = pipelined.rt().upload(std::vector<int>(1000, 1));
  auto doff = pipelined.rt().upload(std::vector<int>{0, 3, 10, 1000});
  pipelined.require_launch(ff::Program(ff::segmented_scan(x, o, ff::plus)), {{x, dx}, {o, doff}},
                           "ff_segmented_scan_i32_plus_pipelined");
  pipelined.require_launch(ff::Program(ff::scan_by_key(k, x, ff::plus)), {{x, dx}, {k, dx}},
                           "ff_scan_by_key_i32_i32_plus_pipelined");
  pipelined.require_launch(ff::Program(ff::reduce_by_key(k, x, ff::plus).values), {{x, dx}, {k, dx}},
                           "ff_reduce_by_key_i32_i32_plus_pipelined");
  for (const auto& s : bench_shapes())
    for (std::int64_t n : pipelined_sizes()) check_scans(offsets_for(s, n), n, s.name + ", pipelined, n = " + std::to_string(n));
  for (std::int64_t n : pipelined_sizes())
    check_scans({0, static_cast<int>(n)}, n, "one segment, pipelined, n = " + std::to_string(n));
  // Elements before the first offset and after the last belong to no segment.
  for (std::int64_t n : pipelined_sizes())
    if (n >= 20) check_scans({7, 9, 9, static_cast<int>(n / 2), static_cast<int>(n - 5)}, n, "outside, n = " + std::to_string(n));
}

// Float sums: the same bits on every run (one fixed look-back order), by offsets, by key and
// reduced by key.
TEST_CASE("pipelined segmented f32 sums give the same bits on every run") {
  ff::test::PlanVariant pipelined(pipelined_everywhere());
  ff::Runtime& rt = pipelined.rt();
  const std::int64_t n = std::min<std::int64_t>(400009, ff::test::max_elements());
  auto f = ff::input<float>("f");
  auto o = ff::input<int>("offsets");
  auto k = ff::input<int>("k");
  const std::vector<int> offsets = offsets_for(bench_shapes()[3], n);
  const std::vector<int> keys = keys_for(offsets, n);
  auto df = rt.upload(floats(n));
  auto doff = rt.upload(offsets);
  auto dk = rt.upload(keys);
  const ff::Program by_offsets(ff::segmented_scan(f, o, ff::plus));
  const ff::Program by_key(ff::scan_by_key(k, f, ff::plus, ff::exclusive));
  const std::vector<float> first_offsets = rt.run(by_offsets, {{f, df}, {o, doff}})[0].download<float>();
  const std::vector<float> first_keys = rt.run(by_key, {{f, df}, {k, dk}})[0].download<float>();
  const ff::Program by_runs(ff::reduce_by_key(k, f, ff::plus).values);
  const std::vector<float> first_runs = rt.run(by_runs, {{f, df}, {k, dk}})[0].download<float>();
  REQUIRE(first_runs.size() == offsets.size() - 1);
  REQUIRE(first_offsets.size() == static_cast<std::size_t>(n));
  for (int run = 0; run < 4; ++run) {
    const std::vector<float> a = rt.run(by_offsets, {{f, df}, {o, doff}})[0].download<float>();
    const std::vector<float> b = rt.run(by_key, {{f, df}, {k, dk}})[0].download<float>();
    INFO("run " << run);
    CHECK(std::memcmp(a.data(), first_offsets.data(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(b.data(), first_keys.data(), b.size() * sizeof(float)) == 0);
    const std::vector<float> c = rt.run(by_runs, {{f, df}, {k, dk}})[0].download<float>();
    REQUIRE(c.size() == first_runs.size());
    CHECK(std::memcmp(c.data(), first_runs.data(), c.size() * sizeof(float)) == 0);
  }
}

// The producer checks the offsets (each pair of neighbours once, in some tile): the same
// verdict as the reference, word for word.
TEST_CASE("pipelined segmented scan reports decreasing or out-of-range offsets as the reference does") {
  ff::test::PlanVariant pipelined(pipelined_everywhere());
  ff::Runtime& rt = pipelined.rt();
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("o");
  const ff::Expr scan = ff::segmented_scan(x, o, ff::plus);
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
  CHECK(device == reference);
  CHECK(device != "(no GraphError thrown)");
  const std::int64_t n = std::min<std::int64_t>(100003, ff::test::max_elements());
  const std::vector<int> xs(static_cast<std::size_t>(n), 1);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<int> off;
    for (std::int64_t s = 0; s <= n + 30000; s += trial % 2 ? 1 : 7) off.push_back(static_cast<int>(std::min(s, n)));
    const std::size_t at = std::uniform_int_distribution<std::size_t>(1, off.size() - 1)(rng());
    off[at] = off[at - 1] - 1;
    std::tie(device, reference) = verdicts(xs, off);
    INFO("trial " << trial << ", offset " << at << " of " << off.size());
    CHECK(device == reference);
    CHECK(device != "(no GraphError thrown)");
  }
}

}  // namespace
