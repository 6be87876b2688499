// normalize: y = x / sum(x). A reduction whose scalar is used by a later map splits the
// program into two kernels: the first reduces x into a device scalar, the second reads
// that scalar on the device and writes y. The sum never travels to the host, and the
// result array y stays on the device until it is asked for.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto program = x / ff::reduce(x, ff::plus);
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 2'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = 1.0f + static_cast<float>(i % 10);

  ff::Runtime rt;
  auto xs = rt.upload(host);
  ff::DeviceArray<float> ys = rt.run(program, {{x, xs}});  // an array result stays on the device
  std::vector<float> y = ys.download();

  double sum = 0;
  for (float v : host) sum += v;
  double total = 0, worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    total += y[i];
    worst = std::fmax(worst, std::fabs(y[i] - host[i] / sum) / (host[i] / sum));
  }
  bool ok = y.size() == n && worst <= 1e-5 && std::fabs(total - 1.0) <= 1e-4;
  std::printf("normalized %zu floats: they sum to %.6f, largest relative error %.2g: %s\n", n, total, worst,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
