// GPU execution tests for filter as a program output (stream compaction): fresh random
// inputs, outputs and their device-written counts poisoned (FUSEFLOW_POISON=1), every
// result compared with the CPU reference evaluator. Survivors are copies of the inputs (or
// exact maps of them), so they compare exactly, tuples field by field; a float map after
// the filter compares by relative error against the program evaluated in f64.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include <fuseflow/fuseflow.hpp>
#include "fuseflow/runtime/low_level.hpp"

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// The sweeps' sizes under the label gpu; the same sweeps at 2^24 elements in the suite
// "long" (label gpu-long; gpu_test_support.hpp). 2^24 f32 elements are 2048 tiles: far
// more than are resident at once, so tiles look back over predecessors that are still
// running (the pipelined compaction's case below checks 300 tiles under the label gpu).
const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 20) + 7});
const std::vector<std::int64_t> kLongSizes = ff::test::capped({1 << 24});

using ff::test::random_values;
using ff::test::runtime;

// Equal bits for scalars; tuples field by field (their padding is not part of the value).
template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_arithmetic_v<T>) return std::memcmp(&a, &b, sizeof(T)) == 0;
  else return a == b;
}

template <class T>
void check_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  INFO(what << ": " << got.size() << " survivors, the reference has " << want.size());
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i]) && bad++ == 0) first = i;
  INFO(what << ": " << bad << " survivors differ, the first at " << first);
  CHECK(bad == 0);
}

// Runs `prog` over input x (host values `host`) with the bindings `extra` (parameters) on
// the GPU and the CPU reference; output `output` (of type R) must match exactly.
template <class T, class R>
void run_against_reference(const std::string& what, const ff::Program& prog, const ff::Expr& x, const std::vector<T>& host,
                           const std::vector<std::pair<ff::Expr, ff::Value>>& params = {}, std::size_t output = 0) {
  ff::Runtime& rt = runtime();
  auto dev = rt.upload(host);
  ff::Bindings bindings = {{x, dev}};
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  for (const auto& [p, v] : params) {
    bindings.push_back({p, v});
    b.bind(p, v);
  }
  std::vector<ff::Result> got = rt.run(prog, bindings);
  auto want = ff::evaluate(prog, b);
  check_exact(got[output].download<R>(), want[output].array.to_vector<R>(), what);
}

// filter(x, x > t) over T at every size, with thresholds that keep every element, none,
// and about half (the values are drawn from [-1000, 1000)); one program, one kernel.
template <class T>
void run_thresholds(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<T>("x");
  auto t = ff::param<T>("t");
  ff::Program prog(ff::filter(x, x > t));
  for (std::int64_t n : sizes) {
    auto host = random_values<T>(n, -1000, 1000);
    for (double threshold : {-2000.0, 2000.0, 0.0}) {
      const std::string what = "filter(x > " + std::to_string(threshold) + ") of " + ff::type_of<T>().name() +
                               ", n = " + std::to_string(n);
      run_against_reference<T, T>(what, prog, x, host, {{t, ff::Value(static_cast<T>(threshold))}});
    }
  }
}

}  // namespace

TEST_CASE("filter keeps the survivors in input order for f32, i32 and i64: every size, keep all, none, about half") {
  run_thresholds<float>(kSizes);
  run_thresholds<std::int32_t>(kSizes);
  run_thresholds<std::int64_t>(kSizes);
}

TEST_CASE("filter keeps the survivors in input order for f32, i32 and i64 at 2^24 elements" * doctest::test_suite("long")) {
  run_thresholds<float>(kLongSizes);
  run_thresholds<std::int32_t>(kLongSizes);
  run_thresholds<std::int64_t>(kLongSizes);
}

TEST_CASE("changing the threshold parameter does not recompile") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Expr prog = ff::filter(x, x > t);
  auto dev = rt.upload(random_values<float>(5000, -1, 1));
  (void)rt.run(prog, {{x, dev}, {t, 0.5f}}).size();
  const std::uint64_t compiles = ff::low_level::cache(rt).stats().compiles;
  const std::size_t half = rt.run(prog, {{x, dev}, {t, 0.0f}}).size();
  const std::size_t none = rt.run(prog, {{x, dev}, {t, 2.0f}}).size();
  CHECK(ff::low_level::cache(rt).stats().compiles == compiles);
  CHECK(half > 0);
  CHECK(none == 0);
}

