// Reductions: sum, sum of squares, dot, argmax (f32) and MSSP (non-commutative 4 x i32),
// each beside CUB's DeviceReduce (MSSP: its correct alternative, an inclusive scan, and
// its DeviceReduce::Reduce, which gets non-commutative operators wrong) and the read
// ceiling over the same buffers.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {
namespace {

// --- CUB functors ---------------------------------------------------------------------
struct Square {
  __host__ __device__ float operator()(float v) const { return v * v; }
};
struct Product {
  template <class T>
  __host__ __device__ float operator()(const T& t) const {
    return thrust::get<0>(t) * thrust::get<1>(t);
  }
};
struct Mssp {
  int best, pre, suf, tot;
};
struct MsspParts {
  __host__ __device__ Mssp operator()(int x) const {
    const int p = x > 0 ? x : 0;
    return Mssp{p, p, p, x};
  }
};
__host__ __device__ inline int imax(int a, int b) { return a > b ? a : b; }
struct MsspOp {  // the same (non-commutative) operator as ff::catalog::mssp()
  __host__ __device__ Mssp operator()(const Mssp& a, const Mssp& b) const {
    return Mssp{imax(imax(a.best, b.best), a.suf + b.pre), imax(a.pre, a.tot + b.pre),
                imax(b.suf, a.suf + b.tot), a.tot + b.tot};
  }
};

Mssp mssp_cpu(const std::vector<int>& xs) {
  std::int64_t best = 0, pre = 0, suf = 0, tot = 0;  // Kadane's form of the same monoid
  for (int v : xs) {
    const std::int64_t p = std::max<std::int64_t>(v, 0);
    best = std::max(std::max(best, p), suf + p);
    pre = std::max(pre, tot + p);
    suf = std::max<std::int64_t>(p, suf + v);
    tot += v;
  }
  return Mssp{(int)best, (int)pre, (int)suf, (int)tot};
}

std::string str(const Mssp& m) {
  return "(" + std::to_string(m.best) + ", " + std::to_string(m.pre) + ", " + std::to_string(m.suf) + ", " +
         std::to_string(m.tot) + ")";
}
bool same(const Mssp& a, const Mssp& b) {
  return a.best == b.best && a.pre == b.pre && a.suf == b.suf && a.tot == b.tot;
}

}  // namespace

// sum, sum of squares, argmax: one f32 input.
void bench_unary(const Context& c, const std::string& name, std::size_t n, std::uint32_t seed) {
  const std::size_t nbuf = copies_for(n * sizeof(float), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float));
  fill(c, xs.as<float>(), nbuf * n, seed);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find(name).build();
  const ff::Expr x = program.inputs().at(0);
  ff::Runtime& rt = *c.rt;
  CubTemp temp;
  std::size_t tb = 0;
  std::function<void(std::size_t)> cub_call;
  std::string cub_variant;

  if (name == "sum") {
    cub_variant = "DeviceReduce::Sum";
    CK(cub::DeviceReduce::Sum(nullptr, tb, xs.as<float>(), (float*)c.small_out, (std::int64_t)n, c.stream));
    temp.reserve(tb);
    cub_call = [&](std::size_t k) {
      std::size_t b = temp.bytes;
      CK(cub::DeviceReduce::Sum(temp.ptr, b, xs.as<float>() + k * n, (float*)c.small_out, (std::int64_t)n, c.stream));
      cub_finish(c, sizeof(float));
    };
  } else if (name == "sum_of_squares") {
    cub_variant = "DeviceReduce::TransformReduce";
    CK(cub::DeviceReduce::TransformReduce(nullptr, tb, xs.as<float>(), (float*)c.small_out, (std::int64_t)n,
                                          ::cuda::std::plus<float>{}, Square{}, 0.0f, c.stream));
    temp.reserve(tb);
    cub_call = [&](std::size_t k) {
      std::size_t b = temp.bytes;
      CK(cub::DeviceReduce::TransformReduce(temp.ptr, b, xs.as<float>() + k * n, (float*)c.small_out,
                                            (std::int64_t)n, ::cuda::std::plus<float>{}, Square{}, 0.0f,
                                            c.stream));
      cub_finish(c, sizeof(float));
    };
  } else {  // argmax
    cub_variant = "DeviceReduce::ArgMax";
    float* d_max = (float*)c.small_out;
    std::int64_t* d_idx = (std::int64_t*)((char*)c.small_out + 8);
    CK(cub::DeviceReduce::ArgMax(nullptr, tb, xs.as<float>(), d_max, d_idx, (std::int64_t)n, c.stream));
    temp.reserve(tb);
    cub_call = [&, d_max, d_idx](std::size_t k) {
      std::size_t b = temp.bytes;
      CK(cub::DeviceReduce::ArgMax(temp.ptr, b, xs.as<float>() + k * n, d_max, d_idx, (std::int64_t)n, c.stream));
      cub_finish(c, 16);
    };
  }

  const bool timing_mode = g_device_mode;
  g_device_mode = false;  // the checks read results on the host
  // Correctness on copy 0.
  std::string check = "ok";
  {
    std::vector<ff::Result> got = rt.run(program, {{x, span_of<float>(xs, 0, n)}});
    cub_call(0);
    if (name == "argmax") {
      const float fv = got.at(0).value()[0].as_float();
      const std::int64_t fi = got.at(0).value()[1].as_int();
      float cv;
      std::int64_t ci;
      std::memcpy(&cv, c.host_out, 4);
      std::memcpy(&ci, (char*)c.host_out + 8, 8);
      if (fv != cv || fi != ci) {
        check = "MISMATCH";
        report_mismatch(name + " n=" + std::to_string(n) + ": fuseflow (" + std::to_string(fv) + ", " +
                        std::to_string(fi) + ") vs CUB (" + std::to_string(cv) + ", " + std::to_string(ci) + ")");
      }
    } else {
      const float fv = got.at(0).value().as_float();
      float cv;
      std::memcpy(&cv, c.host_out, 4);
      if (!close_rel(fv, cv)) {
        check = "MISMATCH";
        report_mismatch(name + " n=" + std::to_string(n) + ": fuseflow " + std::to_string(fv) + " vs CUB " +
                        std::to_string(cv));
      }
    }
  }

  g_device_mode = timing_mode;
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) { (void)ff_call(rt, program, {{x, span_of<float>(xs, k, n)}}); },
      cub_call,
      [&](std::size_t k) { launch_ceiling(c, xs.as<float>() + k * n, nullptr, n); },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  Row r;
  r.op = name == "sum" ? "sum f32" : name == "sum_of_squares" ? "sum of squares" : "argmax f32";
  r.n = n;
  r.bytes = (double)n * sizeof(float);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = cub_variant;
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

