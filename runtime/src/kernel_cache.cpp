#include "fuseflow/runtime/kernel_cache.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <unordered_map>

#include "fuseflow/runtime/config.hpp"
#include "fuseflow/runtime/hash.hpp"
#include "kernel_code.hpp"
#include "kernel_dump.hpp"

namespace fuseflow {

std::string_view detail::code_of(std::string_view source) {
  std::size_t at = 0;
  while (source.compare(at, 2, "//") == 0) {
    const std::size_t end = source.find('\n', at);
    if (end == std::string_view::npos) return source.substr(source.size());
    at = end + 1;
  }
  return source.substr(at);
}

namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const std::string& nvrtc_version_text() {
  static const std::string text = [] {
    const NvrtcVersion v = Compiler::version();
    return std::to_string(v.major) + "." + std::to_string(v.minor);
  }();
  return text;
}

// What of `source` the key covers: all of it, less the leading `//` comment lines unless
// line numbers go into the binary (line_info). Comments cannot change the code NVRTC
// makes; generated kernels open with their program's text there, so one kernel shared by
// several programs would otherwise be compiled (and stored) once per program.
std::string_view code_of(std::string_view source, const CompileOptions& options) {
  return options.line_info ? source : detail::code_of(source);
}

// Disk payload: u8 format, u32 log length, log, image.
std::string encode_kernel(const CompiledKernel& kernel) {
  std::string out;
  out.push_back(static_cast<char>(kernel.format));
  const auto log_size = static_cast<std::uint32_t>(kernel.log.size());
  out.append(reinterpret_cast<const char*>(&log_size), sizeof log_size);
  out += kernel.log;
  out += kernel.image;
  return out;
}

std::optional<CompiledKernel> decode_kernel(std::string_view payload) {
  if (payload.size() < 5) return std::nullopt;
  const auto format = static_cast<BinaryFormat>(payload[0]);
  if (format != BinaryFormat::cubin && format != BinaryFormat::ptx) return std::nullopt;
  std::uint32_t log_size;
  std::memcpy(&log_size, payload.data() + 1, sizeof log_size);
  if (payload.size() < 5 + std::size_t{log_size}) return std::nullopt;
  CompiledKernel kernel;
  kernel.format = format;
  kernel.log = std::string(payload.substr(5, log_size));
  kernel.image = std::string(payload.substr(5 + log_size));
  return kernel;
}

std::uint64_t hash_parts(std::string_view kernel_name, std::string_view source,
                         std::string_view options_key, std::span<const Header> headers) {
  std::uint64_t h = hash64(kernel_name, 0x66666b6300000002ULL);
  h = hash64(options_key, h);
  h = hash64(nvrtc_version_text(), h);
  for (const Header& header : headers) h = hash64(header.content, hash64(header.name, h));
  return hash64(source, h);
}

std::string key_from_parts(std::string_view kernel_name, std::string_view source,
                           std::string_view options_key, std::span<const Header> headers) {
  std::string key = "fuseflow kernel\nkernel " + std::string(kernel_name) + "\nnvrtc " +
                    nvrtc_version_text() + "\noptions\n" + std::string(options_key);
  // Headers by digest: the helper library is large and identical across kernels.
  for (const Header& header : headers)
    key += "header " + header.name + " " + std::to_string(header.content.size()) + " " +
           hex64(hash64(header.content)) + "\n";
  key += "source " + std::to_string(source.size()) + "\n";
  key += source;
  return key;
}

// A kernel's compile time, roughly: its source and the device-library headers it includes
// (the large kernels are the ones built on the large templates). Only its order matters.
std::size_t compile_cost(std::string_view source, std::span<const Header> headers) {
  std::size_t cost = source.size();
  for (const Header& header : headers)
    if (source.find("#include <" + header.name + ">") != std::string_view::npos ||
        source.find("#include \"" + header.name + "\"") != std::string_view::npos)
      cost += header.content.size();
  return cost;
}

}  // namespace

CacheSettings CacheSettings::from_environment() { return read_environment().cache; }

const char* to_string(CacheOutcome outcome) noexcept {
  switch (outcome) {
    case CacheOutcome::memory_hit: return "memory hit";
    case CacheOutcome::disk_hit: return "disk hit";
    case CacheOutcome::compiled: return "compiled";
  }
  return "?";
}

KernelCache::KernelCache(CacheSettings settings)
    : settings_(std::move(settings)), memory_(settings_.memory_entries, settings_.memory_bytes) {
  if (settings_.disk_dir) disk_ = std::make_unique<DiskCache>(*settings_.disk_dir, settings_.read_only);
}

