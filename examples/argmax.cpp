// argmax: the largest element of an array and where it is, in one pass. zip(x, index())
// pairs each element with its position; the built-in argmax monoid keeps the pair with
// the larger value, and on ties the lower index, so the answer is the first maximum.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto program = ff::reduce(ff::zip(x, ff::index()), ff::argmax);  // (f32 value, i64 index)
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 5'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = std::sin(0.0001f * static_cast<float>(i)) * static_cast<float>(i % 1000);

  ff::Runtime rt;
  auto xs = rt.upload(host);
  auto [value, index] = rt.run(program, {{x, xs}}).as<ff::Tuple<float, long long>>();

  std::size_t want = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (host[i] > host[want]) want = i;
  bool ok = index == static_cast<long long>(want) && value == host[want];
  std::printf("argmax of %zu floats: x[%lld] = %.6f (host: x[%zu] = %.6f): %s\n", n, index, value, want, host[want],
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
