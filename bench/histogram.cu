// Histogram: 256 bins of i32 values in [0, 256), beside CUB's DeviceHistogram; weighted
// histograms of 256, 4096 and 2^20 bins beside torch.bincount(k, weights=w) (histogram_anchors.py).
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_HISTOGRAM_SCRIPT
#define FUSEFLOW_BENCH_HISTOGRAM_SCRIPT "bench/histogram_anchors.py"
#endif

namespace ffbench {

// --- histogram: 256 bins of i32 values in [0, 256) ------------------------------------
// fuseflow: the catalog's histogram_256 (bin = x & 255, u32 counts); CUB: HistogramEven
// with 257 levels over [0, 256). Both count every element; the counts are compared exactly.
void bench_histogram(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(n * sizeof(int), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(int));
  fill_byte_values(c, xs.as<int>(), nbuf * n, 11);
  DeviceBuffer cub_counts(256 * sizeof(unsigned));
  CK(cudaStreamSynchronize(c.stream));
  ff::Program program = ff::catalog::find("histogram_256").build();
  const ff::Expr x = program.inputs().at(0);
  ff::Runtime& rt = *c.rt;
  CubTemp temp;
  std::size_t tb = 0;
  CK(cub::DeviceHistogram::HistogramEven(nullptr, tb, xs.as<int>(), cub_counts.as<unsigned>(), 257, 0, 256,
                                         (std::int64_t)n, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceHistogram::HistogramEven(temp.ptr, b, xs.as<int>() + k * n, cub_counts.as<unsigned>(), 257, 0, 256,
                                           (std::int64_t)n, c.stream));
    cub_finish_from(c, cub_counts.ptr, 4);
  };
  std::string check = "ok";
  {
    std::vector<unsigned> got = rt.run(program, {{x, span_of<int>(xs, 0, n)}})[0].download<unsigned>();
    const bool mode = g_device_mode;
    g_device_mode = false;
    cub_call(0);
    g_device_mode = mode;
    std::vector<unsigned> want(256);
    CK(cudaMemcpy(want.data(), cub_counts.ptr, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (got != want) {
      check = "MISMATCH";
      report_mismatch("histogram_256 n=" + std::to_string(n) + ": counts differ from CUB");
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) {
        auto r = ff_call(rt, program, {{x, span_of<int>(xs, k, n)}});
        if (!g_device_mode) (void)r[0].download<unsigned>();
        else g_keep_alive.push_back(std::move(r[0]));
      },
      cub_call,
      [&](std::size_t k) { launch_ceiling(c, reinterpret_cast<const float*>(xs.as<int>() + k * n), nullptr, n); },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  Row r;
  r.op = "histogram 256";
  r.n = n;
  r.bytes = (double)n * sizeof(int);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceHistogram::HistogramEven";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

// --- weighted histograms (issue 25): 2^26 f32 weights, 256, 4096 and 2^20 bins ---------
// fuseflow: histogram(cast<i32>((u + 0.5) * bins / 1.5), w, bins) over u, w uniform in
// (-0.5, 1] (the harness's fill: bins uniform in [0, bins], bin `bins` dropped): 256 bins
// keep a column of sums per thread in shared memory; 4096 per-warp sums (__match_any_sync);
// 2^20 one stable pass by bucket (bin >> 12) and a bucket's sums per warp in shared memory
// (histogram_bucketed.cpp). Both deterministic (no float atomics). Beside a copy of u (8
// bytes per element moved, as the histogram reads) and torch.bincount(k, weights=w,
// minlength=bins) over its own int32 bins and f32 weights (histogram_anchors.py, same run;
// float atomics, not deterministic). Checked bin by bin against a double histogram on the
// host (the bins computed in f32 alike).
void bench_weighted_histogram(const Context& base, const Options& opt) {
  const DeviceGroup group(base, opt);
  const Context& c = group.c;
  constexpr std::size_t kN = std::size_t{1} << 26;
  std::printf("\nWeighted histograms of 2^26 f32 weights (issue 25), device time per call (us), median; torch in the "
              "same run:\n");
  DeviceBuffer u(kN * sizeof(float)), w(kN * sizeof(float)), copy(kN * sizeof(float));
  fill(c, u.as<float>(), kN, 51);
  fill(c, w.as<float>(), kN, 52);
  CK(cudaStreamSynchronize(c.stream));
  std::map<std::int64_t, double> ff_us, copy_us;
  std::map<std::int64_t, std::string> checks;
  for (const std::int64_t bins : {std::int64_t{256}, std::int64_t{4096}, std::int64_t{1} << 20}) {
    auto us = ff::input<float>("u");
    auto ws = ff::input<float>("w");
    const float scale = static_cast<float>(bins) / 1.5f;
    const ff::Program p(ff::histogram(ff::cast<int>((us + 0.5f) * scale), ws, bins));
    const ff::Bindings b = {{us, span_of<float>(u, 0, kN)}, {ws, span_of<float>(w, 0, kN)}};
    std::tie(ff_us[bins], copy_us[bins]) = time_against_copy(c, p, b, copy.ptr, u.ptr, kN * sizeof(float));
    const std::vector<float> sums = c.rt->run(p, b)[0].download<float>();
    std::vector<float> hu(kN), hw(kN);
    CK(cudaMemcpy(hu.data(), u.ptr, kN * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hw.data(), w.ptr, kN * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> want(static_cast<std::size_t>(bins), 0.0);
    for (std::size_t i = 0; i < kN; ++i) {
      const int bin = static_cast<int>((hu[i] + 0.5f) * scale);
      if (bin >= 0 && bin < bins) want[static_cast<std::size_t>(bin)] += hw[i];
    }
    bool ok = sums.size() == want.size();
    for (std::size_t k = 0; ok && k < want.size(); ++k) ok = std::fabs(sums[k] - want[k]) <= 1e-3 * (1.0 + std::fabs(want[k]));
    checks[bins] = check_word(ok, "weighted histogram of " + std::to_string(bins) + " bins against the host's");
  }
  const std::map<std::string, double> a = run_anchor_script(FUSEFLOW_BENCH_HISTOGRAM_SCRIPT, c.reps);
  std::printf("  %-18s %10s %10s %10s %10s %9s %9s  %s\n", "program", "fuseflow", "copy", "torch", "GB/s", "/copy",
              "torch/ff", "check");
  for (const auto& [bins, t_ff] : ff_us) {
    const std::string name = "weighted_hist" + std::to_string(bins);
    const double t = anchor_at(a, "torch " + name);
    std::printf("  %-18s %10.1f %10.1f %10.1f %10.0f %8.3fx %8.2fx  %s\n", name.c_str(), t_ff, copy_us[bins], t,
                kN * 8.0 / t_ff / 1e3, t_ff / copy_us[bins], t / t_ff, checks[bins].c_str());
    keep_program_row("program " + name, kN, kN * 8.0, t_ff, copy_us[bins], checks[bins]);
  }
  std::printf("  (torch.bincount adds float weights with atomics: not the same bits on every run)\n");
}

}  // namespace ffbench
