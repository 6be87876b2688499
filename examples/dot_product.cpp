// dot_product: sum(x[i] * y[i]) over two float arrays. The map x * y is fused into the
// reduction, so each input is read once and no product array is ever written.
//
// With a GPU it runs and checks the result against a double-precision loop; without one
// it prints the plan and the CUDA and compiles it for sm_90 (example_support.hpp).
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  auto program = ff::reduce(x * y, ff::plus);
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 10'000'000;
  std::vector<float> hx(n), hy(n);
  for (std::size_t i = 0; i < n; ++i) {
    hx[i] = 1.0f + 0.5f * std::cos(0.001f * static_cast<float>(i));
    hy[i] = 1.0f / static_cast<float>(1 + i % 100);
  }

  ff::Runtime rt;
  auto xs = rt.upload(hx);
  auto ys = rt.upload(hy);
  float dot = rt.run(program, {{x, xs}, {y, ys}});

  double want = 0;
  for (std::size_t i = 0; i < n; ++i) want += static_cast<double>(hx[i]) * hy[i];
  bool ok = std::fabs(dot - want) <= 1e-5 * want;  // every term is positive
  std::printf("dot product of %zu floats: %.6f (f64 reference %.6f): %s\n", n, dot, want, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
