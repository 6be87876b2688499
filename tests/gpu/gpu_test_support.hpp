#pragma once
// What every GPU test file shares: one Runtime per process, made with RuntimeOptions::poison
// so every output is poisoned before each run; Runtimes of their own for variants of a plan
// (PlanVariant: the runtime reads its FUSEFLOW_* variables once, when it is made, so a
// variable set later changes nothing); one random generator; random inputs; the size limit
// a sanitizer run sets.
//
// Long cases: a test case in the doctest test suite "long" (TEST_CASE("..." *
// doctest::test_suite("long"))) runs under the CTest label gpu-long, every other one under
// the label gpu (tests/gpu/CMakeLists.txt), so that `ctest -L '^gpu$'` stays short. The
// long ones are the sweeps at 2^24 elements and more (the same checks as their short
// twin, which runs every size up to 2^20 + 7) and the cases over 2^31 elements.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <fuseflow/fuseflow.hpp>
#include "fuseflow/codegen/plan.hpp"

namespace fuseflow::test {

// The options of every test Runtime: outputs poisoned before each run.
inline RuntimeOptions poisoned_options() {
  RuntimeOptions options;
  options.poison = true;
  return options;
}

// The Runtime a PlanVariant in scope made, else none.
inline Runtime*& variant_runtime() {
  static Runtime* current = nullptr;
  return current;
}

// The Runtime the helpers run on: the one shared by the process, or while a PlanVariant
// lives, its own.
inline Runtime& runtime() {
  if (Runtime* variant = variant_runtime()) return *variant;
  static Runtime shared(poisoned_options());
  return shared;
}

// A Runtime of its own that plans with `plan` (RuntimeOptions::plan, so a program already
// prepared by the shared Runtime is planned again), used by runtime() while this lives: for
// the cases that check a variant of a plan (a second kernel at every size, the merge path
// alone). One at a time. require_launch() and require_no_kernel() check that the variant
// really runs.
class PlanVariant {
 public:
  explicit PlanVariant(const codegen::PlanOptions& plan) : options_(plan), runtime_(with_plan(plan)) {
    REQUIRE(variant_runtime() == nullptr);
    variant_runtime() = &runtime_;
  }
  ~PlanVariant() { variant_runtime() = nullptr; }
  PlanVariant(const PlanVariant&) = delete;
  PlanVariant& operator=(const PlanVariant&) = delete;

  Runtime& rt() { return runtime_; }
  const codegen::PlanOptions& options() const { return options_; }
  // Requires that a run of `program` with `bindings` on this Runtime (Runtime::explain: its
  // device, its options) launches a kernel whose name starts with `prefix`: fails when the
  // options stop reaching the plan.
  void require_launch(const Program& program, const Bindings& bindings, const std::string& prefix) {
    const std::string text = runtime_.explain(program, bindings);
    INFO("the plan with these options, and a run's launches:\n" << text);
    const std::size_t launches = text.find("a run with n =");
    REQUIRE(launches != std::string::npos);
    REQUIRE(text.find("  " + prefix, launches) != std::string::npos);
  }
  // Requires that this Runtime's plan of `program` has no kernel whose name starts with
  // `prefix`.
  void require_no_kernel(const Program& program, const std::string& prefix) {
    const std::string text = runtime_.explain(program);
    INFO("the plan with these options:\n" << text);
    REQUIRE(text.find(" " + prefix) == std::string::npos);
  }

 private:
  static RuntimeOptions with_plan(const codegen::PlanOptions& plan) {
    RuntimeOptions options = poisoned_options();
    options.plan = plan;
    return options;
  }
  codegen::PlanOptions options_;
  Runtime runtime_;
};

inline std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}

// n values drawn uniformly from [lo, hi) and converted to T.
template <class T>
std::vector<T> random_values(std::int64_t n, double lo, double hi) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& x : v) x = static_cast<T>(d(rng()));
  return v;
}

// The largest element count a case may use: FUSEFLOW_TEST_MAX_N, set where the kernels
// run on the CPU emulator (tests/emulator) and by scripts/sanitize.sh, else no limit.
inline std::int64_t max_elements() {
  static const std::int64_t cap = [] {
    const char* v = std::getenv("FUSEFLOW_TEST_MAX_N");
    return v && *v ? std::atoll(v) : INT64_MAX;
  }();
  return cap;
}

// The sizes of `all` within max_elements().
inline std::vector<std::int64_t> capped(std::initializer_list<std::int64_t> all) {
  std::vector<std::int64_t> out;
  for (std::int64_t n : all)
    if (n <= max_elements()) out.push_back(n);
  return out;
}

// n pseudo-random bytes from a 64-bit LCG seeded by rng(): fast enough for the cases over
// more than 2^31 elements, where a std distribution would take minutes.
inline std::vector<std::uint8_t> random_bytes(std::int64_t n) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(n));
  std::uint64_t state = rng()();
  for (auto& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<std::uint8_t>(state >> 56);
  }
  return v;
}

}  // namespace fuseflow::test

// Leaves the current test case (saying so) when it needs more than max_elements().
#define FF_TEST_NEEDS_ELEMENTS(n)                                                                 \
  do {                                                                                            \
    if (static_cast<std::int64_t>(n) > ::fuseflow::test::max_elements()) {                        \
      MESSAGE("left out: needs " << static_cast<std::int64_t>(n) << " elements, FUSEFLOW_TEST_MAX_N is " \
                                 << ::fuseflow::test::max_elements());                            \
      return;                                                                                     \
    }                                                                                             \
  } while (0)
