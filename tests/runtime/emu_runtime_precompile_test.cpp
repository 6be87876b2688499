// Runtime::precompile on the CPU emulator (run only as emu_runtime_precompile_test, with the
// emulator as driver and NVRTC): a precompiled program's first run compiles nothing, in
// this process (memory) and in a fresh Runtime on the same cache directory (disk), and a
// read-only cache directory serves its entries.
#include <doctest/doctest.h>

#include <future>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "cache_test_support.hpp"

namespace ff = fuseflow;

namespace {

ff::RuntimeOptions with_disk(const std::filesystem::path& dir, bool read_only = false) {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  options.cache->disk_dir = dir;
  options.cache->read_only = read_only;
  return options;
}

// Two programs: a reduction (one kernel) and an inclusive scan (its kernels).
struct Programs {
  ff::Expr x = ff::input<float>("x");
  ff::Expr total = ff::reduce(x * 2.0f, ff::plus);
  ff::Expr prefix = ff::scan(x, ff::plus);
};

const std::vector<float> host = {1, 2, 3, 4, 5};

// What the runs must give, worked out here.
void check_runs(ff::Runtime& rt, const Programs& p) {
  auto xs = rt.upload(host);
  CHECK(rt.run(p.total, {{p.x, xs}}).as<float>() == 30.0f);
  const std::vector<float> scanned = rt.run(p.prefix, {{p.x, xs}}).download<float>();
  CHECK(scanned == std::vector<float>{1, 3, 6, 10, 15});
}

}  // namespace

TEST_CASE("a precompiled program's first run compiles nothing; a fresh Runtime on the directory gets disk hits") {
  ff::test::TempDir dir;
  const Programs p;
  {
    ff::Runtime rt(with_disk(dir.path()));
    std::future<ff::PrecompileReport> pending = rt.precompile(std::vector<ff::Program>{p.total, p.prefix});
    const ff::PrecompileReport report = pending.get();
    CHECK(report.programs == 2);
    CHECK(report.kernels >= 2);
    CHECK(report.compiled == rt.stats().kernels.compiles);
    CHECK(report.compiled + report.disk_hits + report.memory_hits == report.kernels);
    CHECK(report.disk_hits == 0);
    const ff::CacheStats before = rt.stats().kernels;
    CHECK(before.disk_writes == report.compiled);
    check_runs(rt, p);
    const ff::CacheStats after = rt.stats().kernels;
    CHECK(after.compiles == before.compiles);
    CHECK(after.memory_hits == before.memory_hits + report.kernels);
    // Again: already in memory, nothing new.
    const ff::PrecompileReport again = rt.precompile(p.total).get();
    CHECK(again.compiled == 0);
    CHECK(again.memory_hits == again.kernels);
  }
  ff::Runtime next(with_disk(dir.path()));
  check_runs(next, p);
  const ff::CacheStats s = next.stats().kernels;
  CHECK(s.compiles == 0);
  CHECK(s.disk_hits >= 2);

  // Shipped read-only: served from the directory, nothing compiled, nothing written.
  const std::size_t entries = ff::test::file_count(dir.path());
  ff::Runtime shipped(with_disk(dir.path(), /*read_only=*/true));
  check_runs(shipped, p);
  CHECK(shipped.stats().kernels.compiles == 0);
  // A program not in it compiles in memory, without an error.
  const ff::Expr y = ff::input<float>("y");
  auto ys = shipped.upload(host);
  CHECK(shipped.run(ff::reduce(y, ff::max), {{y, ys}}).as<float>() == 5.0f);
  CHECK(shipped.stats().kernels.compiles == 1);
  CHECK(shipped.stats().kernels.disk_writes == 0);
  CHECK(ff::test::file_count(dir.path()) == entries);
}

TEST_CASE("a kernel NVRTC rejects reaches precompile's caller as the CompileError a run would raise") {
  ff::RuntimeOptions memory_only;
  memory_only.cache = ff::CacheSettings{};
  ff::Runtime rt(memory_only);
  const ff::Expr words = ff::input<unsigned>("w");
  std::future<ff::PrecompileReport> broken = rt.precompile(ff::reduce(ff::cuda_expr<int>("undeclared_fn($0)", words), ff::plus));
  CHECK_THROWS_AS(broken.get(), ff::CompileError);
  std::future<ff::PrecompileReport> fine = rt.precompile(ff::reduce(ff::cuda_expr<int>("__popc($0)", words), ff::plus));
  CHECK(fine.get().compiled == 1);
}
