// GPU execution tests for the general per-segment broadcast (ff::broadcast over offsets
// that are not uniform rows; issue 25): per-row softmax over irregular rows, centred
// segments, integer programs read exactly, a reduction's per-segment results as an output
// beside its broadcast, i32 and i64 offsets. Segment shapes: empty segments (at the start,
// the middle, the end, runs of them), one-element segments, segments longer than the merge
// path's tile and the map's warp step, Zipf-like lengths (a few huge, many tiny). Fresh
// random inputs, outputs poisoned (the shared Runtime's RuntimeOptions::poison), every
// result compared with the CPU reference over the same values widened to f64 (floats, by
// relative error) or exactly (integers); the plan is the broadcast strategy's.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <type_traits>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"
#include "segment_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::runtime;

// The outputs over inputs x, w and the offsets o.
using Build = std::function<std::vector<ff::Expr>(const ff::Expr& x, const ff::Expr& w, const ff::Expr& o)>;

// Segment lengths summing to n, of one of the shapes (every shape has some empty ones).
std::vector<std::int64_t> offsets_of(int shape, std::int64_t n, std::mt19937_64& g) {
  std::vector<std::int64_t> off = {0};
  const auto push = [&](std::int64_t len) { off.push_back(std::min(n, off.back() + len)); };
  while (off.back() < n) {
    const std::uint64_t r = g();
    switch (shape) {
      case 0: push(static_cast<std::int64_t>(r % 3)); break;                      // 0, 1, 2: empty and one-element
      case 1: push(static_cast<std::int64_t>(r % 2000)); break;                   // up to half a tile
      case 2: push(r % 8 == 0 ? 0 : 3000 + static_cast<std::int64_t>(r % 9000)); break;  // longer than a tile
      default: {  // Zipf-like: length ~ n / rank, ranks at random
        const double rank = 1.0 + static_cast<double>(r % 1000);
        push(r % 5 == 0 ? 0 : static_cast<std::int64_t>(static_cast<double>(n) / (8.0 * rank * rank)) + 1);
      }
    }
  }
  if (shape == 0) off.insert(off.begin(), 3, 0);  // empty segments first
  off.push_back(n);                              // and an empty last one
  return off;
}

const char* shape_name(int shape) {
  static const char* names[] = {"segments of 0..2", "segments of 0..1999", "segments longer than a tile, some empty",
                                "Zipf-like lengths"};
  return names[shape];
}

template <class T, class O>
void check(const Build& build, const std::vector<O>& offsets, double lo, double hi, double tolerance,
           const std::string& what, double floor = 1e-30) {
  const std::int64_t n = static_cast<std::int64_t>(offsets.back());
  const auto x = ff::input<T>("x");
  const auto w = ff::input<T>("w");
  const auto o = ff::input<O>("o");
  const ff::Program prog(build(x, w, o));
  const auto plan = ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90"));
  // The broadcast strategy's step, alone or (ops beside broadcasts) as the first stage.
  REQUIRE((plan.intermediates.empty() ? plan.kernels.back() : plan.kernels.front()).registered == "broadcast segments");
  const auto xh = ff::test::random_values<T>(n, lo, hi);
  const auto wh = ff::test::random_values<T>(n, lo, hi);
  auto xd = runtime().upload(xh);
  auto wd = runtime().upload(wh);
  auto od = runtime().upload(offsets);
  ff::Bindings b;
  for (const auto& in : prog.inputs()) {
    const std::string& name = in.node().name;
    if (name == "x") b.push_back({in, xd});
    else if (name == "w") b.push_back({in, wd});
    else b.push_back({in, od});
  }
  const auto got = runtime().run(prog, b);

  using Wide = ff::test::Wide<T>;
  const auto xw = ff::input<Wide>("x");
  const auto ww = ff::input<Wide>("w");
  const ff::Program wide(build(xw, ww, o));
  ff::HostBindings hb;
  for (const auto& in : wide.inputs()) {
    const std::string& name = in.node().name;
    if (name == "o") hb.bind(in, ff::HostArray::from(offsets));
    else
      hb.bind(in, ff::HostArray::from(name == "x" ? std::vector<Wide>(xh.begin(), xh.end())
                                                  : std::vector<Wide>(wh.begin(), wh.end())));
  }
  const auto want = ff::evaluate(wide, hb);
  ff::test::check_outputs<T>(got, want, tolerance, floor,
                            what + ", n = " + std::to_string(n) + ", " + std::to_string(offsets.size() - 1) + " segments");
}

std::vector<ff::Expr> softmax(const ff::Expr& x, const ff::Expr&, const ff::Expr& o) {
  const auto e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, o, ff::max), o));
  return {e / ff::broadcast(ff::segmented_reduce(e, o, ff::plus), o)};
}

