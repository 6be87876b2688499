#pragma once
// The kernel cache: a thread-safe in-memory map in front of a DiskCache, compiling with
// NVRTC on a miss. The key covers everything that can change the binary: kernel name,
// source, every header's content, CompileOptions::key() (arch included) and the NVRTC
// version. The source's leading comment lines (the generated kernels' description of
// their program) are left out of the key unless line_info is set: they cannot change the
// binary, and kernels that differ only there (one scan in several programs) compile once. It also implements FUSEFLOW_DUMP and FUSEFLOW_LOG, since it is the one place
// that sees every kernel and knows how it was obtained.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fuseflow/runtime/compile_options.hpp"
#include "fuseflow/runtime/compiler.hpp"
#include "fuseflow/runtime/disk_cache.hpp"
#include "fuseflow/runtime/lru_cache.hpp"

namespace fuseflow {

struct CacheSettings {
  std::optional<std::filesystem::path> disk_dir;  // nullopt: memory only
  // A cache directory shipped read-only (a container image, a shared mount; the
  // FUSEFLOW_CACHE_READONLY=1 variable): its entries are served, a kernel not in it is
  // compiled and kept in memory, nothing is written, and the first such kernel prints one
  // warning. Set it explicitly where the process could write anyway (as root).
  bool read_only = false;
  std::optional<std::filesystem::path> dump_dir;  // FUSEFLOW_DUMP
  bool log = false;                               // FUSEFLOW_LOG=1
  // FUSEFLOW_LOG=compile: as log, and each compile's split into NVRTC's phases (front
  // end, NVVM optimiser, ptxas) beside its total.
  bool log_compile = false;
  // The compiled kernels kept in memory (source and binary each), least recently used
  // first out; the disk keeps them all.
  std::size_t memory_entries = 1024;
  std::size_t memory_bytes = std::size_t{256} << 20;

  // FUSEFLOW_CACHE=0 disables the disk; the directory is $FUSEFLOW_CACHE_DIR, else
  // $XDG_CACHE_HOME/fuseflow, else $HOME/.cache/fuseflow (memory only if none is set).
  // Read by config.cpp (read_environment()); a bad value is a ConfigError.
  static CacheSettings from_environment();
};

enum class CacheOutcome { memory_hit, disk_hit, compiled };

// One kernel of a batch (KernelCache::get_all).
struct KernelSource {
  std::string_view name;
  std::string_view source;
};
const char* to_string(CacheOutcome outcome) noexcept;

struct CacheResult {
  std::shared_ptr<const CompiledKernel> kernel;  // the same object for every memory hit
  std::uint64_t hash = 0;
  CacheOutcome outcome = CacheOutcome::compiled;
  double milliseconds = 0;  // time spent in get()
  CompilePhases phases;     // when compiled with settings.log_compile or get(..., time_phases)
};

struct CacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t misses = 0;    // not in memory (a disk hit is also a miss here)
  std::uint64_t compiles = 0;  // NVRTC runs
  std::uint64_t disk_writes = 0;
  std::uint64_t rejected_entries = 0;  // corrupt / truncated / mismatched disk entries
  std::uint64_t evictions = 0;         // kernels dropped from memory past the limits
  std::size_t memory_entries = 0;      // kernels in memory now
  std::size_t memory_bytes = 0;        // their sources, binaries and logs
  std::uint64_t disk_write_failures = 0;  // stores the disk refused (full, read-only): warned once
};

class KernelCache {
 public:
  explicit KernelCache(CacheSettings settings = CacheSettings::from_environment());

  // The kernel for this source, from memory, disk or NVRTC (in that order). Throws
  // CompileError if NVRTC rejects the source; cache I/O problems never throw.
  // time_phases: a compile also reports NVRTC's phases in CacheResult::phases (as
  // settings.log_compile does).
  CacheResult get(std::string_view kernel_name, std::string_view source,
                  const CompileOptions& options, std::span<const Header> headers = {},
                  bool time_phases = false);

  // The kernel from memory or disk as get() finds it, or nullopt where get() would compile
  // (tiered compilation: a miss is compiled quickly first). A miss is not counted.
  std::optional<CacheResult> find(std::string_view kernel_name, std::string_view source,
                                  const CompileOptions& options, std::span<const Header> headers = {});

  // The kernels of a batch (a program's, or several programs' for precompiling): each
  // from memory, disk or NVRTC as get() does, the misses compiled in parallel threads
  // (each its own NVRTC program; at most `threads`, 0: one per hardware thread) and each
  // distinct kernel once. Results in the order given; the first CompileError (in that
  // order) is rethrown once every compile has finished.
  std::vector<CacheResult> get_all(std::span<const KernelSource> kernels, const CompileOptions& options,
                                   std::span<const Header> headers = {}, bool time_phases = false,
                                   unsigned threads = 0);

  CacheStats stats() const;
  const CacheSettings& settings() const noexcept { return settings_; }
  bool disk_enabled() const noexcept { return disk_ && disk_->enabled(); }
  // Where the entry for `hash` lives (or would live); empty when memory only.
  std::filesystem::path disk_entry_path(std::uint64_t hash) const;

  // The key as stored in disk entries, and its hash (which names the entry).
  static std::string key_string(std::string_view kernel_name, std::string_view source,
                                const CompileOptions& options, std::span<const Header> headers);
  static std::uint64_t key_hash(std::string_view kernel_name, std::string_view source,
                                const CompileOptions& options, std::span<const Header> headers);

 private:
  struct MemoryEntry {
    std::string kernel_name;
    std::string source;
    std::string options_key;
    std::shared_ptr<const CompiledKernel> kernel;
  };

  // What get() and find() look a kernel up by: the hash and the texts it must match.
  struct Lookup {
    std::uint64_t hash;
    std::string_view name;
    std::string_view code;  // the source as compiled (code_of)
    std::string options_key;
  };
  static Lookup lookup(std::string_view kernel_name, std::string_view source, const CompileOptions& options,
                       std::span<const Header> headers);
  // The kernel in memory (a hit counted), or nullptr (a miss counted when `count_miss`).
  std::shared_ptr<const CompiledKernel> in_memory(const Lookup& k, bool count_miss);
  // Keeps `kernel` in memory and returns it, or returns the equal one another thread kept first.
  std::shared_ptr<const CompiledKernel> keep(const Lookup& k, std::shared_ptr<const CompiledKernel> kernel);
  std::shared_ptr<const CompiledKernel> load_from_disk(std::uint64_t hash, const std::string& key);
  void report(std::string_view kernel_name, const CacheResult& result) const;

  CacheSettings settings_;
  std::unique_ptr<DiskCache> disk_;
  mutable std::mutex mutex_;
  detail::LruCache<std::uint64_t, MemoryEntry> memory_;
  CacheStats stats_;
};

}  // namespace fuseflow
