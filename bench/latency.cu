// Latency of small programs (issue 20): what a call costs on the host when there is
// little data. Programs: sum, the fused (x*x + c).sum() with c a parameter, argmax (f32)
// and MSSP (4 x i32), at n = 1024 and 2^16. Host wall time per call, median of many calls
// after a warm-up, for fuseflow:
//   run      rt.run of one Program kept and reused, the result on the host;
//   async    the host time of rt.run_async alone (the stream is synchronised after each
//            call, outside the timed region);
//   rebuilt  the program built anew every call (a new Expr each iteration, as code that
//            builds its expression inside a function does), bound and run: what such a
//            loop pays per call, construction included.
// and, in the same run, torch and CuPy on the same programs (bench/latency_anchors.py,
// run with python3; a library that is missing leaves its columns empty): result on the
// host (.item() / float()) and the host time of the call that leaves it on the device.
// torch's MSSP is cumsum/cummin/max (several kernels); CuPy's, cumsum + minimum.accumulate
// where that exists. Writes bench_latency.csv.
// The launch floor, in the same run: the host time of fuseflow's low-level launch of an
// empty kernel (one cuLaunchKernel, none of the executor's work) on the Runtime's stream,
// and on a second Runtime over a stream created non-blocking (the Runtime's own stream is
// a blocking one, ordered after the legacy default stream), with run_async of the fused
// program on each: what of run_async is the driver's launch call, and whether the stream
// kind changes it.
// Beside the totals, where fuseflow was built with -DFUSEFLOW_RUN_PHASES=ON, the host time
// of each phase of fuseflow's run (low_level::run_phases: bindings, capture query, lookup,
// checks, outputs, argument packing, launch call, copy, wait, results), mean per call, for
// run, async and rebuilt; such a build reads the clock about ten times per run, so its
// totals are a little higher than a plain build's.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "fuseflow/runtime/low_level.hpp"
#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_ANCHOR_SCRIPT
#define FUSEFLOW_BENCH_ANCHOR_SCRIPT "bench/latency_anchors.py"
#endif

