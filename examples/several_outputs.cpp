// several_outputs: the sum, the maximum and the (value, index) of the minimum of one
// array, computed by one kernel in one pass over the data. ff::outputs(...) makes a
// program of several results; reductions over the same input share the loads and keep
// one accumulator each (horizontal fusion).
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto program = ff::outputs(ff::reduce(x, ff::plus),                       // f32
                             ff::reduce(x, ff::max),                        // f32
                             ff::reduce(ff::zip(x, ff::index()), ff::argmin));  // (f32, i64)
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 3'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = std::sin(0.37f * static_cast<float>(i)) + 0.001f * static_cast<float>(i % 7);

  ff::Runtime rt;
  auto xs = rt.upload(host);
  auto [sum_result, max_result, argmin_result] = rt.run(program, {{x, xs}});  // a std::array of 3 results
  float sum = sum_result;
  float max = max_result;
  auto [min, min_at] = argmin_result.as<ff::Tuple<float, long long>>();

  double want_sum = 0;
  std::size_t want_min_at = 0;
  float want_max = host[0];
  for (std::size_t i = 0; i < n; ++i) {
    want_sum += host[i];
    want_max = std::fmax(want_max, host[i]);
    if (host[i] < host[want_min_at]) want_min_at = i;
  }
  bool ok = std::fabs(sum - want_sum) <= 1e-4 * std::fabs(want_sum) + 1e-2 && max == want_max &&
            min_at == static_cast<long long>(want_min_at) && min == host[want_min_at];
  std::printf("one pass over %zu floats: sum %.4f (f64 reference %.4f), max %.6f, min x[%lld] = %.6f: %s\n", n, sum,
              want_sum, max, min_at, min, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
