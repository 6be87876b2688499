// The compile group (issue 22): what the first run of a program costs, per catalog program,
// each case in a fresh process (this binary started again with --compile-child, so that
// nothing is cached in memory; the process start itself is not timed):
//   cold        an empty kernel cache directory: plan, NVRTC, module load, run, without
//               tiered compilation (FUSEFLOW_TIERED=0: every kernel fully optimised). The
//               CUDA context (and NVRTC's loading, hidden behind it) is timed apart: `context`.
//   cold tier0  the same with tiered compilation (the default): fixed-grid kernels compiled
//               quickly (tier 0) for this run, tier 1 left compiling in the background.
//   disk hit    the directory the cold run filled: no NVRTC.
//   memory hit  a later run of the same Program in that process (plan memoised, kernels
//               loaded): host wall time, median of 21.
//   cold PTX    as cold, with RuntimeOptions::force_ptx: NVRTC stops at PTX (no ptxas) and
//               the driver JIT-compiles it at module load (its cache off: CUDA_CACHE_DISABLE=1).
//   nvrtc hit   as cold, on a new empty directory but with NVRTC's own cache (below) as the
//               cold run left it: what a fuseflow cache miss costs when NVRTC has seen the
//               kernel before (its front end only).
// NVRTC 12.9+ keeps its own cache of PTX and cubins (keyed after the front end) in the
// driver's compute cache (CUDA_CACHE_PATH, ~/.nv/ComputeCache by default), shared by every
// process: every child here gets a new empty one (CUDA_CACHE_PATH), else a kernel compiled
// by an earlier child, group or benchmark run shows as a compile of almost no NVVM and ptxas
// time (the fourteenth run's sum, argmax and mssp rows, and its one-process catalog rows).
// The cold run's compile is split as FUSEFLOW_LOG=compile prints it (NVRTC's front end,
// NVVM optimiser, ptxas, NVRTC's other time), summed over its kernels; `rest` is the cold
// run less those: planning, module load, launch, the copy back.
// Then the catalog one after the other in one fresh process, cold, as runs (each program's
// kernels compiled one after another) and after Runtime::precompile of all of them (the
// kernels compiled in parallel); and CuPy's cold ReductionKernel, ElementwiseKernel and
// cumsum in fresh processes (compile_anchors.py), cold and from its disk cache.
// Programs with tuple-typed inputs (matmul2x2) are left out: no generic input for them.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_COMPILE_ANCHOR_SCRIPT
#define FUSEFLOW_BENCH_COMPILE_ANCHOR_SCRIPT "bench/compile_anchors.py"
#endif

namespace ffbench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kN = std::size_t{1} << 16;
constexpr std::size_t kSegment = 16;  // offsets inputs: segments of 16

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool bindable(const ff::Program& p) {
  for (const ff::Expr& in : p.inputs()) {
    const std::string t = in.type().name();
    if (t != "f32" && t != "i32" && t != "u32") return false;
  }
  for (const ff::Expr& param : p.params())
    if (param.type().name() != "f32") return false;
  return true;
}

