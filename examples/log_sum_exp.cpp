// log_sum_exp: log(sum(exp(x))) computed stably as m + log(sum(exp(x - m))) with
// m = max(x). The output is an expression of two reductions' results (a scalar
// epilogue). The planner makes the max and the sum of exp(x - m) one reduction over the
// online (max, scaled sum) monoid, one kernel reading x once, whose last block adds m to
// the log of the sum after its final combine. One value comes back to the host; nothing
// else leaves the device.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto m = ff::reduce(x, ff::max);
  auto program = ff::Program(m + ff::log(ff::reduce(ff::exp(x - m), ff::plus)));
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 4'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = 80.0f + static_cast<float>(i % 1000) * 0.02f;  // exp(x) overflows f32

  ff::Runtime rt;
  auto xs = rt.upload(host);
  const float got = rt.run(program, {{x, xs}})[0].value().as<float>();

  double mx = host[0], sum = 0;
  for (float v : host) mx = std::fmax(mx, v);
  for (float v : host) sum += std::exp(static_cast<double>(v) - mx);
  const double want = mx + std::log(sum);
  const double error = std::fabs(got - want) / std::fabs(want);
  const bool ok = std::isfinite(got) && error <= 1e-5;
  std::printf("log-sum-exp of %zu floats near 100 (exp overflows f32): %.6f, want %.6f, relative error %.2g: %s\n", n,
              static_cast<double>(got), want, error, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
