#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cache_test_support.hpp"
#include "fuseflow/runtime/disk_cache.hpp"
#include "fuseflow/runtime/error.hpp"
#include "fuseflow/runtime/hash.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"

namespace ff = fuseflow;
using ff::test::TempDir;

namespace {

ff::CacheSettings disk_settings(const std::filesystem::path& dir) {
  ff::CacheSettings settings;
  settings.disk_dir = dir;
  return settings;
}

const ff::CompileOptions options{};
const std::string source = ff::test::fill_kernel("ff_fill");

// Compiles the kernel once into `dir` and returns its entry's path.
std::filesystem::path populate(const std::filesystem::path& dir) {
  ff::KernelCache cache(disk_settings(dir));
  const ff::CacheResult r = cache.get("ff_fill", source, options);
  REQUIRE(r.outcome == ff::CacheOutcome::compiled);
  const std::filesystem::path entry = cache.disk_entry_path(r.hash);
  REQUIRE(std::filesystem::exists(entry));
  return entry;
}

// A damaged entry must be recompiled (not loaded), rewritten, and then load fine.
void check_recovers_from(const std::filesystem::path& dir, const std::filesystem::path& entry) {
  const std::string damaged = ff::test::read_bytes(entry);
  ff::KernelCache fresh(disk_settings(dir));
  const ff::CacheResult r = fresh.get("ff_fill", source, options);
  CHECK(r.outcome == ff::CacheOutcome::compiled);
  CHECK(fresh.stats().rejected_entries == 1);
  CHECK(fresh.stats().disk_hits == 0);
  CHECK(ff::test::read_bytes(entry) != damaged);
  ff::KernelCache after(disk_settings(dir));
  CHECK(after.get("ff_fill", source, options).outcome == ff::CacheOutcome::disk_hit);
  CHECK(after.stats().rejected_entries == 0);
}

// Captures what the process writes to stderr (fd 2) while alive.
class StderrCapture {
 public:
  explicit StderrCapture(const std::filesystem::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::string finish() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    return ff::test::read_bytes(file_);
  }

 private:
  std::filesystem::path file_;
  int saved_ = -1;
};

}  // namespace

TEST_CASE("hash64 is XXH64") {
  CHECK(ff::hash64("") == 0xEF46DB3751D8E999ULL);
  CHECK(ff::hash64("abc") == 0x44BC2CF5AD770999ULL);
  CHECK(ff::hex64(0xEF46DB3751D8E999ULL) == "ef46db3751d8e999");
}

TEST_CASE("a first lookup compiles and a second is a memory hit returning the same kernel") {
  ff::KernelCache cache(ff::CacheSettings{});
  const ff::CacheResult first = cache.get("ff_fill", source, options);
  const ff::CacheResult second = cache.get("ff_fill", source, options);
  CHECK(first.outcome == ff::CacheOutcome::compiled);
  CHECK(second.outcome == ff::CacheOutcome::memory_hit);
  CHECK(first.kernel.get() == second.kernel.get());
  CHECK(first.hash == second.hash);
  const ff::CacheStats stats = cache.stats();
  CHECK(stats.compiles == 1);
  CHECK(stats.misses == 1);
  CHECK(stats.memory_hits == 1);
  CHECK(stats.disk_writes == 0);
}

TEST_CASE("a fresh cache instance on the same directory gets a disk hit without compiling") {
  TempDir dir;
  ff::KernelCache writer(disk_settings(dir.path()));
  const ff::CacheResult compiled = writer.get("ff_fill", source, options);
  CHECK(writer.stats().disk_writes == 1);

  ff::KernelCache reader(disk_settings(dir.path()));
  const ff::CacheResult loaded = reader.get("ff_fill", source, options);
  CHECK(loaded.outcome == ff::CacheOutcome::disk_hit);
  CHECK(loaded.kernel->image == compiled.kernel->image);
  CHECK(loaded.kernel->format == compiled.kernel->format);
  CHECK(loaded.kernel->log == compiled.kernel->log);
  CHECK(reader.stats().compiles == 0);
  CHECK(reader.stats().disk_hits == 1);
  CHECK(reader.get("ff_fill", source, options).outcome == ff::CacheOutcome::memory_hit);
}

TEST_CASE("a bit-flipped entry is recompiled and rewritten, never loaded") {
  TempDir dir;
  const auto entry = populate(dir.path());
  std::string bytes = ff::test::read_bytes(entry);
  bytes[bytes.size() - 100] ^= 0x10;  // inside the cubin
  ff::test::write_bytes(entry, bytes);
  check_recovers_from(dir.path(), entry);
}

