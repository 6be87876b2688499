#pragma once
// fuseflow-bench's harness: what every op group shares (errors, inputs, options, timing,
// device buffers, the records), and the groups' entry points. Method: the file comment of
// fuseflow_bench.cu; each group's own file says what it compares.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;

namespace ffbench {

// --- errors ----------------------------------------------------------------------------
void cuda_check(cudaError_t e, const char* what, int line);
#define CK(call) ::ffbench::cuda_check((call), #call, __LINE__)

// --- random inputs (never zero), generated on the device -------------------------------
__host__ __device__ inline std::uint32_t hash32(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z);
}

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

Options parse(int argc, char** argv);

// --- timing ---------------------------------------------------------------------------
// Two ways of timing, both printed:
//  device: calls go back to back (kBatch per timed group), fuseflow through run_async and
//          CUB without copying its result out: GPU time per call, host work overlapped.
//  sync:   every call ends with the result on the host (copy + stream sync), which is what
//          rt.run does: end-to-end latency, dominated by the fixed round trip at small n.
extern bool g_device_mode;
constexpr int kBatch = 10;
// Array results of the calls being timed (scans): freed only after a timed batch, since
// freeing device memory waits for the device.
extern std::vector<ff::Result> g_keep_alive;

double median(std::vector<double> v);

// Each variant is called with a buffer index; in repetition r variant v reads buffer
// (r * variants + v) % nbuf, so two consecutive calls never read the same copy.
std::vector<double> time_interleaved(cudaStream_t stream, int warmup, int reps, std::size_t nbuf,
                                     const std::vector<std::function<void(std::size_t)>>& variants);

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

inline bool close_rel(double a, double b, double rel = 1e-3) {
  const double scale = std::max({std::fabs(a), std::fabs(b), 1e-30});
  return std::fabs(a - b) <= rel * scale;
}

// Relative 1e-3, or absolute 1e-3 for values near zero (a recurrence's x).
inline bool close_float(float got, float want) {
  return close_rel(got, want, 1e-3) || std::fabs((double)got - (double)want) <= 1e-3;
}

// --- the records (records.cu) ----------------------------------------------------------
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

extern std::vector<Row> g_rows;
extern int g_mismatches;

void report_mismatch(const std::string& what);
// Prints the row (its mode from g_device_mode) and keeps it for bench.csv.
void add_row(Row r);

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

// Copies of an input set of `set_bytes` needed so that every call reads from HBM.
std::size_t copies_for(std::size_t set_bytes, std::size_t l2);

// The float4 streaming-read ceiling over n floats of a (and of b when not null).
void launch_ceiling(const Context& c, const float* a, const float* b, std::size_t n);

// fuseflow's call: the scalar stays on the device in device mode.
std::vector<ff::Result> ff_call(ff::Runtime& rt, const ff::Program& p, const ff::Bindings& b);

// CUB's end of a call in sync mode: its result copied to the host, the stream synchronised.
void cub_finish_from(const Context& c, const void* src, std::size_t bytes);
void cub_finish(const Context& c, std::size_t bytes);

template <class T>
ff::device_span<T> span_of(const DeviceBuffer& b, std::size_t k, std::size_t n) {
  return ff::device_span<T>(b.as<T>() + k * n, n);
}

// Random inputs on the context's stream: floats in (-0.5, 1], integers in [-100, -1] U
// [1, 100]; signed floats in (-1, 1] (x > 0 keeps half); byte values in [0, 256).
void fill(const Context& c, float* x, std::size_t count, std::uint32_t seed);
void fill(const Context& c, int* x, std::size_t count, std::uint32_t seed);
void fill_signed_floats(const Context& c, float* x, std::size_t count, std::uint32_t seed);
void fill_byte_values(const Context& c, int* x, std::size_t count, std::uint32_t seed);

// Offsets of segments covering n elements: one segment (scenario 0), random lengths
// 10..50 (1), all of length 3 (2).
std::vector<int> segment_offsets(std::size_t n, int scenario);

// --- program groups (rows.cu, programs.cu): users' programs beside their anchors ----------
// The group's context for the lifetime of this object: device mode (g_device_mode, restored
// after), `--reps` or 5 (quick) or 20 calls, 2 warm-up calls.
class DeviceGroup {
 public:
  DeviceGroup(const Context& base, const Options& opt);
  ~DeviceGroup() { g_device_mode = saved_; }
  DeviceGroup(const DeviceGroup&) = delete;
  DeviceGroup& operator=(const DeviceGroup&) = delete;
  Context c;

 private:
  bool saved_;
};
// Runs `python3 script --reps reps` and returns its lines "row <library> <program> <us>" as
// {"<library> <program>": us}; other lines are printed as notes ("  anchors: ...").
std::map<std::string, double> run_anchor_script(const std::string& script, int reps);
// The anchor's time, NAN when the script gave none.
double anchor_at(const std::map<std::string, double>& anchors, const std::string& key);
// The program's call and a device-to-device copy of `bytes` (its floor), interleaved:
// {fuseflow us, copy us}.
std::pair<double, double> time_against_copy(const Context& c, const ff::Program& p, const ff::Bindings& b, void* dst,
                                            const void* src, std::size_t bytes);
// "ok", or "WRONG" after report_mismatch(what).
std::string check_word(bool ok, const std::string& what);
// Keeps a device-mode row of a program group for bench.csv (printed by the group itself).
void keep_program_row(const std::string& op, std::size_t n, double bytes, double us, double ceil_us,
                      const std::string& check);

// --- the op groups, one file each --------------------------------------------------------
void bench_unary(const Context& c, const std::string& name, std::size_t n, std::uint32_t seed);  // reduce.cu
void bench_dot(const Context& c, std::size_t n);                                              // reduce.cu
void bench_mssp(const Context& c, std::size_t n);                                             // reduce.cu
void bench_histogram(const Context& c, std::size_t n);                         // histogram.cu
void bench_segmented(const Context& c, std::size_t n, int scenario);           // segmented.cu
void bench_sort(const Context& c, std::size_t n);                              // sort.cu
void bench_filter(const Context& c, std::size_t n);                            // filter.cu
void bench_scans(const Context& c, int lg);                                    // scan.cu
void bench_keyed(const Context& c, std::size_t n, int op);                     // keyed.cu
void bench_course(const Context& c);                                           // course.cu
void bench_latency(const Context& c, const Options& opt);                      // latency.cu
void bench_multi(const Context& c, const Options& opt);                        // multi.cu
void bench_log_sum_exp(const Context& c, std::size_t n);                       // log_sum_exp.cu
void bench_programs(const Context& c, const Options& opt);                     // programs.cu (issue 25)
void bench_rows(const Context& c, const Options& opt);                         // rows.cu (issue 25)
void bench_weighted_histogram(const Context& c, const Options& opt);           // histogram.cu (issue 25)

// --- NVRTC compile: first run of a fresh program (compile.cu) ----------------------------
struct CompileRow {
  std::string program;
  double cold_ms = NAN;     // fresh Runtime, memory-only cache: NVRTC compile + load + run
  double default_ms = NAN;  // fresh Runtime with the environment's cache (disk hit if populated)
  std::string default_outcome;
  double warm_us = NAN;     // a later run of the same Program (memoised plan, memory hit)
};
std::vector<CompileRow> measure_compile(const Options&);

// --- output files (records.cu) ----------------------------------------------------------
std::string out_dir();
void write_csv(const std::string& path, const std::vector<CompileRow>& compile);

}  // namespace ffbench
