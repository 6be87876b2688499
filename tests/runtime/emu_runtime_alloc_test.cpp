// Host allocations of a run in the steady state, on the CPU emulator (run only as
// emu_runtime_alloc_test): once a program is prepared and its sizes repeat, a run of the
// same Program object with the same bindings allocates nothing but the std::vector<Result>
// it returns. A global operator new that counts (this binary's; fuseflow is linked into it)
// sees every allocation fuseflow makes on the calling thread, the emulator's too.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include <fuseflow/runtime/low_level.hpp>

namespace ff = fuseflow;

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* allocate(std::size_t bytes) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

// Allocations per call of `run`, over `calls` calls after `warmup` (which sizes every
// buffer the runtime reuses, and fills the emulator's bounded call log).
template <class F>
double allocations_per_call(F run, int warmup = 400, int calls = 200) {
  for (int i = 0; i < warmup; ++i) run();
  allocations = 0;
  counting = true;
  for (int i = 0; i < calls; ++i) run();
  counting = false;
  return static_cast<double>(allocations.load()) / calls;
}

ff::RuntimeOptions memory_only() {
  ff::RuntimeOptions options;
  options.cache = ff::CacheSettings{};
  return options;
}

}  // namespace

TEST_CASE("the counting operator new sees allocations") {
  counting = true;
  allocations = 0;
  auto* v = new std::vector<int>(100);
  counting = false;
  delete v;
  CHECK(allocations.load() == 2);  // the vector object and its elements
}

TEST_CASE("a prepared program run again allocates only the vector of results it returns") {
  ff::Runtime rt(memory_only());
  const std::vector<float> host = {1, 2, 3, 4, 5};
  auto xs = rt.upload(host);
  auto ys = rt.alloc<float>(host.size());
  const ff::Expr x = ff::input<float>("x"), c = ff::param<float>("c");
  const ff::Program sum(ff::reduce(x * x + c, ff::plus));
  const ff::Bindings b = {{x, xs}, {c, 0.5f}};
  // sum of x*x + 0.5 over 1..5 = 55 + 2.5, computed here.
  REQUIRE(rt.run(sum, b).at(0).as<float>() == 57.5f);

  SUBCASE("run, the value read back") {
    float last = 0;
    CHECK(allocations_per_call([&] { last = rt.run(sum, b).at(0).as<float>(); }) == 1.0);
    CHECK(last == 57.5f);
  }
  SUBCASE("run_async") {
    CHECK(allocations_per_call([&] { (void)rt.run_async(sum, b); }) == 1.0);
    rt.synchronize();
  }
  SUBCASE("run_async of a map into the caller's array") {
    const ff::Expr doubled = x * 2.0f;
    const ff::Program map(doubled);
    const ff::Bindings bm = {{x, xs}, {doubled, ys}};
    CHECK(allocations_per_call([&] { (void)rt.run_async(map, bm); }) == 1.0);
    const std::vector<float> got = rt.download(ys);
    REQUIRE(got.size() == host.size());
    for (std::size_t i = 0; i < host.size(); ++i) CHECK(got[i] == host[i] * 2.0f);
  }
  SUBCASE("two programs of one structure, alternating (each found by identity or by a walk)") {
    const ff::Expr x2 = ff::input<float>("x"), c2 = ff::param<float>("c");
    const ff::Program twin(ff::reduce(x2 * x2 + c2, ff::plus));
    const ff::Bindings b2 = {{x2, xs}, {c2, 1.5f}};
    bool flip = false;
    CHECK(allocations_per_call([&] {
            flip = !flip;
            (void)rt.run_async(flip ? sum : twin, flip ? b : b2);
          }) == 1.0);
    rt.synchronize();
    CHECK(rt.run(twin, b2).at(0).as<float>() == 62.5f);  // 55 + 5 * 1.5
    CHECK(rt.stats().programs.misses == 1);
  }
}

TEST_CASE("low_level::run_phases times a run's phases only in a FUSEFLOW_RUN_PHASES build") {
  ff::Runtime rt(memory_only());
  auto xs = rt.upload(std::vector<float>{1, 2, 3});
  const ff::Expr x = ff::input<float>("x");
  const ff::Program sum(ff::reduce(x, ff::plus));
  REQUIRE(rt.run(sum, {{x, xs}}).at(0).as<float>() == 6.0f);
  ff::low_level::reset_run_phases(rt);
  for (int i = 0; i < 10; ++i) (void)rt.run(sum, {{x, xs}});
  const ff::low_level::RunPhases p = ff::low_level::run_phases(rt);
#ifdef FUSEFLOW_RUN_PHASES
  CHECK(p.enabled);
  CHECK(p.runs == 10);
  CHECK(p.per_run(ff::low_level::RunPhase::launch) > 0);
  CHECK(p.per_run(ff::low_level::RunPhase::wait) > 0);
  CHECK(p.microseconds[static_cast<std::size_t>(ff::low_level::RunPhase::lookup)] > 0);
#else
  CHECK_FALSE(p.enabled);
  CHECK(p.runs == 0);
  for (double us : p.microseconds) CHECK(us == 0);
#endif
  ff::low_level::reset_run_phases(rt);
  CHECK(ff::low_level::run_phases(rt).runs == 0);
}
