// Tiered compilation (tiered.hpp). Tier 0 is the same source with the same numerics flags
// as tier 1 (no fast math, no FMA contraction: CompileOptions::fmad off for both), compiled
// with NVRTC's -Ofc (CompileOptions::quick), so both give the same bits; bench/RESULTS.md
// ("First-run compile") has what it saves.
#include "tiered.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "executor/prepared.hpp"
#include "fuseflow/runtime/error.hpp"

namespace fuseflow::detail {
namespace {

// A kernel may be tiered when its bits cannot depend on the binary: a grid the plan fixes
// (an any_grid kernel is launched on the blocks its registers let be resident, and a float
// reduction's rounding follows the grid), and no fast math (which implies --fmad=true).
bool may_tier(const codegen::KernelSpec& k, const CompileOptions& compile) { return !k.any_grid && !compile.fast_math; }

}  // namespace

std::vector<CacheResult> find_kernels(KernelCache& cache, PreparedProgram& p, Executor& ex, const CompileOptions& compile,
                                      std::span<const Header> headers, bool tiered, const Background& background) {
  const std::vector<codegen::KernelSpec>& kernels = p.plan.kernels;
  p.tier0.assign(kernels.size(), false);
  std::vector<KernelSource> all;
  for (const auto& k : kernels) all.push_back({k.name, k.source});
  if (!tiered) return cache.get_all(all, compile, headers);

  // Tier 1 where either cache has it; the others compile now, quick ones beside full ones.
  std::vector<CacheResult> results(kernels.size());
  std::vector<std::size_t> quick, full;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!may_tier(kernels[i], compile)) {
      full.push_back(i);
    } else if (std::optional<CacheResult> hit = cache.find(kernels[i].name, kernels[i].source, compile, headers)) {
      results[i] = std::move(*hit);
    } else {
      quick.push_back(i);
    }
  }
  if (quick.empty()) {
    std::vector<KernelSource> rest;
    for (std::size_t i : full) rest.push_back(all[i]);
    std::vector<CacheResult> found = cache.get_all(rest, compile, headers);
    for (std::size_t j = 0; j < full.size(); ++j) results[full[j]] = std::move(found[j]);
    return results;
  }

  CompileOptions fast = compile;
  fast.quick = true;
  std::vector<std::exception_ptr> errors(kernels.size());
  std::vector<std::thread> threads;
  for (std::size_t j = 1; j < quick.size(); ++j) {
    threads.emplace_back([&, i = quick[j]] {
      try {
        const auto start = std::chrono::steady_clock::now();
        results[i].kernel = std::make_shared<const CompiledKernel>(
            Compiler::compile(kernels[i].source, kernels[i].name, fast, headers));
        results[i].milliseconds =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  // The fixed ones on this thread, then the first quick one (they overlap the others).
  std::exception_ptr full_error;
  try {
    std::vector<KernelSource> rest;
    for (std::size_t i : full) rest.push_back(all[i]);
    std::vector<CacheResult> found = cache.get_all(rest, compile, headers);
    for (std::size_t j = 0; j < full.size(); ++j) results[full[j]] = std::move(found[j]);
  } catch (...) {
    full_error = std::current_exception();
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    results[quick[0]].kernel = std::make_shared<const CompiledKernel>(
        Compiler::compile(kernels[quick[0]].source, kernels[quick[0]].name, fast, headers));
    results[quick[0]].milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  } catch (...) {
    errors[quick[0]] = std::current_exception();
  }
  for (std::thread& t : threads) t.join();
  // The first error in plan order, as get_all reports it (a CompileError of the source).
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (errors[i]) std::rethrow_exception(errors[i]);
  if (full_error) std::rethrow_exception(full_error);

  const bool log = cache.settings().log || cache.settings().log_compile;
  for (std::size_t i : quick) {
    p.tier0[i] = true;
    results[i].hash = KernelCache::key_hash(kernels[i].name, kernels[i].source, fast, headers);
    if (log)
      std::fprintf(stderr, "fuseflow: %s: tier 0 compiled (%.0f ms); tier 1 compiling in the background\n",
                   kernels[i].name.c_str(), results[i].milliseconds);
  }
  ex.tiers.tier0_compiles += quick.size();

  // Tier 1 in the background, into the kernel cache (and its disk). The thread owns copies
  // of what it reads: the program may be evicted, the Runtime destroyed (it joins first).
  auto up = std::make_shared<TierUp>();
  up->kernels = quick;
  p.tier_up = up;
  struct Job {
    std::vector<std::string> names, sources;
    std::vector<Header> headers;
    CompileOptions options;
  };
  auto job = std::make_shared<Job>();
  for (std::size_t i : quick) {
    job->names.push_back(kernels[i].name);
    job->sources.push_back(kernels[i].source);
  }
  job->headers.assign(headers.begin(), headers.end());
  job->options = compile;
  background([&cache, up, job] {
    try {
      std::vector<KernelSource> batch;
      for (std::size_t j = 0; j < job->names.size(); ++j) batch.push_back({job->names[j], job->sources[j]});
      up->results = cache.get_all(batch, job->options, job->headers);
    } catch (const std::exception& e) {
      up->results.clear();
      up->error = e.what();
    } catch (...) {
      up->results.clear();
      up->error = "unknown error";
    }
    up->ready.store(true, std::memory_order_release);
  });
  return results;
}

void swap_in_tier1(PreparedProgram& p, Executor& ex, const Loader& load, bool capturing) {
  if (capturing || !p.tier_up->ready.load(std::memory_order_acquire)) return;
  const std::shared_ptr<TierUp> up = std::move(p.tier_up);
  p.tier_up.reset();
  std::string error = up->error;
  std::vector<KernelHandle> loaded;
  if (error.empty()) {
    try {
      for (std::size_t j = 0; j < up->kernels.size(); ++j)
        loaded.push_back(load(up->results[j], p.plan.kernels[up->kernels[j]].name));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    // The program runs on at tier 0 (correct, and the same bits), only slower; a new
    // Runtime or process compiles tier 1 again.
    ++ex.tiers.failures;
    std::fprintf(stderr,
                 "fuseflow: warning: the optimised compile of %s failed in the background; its program keeps "
                 "the quickly compiled kernels: %s\n",
                 p.plan.kernels[up->kernels.front()].name.c_str(), error.c_str());
    return;
  }
  for (std::size_t j = 0; j < up->kernels.size(); ++j) {
    const std::size_t i = up->kernels[j];
    // Runs already queued may still use the tier-0 module: it lives as long as the program.
    p.retired.push_back(std::move(p.kernels[i]));
    p.kernels[i] = std::move(loaded[j]);
    p.tier0[i] = false;
    ++ex.tiers.swaps;
  }
}

}  // namespace fuseflow::detail