namespace {

void check_tuple_elements(const std::vector<std::int64_t>& sizes) {
  using Pair = ff::Tuple<std::int32_t, long long>;
  using Quad = ff::Tuple<int, int, int, int>;
  auto x = ff::input<std::int32_t>("x");
  ff::Program pairs(ff::filter(ff::zip(x, ff::index()), (x & 1) == 0));
  auto m = ff::input<Quad>("m");
  ff::Program quads(ff::filter(m, m[0] > m[3]));
  for (std::int64_t n : sizes) {
    run_against_reference<std::int32_t, Pair>("even (value, index) pairs, n = " + std::to_string(n), pairs, x,
                                              random_values<std::int32_t>(n, -1000, 1000));
    std::vector<Quad> host(static_cast<std::size_t>(n));
    auto fields = random_values<int>(4 * n, -100, 100);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = Quad(fields[4 * i], fields[4 * i + 1], fields[4 * i + 2], fields[4 * i + 3]);
    run_against_reference<Quad, Quad>("4 x i32 with m[0] > m[3], n = " + std::to_string(n), quads, m, host);
  }
}

}  // namespace

TEST_CASE("tuple elements: (value, index) pairs and a 4 x i32 input compact exactly") {
  check_tuple_elements(kSizes);
}

TEST_CASE("tuple elements: (value, index) pairs and a 4 x i32 input at 2^24 elements" * doctest::test_suite("long")) {
  check_tuple_elements(kLongSizes);
}

TEST_CASE("16-byte survivors staged in exactly 48 KB of shared memory launch (fuzz seed 439)") {
  // Three inputs of 20 bytes an element give tiles of 3072 elements; their (i64, i64)
  // survivors fill exactly 48 KB of dynamic shared memory beside the kernel's static bytes,
  // which needs the opt-in (the launch failed with CUDA_ERROR_INVALID_VALUE before).
  using Pair = ff::Tuple<long long, long long>;
  ff::Runtime& rt = runtime();
  auto x = ff::input<long long>("x");
  auto y = ff::input<std::int32_t>("y");
  auto z = ff::input<long long>("z");
  ff::Program prog(ff::filter(ff::zip(~x, ff::index()), ff::cast<long long>(y % 16) < z));
  CHECK(ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90")).kernels.at(0).shared_bytes == 48 * 1024);
  for (std::int64_t n : ff::test::capped({1025, (1 << 20) + 7})) {
    const auto hx = random_values<long long>(n, -1000000, 1000000);
    const auto hy = random_values<std::int32_t>(n, -1000, 1000);
    const auto hz = random_values<long long>(n, -8, 8);
    auto dx = rt.upload(hx);
    auto dy = rt.upload(hy);
    auto dz = rt.upload(hz);
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(hx));
    b.bind(y, ff::HostArray::from(hy));
    b.bind(z, ff::HostArray::from(hz));
    std::vector<ff::Result> got = rt.run(prog, {{x, dx}, {y, dy}, {z, dz}});
    check_exact(got[0].download<Pair>(), ff::evaluate(prog, b)[0].array.to_vector<Pair>(),
                "(~x, index) where i64(y % 16) < z, n = " + std::to_string(n));
  }
}

// DESIGN.md fusion rules: filter -> map is applied to the survivors in the compaction
// kernel before they are written; index() there is the position among the survivors.
namespace {

void check_filter_then_map(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<std::int32_t>("x");
  ff::Expr kept = ff::filter(x * 3, x > 0);
  ff::Program prog(ff::outputs(kept * 2 + 1, kept, ff::cast<long long>(kept) * 1000000 + ff::index()));
  // One kernel (and on sm_90 its pipelined twin for large n), no map kernel.
  const ff::codegen::Plan plan = ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].name == "ff_filter_compact_i32");
  CHECK(plan.kernels[1].name == "ff_filter_compact_pipelined_i32");
  for (std::int64_t n : sizes) {
    auto host = random_values<std::int32_t>(n, -1000, 1000);
    const std::string what = "filter -> map, n = " + std::to_string(n);
    run_against_reference<std::int32_t, std::int32_t>(what + ", output 0", prog, x, host, {}, 0);
    run_against_reference<std::int32_t, std::int32_t>(what + ", output 1", prog, x, host, {}, 1);
    run_against_reference<std::int32_t, long long>(what + ", output 2 (index)", prog, x, host, {}, 2);
  }
}

}  // namespace

