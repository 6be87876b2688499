// GPU execution tests for scans: fresh random inputs, outputs poisoned (FUSEFLOW_POISON=1),
// both strategies (lookback, reduce_then_scan). Integers and tuple monoids compare
// exactly (with the CPU reference evaluator, or a plain loop where it would be too
// slow); floats by error against an f64 scan on the CPU, scaled by the running sum of
// |x| at each position, so cancellation does not make the check meaningless.
// In-place scans bind the scan's result to its input's memory ({s, xs}); the reference
// is computed from a host copy of the input. Reductions beside a scan of the same input
// are folded into the scan's kernel (one pass) and checked against the CPU reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

// 2^24 elements are 4096 tiles of the f32 look-back scan: several times the blocks an
// H100 holds at once, so tiles wait on predecessors that are not yet resident.
const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 20) + 7, 1 << 24});
const std::vector<ff::Strategy> kStrategies = {ff::strategy::automatic, ff::strategy::reduce_then_scan};

using ff::test::runtime;

using ff::test::random_values;

std::string describe(const std::string& what, std::int64_t n, ff::Strategy s) {
  return what + ", n = " + std::to_string(n) + ", strategy " + ff::strategy_name(s);
}

// Exact comparison of two arrays of the same trivially copyable type; reports the
// first element that differs.
template <class T>
void check_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements differ, the first at " << first);
  CHECK(bad == 0);
}

// got[i] against an f64 reference want[i], within 1e-5 of the magnitude the scan went
// through up to i.
void check_close(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5 * magnitude[i] + 1e-6) && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements out of tolerance, the first at " << first
            << (bad ? ": got " + std::to_string(got[first]) + ", want " + std::to_string(want[first]) : ""));
  CHECK(bad == 0);
}

// Inclusive or exclusive plus-scan of T against a loop on the CPU: integers wrap as on
// the device (computed in the unsigned type of the same width), floats in f64.
// With `in_place`, the scan's result is bound to the input's own memory: the scan
// overwrites its input, and the reference comes from the host copy.
template <class T>
void run_sum(std::int64_t n, ff::ScanKind kind, ff::Strategy s, bool in_place = false) {
  ff::Runtime& rt = runtime();
  const bool floating = std::is_floating_point_v<T>;
  auto host = floating ? random_values<T>(n, -1, 1) : random_values<T>(n, -1000, 1000);
  auto x = ff::input<T>("x");
  auto dev = rt.upload(host);
  ff::Expr scanned = ff::scan(x, ff::plus, kind, s);
  std::vector<T> got;
  if (in_place) {
    ff::Result r = rt.run(scanned, {{x, dev}, {scanned, dev}});
    REQUIRE(r.size() == host.size());
    got = dev.download();
  } else {
    got = rt.run(scanned, {{x, dev}}).template download<T>();
  }
  std::string what = describe(std::string(in_place ? "in-place " : "") + (kind == ff::inclusive ? "inclusive" : "exclusive") +
                                  " sum of " + ff::type_of<T>().name(), n, s);
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> want(host.size()), magnitude(host.size()), got64(got.begin(), got.end());
    double sum = 0, abs_sum = 0;
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (kind == ff::inclusive) sum += host[i], abs_sum += std::fabs(host[i]);
      want[i] = sum;
      magnitude[i] = abs_sum;
      if (kind == ff::exclusive) sum += host[i], abs_sum += std::fabs(host[i]);
    }
    check_close(got64, want, magnitude, what);
  } else {
    using U = std::make_unsigned_t<T>;
    std::vector<T> want(host.size());
    U sum = 0;
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (kind == ff::inclusive) sum = static_cast<U>(sum + static_cast<U>(host[i]));
      want[i] = static_cast<T>(sum);
      if (kind == ff::exclusive) sum = static_cast<U>(sum + static_cast<U>(host[i]));
    }
    check_exact(got, want, what);
  }
}

