// The disk cache under faults: a read-only directory, a full disk, a directory deleted
// between runs or under a live cache, entries from another NVRTC version or another arch.
// Each must cost at most a recompile: the kernel still comes back, and the directory
// never holds a partial or wrong entry. (Truncated, bit-flipped and foreign-key entries:
// kernel_cache_test.cpp; concurrent writers: cache_race_test.cpp.)
//
// Faults that need another identity or resource limit run in a forked child, which
// reports through its exit status (0: all good; otherwise the number of the failed step).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "cache_test_support.hpp"
#include "fuseflow/runtime/disk_cache.hpp"
#include "fuseflow/runtime/hash.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"

namespace ff = fuseflow;
using ff::test::TempDir;

namespace {

const ff::CompileOptions options{};
const std::string source_a = ff::test::fill_kernel("ff_fault_a", 1);
const std::string source_b = ff::test::fill_kernel("ff_fault_b", 2);

ff::CacheSettings disk_settings(const std::filesystem::path& dir) {
  ff::CacheSettings settings;
  settings.disk_dir = dir;
  return settings;
}

bool usable(const ff::CacheResult& r) { return r.kernel && r.kernel->image.size() > 4; }

// Runs `body` in a child process and returns its exit status (or 100 + signal).
int in_child(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int status = 99;
    try {
      status = body();
    } catch (...) {
      status = 98;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// A fresh cache on `dir` finds `name` there (a disk hit), with nothing rejected.
void check_disk_hit(const std::filesystem::path& dir, const std::string& name, const std::string& source) {
  ff::KernelCache reader(disk_settings(dir));
  CHECK(reader.get(name, source, options).outcome == ff::CacheOutcome::disk_hit);
  CHECK(reader.stats().rejected_entries == 0);
}

// Rewrites the entry at `path` as a well-formed entry (valid header and checksum) whose key
// has `from` replaced by `to`: what another NVRTC version would have written there.
void rewrite_key(const std::filesystem::path& path, const std::string& from, const std::string& to) {
  const std::string bytes = ff::test::read_bytes(path);
  std::uint32_t key_size = 0;
  std::uint64_t payload_size = 0;
  std::memcpy(&key_size, bytes.data() + 12, sizeof key_size);
  std::memcpy(&payload_size, bytes.data() + 16, sizeof payload_size);
  std::string key = bytes.substr(ff::DiskCache::header_size, key_size);
  const std::string payload = bytes.substr(ff::DiskCache::header_size + key_size, payload_size);
  const std::size_t at = key.find(from);
  REQUIRE(at != std::string::npos);
  key.replace(at, from.size(), to);
  ff::test::write_bytes(path, ff::DiskCache::encode(key, payload));
}

}  // namespace

TEST_CASE("a read-only cache directory still serves its entries and compiles the rest in memory") {
  TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "cache";
  std::uint64_t hash_b = 0;
  {
    ff::KernelCache writer(disk_settings(dir));
    REQUIRE(writer.get("ff_fault_a", source_a, options).outcome == ff::CacheOutcome::compiled);
    hash_b = ff::KernelCache::key_hash("ff_fault_b", source_b, options, {});
  }
  REQUIRE(ff::test::file_count(dir) == 1);
  ::chmod(tmp.path().c_str(), 0755);
  ::chmod(dir.c_str(), 0555);
  // Root writes anywhere: the child gives that up (CI runs as root in a container).
  const int status = in_child([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 1;
    ff::KernelCache cache(disk_settings(dir));
    if (cache.get("ff_fault_a", source_a, options).outcome != ff::CacheOutcome::disk_hit) return 2;
    const ff::CacheResult b = cache.get("ff_fault_b", source_b, options);
    if (b.outcome != ff::CacheOutcome::compiled || !usable(b)) return 3;
    if (cache.stats().disk_writes != 0 || cache.disk_enabled()) return 4;
    if (cache.get("ff_fault_b", source_b, options).outcome != ff::CacheOutcome::memory_hit) return 5;
    return 0;
  });
  ::chmod(dir.c_str(), 0755);
  CHECK(status == 0);
  CHECK(ff::test::file_count(dir) == 1);  // no entry for b, no temporary file left behind
  CHECK_FALSE(std::filesystem::exists(dir / (ff::hex64(hash_b) + ".ffk")));
  check_disk_hit(dir, "ff_fault_a", source_a);
}

TEST_CASE("a full disk (a file size limit) leaves no partial entry and compiling goes on") {
  TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "cache";
  const int status = in_child([&] {
    // Writes beyond 1 KiB fail with EFBIG instead of killing the process: a full disk.
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1024, 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 1;
    ff::KernelCache cache(disk_settings(dir));
    const ff::CacheResult a = cache.get("ff_fault_a", source_a, options);
    if (a.outcome != ff::CacheOutcome::compiled || !usable(a)) return 2;
    if (cache.stats().disk_writes != 0) return 3;
    const ff::CacheResult b = cache.get("ff_fault_b", source_b, options);
    if (b.outcome != ff::CacheOutcome::compiled || !usable(b)) return 4;
    return 0;
  });
  CHECK(status == 0);
  CHECK(ff::test::file_count(dir) == 0);  // the cut-off temporary file was removed
  // With room again, the next process writes the entry and the one after reads it.
  {
    ff::KernelCache cache(disk_settings(dir));
    CHECK(cache.get("ff_fault_a", source_a, options).outcome == ff::CacheOutcome::compiled);
    CHECK(cache.stats().disk_writes == 1);
  }
  check_disk_hit(dir, "ff_fault_a", source_a);
}

TEST_CASE("a cache directory deleted between runs is made again") {
  TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "cache";
  ff::KernelCache first(disk_settings(dir));
  first.get("ff_fault_a", source_a, options);
  std::filesystem::remove_all(dir);
  ff::KernelCache second(disk_settings(dir));
  CHECK(second.disk_enabled());
  CHECK(second.get("ff_fault_a", source_a, options).outcome == ff::CacheOutcome::compiled);
  CHECK(second.stats().disk_writes == 1);
  check_disk_hit(dir, "ff_fault_a", source_a);
}

TEST_CASE("a cache directory deleted under a live cache is made again at its next write") {
  TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "cache";
  ff::KernelCache cache(disk_settings(dir));
  cache.get("ff_fault_a", source_a, options);
  std::filesystem::remove_all(dir);
  CHECK(cache.get("ff_fault_a", source_a, options).outcome == ff::CacheOutcome::memory_hit);
  CHECK(cache.get("ff_fault_b", source_b, options).outcome == ff::CacheOutcome::compiled);
  CHECK(cache.stats().disk_writes == 2);
  CHECK(cache.disk_enabled());
  check_disk_hit(dir, "ff_fault_b", source_b);
}

TEST_CASE("an entry written by another NVRTC version is recompiled and rewritten") {
  TempDir tmp;
  std::filesystem::path entry;
  std::string image;
  {
    ff::KernelCache cache(disk_settings(tmp.path()));
    const ff::CacheResult r = cache.get("ff_fault_a", source_a, options);
    entry = cache.disk_entry_path(r.hash);
    image = r.kernel->image;
  }
  const ff::NvrtcVersion v = ff::Compiler::version();
  rewrite_key(entry, "\nnvrtc " + std::to_string(v.major) + "." + std::to_string(v.minor) + "\n", "\nnvrtc 11.8\n");
  const std::string foreign = ff::test::read_bytes(entry);
  ff::KernelCache cache(disk_settings(tmp.path()));
  const ff::CacheResult r = cache.get("ff_fault_a", source_a, options);
  CHECK(r.outcome == ff::CacheOutcome::compiled);
  CHECK(cache.stats().rejected_entries == 1);
  CHECK(r.kernel->image == image);
  CHECK(ff::test::read_bytes(entry) != foreign);
  check_disk_hit(tmp.path(), "ff_fault_a", source_a);
}

TEST_CASE("an entry compiled for another arch is never loaded for this one") {
  TempDir tmp;
  ff::CompileOptions sm80 = options;
  sm80.arch = "sm_80";
  ff::KernelCache cache(disk_settings(tmp.path()));
  const ff::CacheResult r80 = cache.get("ff_fault_a", source_a, sm80);
  const std::uint64_t hash90 = ff::KernelCache::key_hash("ff_fault_a", source_a, options, {});
  CHECK(hash90 != r80.hash);
  // Planted where the sm_90 entry belongs (a hash collision, or a copied cache).
  std::filesystem::copy_file(cache.disk_entry_path(r80.hash), cache.disk_entry_path(hash90));
  ff::KernelCache fresh(disk_settings(tmp.path()));
  const ff::CacheResult r90 = fresh.get("ff_fault_a", source_a, options);
  CHECK(r90.outcome == ff::CacheOutcome::compiled);
  CHECK(fresh.stats().rejected_entries == 1);
  CHECK(r90.kernel->image != r80.kernel->image);
  check_disk_hit(tmp.path(), "ff_fault_a", source_a);
}
