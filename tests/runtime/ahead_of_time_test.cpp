// Filling the kernel cache ahead of time, on the CPU with NVRTC (no GPU): KernelCache::
// get_all (a batch compiled in parallel, each distinct kernel once), kernels that differ
// only in their leading comment sharing one entry, and a read-only cache directory.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cache_test_support.hpp"
#include "fuseflow/frontend/error.hpp"
#include "fuseflow/runtime/error.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"

namespace ff = fuseflow;
using ff::test::TempDir;

namespace {

ff::CacheSettings disk_settings(const std::filesystem::path& dir, bool read_only = false) {
  ff::CacheSettings settings;
  settings.disk_dir = dir;
  settings.read_only = read_only;
  return settings;
}

const ff::CompileOptions options{};

// A generated kernel's shape: a comment naming its program, then the code.
std::string with_comment(const std::string& program, const std::string& code) {
  return "// fuseflow kernel\n//\n// " + program + "\n" + code;
}

// Captures stderr (fd 2) into a file while alive; finish() returns the text.
class StderrCapture {
 public:
  explicit StderrCapture(const std::filesystem::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    std::FILE* f = std::fopen(file.c_str(), "w");
    ::dup2(::fileno(f), 2);
    std::fclose(f);
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

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("get_all compiles a batch's distinct kernels once each and answers in the order given") {
  TempDir dir;
  ff::KernelCache cache(disk_settings(dir.path() / "cache"));
  const std::string a = ff::test::fill_kernel("ff_a", 1), b = ff::test::fill_kernel("ff_b", 2),
                    c = ff::test::fill_kernel("ff_c", 3);
  const std::vector<ff::KernelSource> batch = {{"ff_a", a}, {"ff_b", b}, {"ff_a", a}, {"ff_c", c}};
  const std::vector<ff::CacheResult> results = cache.get_all(batch, options, {}, false, 3);
  REQUIRE(results.size() == 4);
  CHECK(cache.stats().compiles == 3);
  CHECK(cache.stats().disk_writes == 3);
  CHECK(ff::test::file_count(dir.path() / "cache") == 3);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    CHECK(results[i].hash == ff::KernelCache::key_hash(batch[i].name, batch[i].source, options, {}));
    REQUIRE(results[i].kernel);
    CHECK(results[i].kernel->image.substr(0, 4) == std::string("\x7f" "ELF"));
  }
  CHECK(results[0].kernel == results[2].kernel);  // the repeat is the same object
  CHECK(results[0].kernel != results[1].kernel);

  // A fresh cache on the directory (as the next process): disk hits, no NVRTC.
  ff::KernelCache next(disk_settings(dir.path() / "cache"));
  for (const ff::CacheResult& r : next.get_all(batch, options))
    CHECK(r.outcome != ff::CacheOutcome::compiled);
  CHECK(next.stats().compiles == 0);
  CHECK(next.stats().disk_hits == 3);
}

TEST_CASE("get_all compiles the costliest kernels first (those including the larger headers), answers in order") {
  TempDir dir;
  ff::CacheSettings settings;
  settings.log = true;  // one line per kernel, as each is done: with one thread, the compile order
  const std::vector<ff::Header> headers = {{"fuseflow/big.cuh", "// big\n" + std::string(20000, ' ') + "\n"},
                                           {"fuseflow/small.cuh", "// small\n"}};
  auto kernel = [](const std::string& name, const std::string& header) {
    return "#include <fuseflow/" + header + ".cuh>\n" + ff::test::fill_kernel(name);
  };
  const std::string s1 = kernel("ff_small_1", "small"), big = kernel("ff_big", "big"),
                    s2 = kernel("ff_small_2", "small");
  const std::vector<ff::KernelSource> batch = {{"ff_small_1", s1}, {"ff_big", big}, {"ff_small_2", s2}};
  std::vector<ff::CacheResult> results;
  StderrCapture capture(dir.path() / "stderr.txt");
  {
    ff::KernelCache cache(settings);
    results = cache.get_all(batch, options, headers, false, 1);
  }
  const std::string log = capture.finish();
  REQUIRE(results.size() == 3);
  for (std::size_t i = 0; i < batch.size(); ++i)
    CHECK(results[i].hash == ff::KernelCache::key_hash(batch[i].name, batch[i].source, options, headers));
  const std::size_t at_big = log.find("ff_big"), at_small_1 = log.find("ff_small_1"),
                    at_small_2 = log.find("ff_small_2");
  REQUIRE(at_big != std::string::npos);
  REQUIRE(at_small_1 != std::string::npos);
  REQUIRE(at_small_2 != std::string::npos);
  CHECK(at_big < at_small_1);
  CHECK(at_small_1 < at_small_2);  // equal costs keep the order given
}

TEST_CASE("get_all rethrows a kernel's CompileError after the others are compiled and cached") {
  ff::KernelCache cache(ff::CacheSettings{});
  const std::string good = ff::test::fill_kernel("ff_good");
  const std::string bad = "extern \"C\" __global__ void ff_bad(int* out) { out[0] = undeclared; }\n";
  const std::vector<ff::KernelSource> batch = {{"ff_good", good}, {"ff_bad", bad}};
  CHECK_THROWS_AS(cache.get_all(batch, options, {}, false, 2), ff::CompileError);
  CHECK(cache.get("ff_good", good, options).outcome == ff::CacheOutcome::memory_hit);
}

TEST_CASE("kernels that differ only in their leading comment share one entry; with line_info they do not") {
  const std::string code = ff::test::fill_kernel("ff_shared");
  const std::string one = with_comment("%0 = scan(x)", code), two = with_comment("%0 = sort(y)", code);
  CHECK(ff::KernelCache::key_hash("ff_shared", one, options, {}) ==
        ff::KernelCache::key_hash("ff_shared", two, options, {}));
  // Code after the leading comment still counts, comments inside it included.
  CHECK(ff::KernelCache::key_hash("ff_shared", one, options, {}) !=
        ff::KernelCache::key_hash("ff_shared", one + "// more\n", options, {}));
  ff::CompileOptions lines = options;
  lines.line_info = true;  // line numbers go into the binary: the comment's length matters
  CHECK(ff::KernelCache::key_hash("ff_shared", one, lines, {}) !=
        ff::KernelCache::key_hash("ff_shared", two, lines, {}));

  ff::KernelCache cache(ff::CacheSettings{});
  CHECK(cache.get("ff_shared", one, options).outcome == ff::CacheOutcome::compiled);
  CHECK(cache.get("ff_shared", two, options).outcome == ff::CacheOutcome::memory_hit);
  CHECK(cache.stats().compiles == 1);
}

TEST_CASE("a read-only cache serves its entries, compiles the rest in memory, writes nothing and warns once") {
  TempDir dir;
  const std::filesystem::path cache_dir = dir.path() / "cache";
  const std::string a = ff::test::fill_kernel("ff_ro_a", 1), b = ff::test::fill_kernel("ff_ro_b", 2),
                    c = ff::test::fill_kernel("ff_ro_c", 3);
  {
    ff::KernelCache writer(disk_settings(cache_dir));
    REQUIRE(writer.get("ff_ro_a", a, options).outcome == ff::CacheOutcome::compiled);
  }
  REQUIRE(ff::test::file_count(cache_dir) == 1);
  // Read-only by the setting, not by permissions (CI runs as root, who writes anyway).
  StderrCapture capture(dir.path() / "stderr.txt");
  {
    ff::KernelCache cache(disk_settings(cache_dir, /*read_only=*/true));
    CHECK_FALSE(cache.disk_enabled());  // nothing is written
    CHECK(cache.get("ff_ro_a", a, options).outcome == ff::CacheOutcome::disk_hit);
    CHECK(cache.get("ff_ro_b", b, options).outcome == ff::CacheOutcome::compiled);
    CHECK(cache.get("ff_ro_c", c, options).outcome == ff::CacheOutcome::compiled);
    CHECK(cache.get("ff_ro_b", b, options).outcome == ff::CacheOutcome::memory_hit);
    const ff::CacheStats s = cache.stats();
    CHECK(s.disk_hits == 1);
    CHECK(s.compiles == 2);
    CHECK(s.disk_writes == 0);
    CHECK(s.disk_write_failures == 0);  // not a failure: nothing was tried
  }
  const std::string text = capture.finish();
  INFO("stderr: ", text);
  CHECK(count(text, "warning") == 1);
  CHECK(text.find("read-only") != std::string::npos);
  CHECK(text.find(cache_dir.string()) != std::string::npos);
  CHECK(ff::test::file_count(cache_dir) == 1);

  // A read-only directory that does not exist: no entries, no error, nothing created.
  ff::KernelCache missing(disk_settings(dir.path() / "absent", true));
  CHECK(missing.get("ff_ro_a", a, options).outcome == ff::CacheOutcome::compiled);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "absent"));
}

TEST_CASE("FUSEFLOW_CACHE_READONLY=1 makes the environment's cache read-only") {
  const ff::test::ScopedEnv on("FUSEFLOW_CACHE_READONLY", std::string("1"));
  CHECK(ff::CacheSettings::from_environment().read_only);
  const ff::test::ScopedEnv bad("FUSEFLOW_CACHE_READONLY", std::string("maybe"));
  CHECK_THROWS_WITH_AS(ff::CacheSettings::from_environment(), doctest::Contains("FUSEFLOW_CACHE_READONLY='maybe'"),
                       ff::ConfigError);
}
