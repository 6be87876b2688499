// fuseflow-bench: fuseflow against CUB on the same device buffers in the same run
// (DESIGN.md "Performance method", issue 4 "Benchmark", ../shared/ANCHORS.md).
//
//   fuseflow-bench [--min-log2 N] [--max-log2 N] [--quick] [--reps R] [--only GROUPS] [--device-only]
//
// For n in {2^10, 2^16, 2^20, 2^24, 2^28}: sum f32, sum of squares, dot, argmax f32 and
// MSSP (non-commutative 4 x i32), each timed for fuseflow, for CUB and for a float4
// streaming-read ceiling kernel over the same input buffers; and scans (inclusive sum
// f32, exclusive sum i32, linear recurrence over (a, b) pairs) beside CUB's DeviceScan and
// a device-to-device copy of the same bytes (see bench_scan); histograms, segmented sums,
// sort_by_key beside DeviceRadixSort::SortPairs (see bench_sort), stream compaction
// (filter x > 0, half kept) beside DeviceSelect::If (see bench_filter), and from 2^24 a
// segmented scan, a scan by key and a reduce by key over random segments of 10..50 beside
// CUB's InclusiveSumByKey and ReduceByKey (see bench_keyed). Timing: CUDA events on
// fuseflow's stream (CUB and the ceiling run on that stream too), warm-up, median of the
// repetitions, the three variants interleaved in every repetition. Every timed call is
// what a user pays for a reduction's value on the host: launch(es), the copy of the
// result to the host and the stream synchronisation (fuseflow's rt.run does all three;
// CUB and the ceiling kernel do the same explicitly). Where an op's inputs fit in four
// times the L2, the inputs are rotated over enough copies (>= 3 x L2 in all) that every
// call reads them from HBM, not from L2.
//
// Writes bench.csv (and bench.png when python3 has matplotlib) to $FUSEFLOW_BENCH_OUT,
// else to the current directory.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "catalog/catalog.hpp"

#ifndef FUSEFLOW_BENCH_PLOT_SCRIPT
#define FUSEFLOW_BENCH_PLOT_SCRIPT "bench/plot.py"
#endif

namespace ff = fuseflow;
using Clock = std::chrono::steady_clock;

namespace {

// --- errors ----------------------------------------------------------------------------
void cuda_check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "fuseflow-bench: %s failed (line %d): %s\n", what, line, cudaGetErrorString(e));
    std::exit(1);
  }
}
#define CK(call) cuda_check((call), #call, __LINE__)

// --- random inputs (never zero), generated on the device -------------------------------
__host__ __device__ inline std::uint32_t hash32(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z);
}

// Floats in (-0.5, 1]: mixed signs, a sum far from zero (so relative checks are meaningful).
__global__ void fill_float(float* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    float v = -0.5f + 1.5f * (float)((hash32(i, seed) >> 8) + 1) * (1.0f / 16777216.0f);
    x[i] = v == 0.0f ? 0.25f : v;
  }
}

// Floats in (-1, 1], never zero: x > 0 keeps half of them (the filter rows).
__global__ void fill_signed(float* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    float v = -1.0f + 2.0f * (float)((hash32(i, seed) >> 8) + 1) * (1.0f / 16777216.0f);
    x[i] = v == 0.0f ? 0.5f : v;
  }
}

// Integers in [-100, -1] U [1, 100]: mean zero, so segment sums stay small.
__global__ void fill_int(int* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x) {
    std::uint32_t h = hash32(i, seed);
    int v = 1 + (int)((h >> 1) % 100u);
    x[i] = (h & 1u) ? v : -v;
  }
}

// Integers in [0, 256): every value lands in one of the 256 bins of both histograms.
__global__ void fill_bytes(int* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < n;
       i += (std::size_t)gridDim.x * blockDim.x)
    x[i] = (int)(hash32(i, seed) & 255u);
}

// --- the streaming-read ceiling: float4 grid-stride sum over one or two arrays ----------
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float read4(const float4* p, std::size_t i) {
  const float4 v = __ldcs(p + i);  // streaming: no reuse
  return (v.x + v.y) + (v.z + v.w);
}