// The sizes under the label gpu; 600000 (most of the CPU reference's time) in the suite
// "long" (label gpu-long).
std::vector<std::int64_t> sizes() { return ff::test::capped({1, 100, 5000, 70001}); }
std::vector<std::int64_t> long_sizes() { return ff::test::capped({600000}); }

template <class O>
std::vector<O> narrow(const std::vector<std::int64_t>& v) {
  return std::vector<O>(v.begin(), v.end());
}

void softmax_sweep(const std::vector<std::int64_t>& ns) {
  std::mt19937_64 g(25);
  for (std::int64_t n : ns)
    for (int shape = 0; shape < 4; ++shape) {
      const auto off = offsets_of(shape, n, g);
      check<float>(softmax, off, -30.0, 30.0, 2e-5, std::string("f32 softmax, ") + shape_name(shape));
      check<double>(softmax, narrow<int>(off), -30.0, 30.0, 1e-12, std::string("f64 softmax, i32 offsets, ") + shape_name(shape));
    }
}

}  // namespace

TEST_CASE("per-segment softmax over irregular segments matches the f64 reference") {
  softmax_sweep(sizes());
}

namespace {

void centred_sweep(const std::vector<std::int64_t>& ns) {
  const Build centred = [](const ff::Expr& x, const ff::Expr& w, const ff::Expr& o) -> std::vector<ff::Expr> {
    const auto sum = ff::segmented_reduce(x * w, o, ff::plus);
    const auto low = ff::segmented_reduce(w, o, ff::min);
    return {x * w - ff::broadcast(sum, o) * 0.5f, w - ff::broadcast(low, o), sum};
  };
  std::mt19937_64 g(7);
  for (std::int64_t n : ns)
    for (int shape = 0; shape < 4; ++shape)
      check<float>(centred, offsets_of(shape, n, g), -1.0, 1.0, 1e-5, std::string("f32 centred, ") + shape_name(shape), 1.0);
}

}  // namespace

TEST_CASE("centred segments, two inputs, several outputs and a per-segment result as an output") {
  centred_sweep(sizes());
}

namespace {

void integer_sweep(const std::vector<std::int64_t>& ns) {
  const Build ints = [](const ff::Expr& x, const ff::Expr&, const ff::Expr& o) -> std::vector<ff::Expr> {
    const auto top = ff::segmented_reduce(x, o, ff::max);
    const auto below = ff::segmented_reduce(ff::broadcast(top, o) - x + ff::cast<int>(ff::index() % 5), o, ff::plus);
    return {x * 3 - ff::broadcast(top, o) + ff::broadcast(below, o) * ff::cast<int>(ff::index() % 3), below};
  };
  std::mt19937_64 g(11);
  for (std::int64_t n : ns)
    for (int shape = 0; shape < 4; ++shape)
      check<int>(ints, narrow<int>(offsets_of(shape, n, g)), -1000.0, 1000.0, 0, std::string("i32, ") + shape_name(shape));
}

}  // namespace

TEST_CASE("integer programs exactly: a chained reduction reading a broadcast, index() and a maximum") {
  integer_sweep(sizes());
}

TEST_CASE("offsets that leave elements outside every segment are reported") {
  const auto x = ff::input<float>("x");
  const auto o = ff::input<int>("o");
  const ff::Program prog(x - ff::broadcast(ff::segmented_reduce(x, o, ff::max), o));
  auto xd = runtime().upload(std::vector<float>(100, 1.0f));
  for (const std::vector<int>& bad : {std::vector<int>{5, 50, 100}, std::vector<int>{0, 50, 90}}) {
    auto od = runtime().upload(bad);
    try {
      (void)runtime().run(prog, {{x, xd}, {o, od}});
      FAIL("offsets " << bad.front() << ".." << bad.back() << " over 100 elements were accepted");
    } catch (const ff::GraphError& e) {  // the run says what a broadcast needs and what it got
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("offsets[0] = 0 and the last offset = n (100)") != std::string::npos);
      CHECK(what.find("offsets[0] = " + std::to_string(bad.front()) + " and the last offset = " +
                      std::to_string(bad.back())) != std::string::npos);
    }
  }
}

