#pragma once
// What the scan tests (scan_gpu_test.cpp, scan_in_place_gpu_test.cpp,
// scan_second_kernel_gpu_test.cpp; one executable, scan_gpu_test) share: the sizes and
// strategies they sweep, exact and f64 comparisons, a plus-scan checked by a loop, and a
// program checked against the CPU reference evaluator.
//
// Fresh random inputs, outputs poisoned (FUSEFLOW_POISON=1), both strategies (lookback,
// reduce_then_scan). Integers and tuple monoids compare exactly (with the CPU reference
// evaluator, or a plain loop where it would be too slow); floats by error against an f64
// scan on the CPU, scaled by the running sum of |x| at each position, so cancellation does
// not make the check meaningless.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace fuseflow::test::scan_support {

namespace ff = fuseflow;

// The sweeps' sizes under the label gpu: the edges and 70001 (tens of tiles, so tiles look
// back over several predecessors); the same sweeps at 2^20 + 7 and 2^24 elements (4096
// tiles of the f32 look-back scan: several times the blocks an H100 holds at once, so
// tiles wait on predecessors that are not yet resident) in the suite "long" (label
// gpu-long; gpu_test_support.hpp), so every size of a sweep runs under one of the labels.
inline const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, 70001});
inline const std::vector<std::int64_t> kLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});
inline const std::vector<ff::Strategy> kStrategies = {ff::strategy::automatic, ff::strategy::reduce_then_scan};

using ff::test::random_values;
using ff::test::runtime;

inline std::string describe(const std::string& what, std::int64_t n, ff::Strategy s) {
  return what + ", n = " + std::to_string(n) + ", strategy " + ff::strategy_name(s);
}

// Exact comparison of two arrays of the same trivially copyable type; reports the
// first element that differs.
template <class T>
void check_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements differ, the first at " << first);
  CHECK(bad == 0);
}

// got[i] against an f64 reference want[i], within 1e-5 of the magnitude the scan went
// through up to i.
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                        const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5 * magnitude[i] + 1e-6) && bad++ == 0) first = i;
  INFO(what << ": " << bad << " elements out of tolerance, the first at " << first
            << (bad ? ": got " + std::to_string(got[first]) + ", want " + std::to_string(want[first]) : ""));
  CHECK(bad == 0);
}

// Inclusive or exclusive plus-scan of T against a loop on the CPU: integers wrap as on
// the device (computed in the unsigned type of the same width), floats in f64.
// With `in_place`, the scan's result is bound to the input's own memory: the scan
// overwrites its input, and the reference comes from the host copy.
template <class T>
void run_sum(std::int64_t n, ff::ScanKind kind, ff::Strategy s, bool in_place = false) {
  ff::Runtime& rt = runtime();
  const bool floating = std::is_floating_point_v<T>;
  auto host = floating ? random_values<T>(n, -1, 1) : random_values<T>(n, -1000, 1000);
  auto x = ff::input<T>("x");
  auto dev = rt.upload(host);
  ff::Expr scanned = ff::scan(x, ff::plus, kind, s);
  std::vector<T> got;
  if (in_place) {
    ff::Result r = rt.run(scanned, {{x, dev}, {scanned, dev}});
    REQUIRE(r.size() == host.size());
    got = dev.download();
  } else {
    got = rt.run(scanned, {{x, dev}}).template download<T>();
  }
  std::string what = describe(std::string(in_place ? "in-place " : "") + (kind == ff::inclusive ? "inclusive" : "exclusive") +
                                  " sum of " + ff::type_of<T>().name(), n, s);
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> want(host.size()), magnitude(host.size()), got64(got.begin(), got.end());
    double sum = 0, abs_sum = 0;
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (kind == ff::inclusive) sum += host[i], abs_sum += std::fabs(host[i]);
      want[i] = sum;
      magnitude[i] = abs_sum;
      if (kind == ff::exclusive) sum += host[i], abs_sum += std::fabs(host[i]);
    }
    check_close(got64, want, magnitude, what);
  } else {
    using U = std::make_unsigned_t<T>;
    std::vector<T> want(host.size());
    U sum = 0;
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (kind == ff::inclusive) sum = static_cast<U>(sum + static_cast<U>(host[i]));
      want[i] = static_cast<T>(sum);
      if (kind == ff::exclusive) sum = static_cast<U>(sum + static_cast<U>(host[i]));
    }
    check_exact(got, want, what);
  }
}

// A program over input x of type T, run on the GPU and by the CPU reference evaluator;
// output `output` (of type R) must match exactly, and so must every scalar output. With
// `in_place`, output `output` is bound to x's memory (R must be T) and read from there.
template <class T, class R>
void run_against_reference(const std::string& what, const std::function<ff::Program(const ff::Expr&)>& build,
                           std::int64_t n, double lo, double hi, std::size_t output = 0, bool in_place = false) {
  ff::Runtime& rt = runtime();
  auto host = random_values<T>(n, lo, hi);
  auto x = ff::input<T>("x");
  ff::Program prog = build(x);
  auto dev = rt.upload(host);
  ff::Bindings bindings = {{x, dev}};
  if (in_place) bindings.push_back({prog.outputs()[output], ff::device_span<T>(dev)});
  std::vector<ff::Result> got = rt.run(prog, bindings);
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  auto want = ff::evaluate(prog, b);
  const std::string where = what + ", n = " + std::to_string(n);
  if constexpr (std::is_same_v<T, R>) {
    if (in_place) check_exact(dev.download(), want[output].array.to_vector<R>(), where + ", in place");
  }
  check_exact(got[output].download<R>(), want[output].array.to_vector<R>(), where);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i].is_scalar) {
      INFO(where << ", scalar output " << i);
      CHECK(got[i].value().to_string() == want[i].scalar.to_string());
    }
}

}  // namespace fuseflow::test::scan_support
