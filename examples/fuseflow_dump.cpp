// fuseflow-dump: prints what fuseflow makes of a program, without a GPU. The program is
// one of the catalog's, by name, or read from a file in the textual form ff::to_string
// prints (`--program -` reads standard input).
//
//   fuseflow-dump --list
//   fuseflow-dump --example dot [--emit program|plan|cuda|ptx] [--arch sm_90|sm_80]
//   fuseflow-dump --program dot.ff [--emit ...] [--arch ...]
//   ... [--option NAME=VALUE]...   a plan option (codegen::PlanOptions), e.g.
//       --option segmented_short=0 or --option scan_tile=256x16 (the FUSEFLOW_* tuning
//       variables of a run, by their option names)
//   fuseflow-dump --help     (or -h: the usage on stdout; a bad argument: usage on stderr, exit 2)
//
//   fuseflow-dump --warm FILE... [--arch sm_90|sm_80] [--sms N] [--ptx] [--cache-dir DIR]
//       compiles the programs of FILEs (textual form, one per file) into the disk cache
//       that a Runtime on such a device would use (FUSEFLOW_CACHE_DIR, ...; --cache-dir
//       wins), their kernels in parallel: for a service's start-up or a container image.
//       --sms: the device's SM count (the preset's: 132 for sm_90, 108 for sm_80); --ptx:
//       PTX entries, for a driver older than NVRTC. Prints what it did; exit 1 if a
//       program fails or nothing can be written (no disk cache, or a read-only one).
//
// --emit ptx compiles every kernel with NVRTC (no GPU needed) and prints the PTX. --emit
// times compiles every kernel as a first run would (memory-only cache, cubin) and prints
// one row: planning, NVRTC's load, and the compile split into NVRTC's phases (front end,
// NVVM optimiser, ptxas), summed over the kernels; `--emit times-header` prints the
// header row. `--jobs N` compiles a program's kernels on N threads (default: one per
// hardware thread, as Runtime::precompile; 1: one after another, as a run does).
// `--quick` (with --emit times or ptx): tiered compilation's tier 0 (CompileOptions::quick)
// for the kernels a tiered first run compiles quickly (fixed-grid ones). A program that does not parse or check prints the GraphError and exits with 1.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include <fuseflow/codegen/plan.hpp>
#include <fuseflow/runtime/compiler.hpp>
#include <fuseflow/runtime/config.hpp>
#include <fuseflow/runtime/kernel_cache.hpp>

namespace ff = fuseflow;

