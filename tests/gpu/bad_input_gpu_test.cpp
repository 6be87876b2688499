// Bad input only the device sees: segment offsets that decrease or leave [0, n]. The
// segmented kernel clamps them (so it never reads or writes out of bounds) and sets a
// flag; Runtime::run reads the flag after the run and throws the GraphError the CPU
// reference throws for the same offsets, word for word. Afterwards the Runtime works on.
// Also: Runtime::run reports binding errors with check_bindings' words, before any launch
// (the rest of the bad-input matrix runs without a GPU: tests/runtime/bad_input_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::rng;
using ff::test::runtime;

using ff::test::graph_error_of;

struct Segmented {
  ff::Expr x = ff::input<int>("x");
  ff::Expr offsets = ff::input<int>("offsets");
  ff::Expr sum = ff::segmented_reduce(x, offsets, ff::plus);
};

// What Runtime::run and the CPU reference say about one segmented sum.
struct Verdicts {
  std::string device, reference;
};

Verdicts run_both(const std::vector<int>& xs, const std::vector<int>& offsets) {
  Segmented s;
  ff::Runtime& rt = runtime();
  auto dx = rt.upload(xs);
  auto doff = rt.upload(offsets);
  Verdicts v;
  v.device = graph_error_of([&] { (void)rt.run(s.sum, {{s.x, dx}, {s.offsets, doff}}); });
  ff::HostBindings b;
  b.bind(s.x, ff::HostArray::from(xs));
  b.bind(s.offsets, ff::HostArray::from(offsets));
  v.reference = graph_error_of([&] { (void)ff::evaluate(ff::Program(s.sum), b); });
  return v;
}

std::vector<int> valid_offsets(std::int64_t n, int max_length) {
  std::vector<int> off = {0};
  std::uniform_int_distribution<int> length(0, max_length);
  while (off.back() < n) off.push_back(static_cast<int>(std::min<std::int64_t>(n, off.back() + length(rng()))));
  return off;
}

// The Runtime still runs a valid segmented sum after a rejected one.
void check_still_works() {
  const std::vector<int> xs = {1, 2, 3, 4, 5};
  const std::vector<int> offsets = {0, 2, 2, 5};
  Segmented s;
  ff::Runtime& rt = runtime();
  auto dx = rt.upload(xs);
  auto doff = rt.upload(offsets);
  CHECK(rt.run(s.sum, {{s.x, dx}, {s.offsets, doff}}).download<int>() == std::vector<int>{3, 0, 12});
}

}  // namespace

TEST_CASE("decreasing offsets are reported after the run, as the CPU reference reports them") {
  const std::vector<int> xs(10, 1);
  const Verdicts v = run_both(xs, {0, 4, 3, 10});
  CHECK(v.device == "fuseflow: segmented_reduce: offset 2 is 3, less than offset 1 (4); offsets must be non-decreasing");
  CHECK(v.device == v.reference);
  check_still_works();
}

TEST_CASE("an offset beyond n or below zero is reported after the run") {
  const std::vector<int> xs(10, 1);
  Verdicts v = run_both(xs, {0, 5, 11});
  CHECK(v.device == "fuseflow: segmented_reduce: offset 2 is 11, beyond the end of the 10 values");
  CHECK(v.device == v.reference);
  v = run_both(xs, {-1, 5, 10});
  CHECK(v.device == "fuseflow: segmented_reduce: offset 0 is -1; offsets must be >= 0");
  CHECK(v.device == v.reference);
  check_still_works();
}

