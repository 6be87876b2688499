#pragma once
// One file per kernel under the cache directory. Readers trust nothing: an entry is used
// only if its header, key and checksum all match, so a crash mid-write, a bit flip, a
// hash collision or an older fuseflow can only cost a recompile, never a wrong kernel.
//
// Entry layout (little-endian):
//   0  char[8]  magic "FFKCACHE"
//   8  u32      format version
//  12  u32      key length K
//  16  u64      payload length P
//  24  u64      checksum: hash64(key + payload)
//  32  K bytes  key string (the full text the hash was computed from)
//  32+K P bytes payload
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace fuseflow {

class DiskCache {
 public:
  static constexpr char magic[8] = {'F', 'F', 'K', 'C', 'A', 'C', 'H', 'E'};
  static constexpr std::uint32_t format_version = 1;
  static constexpr std::size_t version_offset = 8;
  static constexpr std::size_t header_size = 32;

  enum class LoadStatus { hit, missing, rejected };
  struct Loaded {
    LoadStatus status = LoadStatus::missing;
    std::string payload;  // set on hit
    std::string reason;   // set on rejected: why the entry was not trusted
  };

  // Creates the directory if needed. If that fails, the cache is disabled with one
  // warning on stderr: caching is an optimisation and must never fail a run.
  // read_only: the directory is only read (it is not created; store() writes nothing and
  // refuse_store() warns once).
  explicit DiskCache(std::filesystem::path dir, bool read_only = false);

  Loaded load(std::uint64_t hash, std::string_view key) const;
  // Writes a temporary file in the same directory and renames it over the entry, so
  // concurrent readers and writers (other processes included) only ever see whole
  // entries; makes the directory again if it was deleted. Returns false (after one
  // warning per cache, which then stays in memory) when the write fails: a read-only
  // directory, a full disk. A cut-off temporary file is removed.
  bool store(std::uint64_t hash, std::string_view key, std::string_view payload);

  // Whether entries are written; reads go on after a failed write (a directory that
  // turned out read-only still serves what it holds).
  bool enabled() const noexcept { return enabled_.load(); }
  bool read_only() const noexcept { return read_only_; }
  // A kernel not in a read-only cache: the first call prints one warning.
  void refuse_store();
  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::filesystem::path entry_path(std::uint64_t hash) const;

  static std::string encode(std::string_view key, std::string_view payload);

 private:
  void disable(const std::string& why);

  std::filesystem::path dir_;
  bool read_only_ = false;
  std::atomic<bool> enabled_{true};   // writes
  std::atomic<bool> readable_{true};  // reads
  std::atomic<bool> refused_{false};
};

}  // namespace fuseflow