TEST_CASE("filter -> map: maps of the survivors are applied before the store, in one kernel") {
  check_filter_then_map(kSizes);
}

TEST_CASE("filter -> map at 2^24 elements" * doctest::test_suite("long")) {
  check_filter_then_map(kLongSizes);
}

TEST_CASE("a float map after the filter matches the f64 reference") {
  ff::Runtime& rt = runtime();
  auto build = [](const ff::Expr& x) { return ff::sqrt(ff::filter(x, x > 0.25)) * 3.0f + 1.0f; };
  for (std::int64_t n : {0LL, 1LL, 1025LL, (1LL << 20) + 7}) {
    auto host = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x");
    auto dev = rt.upload(host);
    std::vector<float> got = rt.run(build(x), {{x, dev}}).download<float>();
    auto x64 = ff::input<double>("x");
    ff::HostBindings b;
    b.bind(x64, ff::HostArray::from(std::vector<double>(host.begin(), host.end())));
    std::vector<double> want = ff::evaluate(ff::Program(build(x64)), b)[0].array.to_vector<double>();
    REQUIRE(got.size() == want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) bad += std::fabs(got[i] - want[i]) <= 1e-6 * std::fabs(want[i]) ? 0 : 1;
    INFO("n = " << n << ": " << bad << " of " << got.size() << " out of tolerance");
    CHECK(bad == 0);
  }
}

TEST_CASE("a filter over two inputs, a filter of a filter's result, and a predicate reading a reduction") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : {0LL, 33LL, 1025LL, (1LL << 20) + 7}) {
    auto hx = random_values<std::int32_t>(n, -1000, 1000), hy = random_values<std::int32_t>(n, -1000, 1000);
    auto x = ff::input<std::int32_t>("x"), y = ff::input<std::int32_t>("y");
    auto dx = rt.upload(hx), dy = rt.upload(hy);
    ff::Expr positive = ff::filter(x, x > 0);
    ff::Expr half_max = ff::reduce(x, ff::max) / 2;
    ff::Program prog(
        ff::outputs(ff::filter(x * y, x > y), ff::filter(positive * 3, positive < 500), ff::filter(x, x > half_max)));
    std::vector<ff::Result> got = rt.run(prog, {{x, dx}, {y, dy}});
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(hx));
    b.bind(y, ff::HostArray::from(hy));
    auto want = ff::evaluate(prog, b);
    for (std::size_t o = 0; o < 3; ++o)
      check_exact(got[o].download<std::int32_t>(), want[o].array.to_vector<std::int32_t>(),
                  "output " + std::to_string(o) + ", n = " + std::to_string(n));
  }
}