std::string KernelCache::key_string(std::string_view kernel_name, std::string_view source,
                                    const CompileOptions& options,
                                    std::span<const Header> headers) {
  return key_from_parts(kernel_name, code_of(source, options), options.key(), headers);
}

std::uint64_t KernelCache::key_hash(std::string_view kernel_name, std::string_view source,
                                    const CompileOptions& options,
                                    std::span<const Header> headers) {
  return hash_parts(kernel_name, code_of(source, options), options.key(), headers);
}

std::filesystem::path KernelCache::disk_entry_path(std::uint64_t hash) const {
  return disk_ ? disk_->entry_path(hash) : std::filesystem::path();
}

CacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  CacheStats s = stats_;
  const LruStats memory = memory_.stats();
  s.evictions = memory.evictions;
  s.memory_entries = memory.entries;
  s.memory_bytes = memory.bytes;
  return s;
}

KernelCache::Lookup KernelCache::lookup(std::string_view kernel_name, std::string_view source,
                                        const CompileOptions& options, std::span<const Header> headers) {
  Lookup k{0, kernel_name, code_of(source, options), options.key()};
  k.hash = hash_parts(kernel_name, k.code, k.options_key, headers);
  return k;
}

std::shared_ptr<const CompiledKernel> KernelCache::in_memory(const Lookup& k, bool count_miss) {
  std::lock_guard lock(mutex_);
  const MemoryEntry* entry = memory_.find(k.hash);
  // Compare the texts too, so even a 64-bit hash collision cannot return a wrong kernel.
  if (entry && entry->kernel && entry->source == k.code && entry->kernel_name == k.name &&
      entry->options_key == k.options_key) {
    ++stats_.memory_hits;
    return entry->kernel;
  }
  if (count_miss) ++stats_.misses;
  return nullptr;
}

std::shared_ptr<const CompiledKernel> KernelCache::keep(const Lookup& k, std::shared_ptr<const CompiledKernel> kernel) {
  std::lock_guard lock(mutex_);
  const MemoryEntry* entry = memory_.find(k.hash);
  // If another thread got here first, share its object: callers rely on one object per
  // kernel (the Runtime keys loaded modules by it).
  if (entry && entry->kernel && entry->source == k.code && entry->kernel_name == k.name &&
      entry->options_key == k.options_key)
    return entry->kernel;
  const std::size_t bytes =
      k.name.size() + k.code.size() + k.options_key.size() + kernel->image.size() + kernel->log.size();
  memory_.insert(k.hash, MemoryEntry{std::string(k.name), std::string(k.code), k.options_key, kernel}, bytes);
  return kernel;
}

std::optional<CacheResult> KernelCache::find(std::string_view kernel_name, std::string_view source,
                                             const CompileOptions& options, std::span<const Header> headers) {
  const Clock::time_point start = Clock::now();
  const Lookup k = lookup(kernel_name, source, options, headers);
  CacheResult result;
  result.hash = k.hash;
  result.kernel = in_memory(k, false);
  result.outcome = CacheOutcome::memory_hit;
  if (!result.kernel) {
    std::shared_ptr<const CompiledKernel> loaded =
        load_from_disk(k.hash, key_from_parts(kernel_name, k.code, k.options_key, headers));
    if (!loaded) return std::nullopt;
    {
      std::lock_guard lock(mutex_);
      ++stats_.misses;
    }
    result.outcome = CacheOutcome::disk_hit;
    result.kernel = keep(k, std::move(loaded));
  }
  result.milliseconds = milliseconds_since(start);
  if (settings_.log || settings_.log_compile) report(kernel_name, result);
  return result;
}

CacheResult KernelCache::get(std::string_view kernel_name, std::string_view source,
                             const CompileOptions& options, std::span<const Header> headers,
                             bool time_phases) {
  const Clock::time_point start = Clock::now();
  const Lookup k = lookup(kernel_name, source, options, headers);
  CacheResult result;
  result.hash = k.hash;
  result.kernel = in_memory(k, true);
  result.outcome = CacheOutcome::memory_hit;
  if (!result.kernel) {
    // The lock is not held while compiling: two threads missing on one key both compile
    // (same result) rather than serialising every compile in the process.
    const std::string key = key_from_parts(kernel_name, k.code, k.options_key, headers);
    std::shared_ptr<const CompiledKernel> kernel = load_from_disk(k.hash, key);
    result.outcome = kernel ? CacheOutcome::disk_hit : CacheOutcome::compiled;
    if (!kernel) {
      kernel = std::make_shared<const CompiledKernel>(
          Compiler::compile(source, kernel_name, options, headers,
                            time_phases || settings_.log_compile ? &result.phases : nullptr));
      const bool tried = disk_ && disk_->enabled();
      const bool stored = tried && disk_->store(k.hash, key, encode_kernel(*kernel));
      if (disk_ && disk_->read_only()) disk_->refuse_store();  // one warning, nothing written
      std::lock_guard lock(mutex_);
      ++stats_.compiles;
      if (stored) ++stats_.disk_writes;
      if (tried && !stored) ++stats_.disk_write_failures;
    }
    result.kernel = keep(k, std::move(kernel));
    if (settings_.dump_dir)
      detail::dump_kernel(*settings_.dump_dir, kernel_name, result.hash, source, options, headers,
                          *result.kernel);
  }
  result.milliseconds = milliseconds_since(start);
  if (settings_.log || settings_.log_compile) report(kernel_name, result);
  return result;
}

