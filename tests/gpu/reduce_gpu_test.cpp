// GPU execution tests for reductions: every case runs on fresh random inputs with the
// outputs poisoned (FUSEFLOW_POISON=1), and is compared with the CPU reference evaluator:
// integers, tuples and min/max/argmin/argmax exactly; float sums by relative error
// against the same program evaluated in f64 on the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>
#include "fuseflow/runtime/low_level.hpp"

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 20) + 7});
const std::vector<std::int64_t> kLargeSizes = ff::test::capped({1 << 24});

using ff::test::rng;
using ff::test::runtime;

using ff::test::random_values;

// Relative error of a float result against an f64 reference, scaled by the magnitude the
// sum went through (sum of |terms|), so cancellation does not make it meaningless.
void check_close(double got, double want, double magnitude, const std::string& what) {
  double tol = 1e-5 * magnitude + 1e-30;
  INFO(what << ": got " << got << ", f64 reference " << want << ", tolerance " << tol);
  CHECK(std::fabs(got - want) <= tol);
}

// A case over one input of type T: builds the program from a symbolic input of any type
// (so floats can be re-evaluated in f64) and says how to compare.
struct ScalarCase {
  std::string name;
  std::function<ff::Expr(const ff::Expr& x)> build;  // x -> reduction
  bool exact;
};

template <class T>
void run_scalar_case(const ScalarCase& c, std::int64_t n, double lo, double hi) {
  ff::Runtime& rt = runtime();
  auto host = random_values<T>(n, lo, hi);
  auto x = ff::input<T>("x");
  ff::Expr prog = c.build(x);
  auto dev = rt.upload(host);
  ff::Value got = rt.run(prog, {{x, dev}}).value();
  std::string what = c.name + " over " + ff::type_of<T>().name() + ", n = " + std::to_string(n);
  if (c.exact || !ff::type_of<T>().is_floating()) {
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    ff::Value want = ff::evaluate(prog, b)[0].scalar;
    INFO(what << ": got " << got << ", reference " << want);
    CHECK(got == want);
  } else {
    auto x64 = ff::input<double>("x");
    ff::Expr prog64 = c.build(x64);
    std::vector<double> host64(host.begin(), host.end());
    ff::HostBindings b;
    b.bind(x64, ff::HostArray::from(host64));
    double want = ff::evaluate(prog64, b)[0].scalar.as_double();
    double magnitude = 0;
    for (double v : host64) magnitude += std::fabs(v) * std::max(1.0, std::fabs(v));
    check_close(got.as_double(), want, magnitude, what);
  }
}

const std::vector<ScalarCase>& scalar_cases() {
  static const std::vector<ScalarCase> cases = {
      {"sum", [](const ff::Expr& x) { return ff::reduce(x, ff::plus); }, false},
      {"min", [](const ff::Expr& x) { return ff::reduce(x, ff::min); }, true},
      {"max", [](const ff::Expr& x) { return ff::reduce(x, ff::max); }, true},
      {"sum of squares", [](const ff::Expr& x) { return ff::reduce(x * x, ff::plus); }, false},
      {"argmin", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmin); }, true},
      {"argmax", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmax); }, true},
      {"sum staged", [](const ff::Expr& x) { return ff::reduce(x, ff::plus, ff::strategy::staged); }, false},
  };
  return cases;
}

template <class T>
void run_all_scalar_cases(double lo, double hi) {
  for (const auto& c : scalar_cases())
    for (std::int64_t n : kSizes) run_scalar_case<T>(c, n, lo, hi);
}

}  // namespace

TEST_CASE("reductions of i32, i64, u32, f32 and f64 match the CPU reference at every size") {
  run_all_scalar_cases<std::int32_t>(-1000, 1000);
  run_all_scalar_cases<std::int64_t>(-1e12, 1e12);
  run_all_scalar_cases<std::uint32_t>(0, 4e9);  // sums wrap, exactly as on the CPU
  run_all_scalar_cases<float>(-1, 1);
  run_all_scalar_cases<double>(-1, 1);
}

TEST_CASE("a product of integers wraps exactly as the CPU reference does") {
  ScalarCase c{"product", [](const ff::Expr& x) { return ff::reduce(x, ff::times); }, true};
  for (std::int64_t n : kSizes) run_scalar_case<std::int32_t>(c, n, -3, 4);
}

