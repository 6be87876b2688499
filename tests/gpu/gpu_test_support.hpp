#pragma once
// What every GPU test file shares: one Runtime per process, made after FUSEFLOW_POISON=1
// is set so every output is poisoned before each run; one random generator; random
// inputs; the size limit a sanitizer run sets.
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

namespace fuseflow::test {

inline Runtime& runtime() {
  static bool poisoned = (setenv("FUSEFLOW_POISON", "1", 1), true);
  static Runtime rt;
  (void)poisoned;
  return rt;
}

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