namespace {

// From 2^24 elements a compaction of one 4-byte input runs pipelined on sm_90
// (scan_pipeline.cuh, compact_tiles); scan_staged_from = 0 (FUSEFLOW_SCAN_STAGED_FROM)
// gives it to every size, on a Runtime of its own with that option (PlanVariant,
// gpu_test_support.hpp).
ff::codegen::PlanOptions pipelined_everywhere() {
  ff::codegen::PlanOptions options;
  options.scan_staged_from = 0;
  return options;
}

// The checks of the two cases below at the given sizes.
void check_pipelined_compaction(const std::vector<std::int64_t>& sizes) {
  if (runtime().properties().cc_major < 9) {
    MESSAGE("left out: the pipelined compaction needs sm_90 (the device is older)");
    return;
  }
  ff::test::PlanVariant pipelined(pipelined_everywhere());
  // Tiles of 13312 in 4 stages, 8 segments of 1664 (13 rounds of 128) per tile; a tile is
  // written out two tiles after it is ranked, so 1-3 tiles per block end the ring early.
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Program thresholds(ff::filter(x, x > t));
  auto xi = ff::input<std::int32_t>("x");
  ff::Expr kept = ff::filter(xi * 3, xi > 0);
  ff::Program maps(ff::outputs(kept * 2 + 1, kept, ff::cast<long long>(kept) * 1000000 + ff::index()));
  // An exact reduction in the predicate (a float sum would round differently from the
  // reference and move elements near the threshold).
  ff::Program above_half_max(ff::filter(xi, xi > ff::reduce(xi, ff::max) / 2));
  for (const ff::Program* p : {&thresholds, &maps, &above_half_max}) {
    const ff::codegen::Plan plan = ff::codegen::plan(*p, ff::codegen::Target::preset("sm_90"), pipelined.options());
    CHECK(plan.kernels.back().name.find("ff_filter_compact_pipelined_") == 0);
  }
  {  // The runs below take the pipelined compaction.
    auto small = pipelined.rt().upload(std::vector<float>(1000, 1.0f));
    pipelined.require_launch(thresholds, {{x, small}, {t, ff::Value(0.0f)}}, "ff_filter_compact_pipelined_f32");
    auto small_i = pipelined.rt().upload(std::vector<std::int32_t>(1000, 1));
    pipelined.require_launch(maps, {{xi, small_i}}, "ff_filter_compact_pipelined_");
    pipelined.require_launch(above_half_max, {{xi, small_i}}, "ff_filter_compact_pipelined_");
  }
  for (std::int64_t n : sizes) {
    auto host = random_values<float>(n, -1000, 1000);
    for (float threshold : {-2000.0f, 2000.0f, 0.0f})
      run_against_reference<float, float>("pipelined filter(x > " + std::to_string(threshold) + "), n = " + std::to_string(n),
                                          thresholds, x, host, {{t, ff::Value(threshold)}});
    auto hi = random_values<std::int32_t>(n, -1000, 1000);
    const std::string what = "pipelined filter -> map, n = " + std::to_string(n);
    run_against_reference<std::int32_t, std::int32_t>(what + ", output 0", maps, xi, hi, {}, 0);
    run_against_reference<std::int32_t, std::int32_t>(what + ", output 1", maps, xi, hi, {}, 1);
    run_against_reference<std::int32_t, long long>(what + ", output 2 (index)", maps, xi, hi, {}, 2);
    run_against_reference<std::int32_t, std::int32_t>("pipelined filter(x > max / 2), n = " + std::to_string(n), above_half_max,
                                                      xi, hi);
  }
  // A view 4 bytes past an aligned address: copied by the producer warp, no bulk copy.
  ff::Runtime& rt = pipelined.rt();
  for (std::int64_t n : ff::test::capped({1000, 13313, (1 << 20) + 7})) {
    auto host = random_values<float>(n + 1, -1, 1);
    auto dev = rt.upload(host);
    ff::device_span<float> shifted(dev.data() + sizeof(float), static_cast<std::size_t>(n));
    std::vector<float> got = rt.run(ff::filter(x, x > 0.0f), {{x, shifted}}).download<float>();
    std::vector<float> want;
    for (std::int64_t i = 1; i <= n; ++i)
      if (host[static_cast<std::size_t>(i)] > 0.0f) want.push_back(host[static_cast<std::size_t>(i)]);
    check_exact(got, want, "pipelined, misaligned f32, n = " + std::to_string(n));
  }
  const ff::codegen::Plan plan = ff::codegen::plan(thresholds, ff::codegen::Target::preset("sm_90"), pipelined.options());
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[1].name == "ff_filter_compact_pipelined_f32");
  CHECK(plan.schedule(1000).launches.at(0).kernel == 1);
}

}  // namespace

TEST_CASE("the pipelined compaction (sm_90), at every size: keep all, none, half; maps after; a "
          "reduction in the predicate; a misaligned view") {
  check_pipelined_compaction(ff::test::capped({1, 3, 4, 5, 127, 128, 129, 1000, 1664, 1665, 13311, 13312, 13313,
                                               2 * 13312 + 1, 4 * 13312 + 5, (1 << 20) + 7}));
}

