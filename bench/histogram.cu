// Histogram: 256 bins of i32 values in [0, 256), beside CUB's DeviceHistogram.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

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

}  // namespace ffbench
