// Scans (inclusive sum f32, exclusive sum i32, linear recurrence over pairs) beside CUB's
// DeviceScan and a device-to-device copy, the same kernel launched alone, and in place.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "direct_kernel.hpp"
#include "harness.hpp"

namespace ffbench {

// --- scans beside CUB and a device-to-device copy of the same bytes ----------------------
// Three scans, each on the same device buffers for fuseflow and CUB:
//   incl sum f32   catalog inclusive_sum_f32        vs DeviceScan::InclusiveSum
//   excl sum i32   catalog exclusive_sum_i32        vs DeviceScan::ExclusiveSum
//   linrec pairs   catalog linear_recurrence_pairs  vs DeviceScan::InclusiveScan over a
//                  (the whole (a, b) pair scanned,    zip of a and b with the same operator
//                  8 bytes written per pair)          (a1*a2, a2*b1 + b2), writing the pairs
// GB/s counts bytes read + written. The ceiling column (% ceil) is a cudaMemcpyAsync
// device-to-device copy of the same bytes (input bytes to an output buffer): DESIGN's
// "within 1.15x of a copy". fuseflow's rt.run / run_async allocate every array result
// (cuMemAlloc) and free it when the Result goes: the results of a timed batch are kept
// alive and freed after it (a free waits for the device), so the timed region holds
// the allocation but no free. The "ff kernel" line is the same generated kernel launched
// into a preallocated output (scratch zeroed on the stream, as the executor does): what
// the kernel costs without the per-run allocation.
namespace {

struct Pair {
  float a, b;
};
struct PairOp {  // the same (non-commutative) operator as ff::catalog::linear_recurrence()
  __host__ __device__ Pair operator()(const Pair& l, const Pair& r) const { return Pair{l.a * r.a, r.a * l.b + r.b}; }
};
struct ToPair {
  template <class T>
  __host__ __device__ Pair operator()(const T& t) const {
    return Pair{thrust::get<0>(t), thrust::get<1>(t)};
  }
};

// kind 0: inclusive sum f32, 1: exclusive sum i32, 2: linear recurrence over n pairs.
void bench_scan(const Context& c, int kind, std::size_t n) {
  static const char* ops[] = {"incl sum f32", "excl sum i32", "linrec pairs"};
  static const char* catalog_names[] = {"inclusive_sum_f32", "exclusive_sum_i32", "linear_recurrence_pairs"};
  static const char* cub_names[] = {"DeviceScan::InclusiveSum", "DeviceScan::ExclusiveSum",
                                    "DeviceScan::InclusiveScan(zip(a, b), pair op)"};
  const int arrays = kind == 2 ? 2 : 1;  // input arrays of 4-byte elements
  const std::size_t in_bytes = (std::size_t)arrays * n * 4, out_bytes = in_bytes;
  const std::size_t nbuf = copies_for(in_bytes + out_bytes, c.l2_bytes);
  DeviceBuffer xs(nbuf * n * 4), ys(kind == 2 ? nbuf * n * 4 : 4), cub_out(out_bytes), copy_out(out_bytes);
  if (kind == 1) {
    fill(c, xs.as<int>(), nbuf * n, 31);
  } else {
    fill(c, xs.as<float>(), nbuf * n, 32 + kind);
    if (kind == 2) fill(c, ys.as<float>(), nbuf * n, 40);
  }
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find(catalog_names[kind]).build();
  const std::vector<ff::Expr> inputs = program.inputs();
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t k) {
    if (kind == 2) return ff::Bindings{{inputs.at(0), span_of<float>(xs, k, n)}, {inputs.at(1), span_of<float>(ys, k, n)}};
    if (kind == 1) return ff::Bindings{{inputs.at(0), span_of<int>(xs, k, n)}};
    return ff::Bindings{{inputs.at(0), span_of<float>(xs, k, n)}};
  };
  auto zipped = [&](std::size_t k) {
    return thrust::make_transform_iterator(thrust::make_zip_iterator(xs.as<float>() + k * n, ys.as<float>() + k * n),
                                           ToPair{});
  };
  CubTemp temp;
  std::size_t tb = 0;
  auto cub_scan = [&](std::size_t k, void* d_temp, std::size_t& bytes) {
    if (kind == 0)
      CK(cub::DeviceScan::InclusiveSum(d_temp, bytes, xs.as<float>() + k * n, cub_out.as<float>(), (std::int64_t)n,
                                       c.stream));
    else if (kind == 1)
      CK(cub::DeviceScan::ExclusiveSum(d_temp, bytes, xs.as<int>() + k * n, cub_out.as<int>(), (std::int64_t)n,
                                       c.stream));
    else
      CK(cub::DeviceScan::InclusiveScan(d_temp, bytes, zipped(k), cub_out.as<Pair>(), PairOp{}, (std::int64_t)n,
                                        c.stream));
  };
  cub_scan(0, nullptr, tb);
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    cub_scan(k, temp.ptr, b);
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  auto copy_call = [&](std::size_t k) {
    CK(cudaMemcpyAsync(copy_out.ptr, xs.as<char>() + k * n * 4, n * 4, cudaMemcpyDeviceToDevice, c.stream));
    if (kind == 2)
      CK(cudaMemcpyAsync(copy_out.as<char>() + n * 4, ys.as<char>() + k * n * 4, n * 4, cudaMemcpyDeviceToDevice,
                         c.stream));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  auto ff_variant = [&](std::size_t k) {
    std::vector<ff::Result> r = ff_call(rt, program, bindings(k));
    for (auto& x : r) g_keep_alive.push_back(std::move(x));
  };
  DirectKernel direct(rt, program, n);
  DeviceBuffer direct_out(out_bytes);
  auto direct_call = [&](std::size_t k) {
    std::vector<const void*> ins = {xs.as<char>() + k * n * 4};
    if (kind == 2) ins.push_back(ys.as<char>() + k * n * 4);
    direct.launch(rt, c.stream, ins, direct_out.ptr, n);
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };

  // Correctness on copy 0: fuseflow (run and the direct kernel) against CUB.
  std::string check = "ok";
  {
    std::vector<ff::Result> got = rt.run(program, bindings(0));
    const bool mode = g_device_mode;
    g_device_mode = false;
    cub_call(0);
    direct_call(0);
    g_device_mode = mode;
    std::size_t bad = 0, checked = 0, first_bad = 0;
    std::string detail;
    auto note = [&](std::size_t i, const std::string& what) {
      if (bad++ == 0) {
        first_bad = i;
        detail = what;
      }
    };
    if (kind == 1) {  // integers: every element, exactly
      std::vector<int> want(n), mine = got.at(0).download<int>(), direct_v(n);
      CK(cudaMemcpy(want.data(), cub_out.ptr, n * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(direct_v.data(), direct_out.ptr, n * 4, cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n; ++i, ++checked)
        if (mine[i] != want[i] || direct_v[i] != want[i])
          note(i, std::to_string(mine[i]) + " / " + std::to_string(direct_v[i]) + " vs CUB " + std::to_string(want[i]));
    } else {  // floats: the last element and 64 sampled positions, relative 1e-3
      std::vector<std::size_t> at;
      for (std::size_t s = 0; s < 64; ++s) at.push_back((std::size_t)hash32(s, 77) % n);
      at.push_back(n - 1);
      const std::size_t elem = kind == 2 ? sizeof(Pair) : sizeof(float);
      std::vector<char> mine_all;
      if (kind == 2) {
        auto v = got.at(0).download<ff::Tuple<float, float>>();
        static_assert(sizeof(ff::Tuple<float, float>) == sizeof(Pair), "pair layout");
        mine_all.resize(v.size() * elem);
        std::memcpy(mine_all.data(), v.data(), mine_all.size());
      } else {
        auto v = got.at(0).download<float>();
        mine_all.resize(v.size() * elem);
        std::memcpy(mine_all.data(), v.data(), mine_all.size());
      }
      for (std::size_t i : at) {
        float want[2] = {0, 0}, mine[2] = {0, 0}, dv[2] = {0, 0};
        CK(cudaMemcpy(want, cub_out.as<char>() + i * elem, elem, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(dv, direct_out.as<char>() + i * elem, elem, cudaMemcpyDeviceToHost));
        std::memcpy(mine, mine_all.data() + i * elem, elem);
        ++checked;
        for (int f = 0; f < (kind == 2 ? 2 : 1); ++f)
          if (!close_float(mine[f], want[f]) || std::memcmp(&mine[f], &dv[f], 4) != 0)
            note(i, "field " + std::to_string(f) + ": " + std::to_string(mine[f]) + " (kernel alone " +
                        std::to_string(dv[f]) + ") vs CUB " + std::to_string(want[f]));
      }
    }
    if (bad) {
      check = "MISMATCH";
      report_mismatch(std::string(ops[kind]) + " n=" + std::to_string(n) + ": " + std::to_string(bad) + " of " +
                      std::to_string(checked) + " checked elements differ from CUB, the first at " +
                      std::to_string(first_bad) + ": " + detail);
    } else {
      check = kind == 1 ? "ok (all = CUB)" : "ok (last + 64 samples ~ CUB)";
    }
  }

  // In place (sums only: their result has the input's type): rt.run with the scan's
  // result bound to its input's memory, so no allocation. It runs after the correctness
  // check; the copies' values then change from run to run, which does not change the work.
  auto in_place_call = [&](std::size_t k) {
    ff::Bindings b = bindings(k);
    b.push_back({program.outputs().at(0), b.at(0).second});
    std::vector<ff::Result> r = ff_call(rt, program, b);
    for (auto& x : r) g_keep_alive.push_back(std::move(x));
  };
  std::vector<std::function<void(std::size_t)>> variants = {ff_variant, cub_call, copy_call, direct_call};
  if (kind != 2) variants.push_back(in_place_call);
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = ops[kind];
  r.n = n;
  r.bytes = (double)(in_bytes + out_bytes);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = cub_names[kind];
  char extra[96];
  std::snprintf(extra, sizeof extra, "; ceil = D2D copy %.2f us, ff/copy %.2fx", t[2], t[0] / t[2]);
  r.check = check + extra;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
  // The same call's other variants, timed in the same interleaved run.
  auto variant_row = [&](const char* suffix, double us, const char* what) {
    Row v = r;
    v.op = std::string(ops[kind]) + suffix;
    v.ff_us = us;
    std::snprintf(extra, sizeof extra, "%s/copy %.2fx", what, us / t[2]);
    v.check = extra;
    add_row(v);
  };
  variant_row(" kernel", t[3], "the same kernel, preallocated output: kernel");
  if (kind == 2) return;
  variant_row(" in place", t[4], "rt.run, result bound to its input (no allocation): in place");
}


}  // namespace

void bench_scans(const Context& c, int lg) {
  const std::size_t n = std::size_t{1} << lg;
  bench_scan(c, 0, n);
  bench_scan(c, 1, n);
  bench_scan(c, 2, std::size_t{1} << std::min(lg, 27));  // n pairs, up to 2^27 (2 GB moved)
}

}  // namespace ffbench