// Reads `n4` float4s of a (and of b when not null), ignores any tail (n is a multiple of
// 4 here), and accumulates one float per block into *out so nothing is optimised away.
__global__ void __launch_bounds__(512) read_ceiling(const float4* __restrict__ a, const float4* __restrict__ b,
                                                    std::size_t n4, float* out) {
  float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
  const std::size_t stride = (std::size_t)gridDim.x * blockDim.x;
  std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    acc0 += read4(a, i);
    acc1 += read4(a, i + stride);
    acc2 += read4(a, i + 2 * stride);
    acc3 += read4(a, i + 3 * stride);
    if (b) {
      acc0 += read4(b, i);
      acc1 += read4(b, i + stride);
      acc2 += read4(b, i + 2 * stride);
      acc3 += read4(b, i + 3 * stride);
    }
  }
  for (; i < n4; i += stride) {
    acc0 += read4(a, i);
    if (b) acc1 += read4(b, i);
  }
  float v = warp_sum((acc0 + acc1) + (acc2 + acc3));
  __shared__ float warps[32];
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) atomicAdd(out, v);
  }
}

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
struct Positive {  // the predicate of the catalog's filter_positive
  __host__ __device__ bool operator()(float v) const { return v > 0.0f; }
};
__host__ __device__ inline int imax(int a, int b) { return a > b ? a : b; }
struct MsspOp {  // the same (non-commutative) operator as ff::catalog::mssp()
  __host__ __device__ Mssp operator()(const Mssp& a, const Mssp& b) const {
    return Mssp{imax(imax(a.best, b.best), a.suf + b.pre), imax(a.pre, a.tot + b.pre),
                imax(b.suf, a.suf + b.tot), a.tot + b.tot};
  }
};

// --- options --------------------------------------------------------------------------
struct Options {
  int max_log2 = 28;
  int min_log2 = 0;
  bool quick = false;
  int reps = 0;  // 0: the default for each size
  std::string only;        // comma-separated groups to run; empty: all
  bool device_only = false;  // skip the end-to-end mode
  // Whether group `name` (compile, scan, reduce, histogram, segmented, course, ...) runs.
  bool wants(const char* name) const {
    if (only.empty()) return true;
    const std::string list = "," + only + ",";
    return list.find("," + std::string(name) + ",") != std::string::npos;
  }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-log2" && i + 1 < argc) {
      o.max_log2 = std::atoi(argv[++i]);
    } else if (a == "--min-log2" && i + 1 < argc) {
      o.min_log2 = std::atoi(argv[++i]);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (a == "--device-only") {
      o.device_only = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: fuseflow-bench [--min-log2 N] [--max-log2 N] [--quick] [--reps R] [--only GROUPS] [--device-only]\n"
                  "  sizes 2^10, 2^16, 2^20, 2^24, 2^28 from 2^min-log2 up to 2^max-log2 (default 28);\n"
                  "  --quick: sizes up to 2^20 and 10 repetitions; --reps: repetitions per size\n"
                  "  --only: comma-separated groups among compile, scan, reduce, histogram, segmented, sort, filter, keyed, course\n"
                  "  --device-only: device time only, no end-to-end mode\n"
                  "  output: a table on stdout, bench.csv (+ bench.png) in $FUSEFLOW_BENCH_OUT or cwd\n");
      std::exit(0);
    } else {
      std::fprintf(stderr, "fuseflow-bench: unknown argument '%s' (try --help)\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.quick) o.max_log2 = std::min(o.max_log2, 20);
  return o;
}

// --- timing ---------------------------------------------------------------------------
// Two ways of timing, both printed:
//  device: calls go back to back (kBatch per timed group), fuseflow through run_async and
//          CUB without copying its result out: GPU time per call, host work overlapped.
//  sync:   every call ends with the result on the host (copy + stream sync), which is what
//          rt.run does: end-to-end latency, dominated by the fixed round trip at small n.
bool g_device_mode = true;
constexpr int kBatch = 10;
// Array results of the calls being timed (scans): freed only after a timed batch, since
// freeing device memory waits for the device.
std::vector<ff::Result> g_keep_alive;

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Each variant is called with a buffer index; in repetition r variant v reads buffer
// (r * variants + v) % nbuf, so two consecutive calls never read the same copy.
std::vector<double> time_interleaved(cudaStream_t stream, int warmup, int reps, std::size_t nbuf,
                                     const std::vector<std::function<void(std::size_t)>>& variants) {
  const std::size_t nv = variants.size();
  std::size_t call = 0;
  for (int w = 0; w < warmup; ++w)
    for (std::size_t v = 0; v < nv; ++v) variants[v](call++ % nbuf);
  CK(cudaStreamSynchronize(stream));
  g_keep_alive.clear();
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<std::vector<double>> us(nv);
  for (int r = 0; r < reps; ++r) {
    for (std::size_t v = 0; v < nv; ++v) {
      const int batch = g_device_mode ? kBatch : 1;
      CK(cudaEventRecord(start, stream));
      for (int b = 0; b < batch; ++b) variants[v](call++ % nbuf);
      CK(cudaEventRecord(stop, stream));
      CK(cudaEventSynchronize(stop));
      g_keep_alive.clear();
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start, stop));
      us[v].push_back(ms * 1000.0 / batch);
    }
  }
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));
  std::vector<double> out;
  for (auto& u : us) out.push_back(median(u));
  return out;
}

// --- device buffers -------------------------------------------------------------------
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { CK(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes)); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

