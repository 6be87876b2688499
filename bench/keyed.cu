// Segmented scan, scan by key and reduce by key over segments of several shapes (random
// lengths 10..50, 1..3, 1000..10000, a Zipf power law with s = 1.2 up to 10^6, one
// segment), beside CUB's InclusiveSumByKey and ReduceByKey.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {

// --- segmented scans and reduce by key: segments of each shape -------------------------
// fuseflow: the catalog's segmented_scan_sum (by i32 offsets), scan_by_key_sum and
// reduce_by_key_sum (by i32 keys, the segment ids); CUB: DeviceScan::InclusiveSumByKey and
// DeviceReduce::ReduceByKey over the same keys. CUB has no scan by offsets: keys are how it
// is told where segments start, so beside the segmented scan it reads n keys where
// fuseflow reads one offset per segment. The ceiling is a device-to-device copy of the
// values. Each row's bytes (the traffic floor) are what fuseflow must move.
// Element i's key: its segment's number (the last offset at or before i), one thread per
// element (a segment of 10^6 or of n elements is written by many threads).
__global__ void fill_segment_ids(const int* offsets, std::size_t segments, std::size_t n, int* keys) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n; i += (std::size_t)gridDim.x * blockDim.x) {
    std::size_t lo = 0, hi = segments;  // the segment s with offsets[s] <= i < offsets[s + 1]
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      if ((std::size_t)offsets[mid] <= i) lo = mid;
      else hi = mid;
    }
    keys[i] = (int)lo;
  }
}

namespace {

// The shapes of segments, as segment_offsets' scenarios (segmented.cu), and their rows' names.
struct KeyedShape {
  int scenario;
  const char* name;
};
constexpr KeyedShape kKeyedShapes[] = {{1, "10..50"}, {3, "1..3"}, {4, "1000..10000"}, {5, "zipf1.2"}, {0, "one"}};

void bench_keyed_shape(const Context& c, std::size_t n, int op, const KeyedShape& shape);

}  // namespace

void bench_keyed(const Context& c, std::size_t n, int op) {
  for (const KeyedShape& shape : kKeyedShapes) bench_keyed_shape(c, n, op, shape);
}