namespace ffbench {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct LatencyProgram {
  const char* name;     // as the table and latency_anchors.py name it
  bool int_input;       // MSSP reads i32
  std::function<ff::Program()> build;
};

const std::vector<LatencyProgram>& latency_programs() {
  static const std::vector<LatencyProgram> programs = {
      {"sum", false, [] { return ff::catalog::find("sum").build(); }},
      {"fused", false,
       [] {
         auto x = ff::input<float>("x");
         auto c = ff::param<float>("c");
         return ff::Program(ff::reduce(x * x + c, ff::plus));
       }},
      {"argmax", false, [] { return ff::catalog::find("argmax").build(); }},
      {"mssp", true, [] { return ff::catalog::find("mssp").build(); }},
  };
  return programs;
}

constexpr float kC = 0.5f;  // the fused program's parameter

// One (library, program, n): host microseconds per call; NAN where not measured.
struct LatencyRow {
  double run_us = NAN, async_us = NAN, rebuilt_us = NAN;
  // fuseflow's host time per phase (FUSEFLOW_RUN_PHASES builds): run, async, rebuilt.
  std::array<ff::low_level::RunPhases, 3> phases{};
};
using Key = std::pair<std::string, std::size_t>;  // program, n

// The program's bindings: its one input, and c where it has that parameter.
ff::Bindings bind(const ff::Program& p, const ff::DeviceArray<float>& xf, const ff::DeviceArray<int>& xi,
                  bool int_input) {
  ff::Bindings b;
  if (int_input) b.push_back({p.inputs().at(0), ff::Binding(xi)});
  else b.push_back({p.inputs().at(0), ff::Binding(xf)});
  for (const ff::Expr& param : p.params()) b.push_back({param, ff::Binding(kC)});
  return b;
}

// The value a CPU computes for the program (argmax: the index; MSSP: the best sum).
double expected(const LatencyProgram& lp, const std::vector<float>& xf, const std::vector<int>& xi) {
  const std::string name = lp.name;
  double acc = 0;
  if (name == "sum" || name == "fused") {
    for (float v : xf) acc += name == "sum" ? (double)v : (double)v * v + kC;
    return acc;
  }
  if (name == "argmax") {
    std::size_t best = 0;
    for (std::size_t i = 1; i < xf.size(); ++i)
      if (xf[i] > xf[best]) best = i;
    return (double)best;
  }
  std::int64_t best = 0, suf = 0;  // Kadane
  for (int v : xi) {
    suf = std::max<std::int64_t>(0, suf + v);
    best = std::max(best, suf);
  }
  return (double)best;
}

double got_value(const LatencyProgram& lp, const ff::Result& r) {
  const std::string name = lp.name;
  const ff::Value v = r.value();
  if (name == "argmax") return (double)v[1].as_int();
  if (name == "mssp") return (double)v[0].as_int();
  return v.as_float();
}

LatencyRow measure_fuseflow(ff::Runtime& rt, const LatencyProgram& lp, std::size_t n, int reps) {
  std::vector<float> hf(n);
  std::vector<int> hi(n);
  for (std::size_t i = 0; i < n; ++i) {
    hf[i] = -0.5f + (float)((hash32(i, 91) >> 8) + 1) * (1.0f / 16777216.0f);
    const int v = 1 + (int)((hash32(i, 92) >> 1) % 100u);
    hi[i] = (hash32(i, 92) & 1u) ? v : -v;
  }
  const ff::DeviceArray<float> xf = rt.upload(hf);
  const ff::DeviceArray<int> xi = rt.upload(hi);
  const ff::Program program = lp.build();
  const ff::Bindings b = bind(program, xf, xi, lp.int_input);

  const double want = expected(lp, hf, hi), got = got_value(lp, rt.run(program, b).at(0));
  const bool exact = std::string(lp.name) == "argmax" || std::string(lp.name) == "mssp";
  if (exact ? got != want : !close_rel(got, want))
    report_mismatch(std::string("latency ") + lp.name + " n=" + std::to_string(n) + ": fuseflow " +
                    std::to_string(got) + " vs CPU " + std::to_string(want));

  const int warmup = std::max(10, reps / 10);
  LatencyRow row;
  std::vector<double> t;
  for (int r = 0; r < warmup + reps; ++r) {  // run, one program reused
    if (r == warmup) ff::low_level::reset_run_phases(rt);
    const auto t0 = Clock::now();
    std::vector<ff::Result> res = rt.run(program, b);
    (void)res.at(0).value();
    if (r >= warmup) t.push_back(us_since(t0));
  }
  row.run_us = median(t);
  row.phases[0] = ff::low_level::run_phases(rt);
  t.clear();
  for (int r = 0; r < warmup + reps; ++r) {  // run_async: the call alone
    if (r == warmup) ff::low_level::reset_run_phases(rt);
    const auto t0 = Clock::now();
    std::vector<ff::Result> res = rt.run_async(program, b);
    const double us = us_since(t0);
    rt.synchronize();
    if (r >= warmup) t.push_back(us);
  }
  row.async_us = median(t);
  row.phases[1] = ff::low_level::run_phases(rt);
  t.clear();
  for (int r = 0; r < warmup + reps; ++r) {  // a new, equal program every call
    if (r == warmup) ff::low_level::reset_run_phases(rt);
    const auto t0 = Clock::now();
    const ff::Program fresh = lp.build();
    std::vector<ff::Result> res = rt.run(fresh, bind(fresh, xf, xi, lp.int_input));
    (void)res.at(0).value();
    if (r >= warmup) t.push_back(us_since(t0));
  }
  row.rebuilt_us = median(t);
  row.phases[2] = ff::low_level::run_phases(rt);
  return row;
}

// Host us per call of `call` (median of `reps` after a warm-up), the stream synchronised
// after each call outside the timed region.
template <class F>
double async_us(ff::Runtime& rt, int reps, F&& call) {
  std::vector<double> t;
  for (int r = 0; r < reps + std::max(10, reps / 10); ++r) {
    const auto t0 = Clock::now();
    call();
    const double us = us_since(t0);
    rt.synchronize();
    if (r >= std::max(10, reps / 10)) t.push_back(us);
  }
  return median(t);
}

// The launch floor (see the top of this file): prints one line per stream kind.
void measure_launch_floor(ff::Runtime& rt, int reps) {
  static const char* kEmpty = "extern \"C\" __global__ void ff_latency_empty(const float* x) { (void)x; }\n";
  const LatencyProgram& fused = latency_programs()[1];
  const std::vector<float> host(1024, 0.5f);
  cudaStream_t own = nullptr;
  CK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
  {
    ff::RuntimeOptions options;
    options.stream = reinterpret_cast<CUstream>(own);
    ff::Runtime nonblocking(options);
    std::printf("\n  launch floor (host us per call, median of %d): an empty kernel by fuseflow's low-level\n"
                "  launch, and run_async of fused at 2^10, on each stream:\n", reps);
    for (ff::Runtime* r : {&rt, &nonblocking}) {
      const ff::DeviceArray<float> x = r->upload(host);
      const ff::KernelHandle empty = ff::low_level::load_kernel(*r, kEmpty, "ff_latency_empty");
      CUdeviceptr ptr = x.data();
      void* args[] = {&ptr};
      const double floor = async_us(*r, reps, [&] { ff::low_level::launch(*r, empty, {1, 1, 1}, {32, 1, 1}, 0, args); });
      const ff::Program program = fused.build();
      const ff::Bindings b = bind(program, x, ff::DeviceArray<int>(), false);
      const double async = async_us(*r, reps, [&] { (void)r->run_async(program, b); });
      std::printf("  %-34s empty kernel %6.2f   run_async %6.2f   fuseflow's share %5.2f\n",
                  r == &rt ? "the Runtime's stream (blocking)" : "a non-blocking stream of the caller", floor,
                  async, async - floor);
    }
  }
  CK(cudaStreamDestroy(own));
}

// Runs latency_anchors.py; its lines "row <library> <program> <n> <run_us> <async_us>"
// fill `out`, its other lines are printed as notes.
void measure_anchors(const std::vector<std::size_t>& sizes, int reps, std::map<Key, LatencyRow>& torch,
                     std::map<Key, LatencyRow>& cupy) {
  std::string list;
  for (std::size_t n : sizes) list += (list.empty() ? "" : ",") + std::to_string(n);
  const std::string cmd = std::string("python3 '") + FUSEFLOW_BENCH_ANCHOR_SCRIPT + "' --sizes " + list +
                          " --reps " + std::to_string(reps) + " 2>&1";
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::printf("  (could not start python3: torch and CuPy not measured)\n");
    return;
  }
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    char lib[32], prog[32];
    unsigned long long n = 0;
    double run_us = NAN, async_us = NAN;
    if (std::sscanf(line, "row %31s %31s %llu %lf %lf", lib, prog, &n, &run_us, &async_us) == 5) {
      LatencyRow r;
      r.run_us = run_us;
      r.async_us = async_us;
      (std::string(lib) == "torch" ? torch : cupy)[{prog, (std::size_t)n}] = r;
    } else {
      std::printf("  anchors: %s", line);
    }
  }
  const int rc = pclose(p);
  if (rc != 0) std::printf("  (latency_anchors.py exited with status %d)\n", rc);
}

