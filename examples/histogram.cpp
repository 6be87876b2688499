// histogram: 64 bins over the range [lo, hi) of a million floats. The bin expression
// i32((x - lo) * scale) is fused into the histogram kernel, so no array of bin numbers
// is ever written; lo and scale are parameters (new values do not recompile), and an
// element whose bin falls outside [0, 64) is not counted. Counts are u32.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  constexpr int kBins = 64;
  auto x = ff::input<float>("x");
  auto lo = ff::param<float>("lo");
  auto scale = ff::param<float>("scale");  // bins per unit: kBins / (hi - lo)
  auto program = ff::histogram(x, [&](auto v) { return ff::cast<int>((v - lo) * scale); }, kBins);
  if (example::no_gpu(program)) return 0;

  // Roughly normal values (a sum of three uniforms), some of them outside [lo, hi).
  const std::size_t n = 1 << 20;
  std::vector<float> host(n);
  unsigned state = 2024;
  auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;  // [0, 1)
  };
  for (auto& v : host) v = uniform() + uniform() + uniform() - 1.5f;
  const float lo_value = -1.0f, hi_value = 1.0f, scale_value = kBins / (hi_value - lo_value);

  ff::Runtime rt;
  auto xs = rt.upload(host);
  std::vector<std::uint32_t> counts = rt.run(program, {{x, xs}, {lo, lo_value}, {scale, scale_value}}).download<std::uint32_t>();

  // The same bins on the host, with the same f32 arithmetic.
  std::vector<std::uint32_t> want(kBins, 0);
  for (float v : host) {
    int bin = static_cast<int>((v - lo_value) * scale_value);
    if (bin >= 0 && bin < kBins) ++want[static_cast<std::size_t>(bin)];
  }
  std::uint64_t counted = 0;
  for (std::uint32_t c : counts) counted += c;
  bool ok = counts == want;
  std::printf("histogram of %zu floats into %d bins: %llu counted, middle bins %u and %u: %s\n", n, kBins,
              static_cast<unsigned long long>(counted), counts[kBins / 2 - 1], counts[kBins / 2], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