namespace {

void two_offsets_sweep(const std::vector<std::int64_t>& ns) {
  std::mt19937_64 g(31);
  for (std::int64_t n : ns)
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<int> first = narrow<int>(offsets_of(shape, n, g));
      const std::vector<std::int64_t> second = offsets_of((shape + 1) % 4, n, g);
      const auto x = ff::input<int>("x");
      const auto o = ff::input<int>("o");
      const auto q = ff::input<long long>("q");
      const auto sum_o = ff::segmented_reduce(x, o, ff::plus);
      const auto top_q = ff::segmented_reduce(x * 2, q, ff::max);
      const auto low_o = ff::segmented_reduce(x - ff::broadcast(sum_o, o), o, ff::min);
      const ff::Program prog(ff::outputs(x - ff::broadcast(sum_o, o) + ff::broadcast(top_q, q) * 3,
                                         ff::broadcast(low_o, o) - ff::broadcast(top_q, q), top_q, low_o));
      REQUIRE(ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90")).kernels.back().registered == "broadcast segments");
      const auto xh = ff::test::random_values<int>(n, -1000, 1000);
      auto xd = runtime().upload(xh);
      auto od = runtime().upload(first);
      auto qd = runtime().upload(second);
      const auto got = runtime().run(prog, {{x, xd}, {o, od}, {q, qd}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xh));
      hb.bind(o, ff::HostArray::from(first));
      hb.bind(q, ff::HostArray::from(second));
      const auto want = ff::evaluate(prog, hb);
      REQUIRE(got.size() == want.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        INFO("output " << k << ", n = " << n << ", " << shape_name(shape) << " and " << shape_name((shape + 1) % 4));
        CHECK(got[k].download<int>() == want[k].array.to_vector<int>());
      }
    }
}

}  // namespace

TEST_CASE("two offsets arrays in one program: each broadcast by its own segments, integers exactly") {
  two_offsets_sweep(sizes());
}

TEST_CASE("softmax, centred segments, integer programs and two offsets arrays at 600000 elements" *
          doctest::test_suite("long")) {
  softmax_sweep(long_sizes());
  centred_sweep(long_sizes());
  integer_sweep(long_sizes());
  two_offsets_sweep(long_sizes());
}

namespace {

// Output k of a run against the CPU reference's, exactly (integer programs): a scalar by
// value, an array element by element in its own type.
void check_exact(const std::vector<ff::Result>& got, const std::vector<ff::HostResult>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO(what << ", output " << k);
    REQUIRE(got[k].is_scalar() == want[k].is_scalar);
    if (want[k].is_scalar) {
      CHECK(got[k].value() == want[k].scalar);
      continue;
    }
    switch (got[k].type().scalar()) {
      case ff::ScalarType::I32: CHECK(got[k].download<int>() == want[k].array.to_vector<int>()); break;
      case ff::ScalarType::U32: CHECK(got[k].download<unsigned>() == want[k].array.to_vector<unsigned>()); break;
      case ff::ScalarType::I64: CHECK(got[k].download<long long>() == want[k].array.to_vector<long long>()); break;
      default: FAIL("output " << k << " of an unexpected type");
    }
  }
}

}  // namespace

// Ops other than segmented reductions beside a broadcast (staged: the segmented reductions
// first, their per-segment results intermediates; each later kernel reads an element's
// segment by a binary search over the offsets): a reduction, a scan, a histogram and a
// filter of centred values, a segmented reduction reading a broadcast after them, a map and
// a per-segment result as outputs.
TEST_CASE("a reduction, scan, histogram and filter of broadcasts, integers exactly") {
  std::mt19937_64 g(41);
  for (std::int64_t n : sizes())
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<int> off = narrow<int>(offsets_of(shape, n, g));
      const auto x = ff::input<int>("x");
      const auto o = ff::input<int>("o");
      const auto top = ff::segmented_reduce(x, o, ff::max);
      const auto low = ff::segmented_reduce(x, o, ff::min);
      const auto above = x - ff::broadcast(low, o);
      const ff::Program prog(ff::outputs(
          ff::reduce(x - ff::broadcast(top, o), ff::plus), ff::scan(above, ff::plus),
          ff::histogram(above % 16, 16), ff::filter(x - ff::broadcast(top, o), above > 700),
          ff::segmented_reduce(ff::broadcast(top, o) - x, o, ff::plus), top, x * 2 - ff::broadcast(low, o)));
      const auto plan = ff::codegen::plan(prog, ff::codegen::Target::preset("sm_90"));
      REQUIRE(plan.intermediates.size() == 2);
      CHECK(plan.intermediates[0].domain > 0);
      const auto xh = ff::test::random_values<int>(n, -1000, 1000);
      auto xd = runtime().upload(xh);
      auto od = runtime().upload(off);
      const auto got = runtime().run(prog, {{x, xd}, {o, od}});
      ff::HostBindings hb;
      hb.bind(x, ff::HostArray::from(xh));
      hb.bind(o, ff::HostArray::from(off));
      check_exact(got, ff::evaluate(prog, hb), "n = " + std::to_string(n) + ", " + shape_name(shape));
    }
}