// Inputs for any catalog program with scalar inputs: f32 in [0.5, 1.5), integers in
// [0, 9) (keys and bins of the sorts and histograms), offsets every kSegment elements.
struct Inputs {
  std::vector<ff::DeviceArray<float>> f;
  std::vector<ff::DeviceArray<int>> i;
  std::vector<ff::DeviceArray<unsigned>> u;
  ff::Bindings bindings;
  Inputs(ff::Runtime& rt, const ff::Program& p) {
    f.reserve(8), i.reserve(8), u.reserve(8);
    unsigned seed = 1;
    for (const ff::Expr& in : p.inputs()) {
      const std::string t = in.type().name();
      if (in.node().name == "offsets") {
        std::vector<int> h;
        for (std::size_t s = 0; s <= kN; s += kSegment) h.push_back(static_cast<int>(s));
        i.push_back(rt.upload(h));
        bindings.push_back({in, ff::Binding(i.back())});
      } else if (t == "f32") {
        std::vector<float> h(kN);
        for (std::size_t j = 0; j < kN; ++j) h[j] = 0.5f + (float)(hash32(j, seed) >> 8) / 16777216.0f;
        f.push_back(rt.upload(h));
        bindings.push_back({in, ff::Binding(f.back())});
      } else if (t == "i32") {
        std::vector<int> h(kN);
        for (std::size_t j = 0; j < kN; ++j) h[j] = (int)(hash32(j, seed) % 9u);
        i.push_back(rt.upload(h));
        bindings.push_back({in, ff::Binding(i.back())});
      } else {
        std::vector<unsigned> h(kN);
        for (std::size_t j = 0; j < kN; ++j) h[j] = hash32(j, seed) % 9u;
        u.push_back(rt.upload(h));
        bindings.push_back({in, ff::Binding(u.back())});
      }
      ++seed;
    }
    for (const ff::Expr& param : p.params()) bindings.push_back({param, ff::Binding(0.5f)});
  }
};

// One run to completion: results on the host or, for arrays, the stream drained.
void run_once(ff::Runtime& rt, const ff::Program& p, const ff::Bindings& b) {
  (void)rt.run(p, b);
  rt.synchronize();
}

struct ChildRow {
  double context_ms = NAN, first_ms = NAN, warm_us = NAN, compiles = 0, disk_hits = 0;
  double front_end = 0, optimizer = 0, ptxas = 0, nvrtc_other = 0, compile_ms = 0;
  bool ok = false;
};

// Starts this binary again (`args` after --compile-child) with `env` set, and reads its
// "child ..." line and, with FUSEFLOW_LOG=compile, the compile lines of the kernel cache.
ChildRow spawn(const std::string& env, const std::string& args) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = env + " '" + self + "' --compile-child " + args + " 2>&1";
  std::fflush(stdout);
  ChildRow row;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return row;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    double fe = 0, opt = 0, px = 0, other = 0, ms = 0;
    if (std::sscanf(line, "child %lf %lf %lf %lf %lf", &row.context_ms, &row.first_ms, &row.warm_us, &row.compiles,
                    &row.disk_hits) == 5) {
      row.ok = true;
    } else if (const char* at = std::strstr(line, ": compiled (");
               at && std::sscanf(at, ": compiled (%lf ms: front end %lf, optimizer %lf, ptxas %lf, nvrtc other %lf)", &ms,
                                 &fe, &opt, &px, &other) == 5) {
      row.front_end += fe, row.optimizer += opt, row.ptxas += px, row.nvrtc_other += other, row.compile_ms += ms;
    } else if (!std::strstr(line, ": disk hit (") && !std::strstr(line, ": memory hit")) {
      std::printf("    child: %s", line);
    }
  }
  if (pclose(p) != 0) row.ok = false;
  return row;
}

// A cold child whose compiles took almost no NVVM and ptxas time hit a cache it should not
// have seen (NVRTC's, keyed after the front end): its row is not a cold compile. Every
// catalog kernel takes tens of ms of each on any host, so 2 ms a kernel is far below.
bool nvrtc_cache_hit(const ChildRow& cold) {
  return cold.ok && cold.compiles > 0 && cold.optimizer + cold.ptxas < 2.0 * cold.compiles;
}

struct Anchor {
  double context_ms = NAN, first_ms = NAN, second_us = NAN;
};

Anchor cupy_anchor(const std::string& which, const std::string& cache_dir) {
  const std::string cmd = "CUPY_CACHE_DIR='" + cache_dir + "' CUDA_CACHE_PATH='" + cache_dir + "-nv' python3 '" FUSEFLOW_BENCH_COMPILE_ANCHOR_SCRIPT "' " + which + " 2>&1";
  std::fflush(stdout);
  Anchor a;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return a;
  char line[512], name[64];
  while (std::fgets(line, sizeof line, p))
    if (std::sscanf(line, "anchor cupy %63s %lf %lf %lf", name, &a.context_ms, &a.first_ms, &a.second_us) != 4)
      std::printf("    cupy: %s", line);
  pclose(p);
  return a;
}

}  // namespace

