// GPU execution tests for scalar epilogues (outputs that are expressions of reductions'
// results, such as log-sum-exp): fresh random inputs, outputs poisoned, each result
// compared with the CPU reference run on the same inputs widened to f64 (floats, by
// relative error) or exactly (integers). Covers the epilogue in the last block of the
// last reduce kernel (chunked, staged) and in the one-thread kernel after all others
// (atomic, tree, a reduction folded into a scan).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <type_traits>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 1000, 1025, (1 << 20) + 7});

// Builds the program's outputs over input x (of type T) and parameter p.
using Build = std::function<std::vector<ff::Expr>(const ff::Expr& x, const ff::Expr& p)>;

// Runs build<T> on the GPU and build<double> on the CPU reference over the same values,
// and compares every output: relative error below `tolerance` (0: exactly).
template <class T>
void check_epilogues(const Build& build, std::int64_t n, double lo, double hi, T param, double tolerance,
                     const std::string& what) {
  const auto x = ff::input<T>("x");
  const auto p = ff::param<T>("p");
  const ff::Program prog(build(x, p));
  const auto host = ff::test::random_values<T>(n, lo, hi);
  ff::Runtime& rt = ff::test::runtime();
  auto dev = rt.upload(host);
  ff::Bindings b = {{x, dev}};
  if (!prog.params().empty()) b.push_back({p, param});
  auto got = rt.run(prog, b);

  // The reference: in f64 for floats, in T itself (exactly) for integers.
  using Wide = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const auto xw = ff::input<Wide>("x");
  const auto pw = ff::param<Wide>("p");
  const ff::Program wide(build(xw, pw));
  ff::HostBindings hb;
  hb.bind(xw, ff::HostArray::from(std::vector<Wide>(host.begin(), host.end())));
  if (!wide.params().empty()) hb.bind(pw, ff::Value(static_cast<Wide>(param)));
  const auto want = ff::evaluate(wide, hb);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i].value().as_double(), w = want[i].scalar.as_double();
    INFO(what << ", n = " << n << ", output " << i << ": got " << g << ", want " << w);
    if (tolerance == 0) {
      CHECK(g == w);
    } else if (std::isinf(w)) {
      CHECK(g == w);
    } else {
      CHECK(std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w)));
    }
  }
}

std::vector<ff::Expr> log_sum_exp(const ff::Expr& x, const ff::Expr&) {
  const auto m = ff::reduce(x, ff::max);
  return {m + ff::log(ff::reduce(ff::exp(x - m), ff::plus))};
}

}  // namespace

TEST_CASE("log-sum-exp, an epilogue in the last block of the second reduce kernel, matches the f64 reference") {
  for (std::int64_t n : kSizes) {
    if (n == 0) continue;  // log(0) + -inf: checked below
    check_epilogues<float>(log_sum_exp, n, -20.0, 20.0, 0.0f, 1e-5, "f32 log-sum-exp");
    check_epilogues<double>(log_sum_exp, n, -20.0, 20.0, 0.0, 1e-12, "f64 log-sum-exp");
  }
}

TEST_CASE("several epilogues with a parameter, beside the reductions they read, in one program") {
  const Build build = [](const ff::Expr& x, const ff::Expr& p) -> std::vector<ff::Expr> {
    const auto s = ff::reduce(x, ff::plus);
    const auto q = ff::reduce(x * x, ff::plus);
    const auto n = ff::reduce(ff::select(x > p, 1.0, 0.0), ff::plus);  // f64 count, from the parameter
    const auto mean = s / ff::cast(x.type(), ff::max(n, ff::constant(1.0)));
    return {s, mean * p, q - mean * s, ff::sqrt(ff::abs(q)) + n};
  };
  for (std::int64_t n : kSizes) {
    check_epilogues<float>(build, n, -1.0, 1.0, 0.25f, 1e-4, "f32 moments");
    check_epilogues<double>(build, n, -1.0, 1.0, 0.25, 1e-12, "f64 moments");
  }
}

TEST_CASE("integer epilogues are exact, also when empty (the reductions' identities)") {
  const Build build = [](const ff::Expr& x, const ff::Expr& p) -> std::vector<ff::Expr> {
    const auto mx = ff::reduce(x, ff::max);
    const auto mn = ff::reduce(x, ff::min);
    return {mx - mn, (ff::reduce(x & 7, ff::plus) << 1) + p};
  };
  for (std::int64_t n : kSizes) check_epilogues<int>(build, n, -1000.0, 1000.0, 3, 0, "i32 range");
}

