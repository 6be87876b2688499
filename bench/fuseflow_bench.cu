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
// sorts (256 bins, key bits [0, 8), all 32 bits, f32 keys alone) beside DeviceRadixSort::SortPairs
// and SortKeys (see bench_sort), stream compaction
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
//
// This file: main and the order of the groups. The harness (options, timing, buffers,
// inputs, the ceiling) is harness.hpp/.cu, the printed records records.cu, and each op
// group has a file of its own: reduce, scan, histogram, segmented, sort, filter, keyed,
// compile, course, latency, programs, rows (.cu). The latency group (small programs, host time per call,
// beside torch and CuPy run by latency_anchors.py) writes bench_latency.csv.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cub/version.cuh>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_PLOT_SCRIPT
#define FUSEFLOW_BENCH_PLOT_SCRIPT "bench/plot.py"
#endif

namespace ffbench {
namespace {

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
  const std::vector<CompileRow> compile = opt.wants("compile") ? measure_compile(opt) : std::vector<CompileRow>{};
  std::printf("  %-15s %14s %22s %14s\n", "program", "cold ms", "disk hit ms", "warm run us");
  for (const CompileRow& r : compile)
    std::printf("  %-15s %14.2f %13.2f (%-8s) %12.2f\n", r.program.c_str(), r.cold_ms, r.default_ms,
                r.default_outcome.c_str(), r.warm_us);
  std::printf("  cold: fresh process, empty cache directory: plan + NVRTC + load + run (context apart).\n"
              "  disk hit: fresh process on the directory the cold run filled.\n"
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
    if (lg >= 24 && opt.wants("lse")) bench_log_sum_exp(c, n);  // beside fuseflow's sum and torch.logsumexp
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
  if (opt.wants("latency")) bench_latency(c, opt);
  if (opt.wants("multi")) bench_multi(c, opt);  // sharded over every GPU here, beside torch.distributed
  if (opt.wants("programs")) bench_programs(c, opt);  // SpMV and adjacent difference, beside torch and CuPy
  if (opt.wants("rows")) bench_rows(c, opt);  // per-row softmax, beside a copy and torch.softmax
  if (opt.wants("histogram")) bench_weighted_histogram(c, opt);  // 256 and 2^20 bins, beside torch.bincount
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
}  // namespace ffbench

namespace ffbench {
int compile_child(int argc, char** argv);  // compile.cu: a fresh process for the compile group
}  // namespace ffbench

int main(int argc, char** argv) {
  using namespace ffbench;
  const bool child = argc > 1 && std::string(argv[1]) == "--compile-child";
  const Options opt = child ? Options{} : parse(argc, argv);
  try {
    return child ? compile_child(argc, argv) : run(opt);
  } catch (const ff::CudaError& e) {
    std::printf("fuseflow-bench: CUDA unavailable or failed: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuseflow-bench: error: %s\n", e.what());
    return 1;
  }
}