TEST_CASE("a sum of exp(x - row max) and a filter of centred values, f32 against f64") {
  const Build build = [](const ff::Expr& x, const ff::Expr&, const ff::Expr& o) -> std::vector<ff::Expr> {
    const auto top = ff::segmented_reduce(x, o, ff::max);
    const auto sum = ff::segmented_reduce(x, o, ff::plus);
    return {ff::filter(x - ff::broadcast(sum, o) * 0.25f, x > 0.0f),
            ff::filter(ff::exp(x - ff::broadcast(top, o)), x < 0.0f)};
  };
  std::mt19937_64 g(43);
  for (std::int64_t n : sizes())
    for (int shape = 0; shape < 4; ++shape) {
      const auto off = offsets_of(shape, n, g);
      const auto x = ff::input<float>("x");
      const auto o = ff::input<long long>("o");
      const auto top = ff::segmented_reduce(x, o, ff::max);
      const ff::Program lse(ff::reduce(ff::exp(x - ff::broadcast(top, o)), ff::plus));
      const auto xh = ff::test::random_values<float>(n, -4.0, 4.0);
      auto xd = runtime().upload(xh);
      auto od = runtime().upload(off);
      const float got = runtime().run(lse, {{x, xd}, {o, od}}).at(0);
      double want = 0;  // each element's exp(x - its segment's max), in f64
      for (std::size_t s = 0; s + 1 < off.size(); ++s) {
        double m = -INFINITY;
        for (auto i = off[s]; i < off[s + 1]; ++i) m = std::max(m, static_cast<double>(xh[static_cast<std::size_t>(i)]));
        for (auto i = off[s]; i < off[s + 1]; ++i) want += std::exp(static_cast<double>(xh[static_cast<std::size_t>(i)]) - m);
      }
      INFO("sum of exp(x - segment max), n = " << n << ", " << shape_name(shape));
      CHECK(std::fabs(got - want) <= 1e-5 * want);
      check<float>(build, off, -4.0, 4.0, 1e-5, std::string("f32 filters of broadcasts, ") + shape_name(shape), 1.0);
    }
}

namespace {

// Keys in runs: segment s of offsets_of's shapes has key s % 3 (empty segments merge runs).
std::vector<int> keys_of(const std::vector<std::int64_t>& off) {
  std::vector<int> k(static_cast<std::size_t>(off.back()));
  for (std::size_t s = 0; s + 1 < off.size(); ++s)
    for (auto i = off[s]; i < off[s + 1]; ++i) k[static_cast<std::size_t>(i)] = static_cast<int>(s % 3);
  return k;
}

}  // namespace

// broadcast_by_key (staged: reduce_by_key and a scan numbering each element's run first,
// then a gather of the run's value at run - 1 fused into the later kernels).
TEST_CASE("broadcast_by_key: each element its run's total, key and maximum, beside a reduction") {
  std::mt19937_64 g(47);
  for (std::int64_t n : sizes())
    for (int shape = 0; shape < 4; ++shape) {
      const std::vector<int> kh = keys_of(offsets_of(shape, n, g));
      const std::string what = "n = " + std::to_string(n) + ", runs from " + shape_name(shape);
      const auto k = ff::input<int>("k");
      auto kd = runtime().upload(kh);
      {  // integers exactly
        const auto x = ff::input<int>("x");
        const auto runs = ff::reduce_by_key(k, x, ff::plus);
        const ff::Program prog(ff::outputs(x * 3 - ff::broadcast_by_key(runs.values, k),
                                           ff::reduce(ff::broadcast_by_key(runs.values, k) - x, ff::plus),
                                           ff::broadcast_by_key(runs.keys, k) * 2 + x, runs.values));
        const auto xh = ff::test::random_values<int>(n, -1000, 1000);
        auto xd = runtime().upload(xh);
        const auto got = runtime().run(prog, {{x, xd}, {k, kd}});
        ff::HostBindings hb;
        hb.bind(x, ff::HostArray::from(xh));
        hb.bind(k, ff::HostArray::from(kh));
        check_exact(got, ff::evaluate(prog, hb), "i32 " + what);
      }
      // f32 against f64: x less its run's maximum, and x over its run's largest |x|.
      const auto x = ff::input<float>("x");
      const auto xw = ff::input<double>("x");
      const auto build = [&](const ff::Expr& v) {
        const auto top = ff::reduce_by_key(k, v, ff::max);
        const auto big = ff::reduce_by_key(k, ff::abs(v), ff::max);
        return std::vector<ff::Expr>{v - ff::broadcast_by_key(top.values, k), v / ff::broadcast_by_key(big.values, k)};
      };
      const ff::Program prog(build(x)), wide(build(xw));
      const auto xh = ff::test::random_values<float>(n, 0.5, 4.0);
      auto xd = runtime().upload(xh);
      const auto got = runtime().run(prog, {{x, xd}, {k, kd}});
      ff::HostBindings hb;
      hb.bind(xw, ff::HostArray::from(std::vector<double>(xh.begin(), xh.end())));
      hb.bind(k, ff::HostArray::from(kh));
      ff::test::check_outputs<float>(got, ff::evaluate(wide, hb), 1e-6, 1.0, "f32 " + what);
    }
}
