// Stream compaction (filter x > 0) beside CUB's DeviceSelect::If and a device-to-device
// copy, and the same generated kernel launched alone.
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "direct_kernel.hpp"
#include "harness.hpp"

namespace ffbench {
namespace {

struct Positive {  // the predicate of the catalog's filter_positive
  __host__ __device__ bool operator()(float v) const { return v > 0.0f; }
};

}  // namespace

// --- filter (stream compaction): x > 0 over f32 in (-1, 1], half kept ------------------
// fuseflow: the catalog's filter_positive (one pass; the survivor count stays on the
// device); CUB: DeviceSelect::If with the same predicate. Both results are compared
// element by element, and the counts. GB/s counts the bytes read (n floats) and written
// (the survivors); "% ceil" is a device-to-device copy of as many bytes (half of them
// read, half written), the least a compaction has to move. fuseflow's array results are
// allocated per call and kept alive through a timed batch (g_keep_alive), as the scans'.
// In sync mode both read the count on the host (fuseflow: Result::size()).
void bench_filter(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(n * sizeof(float) * 3 / 2, c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float)), cub_out(n * sizeof(float)), cub_count(sizeof(std::int64_t));
  fill_signed_floats(c, xs.as<float>(), nbuf * n, 51);
  CK(cudaStreamSynchronize(c.stream));
  ff::Program program = ff::catalog::find("filter_positive").build();
  const ff::Expr x = program.inputs().at(0);
  ff::Runtime& rt = *c.rt;
  CubTemp temp;
  std::size_t tb = 0;
  CK(cub::DeviceSelect::If(nullptr, tb, xs.as<float>(), cub_out.as<float>(), cub_count.as<std::int64_t>(),
                           (std::int64_t)n, Positive{}, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceSelect::If(temp.ptr, b, xs.as<float>() + k * n, cub_out.as<float>(), cub_count.as<std::int64_t>(),
                             (std::int64_t)n, Positive{}, c.stream));
    cub_finish_from(c, cub_count.ptr, sizeof(std::int64_t));
  };
  std::string check = "ok";
  std::size_t kept = 0;
  {
    std::vector<float> got = rt.run(program, {{x, span_of<float>(xs, 0, n)}})[0].download<float>();
    const bool mode = g_device_mode;
    g_device_mode = false;
    cub_call(0);
    g_device_mode = mode;
    std::int64_t count = 0;
    CK(cudaMemcpy(&count, cub_count.ptr, sizeof count, cudaMemcpyDeviceToHost));
    kept = (std::size_t)count;
    std::vector<float> want(kept);
    CK(cudaMemcpy(want.data(), cub_out.ptr, kept * sizeof(float), cudaMemcpyDeviceToHost));
    if (got != want) {
      check = "MISMATCH";
      report_mismatch("filter x > 0 n=" + std::to_string(n) + ": " + std::to_string(got.size()) +
                      " survivors, CUB " + std::to_string(kept) + (got.size() == kept ? ", elements differ" : ""));
    } else {
      check = "ok (all " + std::to_string(kept) + " survivors = CUB)";
    }
  }
  // The kernel alone: the one the schedule picks for n, launched with a preallocated
  // output (rt.run allocates one per call); checked against CUB too.
  DirectKernel direct(rt, program, n);
  DeviceBuffer direct_out(n * sizeof(float) + 16);
  auto direct_call = [&](std::size_t k) {
    direct.launch(rt, c.stream, {xs.as<float>() + k * n}, direct_out.ptr, n);
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  {
    const bool mode = g_device_mode;
    g_device_mode = false;
    direct_call(0);
    g_device_mode = mode;
    unsigned long long count = 0;
    CK(cudaMemcpy(&count, direct.count(), sizeof count, cudaMemcpyDeviceToHost));
    std::vector<float> got(kept), want(kept);
    CK(cudaMemcpy(want.data(), cub_out.ptr, kept * sizeof(float), cudaMemcpyDeviceToHost));
    if (count == kept) CK(cudaMemcpy(got.data(), direct_out.ptr, kept * sizeof(float), cudaMemcpyDeviceToHost));
    if (count != kept || got != want) {
      check = "MISMATCH";
      report_mismatch("filter x > 0 n=" + std::to_string(n) + ", the kernel alone: " + std::to_string(count) +
                      " survivors, CUB " + std::to_string(kept) + (count == kept ? ", elements differ" : ""));
    }
  }
  const std::size_t moved = (n + kept) * sizeof(float);
  DeviceBuffer copy_out(moved / 2 + 16);
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) {
        auto r = ff_call(rt, program, {{x, span_of<float>(xs, k, n)}});
        if (!g_device_mode) (void)r[0].size();
        else g_keep_alive.push_back(std::move(r[0]));
      },
      cub_call,
      [&](std::size_t k) {
        CK(cudaMemcpyAsync(copy_out.ptr, xs.as<char>() + k * n * sizeof(float), moved / 2, cudaMemcpyDeviceToDevice,
                           c.stream));
        if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
      },
      direct_call,
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = "filter x>0 f32";
  r.n = n;
  r.bytes = (double)moved;
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceSelect::If";
  char extra[64];
  std::snprintf(extra, sizeof extra, "; ceil = D2D copy %.2f us", t[2]);
  r.check = check + extra;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
  Row v = r;  // the same run's kernel alone
  v.op = r.op + " kernel";
  v.ff_us = t[3];
  std::snprintf(extra, sizeof extra, "the same kernel, preallocated output; ceil = D2D copy %.2f us", t[2]);
  v.check = extra;
  add_row(v);
}

}  // namespace ffbench