void bench_dot(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(2 * n * sizeof(float), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float)), ys(nbuf * n * sizeof(float));
  fill(c, xs.as<float>(), nbuf * n, 11);
  fill(c, ys.as<float>(), nbuf * n, 12);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find("dot").build();
  const ff::Expr x = program.inputs().at(0), y = program.inputs().at(1);
  ff::Runtime& rt = *c.rt;
  CubTemp temp;
  std::size_t tb = 0;
  auto zipped = [&](std::size_t k) {
    return thrust::make_zip_iterator(xs.as<float>() + k * n, ys.as<float>() + k * n);
  };
  CK(cub::DeviceReduce::TransformReduce(nullptr, tb, zipped(0), (float*)c.small_out, (std::int64_t)n,
                                        ::cuda::std::plus<float>{}, Product{}, 0.0f, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceReduce::TransformReduce(temp.ptr, b, zipped(k), (float*)c.small_out, (std::int64_t)n,
                                          ::cuda::std::plus<float>{}, Product{}, 0.0f, c.stream));
    cub_finish(c, sizeof(float));
  };

  std::string check = "ok";
  const bool timing_mode = g_device_mode;
  g_device_mode = false;  // the checks read results on the host
  {
    const float fv = rt.run(program, {{x, span_of<float>(xs, 0, n)}, {y, span_of<float>(ys, 0, n)}}).at(0).value().as_float();
    cub_call(0);
    float cv;
    std::memcpy(&cv, c.host_out, 4);
    if (!close_rel(fv, cv)) {
      check = "MISMATCH";
      report_mismatch("dot n=" + std::to_string(n) + ": fuseflow " + std::to_string(fv) + " vs CUB " + std::to_string(cv));
    }
  }
  g_device_mode = timing_mode;
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) { (void)ff_call(rt, program, {{x, span_of<float>(xs, k, n)}, {y, span_of<float>(ys, k, n)}}); },
      cub_call,
      [&](std::size_t k) { launch_ceiling(c, xs.as<float>() + k * n, ys.as<float>() + k * n, n); },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  Row r;
  r.op = "dot f32";
  r.n = n;
  r.bytes = 2.0 * n * sizeof(float);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "TransformReduce(zip, x*y)";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

