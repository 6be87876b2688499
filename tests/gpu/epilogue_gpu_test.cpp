// GPU execution tests for scalar epilogues (outputs that are expressions of reductions'
// results, such as log-sum-exp): fresh random inputs, outputs poisoned, each result
// compared with the CPU reference run on the same inputs widened to f64 (floats, by
// relative error) or exactly (integers). Covers the epilogue in the last block of the
// last reduce kernel (chunked, staged) and in the one-thread kernel after all others
// (atomic, tree, a reduction folded into a scan).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
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
