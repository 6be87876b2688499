#pragma once
// Tiered compilation (RuntimeOptions::tiered; README "Tiered compilation"): a prepared
// program whose kernels are in neither cache gets quickly compiled ones (tier 0) for its
// first runs while the optimised ones (tier 1) compile on a background thread; a later
// run swaps them in.
#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fuseflow/runtime/kernel_cache.hpp"
#include "fuseflow/runtime/runtime.hpp"

namespace fuseflow::detail {

struct PreparedProgram;
struct Executor;

// One program's tier-1 compile in flight, shared by the background thread (which fills it
// and then sets `ready`) and the prepared program (which reads it once ready).
struct TierUp {
  std::atomic<bool> ready{false};
  std::vector<std::size_t> kernels;  // plan indices of the tier-0 kernels
  std::vector<CacheResult> results;  // their tier-1 binaries, once ready (empty on failure)
  std::string error;                 // why the compile failed, once ready
};

using Background = std::function<void(std::function<void()>)>;
using Loader = std::function<KernelHandle(const CacheResult&, std::string_view)>;

// The kernels of `p`'s plan as the cache has them, in plan order. With `tiered`, each
// kernel that is in neither cache and may be tiered (a fixed grid; no fast math) is
// compiled with CompileOptions::quick (not cached) and p.tier0 marks it; their tier-1
// compile goes to `background` and p.tier_up tracks it. Otherwise KernelCache::get_all.
std::vector<CacheResult> find_kernels(KernelCache& cache, PreparedProgram& p, Executor& ex, const CompileOptions& compile,
                                      std::span<const Header> headers, bool tiered, const Background& background);

// At a run of a prepared program with a tier-1 compile in flight: once it is ready, its
// kernels replace the tier-0 ones (loaded with `load`; the old ones stay alive in
// p.retired until the program goes, for runs still in flight), or on failure tier 0 stays
// and one warning names the kernel and the error. Not while the stream is captured.
void swap_in_tier1(PreparedProgram& p, Executor& ex, const Loader& load, bool capturing);

}  // namespace fuseflow::detail
