// custom_monoid: mean and variance in one pass with Welford's running (count, mean, M2),
// written as a custom commutative monoid on a user tuple type.
//
// Merging two partial summaries (Chan et al. 1979) is associative and commutative, so
// fuseflow may combine partial results in any grouping; it still does so in a fixed
// order, so the answer is the same on every run. The tracing rules: the combine lambda
// runs once on the host with symbolic a and b; a[0] reads a field, ff::select replaces
// an if, and the result must have the monoid's type.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

using Summary = ff::Tuple<double, double, double>;  // (count, mean, M2 = sum of squared deviations)

int main() {
  auto welford = ff::monoid<Summary>(
      [](auto a, auto b) {
        auto n = a[0] + b[0];
        auto safe_n = ff::select(n > 0.0, n, 1.0);  // identity with identity: avoid 0 / 0
        auto delta = b[1] - a[1];
        return ff::tuple(n,                                               // count
                         a[1] + delta * (b[0] / safe_n),                  // mean
                         a[2] + b[2] + delta * delta * (a[0] * b[0] / safe_n));  // M2
      },
      /*identity*/ ff::tuple(0.0, 0.0, 0.0), ff::commutative, "welford");

  // Each element is a summary of one value: (1, x, 0).
  auto x = ff::input<float>("x");
  auto one = ff::map(x, [](auto v) { return ff::tuple(1.0, ff::cast<double>(v), 0.0); });
  auto program = ff::reduce(one, welford);
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 4'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = 1000.0f + std::sin(0.01f * static_cast<float>(i)) * 3.0f;

  ff::Runtime rt;
  auto xs = rt.upload(host);
  auto [count, mean, m2] = rt.run(program, {{x, xs}}).as<Summary>();
  double variance = m2 / count;

  // Two passes on the host: the mean, then the squared deviations.
  double want_mean = 0, want_m2 = 0;
  for (float v : host) want_mean += v;
  want_mean /= static_cast<double>(n);
  for (float v : host) want_m2 += (v - want_mean) * (v - want_mean);
  double want_variance = want_m2 / static_cast<double>(n);

  bool ok = count == static_cast<double>(n) && std::fabs(mean - want_mean) <= 1e-9 * want_mean &&
            std::fabs(variance - want_variance) <= 1e-6 * want_variance;
  std::printf("Welford over %zu floats: count %.0f, mean %.9f, variance %.9f (two-pass host: %.9f, %.9f): %s\n", n,
              count, mean, variance, want_mean, want_variance, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