TEST_CASE("epilogues after atomic and tree reductions and a scan's folded reduction run in a kernel of their own") {
  for (ff::Strategy s : {ff::strategy::atomic, ff::strategy::tree, ff::strategy::staged}) {
    const Build build = [s](const ff::Expr& x, const ff::Expr& p) -> std::vector<ff::Expr> {
      const auto sum = ff::reduce(x, ff::plus, s);
      return {sum * p + 1};
    };
    for (std::int64_t n : kSizes)
      check_epilogues<int>(build, n, -100.0, 100.0, 3, 0, std::string("strategy ") + ff::strategy_name(s));
  }
  const auto x = ff::input<int>("x");
  const ff::Program prog = ff::outputs(ff::scan(x, ff::plus), ff::reduce(x, ff::plus) * 2 + 1);
  ff::Runtime& rt = ff::test::runtime();
  for (std::int64_t n : kSizes) {
    const auto host = ff::test::random_values<int>(n, -100.0, 100.0);
    auto dev = rt.upload(host);
    auto got = rt.run(prog, {{x, dev}});
    long long want = 0;
    for (int v : host) want += v;
    INFO("scan + epilogue, n = " << n);
    CHECK(got[1].value().as_double() == static_cast<double>(static_cast<int>(want) * 2 + 1));
  }
}

// ---- One-pass log-sum-exp (passes/log_sum_exp.cpp): the max and the sum of exp(x - max)
// fused into one reduction over the online (max, scaled sum) monoid ----

namespace {

// The program on `host` (type T) on the GPU, every output against the f64 CPU reference
// (two-pass) over the same values: NaN where it is NaN, infinities equal, else relative
// error below `tolerance`. Also checks the plan is one kernel.
template <class T>
void check_lse(const Build& build, const std::vector<T>& host, double tolerance, const std::string& what) {
  const auto x = ff::input<T>("x");
  const ff::Program prog(build(x, ff::param<T>("p")));
  ff::Runtime& rt = ff::test::runtime();
  CHECK(rt.explain(prog).find("1 kernel:") != std::string::npos);
  auto dev = rt.upload(host);
  auto got = rt.run(prog, {{x, dev}});
  const auto xw = ff::input<double>("x");
  const ff::Program wide(build(xw, ff::param<double>("p")));
  ff::HostBindings hb;
  hb.bind(xw, ff::HostArray::from(std::vector<double>(host.begin(), host.end())));
  const auto want = ff::evaluate(wide, hb);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i].value().as_double(), w = want[i].scalar.as_double();
    INFO(what << ", n = " << host.size() << ", output " << i << ": got " << g << ", want " << w);
    if (std::isnan(w)) {
      CHECK(std::isnan(g));
    } else if (std::isinf(w)) {
      CHECK(g == w);
    } else {
      CHECK(std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w)));
    }
  }
}

// log-sum-exp of y = scale * x (a map of x), and the max and the sum asked for too.
std::vector<ff::Expr> lse_with_parts(const ff::Expr& x, const ff::Expr&) {
  const auto y = x * ff::Expr::constant(ff::Value::from_double(x.type().scalar(), 0.5));
  const auto m = ff::reduce(y, ff::max);
  const auto s = ff::reduce(ff::exp(y - m), ff::plus);
  return {m + ff::log(s), m, s, s * 2};
}

}  // namespace

TEST_CASE("one-pass log-sum-exp: one kernel, the value, the max and the sum as the two-pass f64 reference gives them") {
  for (std::int64_t n : kSizes) {
    const auto xf = ff::test::random_values<float>(n, -60.0, 60.0);
    const auto xd = ff::test::random_values<double>(n, -60.0, 60.0);
    check_lse<float>(log_sum_exp, xf, 1e-5, "f32 log-sum-exp");
    check_lse<float>(lse_with_parts, xf, 1e-5, "f32 log-sum-exp of 0.5x, max and sum");
    check_lse<double>(lse_with_parts, xd, 1e-12, "f64 log-sum-exp of 0.5x, max and sum");
  }
}

