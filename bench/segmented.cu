// Segmented sums by offsets, beside CUB's DeviceSegmentedReduce.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {

// --- segmented sum by offsets: one huge segment, random lengths 10..50, all of length 3 --
// fuseflow: the catalog's segmented_sum (i32 offsets); CUB: DeviceSegmentedReduce::Sum
// (begin = offsets, end = offsets + 1). CUB is very slow on one segment and on segments of
// 3 (tens of ms at 2^24 and up), so from 2^24 on it gets 3 repetitions of one call each.
// Every fuseflow call allocates its n_segments outputs (the executor's array results); in
// device mode they are kept alive through a batch (g_keep_alive), as the scans' are.
// Offsets of segments covering n elements: one segment (scenario 0), random lengths
// 10..50 (1), all of length 3 (2), random lengths 1..3 (3), random lengths 1000..10000
// (4), a power law (5: Zipf with s = 1.2 over lengths 1 .. 10^6, P(l) ~ l^-1.2, drawn by
// its exact CDF). The same segments on every call (a fixed generator).
std::vector<int> segment_offsets(std::size_t n, int scenario) {
  std::vector<int> offsets = {0};
  if (scenario == 0) {
    offsets.push_back((int)n);
    return offsets;
  }
  static std::vector<double> zipf_cdf;  // P(length <= l), l = 1 .. 10^6
  if (scenario == 5 && zipf_cdf.empty()) {
    zipf_cdf.resize(1000000);
    double sum = 0;
    for (std::size_t l = 1; l <= zipf_cdf.size(); ++l) zipf_cdf[l - 1] = sum += std::pow((double)l, -1.2);
    for (double& p : zipf_cdf) p /= sum;
  }
  std::uint64_t state = 12345;
  while ((std::size_t)offsets.back() < n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t r = state >> 33;  // 31 random bits
    std::size_t len = 3;
    if (scenario == 1) len = 10 + r % 41;
    else if (scenario == 3) len = 1 + r % 3;
    else if (scenario == 4) len = 1000 + r % 9001;
    else if (scenario == 5)
      len = 1 + (std::size_t)(std::lower_bound(zipf_cdf.begin(), zipf_cdf.end(), ((double)r + 0.5) / 2147483648.0) -
                              zipf_cdf.begin());
    offsets.push_back((int)std::min(n, (std::size_t)offsets.back() + std::min<std::size_t>(len, 1000000)));
  }
  return offsets;
}

void bench_segmented(const Context& c, std::size_t n, int scenario) {
  static const char* names[] = {"segsum one", "segsum 10..50", "segsum len 3"};
  const std::vector<int> offsets = segment_offsets(n, scenario);
  const std::size_t segments = offsets.size() - 1;
  const std::size_t set_bytes = n * sizeof(float) + offsets.size() * sizeof(int);
  const std::size_t nbuf = copies_for(set_bytes, c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float)), offs(nbuf * offsets.size() * sizeof(int));
  fill(c, xs.as<float>(), nbuf * n, 21 + scenario);
  for (std::size_t k = 0; k < nbuf; ++k)
    CK(cudaMemcpyAsync(offs.as<int>() + k * offsets.size(), offsets.data(), offsets.size() * sizeof(int),
                       cudaMemcpyHostToDevice, c.stream));
  DeviceBuffer cub_out(segments * sizeof(float));
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find("segmented_sum").build();
  ff::Expr x, o;
  for (const auto& in : program.inputs()) (in.node().name == "offsets" ? o : x) = in;
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t k) {
    return ff::Bindings{{x, span_of<float>(xs, k, n)}, {o, span_of<int>(offs, k, offsets.size())}};
  };
  CubTemp temp;
  std::size_t tb = 0;
  CK(cub::DeviceSegmentedReduce::Sum(nullptr, tb, xs.as<float>(), cub_out.as<float>(), (std::int64_t)segments,
                                     offs.as<int>(), offs.as<int>() + 1, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    const int* ok = offs.as<int>() + k * offsets.size();
    CK(cub::DeviceSegmentedReduce::Sum(temp.ptr, b, xs.as<float>() + k * n, cub_out.as<float>(),
                                       (std::int64_t)segments, ok, ok + 1, c.stream));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  std::string check = "ok";
  {
    std::vector<float> got = rt.run(program, bindings(0))[0].download<float>();
    cub_call(0);
    std::vector<float> want(segments);
    CK(cudaMemcpy(want.data(), cub_out.ptr, segments * sizeof(float), cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (std::size_t s = 0; s < segments; ++s)  // sums of a few terms may be near zero: absolute too
      bad += close_rel(got[s], want[s], 1e-3) || std::fabs(got[s] - want[s]) <= 1e-3 ? 0 : 1;
    if (got.size() != segments || bad) {
      check = "MISMATCH";
      report_mismatch(std::string(names[scenario]) + " n=" + std::to_string(n) + ": " + std::to_string(bad) +
                      " segment sums differ from CUB");
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) {
        auto r = ff_call(rt, program, bindings(k));
        if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
        else g_keep_alive.push_back(std::move(r[0]));
      },
      [&](std::size_t k) { launch_ceiling(c, xs.as<float>() + k * n, nullptr, n); },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  double cub_us;
  if (n >= (std::size_t{1} << 24)) {
    const bool mode = g_device_mode;
    g_device_mode = false;  // one call per timing, synchronised
    cub_us = time_interleaved(c.stream, 1, 3, nbuf, {cub_call})[0];
    g_device_mode = mode;
  } else {
    cub_us = time_interleaved(c.stream, c.warmup, c.reps, nbuf, {cub_call})[0];
  }
  Row r;
  r.op = names[scenario];
  r.n = n;
  r.bytes = (double)n * sizeof(float) + (double)offsets.size() * sizeof(int) + (double)segments * sizeof(float);
  r.ff_us = t[0];
  r.cub_us = cub_us;
  r.ceil_us = t[1];
  r.cub_variant = "DeviceSegmentedReduce::Sum";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

}  // namespace ffbench