// The large sizes of the case above: 300 tiles plus one element and 2^24 + 3 elements.
TEST_CASE("the pipelined compaction (sm_90) at 300 x 13312 + 1 and 2^24 + 3 elements" * doctest::test_suite("long")) {
  check_pipelined_compaction(ff::test::capped({300 * 13312 + 1, (1 << 24) + 3}));
}

TEST_CASE("misaligned inputs take the element-wise loads and give the same survivors") {
  ff::Runtime& rt = runtime();
  const std::int64_t n = (1 << 20) + 7;
  auto host = random_values<float>(n + 1, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  // One float past a 16-byte aligned allocation: not aligned to a float4.
  ff::device_span<float> shifted(dev.data() + sizeof(float), static_cast<std::size_t>(n));
  std::vector<float> got = rt.run(ff::filter(x, x > 0.0f), {{x, shifted}}).download<float>();
  std::vector<float> want;
  for (std::int64_t i = 1; i <= n; ++i)
    if (host[static_cast<std::size_t>(i)] > 0.0f) want.push_back(host[static_cast<std::size_t>(i)]);
  check_exact(got, want, "misaligned f32");
}

TEST_CASE("the survivor count is read from the device only when asked, and the moved-out array has it as its size") {
  ff::Runtime& rt = runtime();
  auto host = random_values<float>((1 << 20) + 7, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  std::vector<float> want;
  for (float v : host)
    if (v > 0.0f) want.push_back(v);

  // run_async returns at once; the count is read when size() asks.
  ff::Result pending = rt.run_async(ff::filter(x, x > 0.0f), {{x, dev}});
  CHECK(pending.size() == want.size());
  check_exact(pending.download<float>(), want, "run_async, then download");

  // The DeviceArray moved out of a result whose count was never read reads it itself.
  ff::DeviceArray<float> moved = rt.run_async(ff::filter(x, x > 0.0f), {{x, dev}});
  CHECK(moved.size() == want.size());
  check_exact(moved.download(), want, "moved-out DeviceArray");
  CHECK_THROWS_AS((void)rt.run(ff::filter(x, x > 0.0f), {{x, dev}}).array<int>(), ff::GraphError);

  // A compacted array binds as the input of the next program, with the survivor count as
  // its length.
  ff::DeviceArray<float> again = rt.run(ff::filter(x, x > 0.0f), {{x, dev}});
  auto y = ff::input<float>("y");
  const std::int64_t counted = rt.run(ff::reduce(ff::cast<long long>(y == y), ff::plus), {{y, again}}).as<long long>();
  CHECK(counted == static_cast<std::int64_t>(want.size()));
}

// scan(filter(x, p)) in one program: filter_scan_gpu_test.cpp; in two runs it is the
// reference's scan of the survivors too.
TEST_CASE("a compacted array scanned in a second run is the reference's scan of the survivors") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : {0LL, 1LL, 1025LL, (1LL << 20) + 7}) {
    auto host = random_values<std::int32_t>(n, -1000, 1000);
    auto dev = rt.upload(host);
    auto x = ff::input<std::int32_t>("x");
    ff::DeviceArray<std::int32_t> kept = rt.run(ff::filter(x, x > 0), {{x, dev}});
    auto y = ff::input<std::int32_t>("y");
    std::vector<std::int32_t> got = rt.run(ff::scan(y, ff::plus), {{y, kept}}).download<std::int32_t>();
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    auto want = ff::evaluate(ff::Program(ff::scan(ff::filter(x, x > 0), ff::plus)), b)[0].array.to_vector<std::int32_t>();
    check_exact(got, want, "scan of the survivors, n = " + std::to_string(n));
  }
}