// A program over input x of type T, run on the GPU and by the CPU reference evaluator;
// output `output` (of type R) must match exactly, and so must every scalar output. With
// `in_place`, output `output` is bound to x's memory (R must be T) and read from there.
template <class T, class R>
void run_against_reference(const std::string& what, const std::function<ff::Program(const ff::Expr&)>& build,
                           std::int64_t n, double lo, double hi, std::size_t output = 0, bool in_place = false) {
  ff::Runtime& rt = runtime();
  auto host = random_values<T>(n, lo, hi);
  auto x = ff::input<T>("x");
  ff::Program prog = build(x);
  auto dev = rt.upload(host);
  ff::Bindings bindings = {{x, dev}};
  if (in_place) bindings.push_back({prog.outputs()[output], ff::device_span<T>(dev)});
  std::vector<ff::Result> got = rt.run(prog, bindings);
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  auto want = ff::evaluate(prog, b);
  const std::string where = what + ", n = " + std::to_string(n);
  if constexpr (std::is_same_v<T, R>) {
    if (in_place) check_exact(dev.download(), want[output].array.to_vector<R>(), where + ", in place");
  }
  check_exact(got[output].download<R>(), want[output].array.to_vector<R>(), where);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i].is_scalar) {
      INFO(where << ", scalar output " << i);
      CHECK(got[i].value().to_string() == want[i].scalar.to_string());
    }
}

}  // namespace

TEST_CASE("inclusive and exclusive sums of i32, i64, f32 and f64 at every size, both strategies") {
  for (ff::Strategy s : kStrategies)
    for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
      for (std::int64_t n : kSizes) {
        run_sum<std::int32_t>(n, kind, s);
        run_sum<std::int64_t>(n, kind, s);
        run_sum<float>(n, kind, s);
        run_sum<double>(n, kind, s);
      }
}

TEST_CASE("a max-scan of f32 is exact") {
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes)
      run_against_reference<float, float>(describe("max-scan", n, s),
                                          [&](const ff::Expr& x) { return ff::Program(ff::scan(x, ff::max, ff::inclusive, s)); },
                                          n, -1e6, 1e6);
}

// Plain scans of 4-byte values take a second kernel from 2^24 elements: the pipelined
// scan on sm_90 and later, else a staged tile (elements re-read from shared memory, 11264
// per tile). FUSEFLOW_SCAN_STAGED_FROM=0 gives it to programs planned while it is set, at
// every size, so the sizes below cover first, middle and last tiles;
// FUSEFLOW_SCAN_PIPELINE=0 takes the staged tile on sm_90 too.
struct SecondKernelEverywhere {
  explicit SecondKernelEverywhere(bool pipelined) {
    setenv("FUSEFLOW_SCAN_STAGED_FROM", "0", 1);
    if (!pipelined) setenv("FUSEFLOW_SCAN_PIPELINE", "0", 1);
  }
  ~SecondKernelEverywhere() {
    unsetenv("FUSEFLOW_SCAN_STAGED_FROM");
    unsetenv("FUSEFLOW_SCAN_PIPELINE");
  }
};

TEST_CASE("the staged tile of large scans, at every size: sums, exclusive, in place, max, a mask, a map before") {
  const SecondKernelEverywhere staged(false);
  const std::vector<std::int64_t> sizes = ff::test::capped({1, 31, 1000, 11263, 11264, 11265, 3 * 11264 + 5, (1 << 20) + 7});
  for (std::int64_t n : sizes) {
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic, true);
    run_against_reference<float, float>("staged max-scan", [](const ff::Expr& x) {
      return ff::Program(ff::scan(x, ff::max));
    }, n, -1e6, 1e6);
    run_against_reference<int, int>("staged masked scan with a map before", [](const ff::Expr& x) {
      return ff::Program(ff::scan(ff::select(x > 0, x * 3 - 1, 0), ff::plus));
    }, n, -1000, 1000);
  }
  // The plan really has the staged kernel, and the schedule picks it (the runtime plans with
  // the variables above; a direct plan takes them as PlanOptions).
  auto x = ff::input<float>("x");
  ff::codegen::PlanOptions options;
  options.scan_staged_from = 0;
  options.scan_pipeline = false;
  const ff::codegen::Plan plan =
      ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), ff::codegen::Target::preset("sm_90"), options);
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[1].name == "ff_scan_lookback_staged_f32_plus");
  CHECK(plan.schedule(1000).launches.at(0).kernel == 1);
}