TEST_CASE("a truncated entry is recompiled and rewritten") {
  TempDir dir;
  const auto entry = populate(dir.path());
  std::string bytes = ff::test::read_bytes(entry);
  SUBCASE("mid-payload") { bytes.resize(bytes.size() / 2); }
  SUBCASE("mid-header") { bytes.resize(ff::DiskCache::header_size - 3); }
  SUBCASE("empty") { bytes.clear(); }
  ff::test::write_bytes(entry, bytes);
  check_recovers_from(dir.path(), entry);
}

TEST_CASE("an entry holding another kernel's key is recompiled and rewritten") {
  TempDir dir;
  const auto entry = populate(dir.path());
  ff::KernelCache other(disk_settings(dir.path()));
  const ff::CacheResult r = other.get("ff_other", ff::test::fill_kernel("ff_other"), options);
  std::filesystem::copy_file(other.disk_entry_path(r.hash), entry,
                             std::filesystem::copy_options::overwrite_existing);
  check_recovers_from(dir.path(), entry);
}

TEST_CASE("an entry of another format version or with a bad magic is recompiled and rewritten") {
  TempDir dir;
  const auto entry = populate(dir.path());
  std::string bytes = ff::test::read_bytes(entry);
  SUBCASE("format version") {
    const std::uint32_t version = ff::DiskCache::format_version + 1;
    std::memcpy(bytes.data() + ff::DiskCache::version_offset, &version, sizeof version);
  }
  SUBCASE("magic") { bytes[0] = 'X'; }
  ff::test::write_bytes(entry, bytes);
  check_recovers_from(dir.path(), entry);
}

TEST_CASE("an unusable cache directory degrades to memory only without an error") {
  TempDir dir;
  ff::test::write_bytes(dir.path() / "a-file", "not a directory");
  ff::KernelCache cache(disk_settings(dir.path() / "a-file" / "cache"));
  CHECK_FALSE(cache.disk_enabled());
  CHECK(cache.get("ff_fill", source, options).outcome == ff::CacheOutcome::compiled);
  CHECK(cache.get("ff_fill", source, options).outcome == ff::CacheOutcome::memory_hit);
  CHECK(cache.stats().disk_writes == 0);
}

TEST_CASE("FUSEFLOW_CACHE=0 writes nothing to disk") {
  TempDir dir;
  ff::test::ScopedEnv cache_dir("FUSEFLOW_CACHE_DIR", dir.path().string());
  ff::test::ScopedEnv off("FUSEFLOW_CACHE", "0");
  const ff::CacheSettings settings = ff::CacheSettings::from_environment();
  CHECK_FALSE(settings.disk_dir.has_value());
  ff::KernelCache cache(settings);
  CHECK(cache.get("ff_fill", source, options).outcome == ff::CacheOutcome::compiled);
  CHECK(ff::test::file_count(dir.path()) == 0);
}

TEST_CASE("the cache directory comes from FUSEFLOW_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
  ff::test::ScopedEnv on("FUSEFLOW_CACHE", std::nullopt);
  ff::test::ScopedEnv home("HOME", "/h");
  {
    ff::test::ScopedEnv cache_dir("FUSEFLOW_CACHE_DIR", "/explicit");
    ff::test::ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(ff::CacheSettings::from_environment().disk_dir == std::filesystem::path("/explicit"));
  }
  {
    ff::test::ScopedEnv cache_dir("FUSEFLOW_CACHE_DIR", std::nullopt);
    ff::test::ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(ff::CacheSettings::from_environment().disk_dir == std::filesystem::path("/xdg/fuseflow"));
  }
  {
    ff::test::ScopedEnv cache_dir("FUSEFLOW_CACHE_DIR", std::nullopt);
    ff::test::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    CHECK(ff::CacheSettings::from_environment().disk_dir ==
          std::filesystem::path("/h/.cache/fuseflow"));
  }
}