// fuseflow's host time per call by phase (mean us), where the build measures it.
void print_phases(const std::map<Key, LatencyRow>& rows, const std::vector<std::size_t>& sizes) {
  if (rows.empty() || !rows.begin()->second.phases[0].enabled) {
    std::printf("  (host time by phase: build fuseflow with -DFUSEFLOW_RUN_PHASES=ON to see it)\n");
    return;
  }
  std::printf("\n  fuseflow host time per call by phase (us, mean; a FUSEFLOW_RUN_PHASES build):\n");
  std::printf("  %-8s %-5s %-7s", "program", "n", "call");
  for (const char* name : ff::low_level::kRunPhaseNames) std::printf(" %7s", name);
  std::printf(" %7s\n", "sum");
  const char* calls[] = {"run", "async", "rebuilt"};
  for (const LatencyProgram& lp : latency_programs())
    for (std::size_t n : sizes) {
      const auto it = rows.find({lp.name, n});
      if (it == rows.end()) continue;
      for (std::size_t c = 0; c < 3; ++c) {
        const ff::low_level::RunPhases& p = it->second.phases[c];
        std::printf("  %-8s 2^%-3d %-7s", lp.name, (int)std::lround(std::log2((double)n)), calls[c]);
        double sum = 0;
        for (std::size_t i = 0; i < ff::low_level::kRunPhases; ++i) {
          const double us = p.per_run(static_cast<ff::low_level::RunPhase>(i));
          sum += us;
          std::printf(" %7.3f", us);
        }
        std::printf(" %7.3f\n", sum);
      }
    }
  std::printf("  The rest of a call's total is outside fuseflow's run: the Result's destruction, the\n"
              "  caller's loop, and for rebuilt the program's construction and its bindings.\n");
}

}  // namespace