std::vector<CacheResult> KernelCache::get_all(std::span<const KernelSource> kernels, const CompileOptions& options,
                                              std::span<const Header> headers, bool time_phases, unsigned threads) {
  // Each distinct kernel once, in parallel; a repeat is served from memory afterwards.
  std::vector<std::size_t> first_of(kernels.size());
  std::vector<std::size_t> distinct;
  std::unordered_map<std::uint64_t, std::size_t> seen;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const auto [at, fresh] = seen.try_emplace(key_hash(kernels[i].name, kernels[i].source, options, headers), i);
    first_of[i] = at->second;
    if (fresh) distinct.push_back(i);
  }
  // The costliest compiles first (longest processing time first): a batch of many kernels
  // (Runtime::precompile, fuseflow-dump --warm) then ends soon after its longest one
  // rather than with one started last.
  if (distinct.size() > 2) {
    std::vector<std::size_t> cost(kernels.size());
    for (std::size_t i : distinct) cost[i] = compile_cost(kernels[i].source, headers);
    std::stable_sort(distinct.begin(), distinct.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  }
  std::vector<CacheResult> results(kernels.size());
  std::vector<std::exception_ptr> errors(kernels.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t d = next++; d < distinct.size(); d = next++) {
      const std::size_t i = distinct[d];
      try {
        results[i] = get(kernels[i].name, kernels[i].source, options, headers, time_phases);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t helpers = std::min<std::size_t>(threads ? threads : hardware, distinct.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (errors[first_of[i]]) std::rethrow_exception(errors[first_of[i]]);
    if (first_of[i] != i) results[i] = get(kernels[i].name, kernels[i].source, options, headers);
  }
  return results;
}

std::shared_ptr<const CompiledKernel> KernelCache::load_from_disk(std::uint64_t hash,
                                                                  const std::string& key) {
  if (!disk_) return nullptr;
  DiskCache::Loaded loaded = disk_->load(hash, key);
  std::optional<CompiledKernel> kernel;
  if (loaded.status == DiskCache::LoadStatus::hit) {
    kernel = decode_kernel(loaded.payload);
    if (!kernel) {
      loaded.status = DiskCache::LoadStatus::rejected;
      loaded.reason = "undecodable payload";
    }
  }
  std::lock_guard lock(mutex_);
  if (loaded.status == DiskCache::LoadStatus::rejected) {
    ++stats_.rejected_entries;
    if (settings_.log)
      std::fprintf(stderr, "fuseflow: ignoring cache entry %s: %s\n",
                   disk_->entry_path(hash).string().c_str(), loaded.reason.c_str());
    return nullptr;
  }
  if (!kernel) return nullptr;
  ++stats_.disk_hits;
  return std::make_shared<const CompiledKernel>(std::move(*kernel));
}

void KernelCache::report(std::string_view kernel_name, const CacheResult& result) const {
  const std::string name(kernel_name);
  const double ms = result.milliseconds;
  const CompilePhases& p = result.phases;
  if (result.outcome == CacheOutcome::memory_hit) {
    std::fprintf(stderr, "fuseflow: %s %s: memory hit\n", name.c_str(), hex64(result.hash).c_str());
  } else if (result.outcome == CacheOutcome::compiled && p.measured) {
    std::fprintf(stderr,
                 "fuseflow: %s %s: compiled (%.*f ms: front end %.0f, optimizer %.0f, ptxas %.0f, nvrtc other %.0f)\n",
                 name.c_str(), hex64(result.hash).c_str(), ms < 10 ? 1 : 0, ms, p.front_end_ms, p.optimizer_ms,
                 p.ptxas_ms, p.total_ms - p.front_end_ms - p.optimizer_ms - p.ptxas_ms);
  } else {
    std::fprintf(stderr, "fuseflow: %s %s: %s (%.*f ms)\n", name.c_str(), hex64(result.hash).c_str(),
                 to_string(result.outcome), ms < 10 ? 1 : 0, ms);
  }
}

}  // namespace fuseflow