// The child: `--compile-child NAME` (one program: context, first run, warm runs) or
// `--compile-child ALL [precompile]` (every bindable catalog program, one after the other,
// first runs only, optionally after one Runtime::precompile of them all); a last argument
// `ptx`: RuntimeOptions::force_ptx. Prints
// "child <context ms> <first ms or total> <warm us> <compiles> <disk hits>".
int compile_child(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string name = argv[2];
  const bool precompile = argc > 3 && std::string(argv[3]) == "precompile";
  const bool ptx = std::string(argv[argc - 1]) == "ptx";
  Clock::time_point t0 = Clock::now();
  ff::RuntimeOptions options;
  options.force_ptx = ptx;
  ff::Runtime rt(options);
  const double context_ms = ms_since(t0);
  std::vector<ff::Program> programs;
  if (name == "ALL") {
    for (const auto& e : ff::catalog::entries())
      if (ff::Program p = e.build(); bindable(p)) programs.push_back(p);
  } else {
    programs.push_back(ff::catalog::find(name).build());
  }
  std::vector<Inputs> inputs;
  inputs.reserve(programs.size());
  for (const ff::Program& p : programs) inputs.emplace_back(rt, p);
  rt.synchronize();
  t0 = Clock::now();
  if (precompile) (void)rt.precompile(programs).get();
  for (std::size_t k = 0; k < programs.size(); ++k) run_once(rt, programs[k], inputs[k].bindings);
  const double first_ms = ms_since(t0);
  double warm_us = NAN;
  if (programs.size() == 1) {
    std::vector<double> w;
    for (int r = 0; r < 21; ++r) {
      const Clock::time_point a = Clock::now();
      run_once(rt, programs[0], inputs[0].bindings);
      w.push_back(ms_since(a) * 1e3);
    }
    warm_us = median(w);
  }
  const ff::CacheStats s = rt.stats().kernels;
  std::printf("child %.3f %.3f %.2f %llu %llu\n", context_ms, first_ms, warm_us, (unsigned long long)s.compiles,
              (unsigned long long)s.disk_hits);
  return 0;
}