struct CubTemp {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  void reserve(std::size_t b) {
    if (b <= bytes) return;
    if (ptr) CK(cudaFree(ptr));
    CK(cudaMalloc(&ptr, b));
    bytes = b;
  }
  ~CubTemp() {
    if (ptr) cudaFree(ptr);
  }
};

bool close_rel(double a, double b, double rel = 1e-3) {
  const double scale = std::max({std::fabs(a), std::fabs(b), 1e-30});
  return std::fabs(a - b) <= rel * scale;
}


struct Row {
  std::string mode;
  std::string op;
  std::size_t n = 0;
  double bytes = 0;
  double ff_us = NAN, cub_us = NAN, ceil_us = NAN;
  std::string cub_variant;
  std::string check;
  std::size_t nbuf = 1;
  int reps = 0;
};

std::vector<Row> g_rows;
int g_mismatches = 0;

void report_mismatch(const std::string& what) {
  ++g_mismatches;
  std::printf("\n!!!!!!!! MISMATCH: %s !!!!!!!!\n\n", what.c_str());
  std::fflush(stdout);
}

// --- the benchmark of one size ---------------------------------------------------------
struct Context {
  ff::Runtime* rt;
  cudaStream_t stream;
  std::size_t l2_bytes;
  int sms;
  int warmup;
  int reps;
  float* ceil_out;   // device float for the ceiling kernel
  void* small_out;   // 64 device bytes for CUB results
  void* host_out;    // 64 pinned host bytes
};

std::size_t copies_for(std::size_t set_bytes, std::size_t l2) {
  if (set_bytes >= 4 * l2) return 1;
  return std::max<std::size_t>(2, (3 * l2 + set_bytes - 1) / set_bytes);
}

void launch_ceiling(const Context& c, const float* a, const float* b, std::size_t n) {
  const std::size_t n4 = n / 4;
  int blocks = c.sms * 4;
  const std::size_t needed = (n4 + 511) / 512;
  if ((std::size_t)blocks > needed) blocks = (int)std::max<std::size_t>(1, needed);
  CK(cudaMemsetAsync(c.ceil_out, 0, sizeof(float), c.stream));
  read_ceiling<<<blocks, 512, 0, c.stream>>>(reinterpret_cast<const float4*>(a),
                                             reinterpret_cast<const float4*>(b), n4, c.ceil_out);
  if (g_device_mode) return;
  CK(cudaMemcpyAsync(c.host_out, c.ceil_out, sizeof(float), cudaMemcpyDeviceToHost, c.stream));
  CK(cudaStreamSynchronize(c.stream));
}

// fuseflow's call: the scalar stays on the device in device mode.
std::vector<ff::Result> ff_call(ff::Runtime& rt, const ff::Program& p, const ff::Bindings& b) {
  return g_device_mode ? rt.run_async(p, b) : rt.run(p, b);
}

void cub_finish_from(const Context& c, const void* src, std::size_t bytes) {
  if (g_device_mode) return;
  CK(cudaMemcpyAsync(c.host_out, src, bytes, cudaMemcpyDeviceToHost, c.stream));
  CK(cudaStreamSynchronize(c.stream));
}

void cub_finish(const Context& c, std::size_t bytes) {
  if (g_device_mode) return;
  CK(cudaMemcpyAsync(c.host_out, c.small_out, bytes, cudaMemcpyDeviceToHost, c.stream));
  CK(cudaStreamSynchronize(c.stream));
}

template <class T>
ff::device_span<T> span_of(const DeviceBuffer& b, std::size_t k, std::size_t n) {
  return ff::device_span<T>(b.as<T>() + k * n, n);
}

void fill(const Context& c, float* x, std::size_t count, std::uint32_t seed) {
  fill_float<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}
void fill(const Context& c, int* x, std::size_t count, std::uint32_t seed) {
  fill_int<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}

void add_row(Row r) {
  r.mode = g_device_mode ? "device" : "sync";
  std::printf("  %-15s 2^%-3d %10.2f %10.2f %7.2fx %9.1f %7.1f%%  %s\n", r.op.c_str(),
              (int)std::lround(std::log2((double)r.n)), r.ff_us, r.cub_us, r.cub_us / r.ff_us,
              r.bytes / (r.ff_us * 1e3), 100.0 * r.ceil_us / r.ff_us, r.check.c_str());
  std::fflush(stdout);
  g_rows.push_back(std::move(r));
}

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
  w.op = "mssp CUB Reduce";
  w.cub_us = t[3];
  w.cub_variant = "DeviceReduce::Reduce (non-commutative: unsupported)";
  w.check = reduce_right ? "CUB Reduce agreed this time" : "CUB Reduce WRONG";
  std::printf("  %-15s 2^%-3d %10s %10.2f  (CUB DeviceReduce::Reduce with MSSP, %s)\n", "mssp CUB Reduce",
              (int)std::lround(std::log2((double)n)), "-", t[3], reduce_right ? "right this time" : "wrong answer");
  g_rows.push_back(std::move(w));
}