TEST_CASE("one-pass log-sum-exp: empty, all -inf, +inf, NaN and -inf among finite values as the two-pass result") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"empty", {}},                                    // -inf, max -inf, sum 0
      {"all -inf", {-inf, -inf, -inf}},                 // NaN (exp(-inf - -inf)), sum NaN
      {"one -inf", {-inf}},
      {"-inf among finite", {-inf, 1.0f, -inf, 2.0f}},  // exp(-inf) = 0 terms
      {"+inf", {1.0f, inf, 3.0f}},                      // NaN (exp(inf - inf))
      {"NaN", {1.0f, nan, 3.0f}},                       // NaN
      {"NaN first", {nan, 1.0f}},
      {"large", {80.0f, 88.0f, 87.5f}},                 // exp(x) alone would overflow f32
  };
  for (const auto& [what, host] : cases) {
    check_lse<float>(log_sum_exp, host, 1e-6, "f32 " + what);
    check_lse<float>(lse_with_parts, host, 1e-6, "f32 parts, " + what);
    check_lse<double>(lse_with_parts, std::vector<double>(host.begin(), host.end()), 1e-14, "f64 parts, " + what);
  }
  // The special values spread over many blocks: -inf everywhere but one element.
  for (std::int64_t n : kSizes) {
    if (n == 0) continue;
    std::vector<float> host(static_cast<std::size_t>(n), -inf);
    host[static_cast<std::size_t>(n / 2)] = -3.0f;
    check_lse<float>(lse_with_parts, host, 1e-6, "f32 one finite among -inf");
  }
}

TEST_CASE("one-pass log-sum-exp is within a few ulp of f64, no further than the two-pass f32 CPU reference") {
  const auto x = ff::input<float>("x");
  const ff::Program prog(log_sum_exp(x, x));
  const auto xw = ff::input<double>("x");
  const ff::Program wide(log_sum_exp(xw, xw));
  ff::Runtime& rt = ff::test::runtime();
  for (const double range : {1.0, 60.0}) {
    for (std::int64_t n : kSizes) {
      if (n == 0) continue;
      const auto host = ff::test::random_values<float>(n, -range, range);
      auto dev = rt.upload(host);
      const float one_pass = static_cast<float>(rt.run(prog, {{x, dev}})[0].value().as_double());
      ff::HostBindings hf, hd;
      hf.bind(x, ff::HostArray::from(host));
      hd.bind(xw, ff::HostArray::from(std::vector<double>(host.begin(), host.end())));
      const float two_pass = static_cast<float>(ff::evaluate(prog, hf)[0].scalar.as_double());
      const double exact = ff::evaluate(wide, hd)[0].scalar.as_double();
      // Error in units of the f32 spacing at the exact value.
      const double ulp = std::nextafter(static_cast<float>(std::abs(exact)), std::numeric_limits<float>::infinity()) -
                         static_cast<float>(std::abs(exact));
      const double e1 = std::abs(one_pass - exact) / ulp, e2 = std::abs(two_pass - exact) / ulp;
      INFO("range " << range << ", n = " << n << ": one-pass " << e1 << " ulp, two-pass f32 reference " << e2 << " ulp");
      // The f32 reference adds left to right (up to 70 ulp at 2^20 over [-1, 1]); the
      // kernels' tree of partial sums keeps the one-pass result within a few ulp.
      CHECK(e1 <= 4.0);
      CHECK(e1 <= e2 + 2.0);
    }
  }
}

TEST_CASE("one-pass log-sum-exp folded into a scan's pass over x: the epilogue kernel after it reads the fused total") {
  const auto x = ff::input<float>("x");
  const auto m = ff::reduce(x, ff::max);
  const ff::Program prog = ff::outputs(ff::scan(x, ff::plus), m + ff::log(ff::reduce(ff::exp(x - m), ff::plus)), m);
  ff::Runtime& rt = ff::test::runtime();
  const std::string plan = rt.explain(prog);
  CHECK(plan.find("2 kernels:") != std::string::npos);  // the scan (the reduction folded in), the epilogue
  CHECK(plan.find("online_logsumexp") != std::string::npos);
  for (std::int64_t n : kSizes) {
    const auto host = ff::test::random_values<float>(n, -30.0, 30.0);
    auto dev = rt.upload(host);
    auto got = rt.run(prog, {{x, dev}});
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    for (float v : host) mx = std::max(mx, static_cast<double>(v));
    for (float v : host) s += std::exp(static_cast<double>(v) - mx);
    const double lse = mx + std::log(s);
    INFO("n = " << n << ": got " << got[1].value().as_double() << ", want " << lse);
    if (n == 0) {
      CHECK(got[1].value().as_double() == lse);  // -inf
    } else {
      CHECK(std::abs(got[1].value().as_double() - lse) <= 1e-5 * std::max(1.0, std::abs(lse)));
    }
    CHECK(got[2].value().as_double() == mx);
  }
}