TEST_CASE("argmax ties resolve to the lowest index") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({33LL, 1025LL, (1LL << 20) + 7})) {
    // Few distinct values: the maximum occurs many times.
    std::vector<float> host(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(0, 7);
    for (auto& v : host) v = static_cast<float>(d(rng()));
    auto x = ff::input<float>("x");
    auto dev = rt.upload(host);
    ff::Value got = rt.run(ff::reduce(ff::zip(x, ff::index()), ff::argmax), {{x, dev}}).value();
    std::int64_t first = std::max_element(host.begin(), host.end()) - host.begin();
    CHECK(got[1].as_int() == first);
    CHECK(got[0].as_float() == host[static_cast<std::size_t>(first)]);
  }
}

TEST_CASE("logical and / or reductions of a predicate") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : kSizes) {
    auto host = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x");
    auto dev = rt.upload(host);
    for (double thr : {-2.0, 0.999, 2.0}) {
      ff::Expr any = ff::reduce(x > static_cast<float>(thr), ff::logical_or);
      ff::Expr all = ff::reduce(x < static_cast<float>(thr), ff::logical_and);
      auto [g_any, g_all] = rt.run(ff::outputs(any, all), {{x, dev}});
      ff::HostBindings b;
      b.bind(x, ff::HostArray::from(host));
      auto want = ff::evaluate(ff::outputs(any, all), b);
      CHECK(g_any.value() == want[0].scalar);
      CHECK(g_all.value() == want[1].scalar);
    }
  }
}

TEST_CASE("dot product fuses the map and matches the f64 reference") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({0LL, 1LL, 33LL, 1025LL, (1LL << 20) + 7, 1LL << 24})) {
    auto hx = random_values<float>(n, -1, 1), hy = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x"), y = ff::input<float>("y");
    auto dx = rt.upload(hx), dy = rt.upload(hy);
    float got = rt.run(ff::reduce(x * y, ff::plus), {{x, dx}, {y, dy}});
    double want = 0, magnitude = 0;
    for (std::size_t i = 0; i < hx.size(); ++i) {
      want += static_cast<double>(hx[i]) * hy[i];
      magnitude += std::fabs(static_cast<double>(hx[i]) * hy[i]);
    }
    check_close(got, want, magnitude, "dot n = " + std::to_string(n));
  }
}

