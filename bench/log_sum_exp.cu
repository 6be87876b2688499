// Log-sum-exp (issue 25): m + log(sum(exp(x - m))) with m = max(x), an output that is an
// expression of two reductions' results (a scalar epilogue), over f32; one kernel reading
// x once (the planner's online (max, scaled sum) monoid, passes/log_sum_exp.cpp). In the same
// interleaved repetitions: fuseflow's log-sum-exp, CUB (DeviceReduce::Max, then
// TransformReduce of exp(x - m) reading m on the device; the log on the host) and
// fuseflow's plain sum of the same buffers (the issue's goal: log-sum-exp within 1.1x of
// it); torch.logsumexp on its own buffer of the same size (lse_anchors.py, same run).
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_LSE_SCRIPT
#define FUSEFLOW_BENCH_LSE_SCRIPT "bench/lse_anchors.py"
#endif

namespace ffbench {
namespace {

struct ExpMinus {  // exp(x - m), m read from device memory (CUB's second pass)
  const float* m;
  __device__ float operator()(float v) const { return expf(v - *m); }
};

// torch.logsumexp over n f32 (lse_anchors.py prints "row torch_lse <n> <us>"), or NAN.
double torch_anchor(std::size_t n, int reps) {
  const std::string cmd = std::string("python3 '") + FUSEFLOW_BENCH_LSE_SCRIPT + "' --n " + std::to_string(n) +
                          " --reps " + std::to_string(reps) + " 2>&1";
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return NAN;
  double us = NAN;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    unsigned long long got_n = 0;
    double t = NAN;
    if (std::sscanf(line, "row torch_lse %llu %lf", &got_n, &t) == 2 && got_n == n) us = t;
    else std::printf("  anchors: %s", line);
  }
  pclose(p);
  return us;
}

}  // namespace

void bench_log_sum_exp(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(n * sizeof(float), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float));
  fill(c, xs.as<float>(), nbuf * n, 25);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program lse = ff::catalog::find("log_sum_exp").build();
  ff::Program sum = ff::catalog::find("sum").build();
  const ff::Expr x = lse.inputs().at(0), xsum = sum.inputs().at(0);
  ff::Runtime& rt = *c.rt;

  float* d_max = (float*)c.small_out;
  float* d_sum = (float*)c.small_out + 1;
  CubTemp temp;
  std::size_t tb_max = 0, tb_sum = 0;
  CK(cub::DeviceReduce::Max(nullptr, tb_max, xs.as<float>(), d_max, (std::int64_t)n, c.stream));
  CK(cub::DeviceReduce::TransformReduce(nullptr, tb_sum, xs.as<float>(), d_sum, (std::int64_t)n,
                                        ::cuda::std::plus<float>{}, ExpMinus{d_max}, 0.0f, c.stream));
  temp.reserve(std::max(tb_max, tb_sum));
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceReduce::Max(temp.ptr, b, xs.as<float>() + k * n, d_max, (std::int64_t)n, c.stream));
    b = temp.bytes;
    CK(cub::DeviceReduce::TransformReduce(temp.ptr, b, xs.as<float>() + k * n, d_sum, (std::int64_t)n,
                                          ::cuda::std::plus<float>{}, ExpMinus{d_max}, 0.0f, c.stream));
    cub_finish_from(c, d_max, 2 * sizeof(float));
  };

  const bool timing_mode = g_device_mode;
  g_device_mode = false;  // the check reads results on the host
  std::string check = "ok";
  {
    const float fv = rt.run(lse, {{x, span_of<float>(xs, 0, n)}}).at(0).value().as_float();
    cub_call(0);
    float cv[2];
    std::memcpy(cv, c.host_out, sizeof cv);
    const float want = cv[0] + std::log(cv[1]);
    if (!close_rel(fv, want)) {
      check = "MISMATCH";
      report_mismatch("log-sum-exp n=" + std::to_string(n) + ": fuseflow " + std::to_string(fv) + " vs CUB " +
                      std::to_string(want));
    }
  }
  g_device_mode = timing_mode;

  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) { (void)ff_call(rt, lse, {{x, span_of<float>(xs, k, n)}}); },
      cub_call,
      [&](std::size_t k) { launch_ceiling(c, xs.as<float>() + k * n, nullptr, n); },
      [&](std::size_t k) { (void)ff_call(rt, sum, {{xsum, span_of<float>(xs, k, n)}}); },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  Row r;
  r.op = "log-sum-exp f32";
  r.n = n;
  r.bytes = (double)n * sizeof(float);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceReduce::Max + TransformReduce(exp(x - m))";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
  const double torch_us = g_device_mode ? NAN : torch_anchor(n, c.reps);
  std::printf("  log-sum-exp n=%zu: fuseflow %.1f us, fuseflow's plain sum %.1f us (%.2fx of it; goal <= 1.1x)",
              n, t[0], t[3], t[0] / t[3]);
  if (std::isfinite(torch_us)) std::printf(", torch.logsumexp %.1f us (end to end)", torch_us);
  std::printf("\n");
}

}  // namespace ffbench