namespace {

// The Runtime's FMA contraction (Runtime::compile_options): off when FUSEFLOW_TIERED turns
// tiered compilation on (both tiers then round alike), NVRTC's default otherwise, so the
// kernels compiled here have the keys a Runtime of this environment looks up.
bool runtime_fmad() { return !ff::read_environment().tiered; }
void print_usage(std::ostream& out) {
  out << "usage: fuseflow-dump --list\n"
      << "       fuseflow-dump --example NAME [--emit program|plan|cuda|ptx|times] [--arch sm_90|sm_80] [--quick]\n"
      << "       fuseflow-dump --program FILE|- [--emit program|plan|cuda|ptx|times] [--arch sm_90|sm_80] [--quick]\n"
      << "       fuseflow-dump --emit times-header\n"
      << "       fuseflow-dump --warm FILE... [--arch sm_90|sm_80] [--sms N] [--ptx] [--cache-dir DIR]\n"
      << "       ... [--option NAME=VALUE]... (plan options: scan_tile, filter_tile, segmented_tile,\n"
      << "           scan_staged_from, scan_pipeline, segmented_short, segmented_pipeline)\n"
      << "       fuseflow-dump --help | -h\n";
}

// A bad command line: why, then the usage, on stderr; exit status 2.
int usage(const char* why) {
  std::cerr << "fuseflow-dump: " << why << "\n";
  print_usage(std::cerr);
  return 2;
}

// The text of `path`, or of standard input for "-"; GraphError when it cannot be read.
std::string read_text(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw ff::GraphError("cannot read the program file '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << (path == "-" ? std::cin.rdbuf() : file.rdbuf());
  return text.str();
}

// --option NAME=VALUE...: into `options` (ConfigError for a bad value); a text that is not
// NAME=VALUE gives the usage error to print, else "".
std::string parse_plan_options(const std::vector<std::string>& texts, ff::codegen::PlanOptions& options) {
  for (const auto& o : texts) {
    const std::size_t eq = o.find('=');
    if (eq == std::string::npos) return "--option " + o + ": expected NAME=VALUE";
    ff::codegen::set_option(options, o.substr(0, eq), o.substr(eq + 1), "--option " + o.substr(0, eq));
  }
  ff::codegen::validate(options);
  return "";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

const char* kTimesHeader =
    "program                        kernels  plan ms  nvrtc load  front end  optimizer   ptxas  nvrtc other  compile ms\n";

// One row of the first-run split (--emit times): what a fresh process pays before the
// first launch, less the CUDA context and module load.
std::vector<ff::Header> embedded_headers() {
  std::vector<ff::Header> headers;
  for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
  return headers;
}

void print_times(const std::string& name, const ff::Program& p, const ff::codegen::Target& target,
                 const ff::codegen::PlanOptions& plan_options, const std::string& arch, unsigned jobs, bool quick) {
  auto start = std::chrono::steady_clock::now();
  // dlopen of libnvrtc and NVRTC's one-time set-up, as a Runtime's constructor does
  // (behind the CUDA context's creation there).
  (void)ff::Compiler::warm_up();
  const double load_ms = ms_since(start);
  start = std::chrono::steady_clock::now();
  const ff::codegen::Plan plan = ff::codegen::plan(p, target, plan_options);
  const double plan_ms = ms_since(start);
  const std::vector<ff::Header> headers = embedded_headers();
  ff::KernelCache cache(ff::CacheSettings{});  // memory only: every kernel compiled once
  ff::CompileOptions options;
  options.arch = arch;
  options.fmad = runtime_fmad();  // as the Runtime compiles
  options.minimal = true;
  ff::CompileOptions fast = options;
  fast.quick = true;
  ff::CompilePhases sum;
  // --quick: a tiered first run's kernels (fixed-grid ones quick, the others as usual),
  // the two groups at once as the Runtime compiles them.
  std::vector<ff::KernelSource> kernels, quick_kernels;
  for (const auto& k : plan.kernels) (quick && !k.any_grid ? quick_kernels : kernels).push_back({k.name, k.source});
  start = std::chrono::steady_clock::now();
  auto quick_results = std::async(std::launch::async, [&] {
    return cache.get_all(quick_kernels, fast, headers, /*time_phases=*/true, jobs);
  });
  std::vector<ff::CacheResult> results = cache.get_all(kernels, options, headers, /*time_phases=*/true, jobs);
  for (ff::CacheResult& r : quick_results.get()) results.push_back(std::move(r));
  for (const ff::CacheResult& r : results) {
    sum.front_end_ms += r.phases.front_end_ms;
    sum.optimizer_ms += r.phases.optimizer_ms;
    sum.ptxas_ms += r.phases.ptxas_ms;
    sum.total_ms += r.phases.total_ms;
  }
  const double compile_ms = ms_since(start);
  std::printf("%-30s %7zu %8.1f %11.1f %10.0f %10.0f %7.0f %12.0f %11.1f\n", name.c_str(), plan.kernels.size(),
              plan_ms, load_ms, sum.front_end_ms, sum.optimizer_ms, sum.ptxas_ms,
              sum.total_ms - sum.front_end_ms - sum.optimizer_ms - sum.ptxas_ms, compile_ms);
}
}  // namespace

// --warm: every file's program planned for `target` and compiled into `dir` (or the
// environment's cache directory).
int warm(const std::vector<std::string>& files, const ff::codegen::Target& target,
         const ff::codegen::PlanOptions& plan_options, bool ptx, const std::string& dir, unsigned jobs) {
  ff::CacheSettings settings = ff::CacheSettings::from_environment();
  if (!dir.empty()) settings.disk_dir = dir;
  if (!settings.disk_dir) {
    std::cerr << "fuseflow-dump --warm: no disk cache (FUSEFLOW_CACHE=0, or none of FUSEFLOW_CACHE_DIR, "
                 "XDG_CACHE_HOME, HOME set): give --cache-dir DIR\n";
    return 1;
  }
  if (settings.read_only) {
    std::cerr << "fuseflow-dump --warm: the cache " << *settings.disk_dir
              << " is read-only (FUSEFLOW_CACHE_READONLY): nothing can be written\n";
    return 1;
  }
  ff::KernelCache cache(settings);
  if (!cache.disk_enabled()) return 1;  // the cache printed why
  ff::CompileOptions options;
  options.arch = target.arch();
  options.ptx = ptx;
  options.fmad = runtime_fmad();  // the Runtime's options (Runtime::compile_options): tier 1
  options.minimal = true;
  const std::vector<ff::Header> headers = embedded_headers();
  std::vector<ff::codegen::Plan> plans;
  int status = 0;
  for (const std::string& file : files) {
    try {
      plans.push_back(ff::codegen::plan(ff::parse_program(read_text(file)), target, plan_options));
    } catch (const ff::Error& e) {
      std::cerr << file << ": " << e.what() << "\n";
      status = 1;
    }
  }
  std::vector<ff::KernelSource> kernels;
  for (const auto& plan : plans)
    for (const auto& k : plan.kernels) kernels.push_back({k.name, k.source});
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)cache.get_all(kernels, options, headers, false, jobs);
  } catch (const ff::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  const ff::CacheStats stats = cache.stats();
  std::printf("warmed %s for %s (%d SMs%s): %zu programs, %zu kernels: %llu compiled, %llu already there; "
              "%llu entries written in %.0f ms\n",
              settings.disk_dir->string().c_str(), options.arch.c_str(), target.sm_count, ptx ? ", PTX" : "",
              plans.size(), kernels.size(), static_cast<unsigned long long>(stats.compiles),
              static_cast<unsigned long long>(stats.disk_hits), static_cast<unsigned long long>(stats.disk_writes),
              ms_since(start));
  if (stats.disk_write_failures) return 1;
  return status;
}

int main(int argc, char** argv) {
  std::string example, program_file, emit = "cuda", arch = "sm_90", cache_dir;
  std::vector<std::string> option_texts, warm_files;
  bool warming = false, ptx = false, quick = false;
  int sms = 0;
  unsigned jobs = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--help" || a == "-h") {
      print_usage(std::cout);
      return 0;
    }
    if (a == "--list") {
      for (const auto& e : ff::catalog::entries()) std::cout << e.name << "  " << e.description << "\n";
      return 0;
    }
    if (a == "--example") example = value();
    else if (a == "--program") program_file = value();
    else if (a == "--emit") emit = value();
    else if (a == "--arch") arch = value();
    else if (a == "--option") option_texts.push_back(value());
    else if (a == "--warm") warming = true;
    else if (a == "--ptx") ptx = true;
    else if (a == "--quick") quick = true;
    else if (a == "--cache-dir") cache_dir = value();
    else if (a == "--sms" || a == "--jobs") {
      const std::string text = value();
      const int n = std::atoi(text.c_str());
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || n <= 0 || n > 4096)
        return usage((a + " takes a whole number in [1, 4096], got '" + text + "'").c_str());
      if (a == "--sms") sms = n;
      else jobs = static_cast<unsigned>(n);
    } else if (warming && !a.empty() && a[0] != '-') warm_files.push_back(a);
    else return usage(("unknown argument " + a).c_str());
  }
  if (warming) {
    if (warm_files.empty()) return usage("--warm needs at least one program file");
    try {
      ff::codegen::Target target = ff::codegen::Target::preset(arch);
      if (sms) target.sm_count = sms;
      ff::codegen::PlanOptions plan_options;
      if (const std::string bad = parse_plan_options(option_texts, plan_options); !bad.empty())
        return usage(bad.c_str());
      return warm(warm_files, target, plan_options, ptx, cache_dir, jobs);
    } catch (const ff::Error& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
  }
  if (emit == "times-header") {
    std::cout << kTimesHeader;
    return 0;
  }
  if (example.empty() == program_file.empty()) return usage("one of --example NAME and --program FILE is required");
  try {
    ff::Program p = example.empty() ? ff::parse_program(read_text(program_file)) : ff::catalog::find(example).build();
    ff::codegen::Target target = ff::codegen::Target::preset(arch);
    ff::codegen::PlanOptions plan_options;
    if (const std::string bad = parse_plan_options(option_texts, plan_options); !bad.empty()) return usage(bad.c_str());
    if (emit == "program") {
      std::cout << ff::to_string(p);
    } else if (emit == "plan") {
      std::cout << ff::codegen::explain(p, target, plan_options);
    } else if (emit == "cuda") {
      std::cout << ff::codegen::cuda_source(p, target, plan_options);
    } else if (emit == "ptx") {
      ff::CompileOptions options;
      options.arch = arch;
      options.fmad = runtime_fmad();  // as the Runtime compiles
      options.minimal = true;
      options.quick = quick;
      std::vector<ff::Header> headers;
      for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
      for (const auto& k : ff::codegen::plan(p, target, plan_options).kernels)
        std::cout << ff::Compiler::ptx(k.source, options, headers, k.name);
    } else if (emit == "times") {
      print_times(example.empty() ? program_file : example, p, target, plan_options, arch, jobs, quick);
    } else {
      return usage(("unknown --emit " + emit).c_str());
    }
  } catch (const ff::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