// "The first non-zero element so far": associative, identity 0, not commutative, 4 bytes,
// so the pipelined reducer folds each round across the warp in order.
ff::Monoid first_nonzero() {
  return ff::monoid<int>([](auto a, auto b) { return ff::select(a != 0, a, b); }, 0, ff::non_commutative,
                         "first_nonzero");
}

TEST_CASE("the pipelined scan (sm_90), at every size: sums, exclusive, in place, max, maps before and after, "
          "a non-commutative monoid, unaligned views") {
  if (runtime().properties().cc_major < 9) {
    MESSAGE("left out: the pipelined scan needs sm_90 (the device is older)");
    return;
  }
  const SecondKernelEverywhere pipelined(true);
  // Tiles of 12288: one element; a few; one tile and its edges; more tiles than the 4
  // stages; more tiles than SMs (blocks go round the ring many times); 2^24 + 3.
  const std::vector<std::int64_t> sizes = ff::test::capped(
      {1, 3, 4, 5, 31, 1000, 12287, 12288, 12289, 4 * 12288 + 5, (1 << 20) + 7, 300 * 12288 + 1, (1 << 24) + 3});
  for (std::int64_t n : sizes) {
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic, true);
    run_sum<unsigned>(n, ff::exclusive, ff::strategy::automatic, true);
    run_against_reference<float, float>("pipelined max-scan", [](const ff::Expr& x) {
      return ff::Program(ff::scan(x, ff::max));
    }, n, -1e6, 1e6);
    run_against_reference<int, int>("pipelined scan with a map before and an epilogue over the input", [](const ff::Expr& x) {
      return ff::Program(ff::scan(ff::select(x > 0, x * 3 - 1, 0), ff::plus, ff::exclusive) * 2 + x);
    }, n, -1000, 1000);
    run_against_reference<int, int>("pipelined scan of a non-commutative monoid", [](const ff::Expr& x) {
      // Mostly zeros, so the first non-zero element moves along the array.
      return ff::Program(ff::scan(ff::select(x > 990, x, 0), first_nonzero()));
    }, n, -1000, 1000);
    run_against_reference<int, float>("pipelined scan, i32 input, f32 values, two outputs", [](const ff::Expr& x) {
      ff::Expr s = ff::scan(ff::cast<float>(x) * 0.5f, ff::plus);
      return ff::outputs(s, s * 2.0f);
    }, n, -1000, 1000);
  }
  // Views that start 4 bytes past an aligned address: the input is copied without the
  // bulk copy engine, the output is written without 16-byte stores.
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({1000, 8193, (1 << 20) + 7})) {
    auto host = random_values<int>(n + 2, -1000, 1000);
    auto dev = rt.upload(host);
    auto out = rt.upload(std::vector<int>(static_cast<std::size_t>(n) + 1, -7));
    auto x = ff::input<int>("x");
    ff::Expr scanned = ff::scan(x, ff::plus);
    const auto count = static_cast<std::size_t>(n);
    rt.run(scanned, {{x, ff::device_span<int>(dev.data() + sizeof(int), count)},
                     {scanned, ff::device_span<int>(out.data() + sizeof(int), count)}});
    std::vector<int> got = out.download(), want(count + 1, -7);
    unsigned sum = 0;
    for (std::size_t i = 1; i <= count; ++i) want[i] = static_cast<int>(sum += static_cast<unsigned>(host[i]));
    check_exact(got, want, "pipelined scan of unaligned views, n = " + std::to_string(n));
  }
  auto x = ff::input<float>("x");
  ff::codegen::PlanOptions options;  // as the variables above ask
  options.scan_staged_from = 0;
  const ff::codegen::Plan plan =
      ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), ff::codegen::Target::preset("sm_90"), options);
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[1].name == "ff_scan_pipelined_f32_plus");
  CHECK(plan.schedule(1000).launches.at(0).kernel == 1);
}

