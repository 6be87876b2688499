// GPU execution tests for broadcasts beside other ops in stages (issue 25): ops beside
// broadcasts over ff::rows (the per-row kernel writes the broadcast arrays first), and
// broadcasts by offsets and by key in one program (stage 1 in two parts). Fresh random
// inputs, outputs poisoned (the shared Runtime's RuntimeOptions::poison), each result
// compared with the CPU reference: element-wise floats and integers within a small
// relative error (expf differs in the last bit), sums by relative error.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::rng;
using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({1, 255, 257, 4097, 70001});

void check(const ff::Expr& out, const ff::Bindings& dev, const ff::HostBindings& host, double tolerance,
           const std::string& what) {
  INFO(what << ": " << ff::to_string(out));
  ff::Result got = runtime().run(out, dev);
  const ff::HostResult want = ff::evaluate(ff::Program(out), host).at(0);
  auto close = [&](double g, double w) { return std::fabs(g - w) <= tolerance * (1.0 + std::fabs(w)); };
  if (want.is_scalar) {
    const double w = want.scalar.as<float>();
    INFO("got " << got.as<float>() << ", want " << w);
    CHECK(close(got.as<float>(), w));
    return;
  }
  const std::vector<float> g = got.download<float>();
  const std::vector<float> w = want.array.to_vector<float>();
  REQUIRE(g.size() == w.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!close(g[i], w[i]) && wrong++ == 0) first = i;
  INFO(wrong << " wrong of " << g.size() << "; first at " << first << ": got " << (wrong ? g[first] : 0.0f) << ", want "
             << (wrong ? w[first] : 0.0f));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a reduction, a scan and a filter beside broadcasts over ff::rows") {
  auto x = ff::input<float>("x");
  for (std::int64_t n : kSizes) {
    for (int columns : {1, 256, 1000}) {
      auto xh = ff::test::random_values<float>(n, -2, 2);
      auto xd = runtime().upload(xh);
      ff::HostBindings host;
      host.bind(x, ff::HostArray::from(xh));
      const auto offs = ff::rows(x, columns);
      const ff::Expr m = ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs);
      const ff::Expr e = ff::exp(x - m);
      const ff::Expr softmax = e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs);
      const std::string at = "n = " + std::to_string(n) + ", rows of " + std::to_string(columns);
      check(ff::reduce(softmax, ff::plus), {{x, xd}}, host, 1e-4, "sum of the row softmax, " + at);
      check(ff::scan(x - m, ff::max), {{x, xd}}, host, 1e-6, "scan of centred rows, " + at);
      check(ff::filter(softmax, x > 0.0f), {{x, xd}}, host, 1e-5, "filter of the row softmax, " + at);
    }
  }
}

TEST_CASE("broadcasts by offsets and by key in one program") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto k = ff::input<int>("k");
  for (std::int64_t n : kSizes) {
    auto xh = ff::test::random_values<float>(n, -2, 2);
    std::vector<long long> oh{0};
    std::uniform_int_distribution<int> len(0, 40);
    while (oh.back() < n) oh.push_back(std::min<long long>(n, oh.back() + len(rng())));
    std::vector<int> kh(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> key(0, 2), stay(0, 5);
    int cur = 0;
    for (auto& v : kh) v = cur = stay(rng()) == 0 ? key(rng()) : cur;
    auto xd = runtime().upload(xh);
    auto od = runtime().upload(oh);
    auto kd = runtime().upload(kh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh)).bind(o, ff::HostArray::from(oh)).bind(k, ff::HostArray::from(kh));
    ff::Bindings dev{{x, xd}, {o, od}, {k, kd}};
    const ff::Expr rowmax = ff::broadcast(ff::segmented_reduce(x, o, ff::max), o);
    const ff::Expr runsum = ff::broadcast_by_key(ff::reduce_by_key(k, x, ff::plus).values, k);
    const std::string at = "n = " + std::to_string(n) + ", " + std::to_string(oh.size() - 1) + " segments";
    check(x - rowmax + runsum, dev, host, 1e-5, "element-wise, " + at);
    check(ff::reduce(x * runsum - rowmax, ff::plus), dev, host, 1e-4, "reduction, " + at);
  }
}