TEST_CASE("changing any part of the key changes the hash") {
  const std::vector<ff::Header> headers = {{"ff.cuh", "// v1\n"}};
  auto hash = [&](const ff::CompileOptions& o, const std::vector<ff::Header>& h,
                  const std::string& name = "ff_fill", const std::string& text = source) {
    return ff::KernelCache::key_hash(name, text, o, h);
  };
  std::set<std::uint64_t> hashes;
  std::set<std::string> keys;
  auto add = [&](const ff::CompileOptions& o, const std::vector<ff::Header>& h,
                 const std::string& name = "ff_fill", const std::string& text = source) {
    hashes.insert(hash(o, h, name, text));
    keys.insert(ff::KernelCache::key_string(name, text, o, h));
  };
  const ff::CompileOptions base;
  add(base, headers);
  ff::CompileOptions o = base;
  o.arch = "sm_80";
  add(o, headers);
  o = base;
  o.ptx = true;
  add(o, headers);
  o = base;
  o.cxx_standard = 20;
  add(o, headers);
  o = base;
  o.fast_math = true;
  add(o, headers);
  o = base;
  o.line_info = true;
  add(o, headers);
  o = base;
  o.defines = {"FF_X=1"};
  add(o, headers);
  o.defines = {"FF_X=2"};
  add(o, headers);
  add(base, {{"ff.cuh", "// v2\n"}});
  add(base, {{"ff2.cuh", "// v1\n"}});
  add(base, {});
  add(base, headers, "ff_other");
  add(base, headers, "ff_fill", source + " ");
  CHECK(hashes.size() == 13);
  CHECK(keys.size() == 13);
  CHECK(hash(base, headers) == hash(ff::CompileOptions{}, headers));  // and it is stable
}

TEST_CASE("FUSEFLOW_DUMP writes the source, PTX and log of every kernel compiled or loaded") {
  TempDir dump;
  ff::CacheSettings settings;
  settings.dump_dir = dump.path() / "dump";
  ff::KernelCache cache(settings);
  const ff::CacheResult r = cache.get("ff_fill", source, options);
  const std::string stem = "ff_fill-" + ff::hex64(r.hash);
  const auto dir = dump.path() / "dump";
  CHECK(ff::test::read_bytes(dir / (stem + ".cu")) == source);
  CHECK(ff::test::read_bytes(dir / (stem + ".ptx")).find(".entry ff_fill") != std::string::npos);
  CHECK(std::filesystem::exists(dir / (stem + ".log")));
  CHECK(ff::test::file_count(dir) == 3);
}

TEST_CASE("FUSEFLOW_LOG prints one line per lookup saying how it was satisfied") {
  TempDir dir;
  ff::CacheSettings settings = disk_settings(dir.path() / "cache");
  settings.log = true;
  StderrCapture capture(dir.path() / "stderr.txt");
  std::uint64_t hash = 0;
  {
    ff::KernelCache first(settings);
    hash = first.get("ff_fill", source, options).hash;
    first.get("ff_fill", source, options);
    ff::KernelCache second(settings);
    second.get("ff_fill", source, options);
  }
  const std::string text = capture.finish();
  const std::string prefix = "fuseflow: ff_fill " + ff::hex64(hash) + ": ";
  CHECK(text.find(prefix + "compiled (") != std::string::npos);
  CHECK(text.find(prefix + "memory hit\n") != std::string::npos);
  CHECK(text.find(prefix + "disk hit (") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
}

TEST_CASE("FUSEFLOW_LOG=compile splits a compile into NVRTC's phases; hits are logged as before") {
  TempDir dir;
  const ff::test::ScopedEnv log("FUSEFLOW_LOG", std::string("compile"));
  ff::CacheSettings settings = ff::CacheSettings::from_environment();
  CHECK(settings.log);
  CHECK(settings.log_compile);
  settings.disk_dir = std::nullopt;
  StderrCapture capture(dir.path() / "stderr.txt");
  std::uint64_t hash = 0;
  {
    ff::KernelCache cache(settings);
    const ff::CacheResult first = cache.get("ff_fill", source, options);
    hash = first.hash;
    CHECK(first.phases.measured);
    cache.get("ff_fill", source, options);
  }
  const std::string text = capture.finish();
  const std::string prefix = "fuseflow: ff_fill " + ff::hex64(hash) + ": ";
  CHECK(text.find(prefix + "compiled (") != std::string::npos);
  CHECK(text.find("front end ") != std::string::npos);
  CHECK(text.find(", optimizer ") != std::string::npos);
  CHECK(text.find(", ptxas ") != std::string::npos);
  CHECK(text.find(prefix + "memory hit\n") != std::string::npos);
}

TEST_CASE("a kernel that fails to compile throws CompileError through the cache and is not cached") {
  TempDir dir;
  ff::KernelCache cache(disk_settings(dir.path()));
  const std::string bad = "extern \"C\" __global__ void ff_bad() { nope; }\n";
  CHECK_THROWS_AS(cache.get("ff_bad", bad, options), ff::CompileError);
  CHECK_THROWS_AS(cache.get("ff_bad", bad, options), ff::CompileError);
  CHECK(cache.stats().memory_hits == 0);
  CHECK(ff::test::file_count(dir.path()) == 0);
}