void bench_latency(const Context& c, const Options& opt) {
  const std::vector<std::size_t> sizes = {std::size_t{1} << 10, std::size_t{1} << 16};
  const int reps = opt.reps > 0 ? opt.reps : opt.quick ? 300 : 2000;
  std::printf("\nLatency of small programs: host wall time per call (us), median of %d calls\n", reps);
  std::map<Key, LatencyRow> ff_rows, torch, cupy;
  for (const LatencyProgram& lp : latency_programs())
    for (std::size_t n : sizes) ff_rows[{lp.name, n}] = measure_fuseflow(*c.rt, lp, n, reps);
  measure_anchors(sizes, reps, torch, cupy);

  auto cell = [](const std::map<Key, LatencyRow>& m, const Key& k, double LatencyRow::*f) {
    char buf[16] = "-";
    const auto it = m.find(k);
    if (it != m.end() && !std::isnan(it->second.*f)) std::snprintf(buf, sizeof buf, "%.2f", it->second.*f);
    return std::string(buf);
  };
  std::printf("  %-8s %-5s %8s %8s %8s %8s   %8s %8s   %8s %8s\n", "program", "n", "ff run", "ff async",
              "rebuilt", "reb/run", "torch", "t async", "CuPy", "c async");
  for (const LatencyProgram& lp : latency_programs()) {
    for (std::size_t n : sizes) {
      const Key k{lp.name, n};
      const LatencyRow& f = ff_rows[k];
      std::printf("  %-8s 2^%-3d %8.2f %8.2f %8.2f %7.2fx   %8s %8s   %8s %8s\n", lp.name,
                  (int)std::lround(std::log2((double)n)), f.run_us, f.async_us, f.rebuilt_us,
                  f.rebuilt_us / f.run_us, cell(torch, k, &LatencyRow::run_us).c_str(),
                  cell(torch, k, &LatencyRow::async_us).c_str(), cell(cupy, k, &LatencyRow::run_us).c_str(),
                  cell(cupy, k, &LatencyRow::async_us).c_str());
    }
  }
  std::printf("  fused = (x*x + c).sum(), c a parameter; run/torch/CuPy: result on the host; async: the call\n"
              "  that leaves it on the device; rebuilt: a new equal program built and run every call.\n"
              "  torch: x.sum().item(), (x*x+c).sum().item(), x.argmax().item(), MSSP by cumsum/cummin.\n");

  print_phases(ff_rows, sizes);
  measure_launch_floor(*c.rt, reps);

  const std::string path = out_dir() + "/bench_latency.csv";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "program,n,impl,run_us,async_us,rebuilt_us\n");
    auto put = [&](const char* impl, const std::map<Key, LatencyRow>& m) {
      for (const auto& [k, r] : m)
        std::fprintf(f, "%s,%zu,%s,%.3f,%.3f,%.3f\n", k.first.c_str(), k.second, impl, r.run_us, r.async_us,
                     r.rebuilt_us);
    };
    put("fuseflow", ff_rows);
    put("torch", torch);
    put("cupy", cupy);
    std::fclose(f);
    std::printf("  wrote %s\n", path.c_str());
  } else {
    std::fprintf(stderr, "fuseflow-bench: cannot write %s\n", path.c_str());
  }
}

}  // namespace ffbench