std::vector<CompileRow> measure_compile(const Options& opt) {
  std::vector<std::string> names;
  for (const auto& e : ff::catalog::entries())
    if (bindable(e.build())) names.push_back(e.name);
  if (opt.quick) names.resize(std::min<std::size_t>(names.size(), 5));
  char pattern[] = "/tmp/fuseflow-bench-compile-XXXXXX";
  const std::string root = ::mkdtemp(pattern) ? pattern : "/tmp/fuseflow-bench-compile";
  std::vector<CompileRow> rows;
  std::printf("  each case in a fresh process (n = 2^16); ms unless said; compile split summed over the kernels\n");
  std::printf("  %-28s %7s %8s %10s %6s %6s %6s %6s %6s %8s %9s %8s %8s\n", "program", "context", "cold", "cold tier0",
              "front", "nvvm", "ptxas", "other", "rest", "cold PTX", "nvrtc hit", "disk hit", "mem us");
  double cold_total = 0, tier0_total = 0, disk_total = 0, nvrtc_hit_total = 0;
  // NVRTC's cache, one new directory per child (nvrtc hit: the cold child's, on purpose).
  auto nvrtc_cache = [](const std::string& dir) { return " CUDA_CACHE_PATH='" + dir + "'"; };
  for (const std::string& name : names) {
    const std::string dir = root + "/" + name;
    const std::string env = "FUSEFLOW_CACHE=1 FUSEFLOW_CACHE_DIR='" + dir + "'";
    const ChildRow cold = spawn(env + " FUSEFLOW_TIERED=0 FUSEFLOW_LOG=compile" + nvrtc_cache(dir + "-nv"), name);
    const ChildRow tier0 = spawn("FUSEFLOW_CACHE=1 FUSEFLOW_CACHE_DIR='" + dir + "-tier0' FUSEFLOW_TIERED=1" +
                                     nvrtc_cache(dir + "-tier0-nv"),
                                 name);
    const ChildRow hit = spawn("FUSEFLOW_CACHE=1 FUSEFLOW_CACHE_DIR='" + dir + "-nvrtc-hit' FUSEFLOW_TIERED=0" +
                                   nvrtc_cache(dir + "-nv"),
                               name);
    const ChildRow disk = spawn(env + nvrtc_cache(dir + "-disk-nv"), name);
    const ChildRow ptx = spawn("FUSEFLOW_CACHE=0 FUSEFLOW_TIERED=0 CUDA_CACHE_DISABLE=1", name + " ptx");
    CompileRow r;
    r.program = name;
    r.cold_ms = cold.first_ms;
    r.default_ms = disk.first_ms;
    r.default_outcome = !disk.ok ? "failed" : disk.compiles > 0 ? "compiled" : "disk hit";
    r.warm_us = disk.warm_us;
    rows.push_back(r);
    cold_total += cold.first_ms;
    tier0_total += tier0.first_ms;
    disk_total += disk.first_ms;
    nvrtc_hit_total += hit.first_ms;
    std::printf("  %-28s %7.1f %8.1f %10.1f %6.0f %6.0f %6.0f %6.0f %6.1f %8.1f %9.1f %8.2f %8.1f%s%s\n", name.c_str(),
                cold.context_ms, cold.first_ms, tier0.first_ms, cold.front_end, cold.optimizer, cold.ptxas,
                cold.nvrtc_other, cold.first_ms - cold.compile_ms, ptx.first_ms, hit.first_ms, disk.first_ms,
                disk.warm_us, cold.ok && tier0.ok && hit.ok && disk.ok && ptx.ok ? "" : "  (failed)",
                nvrtc_cache_hit(cold) ? "  (NOT cold: NVRTC cache hit, < 2 ms of NVVM + ptxas a kernel)" : "");
  }
  std::printf("  sum over these programs, each alone: cold %.0f ms, cold tier0 %.0f ms, nvrtc hit %.0f ms, disk hit "
              "%.1f ms\n",
              cold_total, tier0_total, nvrtc_hit_total, disk_total);
  std::printf("  (rest = cold less its compiles: planning, module load, launch, copy back; context apart)\n");

  const ChildRow serial = spawn("FUSEFLOW_CACHE=0 FUSEFLOW_TIERED=0" + nvrtc_cache(root + "/all-nv"), "ALL");
  const ChildRow tiered = spawn("FUSEFLOW_CACHE=0 FUSEFLOW_TIERED=1" + nvrtc_cache(root + "/all-tiered-nv"), "ALL");
  const ChildRow ahead =
      spawn("FUSEFLOW_CACHE=0 FUSEFLOW_TIERED=0" + nvrtc_cache(root + "/all-precompile-nv"), "ALL precompile");
  std::printf("  the %zu programs one after the other in one fresh process, cold: %.0f ms as runs (%g compiles), "
              "%.0f ms as tiered runs, %.0f ms after one Runtime::precompile of them all (%g compiles)\n",
              names.size(), serial.first_ms, serial.compiles, tiered.first_ms, ahead.first_ms, ahead.compiles);

  std::printf("  CuPy, fresh process each (context: import + context; first: compile + run; second: us):\n");
  for (const char* which : {"reduction", "elementwise", "cumsum"}) {
    const std::string dir = root + "/cupy-" + which;
    const Anchor cold = cupy_anchor(which, dir);
    const Anchor disk = cupy_anchor(which, dir);
    std::printf("  cupy %-12s context %7.1f  cold first %7.1f  disk-cache first %7.2f  second %7.1f us\n", which,
                cold.context_ms, cold.first_ms, disk.first_ms, disk.second_us);
  }
  std::error_code ignored;
  std::filesystem::remove_all(root, ignored);
  return rows;
}

}  // namespace ffbench