TEST_CASE("a linear recurrence x[i] = a[i] * x[i-1] + b[i] keeps the order of its non-commutative monoid") {
  ff::Runtime& rt = runtime();
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes) {
      auto ha = random_values<float>(n, -1, 1), hb = random_values<float>(n, -1, 1);
      auto a = ff::input<float>("a"), b = ff::input<float>("b");
      auto da = rt.upload(ha), db = rt.upload(hb);
      ff::Expr prog = ff::get<1>(ff::scan(ff::zip(a, b), ff::catalog::linear_recurrence(), ff::inclusive, s));
      std::vector<float> got = rt.run(prog, {{a, da}, {b, db}}).download<float>();
      std::vector<double> want(ha.size()), magnitude(ha.size()), got64(got.begin(), got.end());
      double x = 0, m = 0;
      for (std::size_t i = 0; i < ha.size(); ++i) {
        x = ha[i] * x + hb[i];
        m = std::fabs(ha[i]) * m + std::fabs(hb[i]);  // bounds |x| and the rounding it went through
        want[i] = x;
        magnitude[i] = 10 * m;
      }
      check_close(got64, want, magnitude, describe("linear recurrence", n, s));
    }
}

TEST_CASE("maximum segment sum of every prefix (4 x i32, non-commutative) is exact") {
  using M = ff::Tuple<int, int, int, int>;
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes)
      run_against_reference<int, M>(describe("MSSP prefix", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(ff::catalog::mssp_parts(x), ff::catalog::mssp(), ff::inclusive, s));
      }, n, -100, 100);
}

TEST_CASE("a map before the scan (prologue) and after it (epilogue) are fused into the scan kernel") {
  auto build = [](ff::Strategy s) {
    return [s](const ff::Expr& x) {
      return ff::Program(ff::scan(x * 3 - 1, ff::plus, ff::exclusive, s) * 2 + x);
    };
  };
  // One scan kernel (and on sm_90 the pipelined scan for large n), no map kernel.
  const ff::codegen::Plan plan =
      ff::codegen::plan(build(ff::strategy::automatic)(ff::input<int>("x")), ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_i32_plus_exclusive");
  CHECK(plan.kernels[1].name == "ff_scan_pipelined_i32_plus_exclusive");
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes) run_against_reference<int, int>(describe("prologue + epilogue", n, s), build(s), n, -1000, 1000);
}

// A masked scan over all n elements is written scan(select(p, x, identity)): dropped
// elements contribute the identity. scan(filter(x, p)) means the scan of the compacted
// survivors (the CPU reference's definition), whose count only the compaction kernel
// knows: the planner rejects it with a GraphError for now (tests/codegen/planner_test.cpp);
// tests/gpu/filter_gpu_test.cpp scans a compacted array in a second run.
TEST_CASE("a masked scan via select keeps n outputs; a scan of a filter result is rejected") {
  ff::Runtime& rt = runtime();
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes)
      run_against_reference<int, int>(describe("masked scan", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(ff::select(x > 0, x, 0), ff::plus, ff::inclusive, s));
      }, n, -1000, 1000);
  auto x = ff::input<int>("x");
  auto dev = rt.upload(random_values<int>(1000, -1000, 1000));
  CHECK_THROWS_AS(rt.run(ff::scan(ff::filter(x, x > 0), ff::plus), {{x, dev}}), ff::GraphError);
}

TEST_CASE("several outputs of one scan, beside a reduction of the same input") {
  for (std::int64_t n : ff::test::capped({0LL, 1LL, 1025LL, (1LL << 20) + 7})) {
    auto build = [](const ff::Expr& x) {
      ff::Expr s = ff::scan(x, ff::plus);
      return ff::Program(ff::outputs(s, ff::reduce(x, ff::plus), s - x));
    };
    run_against_reference<int, int>("scan output", build, n, -1000, 1000, 0);
    run_against_reference<int, int>("scan epilogue output", build, n, -1000, 1000, 2);
  }
}

// A scan and a compaction in one program: two look-back launches per run, each with its
// own epoch, over the same status memory, which no run clears.
void run_scan_and_filter(ff::Runtime& rt, std::int64_t n, const std::string& what) {
  auto host = random_values<int>(n, -1000, 1000);
  auto x = ff::input<int>("x");
  ff::Program prog(ff::outputs(ff::scan(x, ff::plus), ff::filter(x, x > 0)));
  auto dev = rt.upload(host);
  std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  auto want = ff::evaluate(prog, b);
  const std::string where = what + ", n = " + std::to_string(n);
  check_exact(got[0].download<int>(), want[0].array.to_vector<int>(), where + ", scan");
  check_exact(got[1].download<int>(), want[1].array.to_vector<int>(), where + ", filter");
}