TEST_CASE("one bad offset anywhere in a large array is found, whichever block reads it") {
  const std::int64_t n = std::min<std::int64_t>((1 << 20) + 7, ff::test::max_elements());
  const std::vector<int> xs(static_cast<std::size_t>(n), 1);
  std::uniform_int_distribution<int> kind(0, 3);
  int rejected = 0;
  for (int trial = 0; trial < 24; ++trial) {
    std::vector<int> off = valid_offsets(n, trial % 2 ? 3 : 60);
    std::uniform_int_distribution<std::size_t> at(1, off.size() - 2);
    const std::size_t i = at(rng());
    switch (kind(rng())) {
      case 0: off[i] = off[i - 1] - 1; break;                        // just below its predecessor
      case 1: off[i] = static_cast<int>(n) + 1 + trial; break;       // beyond n
      case 2: off[i] = -1 - trial; break;                            // negative
      default: std::reverse(off.begin() + static_cast<std::ptrdiff_t>(i / 2), off.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    const Verdicts v = run_both(xs, off);
    INFO("trial " << trial << ", offset " << i << " of " << off.size());
    CHECK(v.device == v.reference);  // a reversed run of equal offsets is still valid: then both accept
    rejected += v.reference != "(no GraphError thrown)";
  }
  CHECK(rejected >= 20);
  check_still_works();
}

TEST_CASE("offsets that run backwards wholesale are reported (the merge path runs backwards too)") {
  const std::int64_t n = std::min<std::int64_t>(1 << 20, ff::test::max_elements());
  const std::vector<int> xs(static_cast<std::size_t>(n), 1);
  std::vector<int> off;
  for (std::int64_t s = 0; s <= 4096; ++s) off.push_back(static_cast<int>(n - s * (n / 4096)));
  const Verdicts v = run_both(xs, off);
  CHECK(v.device == "fuseflow: segmented_reduce: offset 1 is " + std::to_string(off[1]) + ", less than offset 0 (" +
                        std::to_string(n) + "); offsets must be non-decreasing");
  CHECK(v.device == v.reference);
  check_still_works();
}

TEST_CASE("valid offsets, empty segments and the whole range included, raise nothing") {
  for (std::int64_t n : ff::test::capped({1, 31, 1000, (1 << 20) + 7})) {
    const std::vector<int> xs(static_cast<std::size_t>(n), 1);
    CHECK(run_both(xs, valid_offsets(n, 5)).device == "(no GraphError thrown)");
    CHECK(run_both(xs, {0, 0, static_cast<int>(n), static_cast<int>(n)}).device == "(no GraphError thrown)");
  }
}

TEST_CASE("run_async does not wait, so it does not report bad offsets; the next run is unaffected") {
  Segmented s;
  ff::Runtime& rt = runtime();
  auto dx = rt.upload(std::vector<int>(10, 1));
  auto doff = rt.upload(std::vector<int>{0, 4, 3, 10});
  ff::Result r = rt.run_async(s.sum, {{s.x, dx}, {s.offsets, doff}});
  CHECK(r.download<int>().size() == 3);  // values unspecified, but the array is there
  check_still_works();
}

TEST_CASE("Runtime::run reports binding errors in check_bindings' words before launching") {
  ff::Runtime& rt = runtime();
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  auto xs = rt.upload(std::vector<float>(10, 1.0f));
  auto ys = rt.upload(std::vector<float>(12, 1.0f));
  auto is = rt.upload(std::vector<int>(10, 1));
  const ff::Expr dot = ff::reduce(x * y, ff::plus);
  CHECK(graph_error_of([&] { (void)rt.run(dot, {{x, xs}}); }) == "fuseflow: run: input 'y' is not bound");
  CHECK(graph_error_of([&] { (void)rt.run(dot, {{x, xs}, {y, ys}}); }) ==
        "fuseflow: run: arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
  CHECK(graph_error_of([&] { (void)rt.run(dot, {{x, xs}, {x, xs}, {y, xs}}); }) == "fuseflow: run: input 'x' is bound twice");
  CHECK(graph_error_of([&] { (void)rt.run(dot, {{x, is}, {y, xs}}); }) ==
        "fuseflow: run: input 'x' holds f32 but was bound to an array of i32");
  CHECK(static_cast<float>(rt.run(dot, {{x, xs}, {y, xs}})) == 10.0f);
}