TEST_CASE("two reductions of one filter's result are both masked") {
  auto x = ff::input<std::int32_t>("x");
  ff::Expr kept = ff::filter(x, x > 0);
  ff::Program prog(ff::outputs(ff::reduce(kept, ff::plus), ff::reduce(kept, ff::min)));
  ff::Runtime& rt = runtime();
  for (std::int64_t n : {1LL, 1025LL, (1LL << 20) + 7}) {
    auto host = random_values<std::int32_t>(n, -1000, 1000);
    auto dev = rt.upload(host);
    std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    auto want = ff::evaluate(prog, b);
    CHECK(got[0].value() == want[0].scalar);
    CHECK(got[1].value() == want[1].scalar);
  }
}

// filter(x, p) + y reads y at the survivors' positions (filter_lift.hpp): one compaction
// writes every output over x > 0's survivors (y, index() among the survivors, a second
// filter of the same predicate), a nested filter of such a mix another, and the reduction
// and weighted histogram of a mix stay masked. Integers: every output exactly.
TEST_CASE("a filter's result mixed with arrays of its length, another filter of its predicate and index()") {
  auto x = ff::input<std::int32_t>("x");
  auto y = ff::input<std::int32_t>("y");
  auto z = ff::input<std::int32_t>("z");
  ff::Expr kept = ff::filter(x, x > 0);
  ff::Expr mixed = kept + y;
  ff::Program prog(ff::outputs(mixed, kept * ff::cast<std::int32_t>(ff::index()) + y, kept * ff::filter(y, x > 0),
                               ff::filter(mixed, mixed > 500) - z, ff::reduce(kept * y, ff::plus),
                               ff::histogram(kept & 15, y, 16)));
  ff::Runtime& rt = runtime();
  for (std::int64_t n : kSizes) {
    auto hx = random_values<std::int32_t>(n, -1000, 1000), hy = random_values<std::int32_t>(n, -1000, 1000),
         hz = random_values<std::int32_t>(n, -1000, 1000);
    auto dx = rt.upload(hx), dy = rt.upload(hy), dz = rt.upload(hz);
    std::vector<ff::Result> got = rt.run(prog, {{x, dx}, {y, dy}, {z, dz}});
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(hx));
    b.bind(y, ff::HostArray::from(hy));
    b.bind(z, ff::HostArray::from(hz));
    auto want = ff::evaluate(prog, b);
    const std::string at = ", n = " + std::to_string(n);
    for (std::size_t o : {0, 1, 2, 3, 5})
      check_exact(got[o].download<std::int32_t>(), want[o].array.to_vector<std::int32_t>(), "output " + std::to_string(o) + at);
    CHECK(got[4].value() == want[4].scalar);
  }
}

TEST_CASE("a compaction over more than 2^31 elements uses 64-bit indexing" * doctest::test_suite("long")) {
  ff::Runtime& rt = runtime();
  const std::int64_t n = (1LL << 31) + 17;
  FF_TEST_NEEDS_ELEMENTS(n);
  const std::vector<std::uint8_t> host = ff::test::random_bytes(n);
  auto dev = rt.upload(host);
  auto x = ff::input<std::uint8_t>("x");
  // About half survive (over 2^30 elements), and the positions of the 7s reach past 2^31
  // (as u32, carried beside x: the output buffers have room for n elements each, 2 + 8 GB here).
  // Checked by plain loops: the reference evaluator would take minutes here.
  auto got = rt.run(ff::outputs(ff::filter(x, x >= 128), ff::get<1>(ff::filter(ff::zip(x, ff::cast<std::uint32_t>(ff::index())), x == 7))),
                    {{x, dev}});
  std::vector<std::uint8_t> high = got[0].download<std::uint8_t>();
  std::size_t at = 0, bad = 0;
  for (std::uint8_t v : host)
    if (v >= 128) bad += at < high.size() && high[at++] == v ? 0 : 1;
  CHECK(at == high.size());
  CHECK(bad == 0);
  std::vector<std::uint32_t> sevens = got[1].download<std::uint32_t>();
  std::size_t k = 0;
  bad = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (host[static_cast<std::size_t>(i)] == 7) bad += k < sevens.size() && sevens[k++] == static_cast<std::uint32_t>(i) ? 0 : 1;
  CHECK(k == sevens.size());
  CHECK(bad == 0);
  REQUIRE(!sevens.empty());
  CHECK(sevens.back() > (1u << 31) - 10000);
}