TEST_CASE("look-back state is reused without clearing: sizes that grow and shrink, epochs that start again") {
  // Fresh inputs every run: an entry a run accepted from an earlier launch (stale status)
  // would carry another input's sums and show as a wrong element.
  const std::vector<std::int64_t> sizes =
      ff::test::capped({(1 << 20) + 7, 1000, 1 << 22, 33, 5000, (1 << 20) + 7, 1, 0, 1 << 22, 4099});
  for (std::int64_t n : sizes) run_scan_and_filter(runtime(), n, "shared runtime");
  // A runtime whose epochs start again every 3 launches: the status is zeroed in stream
  // order between runs, and within one run between its two launches.
  setenv("FUSEFLOW_LOOKBACK_EPOCHS", "3", 1);
  ff::Runtime restarting;
  run_scan_and_filter(restarting, sizes.front(), "epochs restarted every 3 launches");
  unsetenv("FUSEFLOW_LOOKBACK_EPOCHS");
  for (int round = 0; round < 2; ++round)
    for (std::int64_t n : sizes) run_scan_and_filter(restarting, n, "epochs restarted every 3 launches");
}

TEST_CASE("an in-place scan (result bound to its input's memory) overwrites the input with the scan") {
  for (ff::Strategy s : kStrategies)
    for (ff::ScanKind kind : {ff::inclusive, ff::exclusive})
      for (std::int64_t n : kSizes) {
        run_sum<std::int32_t>(n, kind, s, true);
        run_sum<float>(n, kind, s, true);
      }
}

TEST_CASE("an in-place scan with a map before (prologue) and after it (epilogue) reads each element before it is written") {
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes)
      run_against_reference<int, int>(describe("in-place prologue + epilogue", n, s), [&](const ff::Expr& x) {
        return ff::Program(ff::scan(x * 3 - 1, ff::plus, ff::exclusive, s) * 2 + x);
      }, n, -1000, 1000, 0, true);
}

TEST_CASE("an in-place linear recurrence over (a, b) pairs keeps the order of its non-commutative monoid") {
  using P = ff::Tuple<float, float>;
  ff::Runtime& rt = runtime();
  for (ff::Strategy s : kStrategies)
    for (std::int64_t n : kSizes) {
      auto ha = random_values<float>(n, -1, 1), hb = random_values<float>(n, -1, 1);
      std::vector<P> pairs(ha.size());
      for (std::size_t i = 0; i < pairs.size(); ++i) pairs[i] = P{ha[i], hb[i]};
      auto p = ff::input<P>("p");
      auto dev = rt.upload(pairs);
      ff::Expr scanned = ff::scan(p, ff::catalog::linear_recurrence(), ff::inclusive, s);
      rt.run(scanned, {{p, dev}, {scanned, dev}});
      std::vector<P> got = dev.download();
      std::vector<double> want(ha.size()), magnitude(ha.size()), got64(ha.size());
      double x = 0, m = 0;
      for (std::size_t i = 0; i < ha.size(); ++i) {
        x = ha[i] * x + hb[i];
        m = std::fabs(ha[i]) * m + std::fabs(hb[i]);
        want[i] = x;
        magnitude[i] = 10 * m;
        got64[i] = ff::get<1>(got[i]);
      }
      check_close(got64, want, magnitude, describe("in-place linear recurrence", n, s));
    }
}

