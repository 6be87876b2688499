// The course's reduction strategies side by side.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {


// The course's comparison of reduction strategies on this GPU, f32 sum, device time per
// call: tree (a launch per level), staged (order-preserving, one pass), chunked (Brent,
// vector loads, one pass), atomic (one atomicAdd per element).
void bench_course(const Context& c) {
  std::printf("\ncourse comparison, f32 sum, device time per call (us):\n");
  std::printf("  %-10s %10s %10s %10s %10s\n", "n", "tree", "staged", "chunked", "atomic");
  const bool saved = g_device_mode;
  g_device_mode = true;
  for (std::size_t n : {std::size_t{1000}, std::size_t{1000000}}) {
    const std::size_t nbuf = copies_for(n * sizeof(float), c.l2_bytes);
    DeviceBuffer xs(nbuf * n * sizeof(float));
    fill(c, xs.as<float>(), nbuf * n, 7);
    CK(cudaStreamSynchronize(c.stream));
    ff::Runtime& rt = *c.rt;
    std::vector<ff::Program> programs;
    for (const char* name : {"sum_tree", "sum_staged", "sum", "sum_atomic"}) programs.push_back(ff::catalog::find(name).build());
    std::vector<std::function<void(std::size_t)>> variants;
    for (const auto& p : programs) {
      const ff::Expr x = p.inputs().at(0);
      variants.push_back([&, x](std::size_t k) { (void)ff_call(rt, p, {{x, span_of<float>(xs, k, n)}}); });
    }
    const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
    std::printf("  %-10zu %10.2f %10.2f %10.2f %10.2f\n", n, t[0], t[1], t[2], t[3]);
    const char* names[] = {"course tree", "course staged", "course chunked", "course atomic"};
    for (int v = 0; v < 4; ++v) {
      Row r;
      r.mode = "device";
      r.op = names[v];
      r.n = n;
      r.bytes = (double)n * sizeof(float);
      r.ff_us = t[v];
      r.cub_us = NAN;
      r.ceil_us = NAN;
      r.cub_variant = "-";
      r.check = "-";
      r.nbuf = nbuf;
      r.reps = c.reps;
      g_rows.push_back(r);
    }
  }
  g_device_mode = saved;
}

}  // namespace ffbench
