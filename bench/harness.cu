// fuseflow-bench's harness: errors, random inputs, the streaming-read ceiling, options,
// timing, and the calls every op group makes (harness.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ffbench {

void cuda_check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "fuseflow-bench: %s failed (line %d): %s\n", what, line, cudaGetErrorString(e));
    std::exit(1);
  }
}

bool g_device_mode = true;
std::vector<ff::Result> g_keep_alive;

namespace {

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

}  // namespace

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
                  "  --only: comma-separated groups among compile, scan, reduce, histogram, segmented, sort, filter, keyed, course,\n"
                  "          latency (small programs: host time per call, beside torch and CuPy), programs, rows\n"
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

void fill(const Context& c, float* x, std::size_t count, std::uint32_t seed) {
  fill_float<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}
void fill(const Context& c, int* x, std::size_t count, std::uint32_t seed) {
  fill_int<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}

void fill_signed_floats(const Context& c, float* x, std::size_t count, std::uint32_t seed) {
  fill_signed<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}
void fill_byte_values(const Context& c, int* x, std::size_t count, std::uint32_t seed) {
  fill_bytes<<<c.sms * 8, 256, 0, c.stream>>>(x, count, seed);
  CK(cudaGetLastError());
}

DeviceGroup::DeviceGroup(const Context& base, const Options& opt) : c(base), saved_(g_device_mode) {
  c.reps = opt.reps > 0 ? opt.reps : opt.quick ? 5 : 20;
  c.warmup = 2;
  g_device_mode = true;
}

std::map<std::string, double> run_anchor_script(const std::string& script, int reps) {
  std::map<std::string, double> out;
  const std::string cmd = "python3 '" + script + "' --reps " + std::to_string(reps) + " 2>&1";
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512], lib[32], prog[32];
  double us = NAN;
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "row %31s %31s %lf", lib, prog, &us) == 3) out[std::string(lib) + " " + prog] = us;
    else std::printf("  anchors: %s", line);
  }
  pclose(p);
  return out;
}

double anchor_at(const std::map<std::string, double>& anchors, const std::string& key) {
  const auto it = anchors.find(key);
  return it == anchors.end() ? NAN : it->second;
}

std::pair<double, double> time_against_copy(const Context& c, const ff::Program& p, const ff::Bindings& b, void* dst,
                                            const void* src, std::size_t bytes) {
  ff::Runtime& rt = *c.rt;
  const std::vector<double> t = time_interleaved(
      c.stream, c.warmup, c.reps, 1,
      {[&](std::size_t) { (void)ff_call(rt, p, b); },
       [&](std::size_t) { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c.stream)); }});
  return {t[0], t[1]};
}

std::string check_word(bool ok, const std::string& what) {
  if (!ok) report_mismatch(what);
  return ok ? "ok" : "WRONG";
}

void keep_program_row(const std::string& op, std::size_t n, double bytes, double us, double ceil_us,
                      const std::string& check) {
  Row r;
  r.mode = "device";
  r.op = op;
  r.n = n;
  r.bytes = bytes;
  r.ff_us = us;
  r.ceil_us = ceil_us;
  r.cub_variant = "-";
  r.check = check;
  r.reps = 0;
  g_rows.push_back(r);
}

}  // namespace ffbench