TEST_CASE("reductions beside a scan of the same input are folded into the scan's one pass") {
  const ff::codegen::Target sm90 = ff::codegen::Target::preset("sm_90");
  // Integers: plus and max (commutative) and the maximum segment sum (non-commutative,
  // folded in tile order) beside an exclusive scan; all exact.
  auto ints = [](const ff::Expr& x) {
    ff::Expr s = ff::scan(x, ff::plus, ff::exclusive);
    return ff::Program(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(x * x, ff::max),
                                   ff::reduce(ff::catalog::mssp_parts(x), ff::catalog::mssp()),
                                   ff::reduce(ff::filter(x, x > 0), ff::plus)));
  };
  CHECK(ff::codegen::plan(ints(ff::input<int>("x")), sm90).kernels.size() == 1);
  for (std::int64_t n : kSizes) run_against_reference<int, int>("scan + 4 reductions of i32", ints, n, -1000, 1000);
  // In place too: the reductions read the elements before the scan overwrites them.
  for (std::int64_t n : kSizes) run_against_reference<int, int>("in-place scan + 4 reductions of i32", ints, n, -1000, 1000, 0, true);

  // Floats: the sum within the Numerics bound of the f64 sum, the max exactly.
  ff::Runtime& rt = runtime();
  for (std::int64_t n : kSizes) {
    auto host = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x");
    ff::Expr s = ff::scan(x, ff::plus);
    ff::Program prog(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(x, ff::max)));
    CHECK(ff::codegen::plan(prog, sm90).kernels.size() == 1);
    auto dev = rt.upload(host);
    std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
    double sum = 0, abs_sum = 0;
    float max = -INFINITY;
    for (float v : host) sum += v, abs_sum += std::fabs(v), max = std::max(max, v);
    INFO("f32 scan + sum + max, n = " << n);
    CHECK(std::fabs(got[1].as<float>() - sum) <= 2e-5 * abs_sum + 1e-6);
    CHECK(got[2].as<float>() == max);
  }
}

TEST_CASE("a scan over more than 2^31 elements uses 64-bit indexing") {
  ff::Runtime& rt = runtime();
  const std::int64_t n = (1LL << 31) + 17;
  FF_TEST_NEEDS_ELEMENTS(n);
  const std::vector<std::uint8_t> host = ff::test::random_bytes(n);
  auto dev = rt.upload(host);
  auto x = ff::input<std::uint8_t>("x");
  // Checked by a plain loop: the reference evaluator would take minutes here.
  std::vector<std::uint32_t> got = rt.run(ff::scan(ff::cast<std::uint32_t>(x), ff::plus), {{x, dev}}).download<std::uint32_t>();
  REQUIRE(got.size() == host.size());
  std::uint32_t sum = 0;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    sum += host[i];
    if (got[i] != sum && bad++ == 0) first = i;
  }
  INFO(bad << " elements differ, the first at " << first);
  CHECK(bad == 0);
}

// DESIGN.md: the same bits on every run. The look-back's prefixes are chained left folds
// of the tile aggregates whatever the timing (scan.cuh, look_back), so the default
// strategy's float results never change; 2^24 f32 are 4096 tiles, far more than are
// resident at once, so the look-back finds its prefix at different distances from run
// to run. The linear recurrence takes the separate (fenced) status arrays.
TEST_CASE("a look-back (default) float scan is the same bits on every run") {
  ff::Runtime& rt = runtime();
  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto host = random_values<float>(1 << 24, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  ff::Expr prog = ff::scan(x, ff::plus, ff::inclusive);
  std::vector<float> first = rt.run(prog, {{x, dev}}).download<float>();
  for (int i = 1; i < 20; ++i) {
    std::vector<float> again = rt.run(prog, {{x, dev}}).download<float>();
    REQUIRE(again.size() == first.size());
    INFO("run " << i);
    CHECK(std::memcmp(again.data(), first.data(), first.size() * sizeof(float)) == 0);
  }

  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto ha = random_values<float>(1 << 24, -1, 1), hb = random_values<float>(1 << 24, -1, 1);
  auto a = ff::input<float>("a"), b = ff::input<float>("b");
  auto da = rt.upload(ha), db = rt.upload(hb);
  ff::Expr recurrence = ff::get<1>(ff::scan(ff::zip(a, b), ff::catalog::linear_recurrence()));
  std::vector<float> first_x = rt.run(recurrence, {{a, da}, {b, db}}).download<float>();
  for (int i = 1; i < 5; ++i) {
    std::vector<float> again = rt.run(recurrence, {{a, da}, {b, db}}).download<float>();
    REQUIRE(again.size() == first_x.size());
    INFO("linear recurrence, run " << i);
    CHECK(std::memcmp(again.data(), first_x.data(), first_x.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a reduce_then_scan float scan is the same bits on every run") {
  ff::Runtime& rt = runtime();
  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto host = random_values<float>(1 << 24, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  ff::Expr prog = ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan);
  std::vector<float> first = rt.run(prog, {{x, dev}}).download<float>();
  for (int i = 0; i < 5; ++i) check_exact(rt.run(prog, {{x, dev}}).download<float>(), first, "run " + std::to_string(i));
}