TEST_CASE("maximum segment sum (non-commutative) is exact at every size") {
  ff::Runtime& rt = runtime();
  std::vector<std::int64_t> sizes = kSizes;
  sizes.insert(sizes.end(), kLargeSizes.begin(), kLargeSizes.end());
  ff::Monoid mssp = ff::catalog::mssp();
  for (std::int64_t n : sizes) {
    std::vector<int> host(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(-100, 100);
    for (auto& v : host) v = d(rng());
    auto x = ff::input<int>("x");
    ff::Expr prog = ff::reduce(ff::catalog::mssp_parts(x), mssp);
    auto dev = rt.upload(host);
    ff::Value got = rt.run(prog, {{x, dev}}).value();
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    ff::Value want = ff::evaluate(prog, b)[0].scalar;
    INFO("n = " << n << ": got " << got << ", reference " << want);
    CHECK(got == want);
  }
}

TEST_CASE("a product of 2x2 integer matrices keeps their order") {
  ff::Runtime& rt = runtime();
  using M = ff::Tuple<int, int, int, int>;
  for (std::int64_t n : kSizes) {
    std::vector<M> host(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(-2, 2);
    for (auto& m : host) m = M(d(rng()), d(rng()), d(rng()), d(rng()));
    auto m = ff::input<M>("m");
    ff::Expr prog = ff::reduce(m, ff::catalog::matmul2x2(ff::ScalarType::I32));
    auto dev = rt.upload(host);
    ff::Value got = rt.run(prog, {{m, dev}}).value();
    ff::HostBindings b;
    b.bind(m, ff::HostArray::from(host));
    ff::Value want = ff::evaluate(prog, b)[0].scalar;
    INFO("n = " << n << ": got " << got << ", reference " << want);
    CHECK(got == want);
  }
}

TEST_CASE("three reductions of one input in one pass: sum, max, argmin") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : kSizes) {
    auto host = random_values<float>(n, -1, 1);
    auto x = ff::input<float>("x");
    auto prog = ff::outputs(ff::reduce(x, ff::plus), ff::reduce(x, ff::max), ff::reduce(ff::zip(x, ff::index()), ff::argmin));
    CHECK(ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90")).kernels.size() == 1);
    auto dev = rt.upload(host);
    auto [s, m, am] = rt.run(prog, {{x, dev}});
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    auto want = ff::evaluate(prog, b);
    double sum64 = 0, magnitude = 0;
    for (float v : host) {
      sum64 += v;
      magnitude += std::fabs(v);
    }
    check_close(s.value().as_double(), sum64, magnitude, "sum n = " + std::to_string(n));
    CHECK(m.value() == want[1].scalar);
    CHECK(am.value() == want[2].scalar);
  }
}

TEST_CASE("filter -> reduce with a parameter: changing the threshold does not recompile") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Expr prog = ff::reduce(ff::filter(x, x > t), ff::plus);
  auto host = random_values<float>((1 << 20) + 7, -1, 1);
  auto dev = rt.upload(host);
  (void)rt.run(prog, {{x, dev}, {t, 0.0f}});
  auto before = ff::low_level::cache(rt).stats();
  for (float thr : {-0.5f, 0.25f, 0.9f}) {
    float got = rt.run(prog, {{x, dev}, {t, thr}});
    double want = 0, magnitude = 0;
    for (float v : host)
      if (v > thr) {
        want += v;
        magnitude += std::fabs(v);
      }
    check_close(got, want, magnitude, "filtered sum above " + std::to_string(thr));
  }
  auto after = ff::low_level::cache(rt).stats();
  CHECK(after.compiles == before.compiles);
}

TEST_CASE("x / sum(x) splits into two kernels and the array matches the reference") {
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({1LL, 1000LL, (1LL << 20) + 7})) {
    auto host = random_values<float>(n, 0.5, 1);
    auto x = ff::input<float>("x");
    ff::Expr prog = x / ff::reduce(x, ff::plus);
    auto dev = rt.upload(host);
    std::vector<float> got = rt.run(prog, {{x, dev}}).download<float>();
    double sum = 0;
    for (float v : host) sum += v;
    REQUIRE(got.size() == host.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < host.size(); ++i)
      if (!(std::fabs(got[i] - host[i] / sum) <= 1e-5 * (host[i] / sum))) ++bad;
    INFO("n = " << n);
    CHECK(bad == 0);
  }
}

TEST_CASE("a misaligned device_span (offset by one element) gives the same answer") {
  ff::Runtime& rt = runtime();
  std::int64_t n = (1 << 20) + 7;
  auto host = random_values<std::int32_t>(n + 1, -1000, 1000);
  auto dev = rt.upload(host);
  auto x = ff::input<std::int32_t>("x");
  ff::Expr prog = ff::reduce(x, ff::plus);
  ff::device_span<std::int32_t> shifted(dev.data() + sizeof(std::int32_t), static_cast<std::size_t>(n));
  std::int32_t got = rt.run(prog, {{x, shifted}});
  std::int32_t want = 0;
  for (std::size_t i = 1; i < host.size(); ++i) want = static_cast<std::int32_t>(static_cast<std::uint32_t>(want) + static_cast<std::uint32_t>(host[i]));
  CHECK(got == want);
}

TEST_CASE("a float sum is the same bits on every run") {
  ff::Runtime& rt = runtime();
  FF_TEST_NEEDS_ELEMENTS(1 << 24);
  auto host = random_values<float>(1 << 24, -1, 1);
  auto dev = rt.upload(host);
  auto x = ff::input<float>("x");
  ff::Expr prog = ff::reduce(x, ff::plus);
  float first = rt.run(prog, {{x, dev}});
  for (int i = 0; i < 20; ++i) {
    float again = rt.run(prog, {{x, dev}});
    CHECK(std::memcmp(&first, &again, sizeof first) == 0);
  }
}