void bench_mssp(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(n * sizeof(int), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(int));
  DeviceBuffer scan_out(n * sizeof(Mssp));
  fill(c, xs.as<int>(), nbuf * n, 21);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find("mssp").build();
  const ff::Expr x = program.inputs().at(0);
  ff::Runtime& rt = *c.rt;
  auto parts = [&](std::size_t k) { return thrust::make_transform_iterator(xs.as<int>() + k * n, MsspParts{}); };
  CubTemp temp;
  std::size_t tb_scan = 0, tb_reduce = 0;
  CK(cub::DeviceScan::InclusiveScan(nullptr, tb_scan, parts(0), scan_out.as<Mssp>(), MsspOp{}, (std::int64_t)n,
                                    c.stream));
  CK(cub::DeviceReduce::Reduce(nullptr, tb_reduce, parts(0), (Mssp*)c.small_out, (std::int64_t)n, MsspOp{},
                               Mssp{0, 0, 0, 0}, c.stream));
  temp.reserve(std::max(tb_scan, tb_reduce));
  auto cub_scan = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceScan::InclusiveScan(temp.ptr, b, parts(k), scan_out.as<Mssp>(), MsspOp{}, (std::int64_t)n,
                                      c.stream));
    cub_finish_from(c, scan_out.as<Mssp>() + (n - 1), sizeof(Mssp));
  };
  auto cub_reduce = [&](std::size_t k) {
    std::size_t b = temp.bytes;
    CK(cub::DeviceReduce::Reduce(temp.ptr, b, parts(k), (Mssp*)c.small_out, (std::int64_t)n, MsspOp{},
                                 Mssp{0, 0, 0, 0}, c.stream));
    cub_finish(c, sizeof(Mssp));
  };

  const bool timing_mode = g_device_mode;
  g_device_mode = false;  // the checks read results on the host
  // Correctness on copy 0: fuseflow and CUB's scan against the CPU; CUB's Reduce reported.
  std::vector<int> host(n);
  CK(cudaMemcpy(host.data(), xs.ptr, n * sizeof(int), cudaMemcpyDeviceToHost));
  const Mssp want = mssp_cpu(host);
  const ff::Value fvv = rt.run(program, {{x, span_of<int>(xs, 0, n)}}).at(0).value();
  const Mssp fv{(int)fvv[0].as_int(), (int)fvv[1].as_int(), (int)fvv[2].as_int(), (int)fvv[3].as_int()};
  cub_scan(0);
  Mssp scan_v;
  std::memcpy(&scan_v, c.host_out, sizeof scan_v);
  cub_reduce(0);
  Mssp reduce_v;
  std::memcpy(&reduce_v, c.host_out, sizeof reduce_v);
  std::string check = "ok (= CPU)";
  if (!same(fv, want)) {
    check = "MISMATCH vs CPU";
    report_mismatch("mssp n=" + std::to_string(n) + ": fuseflow " + str(fv) + " vs CPU " + str(want));
  }
  if (!same(scan_v, want)) {
    check += "; CUB scan differs from CPU";
    report_mismatch("mssp n=" + std::to_string(n) + ": CUB InclusiveScan last " + str(scan_v) + " vs CPU " + str(want));
  }
  const bool reduce_right = same(reduce_v, want);
  std::printf("  %-15s 2^%-3d CUB DeviceReduce::Reduce(MSSP) = %s, right answer %s: %s\n", "mssp note",
              (int)std::lround(std::log2((double)n)), str(reduce_v).c_str(), str(want).c_str(),
              reduce_right ? "same (this time)" : "WRONG (non-commutative operator unsupported)");

  g_device_mode = timing_mode;
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t k) { (void)ff_call(rt, program, {{x, span_of<int>(xs, k, n)}}); },
      cub_scan,
      [&](std::size_t k) { launch_ceiling(c, reinterpret_cast<const float*>(xs.as<int>() + k * n), nullptr, n); },
      cub_reduce,
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  Row r;
  r.op = "mssp 4xi32";
  r.n = n;
  r.bytes = (double)n * sizeof(int);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceScan::InclusiveScan + last";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
  Row w = r;
  w.mode = g_device_mode ? "device" : "sync";  // add_row set the mode of its own copy, not r's
  w.op = "mssp CUB Reduce";
  w.cub_us = t[3];
  w.cub_variant = "DeviceReduce::Reduce (non-commutative: unsupported)";
  w.check = reduce_right ? "CUB Reduce agreed this time" : "CUB Reduce WRONG";
  std::printf("  %-15s 2^%-3d %10s %10.2f  (CUB DeviceReduce::Reduce with MSSP, %s)\n", "mssp CUB Reduce",
              (int)std::lround(std::log2((double)n)), "-", t[3], reduce_right ? "right this time" : "wrong answer");
  g_rows.push_back(std::move(w));
}

}  // namespace ffbench
