// A measurement, not a test: the host time fuseflow spends per run when the program is
// one kept and reused, and when it is rebuilt every call (a new, equal Program, as code
// that builds its expression inside a function does), split into building the program,
// binding it, and Runtime::run. Runs on the CPU emulator (set FUSEFLOW_CUDA_LIBRARY and
// FUSEFLOW_NVRTC_LIBRARY to it, as the emu_ tests' environment does) with its launches
// skipped (ff_emu_set_skip_launches), over n = 1024, so that no emulated kernel time hides
// the host's: what it prints is fuseflow's own work plus the emulator's trivial driver
// calls, in this thread's CPU time (the machine may be shared), comparable before and
// after a change on the same machine. Usage: runtime_host_cost_probe [runs, default 20000]
// Instruction counts (stable where timings are not): one program and one kind of call in
// a loop, inside probe_loop, which callgrind counts alone:
//   valgrind --tool=callgrind --toggle-collect='*probe_loop*' runtime_host_cost_probe --loop fused async 2000
// then callgrind_annotate: probe_loop's inclusive instructions / 2000 per call. Calls:
// run, async (run_async of the kept program), build (the Program alone), rebuilt (built,
// bound and run, as a loop that rebuilds its program pays).
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "catalog/catalog.hpp"

namespace ff = fuseflow;
namespace {

// This thread's CPU time in microseconds: preemption on a busy machine does not count.
double cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

struct Probe {
  const char* name;
  bool int_input;
  std::function<ff::Program()> build;
};

ff::Bindings bind(const ff::Program& p, const ff::DeviceArray<float>& xf, const ff::DeviceArray<int>& xi, bool ints) {
  ff::Bindings b;
  if (ints) b.push_back({p.inputs().at(0), ff::Binding(xi)});
  else b.push_back({p.inputs().at(0), ff::Binding(xf)});
  for (const ff::Expr& param : p.params()) b.push_back({param, ff::Binding(0.5f)});
  return b;
}

// Median over `rounds` rounds of the mean of `runs / rounds` calls of f, in microseconds.
double median_us(long runs, const std::function<void()>& f) {
  const int rounds = 15;
  const long per = std::max(1L, runs / rounds);
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = cpu_us();
    for (long i = 0; i < per; ++i) f();
    t.push_back((cpu_us() - t0) / static_cast<double>(per));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

enum class Call { run, async, build, rebuilt };

// The --loop mode's measured region (callgrind --toggle-collect='*probe_loop*').
[[gnu::noinline]] void probe_loop(ff::Runtime& rt, const Probe& p, Call call, long count, const ff::Program& kept,
                                  const ff::Bindings& b, const ff::DeviceArray<float>& xf,
                                  const ff::DeviceArray<int>& xi) {
  for (long i = 0; i < count; ++i) {
    switch (call) {
      case Call::run: (void)rt.run(kept, b); break;
      case Call::async: (void)rt.run_async(kept, b); break;
      case Call::build: (void)p.build(); break;
      case Call::rebuilt: {
        const ff::Program f = p.build();
        (void)rt.run(f, bind(f, xf, xi, p.int_input));
        break;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool loop = argc == 5 && std::string(argv[1]) == "--loop";
  const long runs = loop ? std::atol(argv[4]) : argc > 1 ? std::atol(argv[1]) : 20000;
  const char* emulator = std::getenv("FUSEFLOW_CUDA_LIBRARY");
  void* library = emulator ? dlopen(emulator, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto skip_launches = library ? reinterpret_cast<void (*)(int)>(dlsym(library, "ff_emu_set_skip_launches")) : nullptr;
  if (!skip_launches) {
    std::fprintf(stderr, "runtime_host_cost_probe: FUSEFLOW_CUDA_LIBRARY must name the CPU emulator\n");
    return 2;
  }
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};  // memory only
  ff::Runtime rt(options);
  const std::size_t n = 1024;
  const ff::DeviceArray<float> xf = rt.upload(std::vector<float>(n, 0.25f));
  const ff::DeviceArray<int> xi = rt.upload(std::vector<int>(n, 1));
  const std::vector<Probe> probes = {
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
  if (loop) {
    const std::string name = argv[2], call_name = argv[3];
    const Call calls[] = {Call::run, Call::async, Call::build, Call::rebuilt};
    const char* call_names[] = {"run", "async", "build", "rebuilt"};
    const auto c = std::find(std::begin(call_names), std::end(call_names), call_name);
    const auto p = std::find_if(probes.begin(), probes.end(), [&](const Probe& q) { return name == q.name; });
    if (c == std::end(call_names) || p == probes.end() || runs <= 0) {
      std::fprintf(stderr, "runtime_host_cost_probe --loop sum|fused|argmax|mssp run|async|build|rebuilt COUNT\n");
      return 2;
    }
    const ff::Program kept = p->build();
    const ff::Bindings b = bind(kept, xf, xi, p->int_input);
    (void)rt.run(kept, b);  // prepared (compiled) with launches on
    skip_launches(1);
    for (int i = 0; i < 100; ++i) {  // warm, outside probe_loop: every buffer sized
      const ff::Program f = p->build();
      (void)rt.run(f, bind(f, xf, xi, p->int_input));
      (void)rt.run_async(kept, b);
    }
    probe_loop(rt, *p, calls[c - std::begin(call_names)], runs, kept, b, xf, xi);
    std::printf("%ld calls of %s %s\n", runs, call_name.c_str(), name.c_str());
    return 0;
  }
  std::printf("host CPU us per call, n = %zu, emulated launches skipped, median of 15 rounds of %ld calls\n", n,
              runs / 15);
  std::printf("%-8s %9s %9s %9s %9s %9s %9s %12s\n", "program", "run", "async", "build", "bind", "run new",
              "rebuilt", "new-run: us");
  for (const Probe& p : probes) {
    const ff::Program kept = p.build();
    const ff::Bindings b = bind(kept, xf, xi, p.int_input);
    (void)rt.run(kept, b);  // prepared (compiled) with launches on
    skip_launches(1);
    for (int i = 0; i < 100; ++i) (void)rt.run(kept, b);
    const double run = median_us(runs, [&] { (void)rt.run(kept, b); });
    const double async = median_us(runs, [&] { (void)rt.run_async(kept, b); });
    const double build = median_us(runs, [&] { (void)p.build(); });
    const double bound = median_us(runs, [&] {
      const ff::Program fresh = p.build();
      (void)bind(fresh, xf, xi, p.int_input);
    });
    // Programs built beforehand, so that what is timed is run() of a new, equal program.
    std::vector<ff::Program> fresh;
    std::vector<ff::Bindings> fresh_bindings;
    const long per = std::max(1L, runs / 15);
    for (long i = 0; i < per; ++i) {
      fresh.push_back(p.build());
      fresh_bindings.push_back(bind(fresh.back(), xf, xi, p.int_input));
    }
    std::vector<double> t;
    for (int r = 0; r < 15; ++r) {
      const double t0 = cpu_us();
      for (long i = 0; i < per; ++i) (void)rt.run(fresh[static_cast<std::size_t>(i)], fresh_bindings[static_cast<std::size_t>(i)]);
      t.push_back((cpu_us() - t0) / static_cast<double>(per));
    }
    std::sort(t.begin(), t.end());
    const double run_new = t[t.size() / 2];
    const double rebuilt = median_us(runs, [&] {
      const ff::Program f = p.build();
      (void)rt.run(f, bind(f, xf, xi, p.int_input));
    });
    std::printf("%-8s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %12.3f\n", p.name, run, async, build, bound - build, run_new,
                rebuilt, run_new - run);
    skip_launches(0);
  }
  const ff::RuntimeStats s = rt.stats();
  std::printf("program cache: %llu hits, %llu misses\n", static_cast<unsigned long long>(s.programs.hits),
              static_cast<unsigned long long>(s.programs.misses));
  return 0;
}