namespace {

void bench_keyed_shape(const Context& c, std::size_t n, int op, const KeyedShape& shape) {
  static const char* ops[] = {"segscan ", "scanbykey ", "redbykey "};
  const std::string name = std::string(ops[op]) + shape.name;
  static const char* catalog_names[] = {"segmented_scan_sum", "scan_by_key_sum", "reduce_by_key_sum"};
  static const char* cub_names[] = {"DeviceScan::InclusiveSumByKey (keys = segment ids)", "DeviceScan::InclusiveSumByKey",
                                    "DeviceReduce::ReduceByKey"};
  const std::vector<int> offsets = segment_offsets(n, shape.scenario);
  const std::size_t segments = offsets.size() - 1;
  const std::size_t set_bytes = n * sizeof(float) + n * sizeof(int);  // values + keys (CUB's reads)
  const std::size_t nbuf = copies_for(set_bytes, c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float)), keys(nbuf * n * sizeof(int)), offs(nbuf * offsets.size() * sizeof(int));
  DeviceBuffer cub_out(n * sizeof(float)), cub_keys(n * sizeof(int)), cub_runs(sizeof(std::int64_t)), copy_out(n * sizeof(float));
  fill(c, xs.as<float>(), nbuf * n, 51 + op);
  for (std::size_t k = 0; k < nbuf; ++k) {
    int* ok = offs.as<int>() + k * offsets.size();
    CK(cudaMemcpyAsync(ok, offsets.data(), offsets.size() * sizeof(int), cudaMemcpyHostToDevice, c.stream));
    fill_segment_ids<<<c.sms * 8, 256, 0, c.stream>>>(ok, segments, n, keys.as<int>() + k * n);
    CK(cudaGetLastError());
  }
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find(catalog_names[op]).build();
  ff::Expr x, aux;  // aux: the offsets or the keys
  for (const auto& in : program.inputs()) (in.node().name == "x" ? x : aux) = in;
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t k) {
    if (op == 0) return ff::Bindings{{x, span_of<float>(xs, k, n)}, {aux, span_of<int>(offs, k, offsets.size())}};
    return ff::Bindings{{x, span_of<float>(xs, k, n)}, {aux, span_of<int>(keys, k, n)}};
  };
  CubTemp temp;
  auto cub_run = [&](std::size_t k, void* d_temp, std::size_t& bytes) {
    const int* kk = keys.as<int>() + k * n;
    const float* xk = xs.as<float>() + k * n;
    if (op == 2)
      CK(cub::DeviceReduce::ReduceByKey(d_temp, bytes, kk, cub_keys.as<int>(), xk, cub_out.as<float>(),
                                        cub_runs.as<std::int64_t>(), ::cuda::std::plus<>{}, (std::int64_t)n, c.stream));
    else
      CK(cub::DeviceScan::InclusiveSumByKey(d_temp, bytes, kk, xk, cub_out.as<float>(), (std::uint32_t)n,
                                            ::cuda::std::equal_to<>{}, c.stream));
  };
  std::size_t tb = 0;
  cub_run(0, nullptr, tb);
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    cub_run(k, temp.ptr, b);
    if (op == 2) cub_finish_from(c, cub_runs.ptr, sizeof(std::int64_t));  // the run count, as a user needs it
    else if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  auto ff_variant = [&](std::size_t k) {
    std::vector<ff::Result> r = ff_call(rt, program, bindings(k));
    if (!g_device_mode) {
      if (op == 2) (void)r.back().size();  // the run count, read from the device (waits)
      else CK(cudaStreamSynchronize(c.stream));
    }
    for (auto& v : r) g_keep_alive.push_back(std::move(v));
  };
  auto copy_call = [&](std::size_t k) {
    CK(cudaMemcpyAsync(copy_out.ptr, xs.as<float>() + k * n, n * sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };

  // Correctness on copy 0: every value against CUB (relative 1e-3), keys and run counts exactly.
  std::string check = "ok (all ~ CUB)";
  {
    std::vector<ff::Result> got = rt.run(program, bindings(0));
    std::size_t b = temp.bytes;
    cub_run(0, temp.ptr, b);
    std::int64_t runs = (std::int64_t)n;
    if (op == 2) CK(cudaMemcpy(&runs, cub_runs.ptr, sizeof runs, cudaMemcpyDeviceToHost));
    std::vector<float> want((std::size_t)runs);
    CK(cudaMemcpy(want.data(), cub_out.ptr, want.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const std::vector<float> mine = got.back().download<float>();
    std::size_t bad = mine.size() == want.size() ? 0 : 1;
    for (std::size_t i = 0; !bad && i < want.size(); ++i) bad += close_float(mine[i], want[i]) ? 0 : 1;
    if (op == 2 && !bad) {
      std::vector<int> want_keys(want.size());
      CK(cudaMemcpy(want_keys.data(), cub_keys.ptr, want_keys.size() * sizeof(int), cudaMemcpyDeviceToHost));
      bad += got.front().download<int>() == want_keys ? 0 : 1;
    }
    if (bad) {
      check = "MISMATCH";
      report_mismatch(name + " n=" + std::to_string(n) + ": " + std::to_string(mine.size()) +
                      " results (CUB " + std::to_string(want.size()) + "), " + std::to_string(bad) + " differ from CUB");
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {ff_variant, cub_call, copy_call};
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = name;
  r.n = n;
  // What fuseflow must move: values, offsets or keys, and the scan (n values) or the runs (a key and a sum each).
  r.bytes = (double)n * sizeof(float) + (op == 0 ? (double)offsets.size() : (double)n) * sizeof(int) +
            (op == 2 ? (double)segments * (sizeof(int) + sizeof(float)) : (double)n * sizeof(float));
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = cub_names[op];
  char extra[64];
  std::snprintf(extra, sizeof extra, "; ceil = D2D copy of the values %.2f us", t[2]);
  r.check = check + extra;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

}  // namespace

}  // namespace ffbench