TEST_CASE("a reduction over more than 2^31 elements uses 64-bit indexing" * doctest::test_suite("long")) {
  ff::Runtime& rt = runtime();
  const std::int64_t n = (1LL << 31) + 17;
  FF_TEST_NEEDS_ELEMENTS(n);
  const std::vector<std::uint8_t> host = ff::test::random_bytes(n);
  std::uint64_t want = 0;
  for (std::uint8_t v : host) want += v;
  auto dev = rt.upload(host);
  auto x = ff::input<std::uint8_t>("x");
  // The element-wise sum is checked by a plain loop here: the reference evaluator would
  // take minutes over 2^31 elements.
  std::uint64_t got = rt.run(ff::reduce(ff::cast<std::uint64_t>(x), ff::plus), {{x, dev}});
  CHECK(got == want);
  auto [v, i] = rt.run(ff::reduce(ff::zip(x, ff::index()), ff::argmax), {{x, dev}}).as<ff::Tuple<std::uint8_t, long long>>();
  std::int64_t first = std::max_element(host.begin(), host.end()) - host.begin();
  CHECK(i == first);
  CHECK(v == host[static_cast<std::size_t>(first)]);
}

TEST_CASE("run_async leaves scalars on the device until they are read") {
  ff::Runtime& rt = runtime();
  auto host = random_values<std::int32_t>((1 << 20) + 7, -1000, 1000);
  auto dev = rt.upload(host);
  auto x = ff::input<std::int32_t>("x");
  ff::Program prog = ff::outputs(ff::reduce(x, ff::plus), ff::reduce(x, ff::max));
  std::vector<ff::Result> pending = rt.run_async(prog, {{x, dev}});
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  auto want = ff::evaluate(prog, b);
  CHECK(pending[0].value() == want[0].scalar);
  CHECK(pending[1].value() == want[1].scalar);
}

TEST_CASE("the study strategies tree and atomic give the reference's answer") {
  const std::vector<ScalarCase> cases = {
      {"sum tree", [](const ff::Expr& x) { return ff::reduce(x, ff::plus, ff::strategy::tree); }, false},
      {"sum atomic", [](const ff::Expr& x) { return ff::reduce(x, ff::plus, ff::strategy::atomic); }, false},
      {"max tree", [](const ff::Expr& x) { return ff::reduce(x, ff::max, ff::strategy::tree); }, true},
      {"argmax tree", [](const ff::Expr& x) { return ff::reduce(ff::zip(x, ff::index()), ff::argmax, ff::strategy::tree); }, true},
  };
  for (const auto& c : cases)
    for (std::int64_t n : kSizes) {
      run_scalar_case<std::int32_t>(c, n, -1000, 1000);
      run_scalar_case<float>(c, n, -1, 1);
    }
  ScalarCase imax{"max atomic", [](const ff::Expr& x) { return ff::reduce(x, ff::max, ff::strategy::atomic); }, true};
  for (std::int64_t n : kSizes) run_scalar_case<std::int64_t>(imax, n, -1e12, 1e12);
  ff::Runtime& rt = runtime();
  for (std::int64_t n : ff::test::capped({0LL, 1LL, 257LL, 65537LL, (1LL << 20) + 7})) {
    std::vector<int> host(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(-100, 100);
    for (auto& v : host) v = d(rng());
    auto x = ff::input<int>("x");
    ff::Expr prog = ff::reduce(ff::catalog::mssp_parts(x), ff::catalog::mssp(), ff::strategy::tree);
    auto dev = rt.upload(host);
    ff::Value got = rt.run(prog, {{x, dev}}).value();
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(host));
    CHECK(got == ff::evaluate(prog, b)[0].scalar);
  }
}

TEST_CASE("strategy atomic on a type without an atomic is a clear error") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<float>("x");
  auto dev = rt.upload(std::vector<float>{1, 2, 3});
  CHECK_THROWS_WITH_AS(rt.run(ff::reduce(x, ff::max, ff::strategy::atomic), {{x, dev}}),
                       "fuseflow: reduce: strategy atomic supports plus on 32- and 64-bit numbers and min/max on 32- and "
                       "64-bit integers; got max on f32",
                       ff::GraphError);
}