// --- histogram: 256 bins of i32 values in [0, 256) ------------------------------------
// fuseflow: the catalog's histogram_256 (bin = x & 255, u32 counts); CUB: HistogramEven
// with 257 levels over [0, 256). Both count every element; the counts are compared exactly.
void bench_histogram(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(n * sizeof(int), c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(int));
  fill_bytes<<<c.sms * 8, 256, 0, c.stream>>>(xs.as<int>(), nbuf * n, 11);
  CK(cudaGetLastError());
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

// --- segmented sum by offsets: one huge segment, random lengths 10..50, all of length 3 --
// fuseflow: the catalog's segmented_sum (i32 offsets); CUB: DeviceSegmentedReduce::Sum
// (begin = offsets, end = offsets + 1). CUB is very slow on one segment and on segments of
// 3 (tens of ms at 2^24 and up), so from 2^24 on it gets 3 repetitions of one call each.
// Every fuseflow call allocates its n_segments outputs (the executor's array results); in
// device mode they are kept alive through a batch (g_keep_alive), as the scans' are.
// Offsets of segments covering n elements: one segment (scenario 0), random lengths
// 10..50 (1), all of length 3 (2).
std::vector<int> segment_offsets(std::size_t n, int scenario) {
  std::vector<int> offsets = {0};
  if (scenario == 0) {
    offsets.push_back((int)n);
  } else {
    std::uint64_t state = 12345;
    while ((std::size_t)offsets.back() < n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::size_t len = scenario == 1 ? 10 + (state >> 33) % 41 : 3;
      offsets.push_back((int)std::min(n, (std::size_t)offsets.back() + len));
    }
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

// --- sort_by_key: u32 values by u32 keys in [0, 256) ------------------------------------
// fuseflow: the catalog's sort_by_key_256 (a stable counting sort over 256 bins: tile
// counts, their scan, the scatter); CUB: DeviceRadixSort::SortPairs over the keys' low 8
// bits (begin_bit 0, end_bit 8: one digit pass), also stable, into preallocated outputs.
// Sorted keys and values are compared exactly. Bytes: keys and values read once and
// written once (16 per element); the ceiling reads the keys and the values.
void bench_sort(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(2 * n * sizeof(unsigned), c.l2_bytes);
  DeviceBuffer keys(nbuf * n * sizeof(unsigned)), values(nbuf * n * sizeof(unsigned));
  DeviceBuffer cub_keys(n * sizeof(unsigned)), cub_values(n * sizeof(unsigned));
  fill_bytes<<<c.sms * 8, 256, 0, c.stream>>>(keys.as<int>(), nbuf * n, 51);
  CK(cudaGetLastError());
  fill(c, values.as<int>(), nbuf * n, 52);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find("sort_by_key_256").build();
  ff::Expr k, v;
  for (const auto& in : program.inputs()) (in.node().name == "k" ? k : v) = in;
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t b) {
    return ff::Bindings{{k, span_of<unsigned>(keys, b, n)}, {v, span_of<unsigned>(values, b, n)}};
  };
  CubTemp temp;
  std::size_t tb = 0;
  CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, keys.as<unsigned>(), cub_keys.as<unsigned>(), values.as<unsigned>(),
                                     cub_values.as<unsigned>(), (int)n, 0, 8, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t b) {
    std::size_t bytes = temp.bytes;
    CK(cub::DeviceRadixSort::SortPairs(temp.ptr, bytes, keys.as<unsigned>() + b * n, cub_keys.as<unsigned>(),
                                       values.as<unsigned>() + b * n, cub_values.as<unsigned>(), (int)n, 0, 8,
                                       c.stream));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  std::string check = "ok (keys and values = CUB)";
  {
    std::vector<ff::Result> got = rt.run(program, bindings(0));
    cub_call(0);
    CK(cudaStreamSynchronize(c.stream));
    std::vector<unsigned> want_keys(n), want_values(n);
    CK(cudaMemcpy(want_keys.data(), cub_keys.ptr, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want_values.data(), cub_values.ptr, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    const std::vector<unsigned> mine_keys = got.at(0).download<unsigned>(), mine_values = got.at(1).download<unsigned>();
    std::size_t bad = 0, first_bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      if ((mine_keys[i] != want_keys[i] || mine_values[i] != want_values[i]) && bad++ == 0) first_bad = i;
    if (mine_keys.size() != n || bad) {
      check = "MISMATCH";
      report_mismatch("sort_by_key 256 n=" + std::to_string(n) + ": " + std::to_string(bad) +
                      " elements differ from CUB, the first at " + std::to_string(first_bad));
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t b) {
        std::vector<ff::Result> r = ff_call(rt, program, bindings(b));
        if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
        for (auto& x : r) g_keep_alive.push_back(std::move(x));
      },
      cub_call,
      [&](std::size_t b) {
        launch_ceiling(c, reinterpret_cast<const float*>(keys.as<unsigned>() + b * n),
                       reinterpret_cast<const float*>(values.as<unsigned>() + b * n), n);
      },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = "sort_by_key 256";
  r.n = n;
  r.bytes = (double)n * 4 * sizeof(unsigned);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceRadixSort::SortPairs bits [0, 8)";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

// The program's one kernel, loaded from its generated source, launched on the runtime's
// stream with caller-owned inputs, output and scratch.
// Tile status is at most 4 + 2 * 8 bytes per tile here (flags, aggregates and prefixes of
// a pair); 32 per tile is room enough.
struct DirectKernel {
  ff::KernelHandle handle;
  ff::codegen::Kernel kernel;
  std::unique_ptr<DeviceBuffer> counters;  // the tile counter (Ticket 1), left zeroed by the kernel; a count
  std::unique_ptr<DeviceBuffer> status;    // look-back status, never cleared: one epoch per launch
  unsigned epoch = 0;
  std::size_t planned_n = 0;
  int grid = 0;

  DirectKernel(ff::Runtime& rt, const ff::Program& p, std::size_t n) {
    ff::codegen::Plan plan = ff::codegen::plan(p, ff::codegen::Target::preset("sm_90"));
    // The kernel run picks for n (a plain scan has a second one for large n: the pipelined
    // scan on sm_90), with its grid and dynamic shared memory.
    const ff::codegen::Schedule schedule = plan.schedule((std::int64_t)n);
    if (schedule.launches.size() != 1) throw std::runtime_error("direct kernel: expected one launch");
    kernel = plan.kernels.at((std::size_t)schedule.launches[0].kernel);
    planned_n = n;
    grid = schedule.launches[0].grid;  // one block per tile, or per SM for the pipelined scan
    counters = std::make_unique<DeviceBuffer>(4 * sizeof(unsigned));
    status = std::make_unique<DeviceBuffer>(32 * tiles(n));
    CK(cudaMemset(counters->ptr, 0, 4 * sizeof(unsigned)));
    CK(cudaMemset(status->ptr, 0, 32 * tiles(n)));
    std::vector<ff::Header> headers;
    for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
    handle = rt.load_kernel(kernel.source, kernel.name, rt.compile_options(), headers);
  }

  // A compaction's survivor count (its one output's OutputCount argument).
  unsigned long long* count() const { return reinterpret_cast<unsigned long long*>(counters->as<unsigned>() + 2); }

  std::size_t tiles(std::size_t n) const {
    return (n + kernel.items_per_block_step - 1) / kernel.items_per_block_step;
  }

  void launch(ff::Runtime& rt, cudaStream_t stream, const std::vector<const void*>& inputs, void* output,
              std::size_t n) {
    if (++epoch > ff::codegen::kMaxLookbackEpoch) {
      CK(cudaMemsetAsync(status->ptr, 0, 32 * tiles(n), stream));
      epoch = 1;
    }
    std::vector<CUdeviceptr> ptrs;
    long long length = (long long)n;
    ptrs.reserve(kernel.args.size());
    std::vector<void*> args;
    for (const auto& a : kernel.args) {
      switch (a.kind) {
        case ff::codegen::Arg::Kind::Input: ptrs.push_back((CUdeviceptr)inputs.at((std::size_t)a.index)); break;
        case ff::codegen::Arg::Kind::Output: ptrs.push_back((CUdeviceptr)output); break;
        case ff::codegen::Arg::Kind::Ticket:
          ptrs.push_back((CUdeviceptr)(counters->as<unsigned>() + a.index));
          break;
        case ff::codegen::Arg::Kind::TileStatus: ptrs.push_back((CUdeviceptr)status->ptr); break;
        case ff::codegen::Arg::Kind::OutputCount: ptrs.push_back((CUdeviceptr)count()); break;
        case ff::codegen::Arg::Kind::Length:
        case ff::codegen::Arg::Kind::Epoch: ptrs.push_back(0); break;
        default: throw std::runtime_error("direct kernel: unexpected kernel argument " + a.name);
      }
    }
    for (std::size_t i = 0; i < kernel.args.size(); ++i) {
      const auto kind = kernel.args[i].kind;
      args.push_back(kind == ff::codegen::Arg::Kind::Length  ? (void*)&length
                     : kind == ff::codegen::Arg::Kind::Epoch ? (void*)&epoch
                                                             : (void*)&ptrs[i]);
    }
    if (n != planned_n) throw std::runtime_error("direct kernel: launched for another n than planned");
    rt.launch(handle, ff::Dim3{(unsigned)grid}, ff::Dim3{(unsigned)kernel.block}, kernel.shared_bytes, args.data());
  }
};

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
  fill_signed<<<c.sms * 8, 256, 0, c.stream>>>(xs.as<float>(), nbuf * n, 51);
  CK(cudaGetLastError());
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

// --- NVRTC compile: first run of a fresh program -----------------------------------------
struct CompileRow {
  std::string program;
  double cold_ms = NAN;     // fresh Runtime, memory-only cache: NVRTC compile + load + run
  double default_ms = NAN;  // fresh Runtime with the environment's cache (disk hit if populated)
  std::string default_outcome;
  double warm_us = NAN;     // a later run of the same Program (memoised plan, memory hit)
};

std::vector<CompileRow> measure_compile(const Options&) {
  const std::vector<std::string> names = {"sum", "sum_of_squares", "dot", "argmax", "mssp"};
  const std::size_t n = 1 << 16;
  std::vector<CompileRow> rows(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) rows[i].program = names[i];

  auto run_first = [&](ff::Runtime& rt, std::size_t i, double* first_ms, double* warm_us) {
    ff::Program p = ff::catalog::find(names[i]).build();
    ff::Bindings b;
    std::vector<ff::DeviceArray<float>> fa;
    std::vector<ff::DeviceArray<int>> ia;
    for (const ff::Expr& in : p.inputs()) {
      if (names[i] == "mssp") {
        std::vector<int> h(n);
        for (std::size_t j = 0; j < n; ++j) h[j] = (int)(hash32(j, 5) % 201u) - 100 == 0 ? 1 : (int)(hash32(j, 5) % 201u) - 100;
        ia.push_back(rt.upload(h));
      } else {
        std::vector<float> h(n);
        for (std::size_t j = 0; j < n; ++j) h[j] = 0.5f + (float)(hash32(j, 7 + (unsigned)fa.size()) >> 8) / 16777216.0f;
        fa.push_back(rt.upload(h));
      }
    }
    std::size_t fi = 0, ii = 0;
    for (const ff::Expr& in : p.inputs()) {
      if (names[i] == "mssp")
        b.push_back({in, ff::Binding(ia[ii++])});
      else
        b.push_back({in, ff::Binding(fa[fi++])});
    }
    rt.synchronize();
    auto t0 = Clock::now();
    (void)rt.run(p, b);
    auto t1 = Clock::now();
    *first_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (warm_us) {
      std::vector<double> w;
      for (int r = 0; r < 21; ++r) {
        auto a = Clock::now();
        (void)rt.run(p, b);
        w.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      }
      *warm_us = median(w);
    }
  };

  {
    ff::RuntimeOptions o;
    o.cache = ff::CacheSettings{};  // memory only: as FUSEFLOW_CACHE=0, every kernel is compiled
    ff::Runtime cold(o);
    for (std::size_t i = 0; i < names.size(); ++i) run_first(cold, i, &rows[i].cold_ms, &rows[i].warm_us);
  }
  {
    ff::Runtime def;  // the environment's cache settings
    for (std::size_t i = 0; i < names.size(); ++i) {
      const ff::CacheStats before = def.cache().stats();
      run_first(def, i, &rows[i].default_ms, nullptr);
      const ff::CacheStats after = def.cache().stats();
      rows[i].default_outcome = after.compiles > before.compiles     ? "compiled"
                                : after.disk_hits > before.disk_hits ? "disk hit"
                                                                     : "memory hit";
    }
  }
  return rows;
}


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


// Relative 1e-3, or absolute 1e-3 for values near zero (a recurrence's x).
bool close_float(float got, float want) {
  return close_rel(got, want, 1e-3) || std::fabs((double)got - (double)want) <= 1e-3;
}

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

void bench_scans(const Context& c, int lg) {
  const std::size_t n = std::size_t{1} << lg;
  bench_scan(c, 0, n);
  bench_scan(c, 1, n);
  bench_scan(c, 2, std::size_t{1} << std::min(lg, 27));  // n pairs, up to 2^27 (2 GB moved)
}

// --- segmented scans and reduce by key: random segment lengths 10..50 ------------------
// fuseflow: the catalog's segmented_scan_sum (by i32 offsets), scan_by_key_sum and
// reduce_by_key_sum (by i32 keys, the segment ids); CUB: DeviceScan::InclusiveSumByKey and
// DeviceReduce::ReduceByKey over the same keys. CUB has no scan by offsets: keys are how it
// is told where segments start, so beside the segmented scan it reads n keys where
// fuseflow reads n / 30 offsets. The ceiling is a device-to-device copy of the values.
__global__ void fill_segment_ids(const int* offsets, std::size_t segments, int* keys) {
  for (std::size_t s = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; s < segments;
       s += (std::size_t)gridDim.x * blockDim.x)
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) keys[i] = (int)s;
}

void bench_keyed(const Context& c, std::size_t n, int op) {
  static const char* names[] = {"segscan 10..50", "scanbykey 10..50", "redbykey 10..50"};
  static const char* catalog_names[] = {"segmented_scan_sum", "scan_by_key_sum", "reduce_by_key_sum"};
  static const char* cub_names[] = {"DeviceScan::InclusiveSumByKey (keys = segment ids)", "DeviceScan::InclusiveSumByKey",
                                    "DeviceReduce::ReduceByKey"};
  const std::vector<int> offsets = segment_offsets(n, 1);
  const std::size_t segments = offsets.size() - 1;
  const std::size_t set_bytes = n * sizeof(float) + n * sizeof(int);  // values + keys (CUB's reads)
  const std::size_t nbuf = copies_for(set_bytes, c.l2_bytes);
  DeviceBuffer xs(nbuf * n * sizeof(float)), keys(nbuf * n * sizeof(int)), offs(nbuf * offsets.size() * sizeof(int));
  DeviceBuffer cub_out(n * sizeof(float)), cub_keys(n * sizeof(int)), cub_runs(sizeof(std::int64_t)), copy_out(n * sizeof(float));
  fill(c, xs.as<float>(), nbuf * n, 51 + op);
  for (std::size_t k = 0; k < nbuf; ++k) {
    int* ok = offs.as<int>() + k * offsets.size();
    CK(cudaMemcpyAsync(ok, offsets.data(), offsets.size() * sizeof(int), cudaMemcpyHostToDevice, c.stream));
    fill_segment_ids<<<c.sms * 8, 256, 0, c.stream>>>(ok, segments, keys.as<int>() + k * n);
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
      report_mismatch(std::string(names[op]) + " n=" + std::to_string(n) + ": " + std::to_string(mine.size()) +
                      " results (CUB " + std::to_string(want.size()) + "), " + std::to_string(bad) + " differ from CUB");
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {ff_variant, cub_call, copy_call};
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = names[op];
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

std::string out_dir() {
  const char* d = std::getenv("FUSEFLOW_BENCH_OUT");
  return d && *d ? std::string(d) : std::string(".");
}

void write_csv(const std::string& path, const std::vector<CompileRow>& compile) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "fuseflow-bench: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "mode,op,n,log2n,bytes,fuseflow_us,cub_us,speedup_cub_over_fuseflow,fuseflow_gbps,cub_gbps,"
                  "ceiling_us,ceiling_gbps,pct_of_ceiling,cub_variant,check,buffers,reps\n");
  for (const Row& r : g_rows) {
    std::fprintf(f, "%s,%s,%zu,%d,%.0f,%.3f,%.3f,%.4f,%.2f,%.2f,%.3f,%.2f,%.2f,\"%s\",\"%s\",%zu,%d\n", r.mode.c_str(), r.op.c_str(), r.n,
                 (int)std::lround(std::log2((double)r.n)), r.bytes, r.ff_us, r.cub_us, r.cub_us / r.ff_us,
                 r.bytes / (r.ff_us * 1e3), r.bytes / (r.cub_us * 1e3), r.ceil_us, r.bytes / (r.ceil_us * 1e3),
                 100.0 * r.ceil_us / r.ff_us, r.cub_variant.c_str(), r.check.c_str(), r.nbuf, r.reps);
  }
  std::fclose(f);
  const std::string cpath = path.substr(0, path.size() - 4) + "_compile.csv";
  if (FILE* g = std::fopen(cpath.c_str(), "w")) {
    std::fprintf(g, "program,cold_first_run_ms,default_cache_first_run_ms,default_cache_outcome,warm_run_us\n");
    for (const CompileRow& r : compile)
      std::fprintf(g, "%s,%.3f,%.3f,%s,%.2f\n", r.program.c_str(), r.cold_ms, r.default_ms,
                   r.default_outcome.c_str(), r.warm_us);
    std::fclose(g);
  }
}

int run(const Options& opt) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("fuseflow-bench: no CUDA GPU available (%s); nothing to measure.\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));  // the runtime API binds device 0's primary context, which fuseflow shares
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, rtv = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&rtv);
  std::printf("fuseflow-bench on %s (sm_%d%d, %d SMs, L2 %.1f MB), driver CUDA %d.%d, runtime %d.%d, CCCL %d.%d.%d\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0,
              driver / 1000, (driver % 1000) / 10, rtv / 1000, (rtv % 1000) / 10, CCCL_MAJOR_VERSION,
              CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);

  // Compile figures first, each in a Runtime of its own.
  std::printf("\nFirst run of a fresh program (incl. NVRTC compile), n = 2^16:\n");
  std::printf("  %-15s %14s %22s %14s\n", "program", "cold ms", "default cache ms", "warm run us");
  const std::vector<CompileRow> compile = opt.wants("compile") ? measure_compile(opt) : std::vector<CompileRow>{};
  for (const CompileRow& r : compile)
    std::printf("  %-15s %14.2f %13.2f (%-8s) %12.2f\n", r.program.c_str(), r.cold_ms, r.default_ms,
                r.default_outcome.c_str(), r.warm_us);
  std::printf("  cold: fresh Runtime with a memory-only cache (as FUSEFLOW_CACHE=0): plan + NVRTC + load + run.\n"
              "  default cache: fresh Runtime with the environment's cache (a disk hit once populated).\n"
              "  warm run: median host wall time of a later rt.run of the same Program.\n");

  ff::Runtime rt;
  Context c{};
  c.rt = &rt;
  c.stream = reinterpret_cast<cudaStream_t>(rt.stream());
  c.l2_bytes = prop.l2CacheSize > 0 ? (std::size_t)prop.l2CacheSize : (std::size_t)50 << 20;
  c.sms = prop.multiProcessorCount;
  DeviceBuffer ceil_out(sizeof(float)), small_out(64);
  c.ceil_out = ceil_out.as<float>();
  c.small_out = small_out.ptr;
  CK(cudaMallocHost(&c.host_out, 64));

  std::printf("\nTimes: median of the repetitions, CUDA events on fuseflow's stream; each call includes\n"
              "launch(es) + copy of the result to the host + stream sync. speedup = CUB us / fuseflow us.\n"
              "GB/s = input bytes / fuseflow time; %% ceil = float4 streaming-read kernel time over the\n"
              "same buffers / fuseflow time. MSSP's CUB column is DeviceScan::InclusiveScan + last element.\n\n");
  std::printf("  %-15s %-5s %10s %10s %8s %9s %8s  %s\n", "op", "n", "fuseflow", "CUB", "speedup", "ff GB/s",
              "% ceil", "check");
  std::printf("  %-15s %-5s %10s %10s\n", "", "", "us", "us");

  const int logs[] = {10, 16, 20, 24, 28};
  for (bool device_mode : {true, false}) {
  if (!device_mode && opt.device_only) continue;
  g_device_mode = device_mode;
  std::printf("\n== %s ==\n", device_mode ? "device time per call (back to back, results left on the device)"
                                            : "end to end per call (result copied to the host, stream synchronised)");
  for (int lg : logs) {
    if (lg > opt.max_log2 || lg < opt.min_log2) continue;
    const std::size_t n = std::size_t{1} << lg;
    c.reps = opt.reps > 0 ? opt.reps : opt.quick ? 10 : lg >= 28 ? 20 : 100;
    c.warmup = opt.quick ? 2 : 5;
    if (opt.wants("scan")) bench_scans(c, lg);
    if (opt.wants("reduce")) {
      bench_unary(c, "sum", n, 1);
      bench_unary(c, "sum_of_squares", n, 2);
      bench_dot(c, n);
      bench_unary(c, "argmax", n, 3);
      bench_mssp(c, n);
    }
    if (opt.wants("histogram")) bench_histogram(c, n);
    if (lg >= 20 && opt.wants("segmented"))
      for (int scenario = 0; scenario < 3; ++scenario) bench_segmented(c, n, scenario);
    if (lg >= 24 && opt.wants("sort")) bench_sort(c, n);
    if (lg >= 16 && opt.wants("filter")) bench_filter(c, n);
    if (lg >= 24 && opt.wants("keyed"))  // segmented scan, scan by key, reduce by key
      for (int op = 0; op < 3; ++op) bench_keyed(c, n, op);
    std::printf("\n");
  }
  }
  c.reps = opt.quick ? 10 : 50;
  if (opt.wants("course")) bench_course(c);
  CK(cudaFreeHost(c.host_out));

  const std::string dir = out_dir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string csv = dir + "/bench.csv";
  write_csv(csv, compile);
  std::printf("wrote %s and %s\n", csv.c_str(), (dir + "/bench_compile.csv").c_str());

  const std::string png = dir + "/bench.png";
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
    const std::string cmd = std::string("python3 '") + FUSEFLOW_BENCH_PLOT_SCRIPT + "' '" + csv + "' '" + png + "'";
    if (std::system(cmd.c_str()) == 0)
      std::printf("wrote %s\n", png.c_str());
    else
      std::printf("plot failed (not fatal): %s\n", cmd.c_str());
  } else {
    std::printf("no python3 with matplotlib: skipped the plot (python3 %s %s %s)\n", FUSEFLOW_BENCH_PLOT_SCRIPT,
                csv.c_str(), png.c_str());
  }

  if (g_mismatches) {
    std::printf("\n!!!!!!!! %d MISMATCH(ES): see above !!!!!!!!\n", g_mismatches);
    return 1;
  }
  std::printf("all results checked: fuseflow agrees with CUB (and MSSP with the CPU)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    return run(opt);
  } catch (const ff::CudaError& e) {
    std::printf("fuseflow-bench: CUDA unavailable or failed: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuseflow-bench: error: %s\n", e.what());
    return 1;
  }
}
