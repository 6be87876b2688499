#pragma once
// What the segmented tests (segmented_gpu_test.cpp, segmented_scan_gpu_test.cpp; one
// executable, segmented_gpu_test) share: the sizes and segment-length shapes they sweep,
// random inputs, and the checks of every segmented op over one layout of segments, each
// against the CPU reference (integers and the non-commutative maximum segment sum
// exactly, f32 sums by relative error against f64), outputs poisoned (FUSEFLOW_POISON=1).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace fuseflow::test::segmented_support {

namespace ff = fuseflow;

// The sweeps' sizes under the label gpu: the edges and 70001 (many tiles, several blocks
// per segment); the same sweeps at 2^20 + 7 and 2^24 elements in the suite "long" (label
// gpu-long; gpu_test_support.hpp), so every size of a sweep runs under one of the labels.
inline const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, 70001});
inline const std::vector<std::int64_t> kLongSizes = ff::test::capped({(1 << 20) + 7, 1 << 24});

using ff::test::rng;
using ff::test::runtime;

// A segment-length shape: the next segment's length.
struct Shape {
  std::string name;
  std::function<std::int64_t()> next;
};

inline const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {"lengths 1", [] { return std::int64_t{1}; }},
      {"lengths 3", [] { return std::int64_t{3}; }},
      {"random 10..50", [] { return std::uniform_int_distribution<std::int64_t>(10, 50)(rng()); }},
      {"power law", [] {
         // Pareto, alpha 1.2: mostly short, a few thousands long; some empty.
         double u = std::uniform_real_distribution<double>(1e-9, 1.0)(rng());
         return static_cast<std::int64_t>(std::pow(u, -1.0 / 1.2)) - 1;
       }},
      {"random 0..4 (many empty)", [] { return std::uniform_int_distribution<std::int64_t>(0, 4)(rng()); }},
      // Both sides of the short-segment pass's limit (8 elements; it runs when the segments
      // average at most 8): a third of the segments are left to the merge path, whose
      // tiles all hold some, and which writes only those.
      {"random 5..10", [] { return std::uniform_int_distribution<std::int64_t>(5, 10)(rng()); }},
      // Short segments and, one in 2000, a long one (average about 5): the short pass
      // runs, and the merge path skips the tiles between the long ones.
      {"0..8, one in 2000 of 9..5000", [] {
         return std::uniform_int_distribution<int>(0, 1999)(rng()) == 0
                    ? std::uniform_int_distribution<std::int64_t>(9, 5000)(rng())
                    : std::uniform_int_distribution<std::int64_t>(0, 8)(rng());
       }},
      // Short segments, empty ones among them, and now and then a longer one: tiles of
      // all-short segments next to tiles with one longer segment.
      {"0..32, one in 1000 of 33..40", [] {
         return std::uniform_int_distribution<int>(0, 999)(rng()) == 0
                    ? std::uniform_int_distribution<std::int64_t>(33, 40)(rng())
                    : std::uniform_int_distribution<std::int64_t>(0, 32)(rng());
       }},
  };
  return all;
}

// Offsets for segments of the shape's lengths covering exactly n elements.
inline std::vector<int> offsets_for(const Shape& s, std::int64_t n) {
  std::vector<int> off = {0};
  while (off.back() < n) off.push_back(static_cast<int>(std::min<std::int64_t>(n, off.back() + s.next())));
  return off;
}

inline std::vector<int> ints(std::int64_t n, int lo, int hi) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& x : v) x = d(rng());
  return v;
}

// Integer results (i32 sum, MSSP) compared exactly.
template <class R>
void check_exact(const ff::Expr& prog, const ff::Expr& x, const ff::Expr& o, const std::vector<int>& xs,
                 const std::vector<int>& offsets, const std::string& what) {
  ff::Runtime& rt = runtime();
  auto dx = rt.upload(xs);
  auto doff = rt.upload(offsets);
  std::vector<R> got = rt.run(prog, {{x, dx}, {o, doff}}).template download<R>();
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(xs));
  b.bind(o, ff::HostArray::from(offsets));
  std::vector<R> want = ff::evaluate(prog, b)[0].array.template to_vector<R>();
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && wrong++ == 0) first = i;
  INFO(what << ": " << wrong << " of " << got.size() << " segments wrong, first " << first);
  CHECK(wrong == 0);
}

inline void check_f32_sum(const std::vector<float>& xs, const std::vector<int>& offsets, const std::string& what) {
  ff::Runtime& rt = runtime();
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("offsets");
  auto dx = rt.upload(xs);
  auto doff = rt.upload(offsets);
  std::vector<float> got = rt.run(ff::segmented_reduce(x, o, ff::plus), {{x, dx}, {o, doff}}).download<float>();
  REQUIRE(got.size() == offsets.size() - 1);
  std::size_t wrong = 0, first = 0;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    double want = 0, magnitude = 0;
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) {
      want += xs[static_cast<std::size_t>(i)];
      magnitude += std::fabs(xs[static_cast<std::size_t>(i)]);
    }
    if (!(std::fabs(got[s] - want) <= 1e-5 * magnitude + 1e-30) && wrong++ == 0) first = s;
  }
  INFO(what << ": " << wrong << " of " << got.size() << " f32 sums off, first " << first);
  CHECK(wrong == 0);
}

inline std::vector<float> floats(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : v) x = d(rng());
  return v;
}

inline void check_all(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("offsets");
  auto xs = ints(n, -100, 100);
  using M = ff::Tuple<int, int, int, int>;
  check_exact<int>(ff::segmented_reduce(x, o, ff::plus), x, o, xs, offsets, "i32 sum, " + what);
  check_exact<M>(ff::segmented_reduce(ff::catalog::mssp_parts(x), o, ff::catalog::mssp()), x, o, xs, offsets,
                 "mssp, " + what);
  check_f32_sum(floats(n), offsets, "f32 sum, " + what);
}

// ---- segmented scans, scan_by_key, reduce_by_key ---------------------------------------

using I4 = ff::Tuple<int, int, int, int>;

// Keys whose runs are the segments of `offsets`: segment s gets key s % 3 (neighbours
// differ, keys recur: 0 1 2 0 ...); elements before the first offset get -1, after the
// last -2. Empty segments vanish, and around them two neighbours may share a key and merge.
inline std::vector<int> keys_for(const std::vector<int>& offsets, std::int64_t n) {
  std::vector<int> keys(static_cast<std::size_t>(n), -2);
  for (int i = 0; i < offsets.front(); ++i) keys[static_cast<std::size_t>(i)] = -1;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) keys[static_cast<std::size_t>(i)] = static_cast<int>(s % 3);
  return keys;
}

// A program run on the GPU and by the CPU reference over the same inputs (i32 or f32 arrays).
struct Both {
  std::vector<ff::DeviceArray<int>> ints;  // the inputs stay alive while the results are read
  std::vector<ff::DeviceArray<float>> floats;
  std::vector<ff::Result> got;
  std::vector<ff::HostResult> want;
};

inline Both run_both(const ff::Program& prog, const std::vector<std::pair<ff::Expr, const std::vector<int>*>>& ints,
                     const std::vector<std::pair<ff::Expr, const std::vector<float>*>>& floats = {}) {
  ff::Runtime& rt = runtime();
  Both r;
  ff::Bindings b;
  ff::HostBindings hb;
  r.ints.reserve(ints.size());
  r.floats.reserve(floats.size());
  for (const auto& [e, v] : ints) {
    r.ints.push_back(rt.upload(*v));
    b.push_back({e, r.ints.back()});
    hb.bind(e, ff::HostArray::from(*v));
  }
  for (const auto& [e, v] : floats) {
    r.floats.push_back(rt.upload(*v));
    b.push_back({e, r.floats.back()});
    hb.bind(e, ff::HostArray::from(*v));
  }
  r.got = rt.run(prog, b);
  r.want = ff::evaluate(prog, hb);
  return r;
}

// Output `i`, element for element (the element count included: reduce_by_key's comes from the device).
template <class T>
void check_output(Both& r, std::size_t i, const std::string& what) {
  std::vector<T> got = r.got[i].download<T>();
  std::vector<T> want = r.want[i].array.to_vector<T>();
  INFO(what << ": " << got.size() << " elements, want " << want.size());
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t e = 0; e < got.size(); ++e)
    if (!(got[e] == want[e]) && wrong++ == 0) first = e;
  INFO(what << ": " << wrong << " of " << got.size() << " elements wrong, first " << first);
  CHECK(wrong == 0);
}

// Which run each element is in (its segment, or its run of equal keys), -1 for none.
inline std::vector<std::int64_t> runs_of_offsets(const std::vector<int>& offsets, std::int64_t n) {
  std::vector<std::int64_t> run(static_cast<std::size_t>(n), -1);
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) run[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(s);
  return run;
}
inline std::vector<std::int64_t> runs_of_keys(const std::vector<int>& keys) {
  std::vector<std::int64_t> run(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) run[i] = i == 0 ? 0 : run[i - 1] + (keys[i] != keys[i - 1]);
  return run;
}

// f32 sums (a scan when `per_element`, else one per run) against f64, each within 1e-5 of
// the sum of |x| it went through.
inline void check_f32(const std::vector<float>& got, const std::vector<float>& xs, const std::vector<std::int64_t>& run,
                      bool per_element, ff::ScanKind kind, const std::string& what) {
  std::vector<double> want, magnitude;
  double sum = 0, abs_sum = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i == 0 || run[i] != run[i - 1]) {
      if (!per_element && i > 0) want.push_back(sum), magnitude.push_back(abs_sum);
      sum = abs_sum = 0;
    }
    if (per_element && kind == ff::exclusive) want.push_back(sum), magnitude.push_back(abs_sum);
    if (run[i] >= 0) sum += xs[i], abs_sum += std::fabs(xs[i]);
    if (per_element && kind == ff::inclusive) want.push_back(sum), magnitude.push_back(abs_sum);
  }
  if (!per_element && !xs.empty()) want.push_back(sum), magnitude.push_back(abs_sum);
  INFO(what << ": " << got.size() << " elements, want " << want.size());
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5 * magnitude[i] + 1e-30) && wrong++ == 0) first = i;
  INFO(what << ": " << wrong << " of " << got.size() << " f32 values off, first " << first);
  CHECK(wrong == 0);
}

// Segmented scans by offsets (i32 and mssp exactly, inclusive and exclusive; f32 sums),
// scans by key and reduce_by_key over keys whose runs are those segments.
inline void check_scans(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("offsets");
  auto k = ff::input<int>("k");
  auto f = ff::input<float>("f");
  const auto xs = ints(n, -100, 100);
  const auto keys = keys_for(offsets, n);
  const auto fs = floats(n);
  const ff::Expr parts = ff::catalog::mssp_parts(x);
  for (ff::ScanKind kind : {ff::inclusive, ff::exclusive}) {
    const std::string how = std::string(kind == ff::inclusive ? "inclusive " : "exclusive ");
    Both sum = run_both(ff::segmented_scan(x, o, ff::plus, kind), {{x, &xs}, {o, &offsets}});
    check_output<int>(sum, 0, how + "i32 segmented sum, " + what);
    Both mssp = run_both(ff::segmented_scan(parts, o, ff::catalog::mssp(), kind), {{x, &xs}, {o, &offsets}});
    check_output<I4>(mssp, 0, how + "mssp segmented scan, " + what);
    Both fsum = run_both(ff::segmented_scan(f, o, ff::plus, kind), {{o, &offsets}}, {{f, &fs}});
    check_f32(fsum.got[0].download<float>(), fs, runs_of_offsets(offsets, n), true, kind, how + "f32 segmented sum, " + what);
    Both by_key = run_both(ff::scan_by_key(k, parts, ff::catalog::mssp(), kind), {{x, &xs}, {k, &keys}});
    check_output<I4>(by_key, 0, how + "mssp scan_by_key, " + what);
  }
  Both by_key = run_both(ff::scan_by_key(k, x, ff::plus), {{x, &xs}, {k, &keys}});
  check_output<int>(by_key, 0, "i32 scan_by_key, " + what);
  Both fkey = run_both(ff::scan_by_key(k, f, ff::plus), {{k, &keys}}, {{f, &fs}});
  check_f32(fkey.got[0].download<float>(), fs, runs_of_keys(keys), true, ff::inclusive, "f32 scan_by_key, " + what);

  ff::KeyedResult sums = ff::reduce_by_key(k, x, ff::plus);
  Both reduced = run_both(ff::outputs(sums.keys, sums.values), {{x, &xs}, {k, &keys}});
  check_output<int>(reduced, 0, "reduce_by_key keys, " + what);
  check_output<int>(reduced, 1, "reduce_by_key i32 sums, " + what);
  Both best = run_both(ff::reduce_by_key(k, parts, ff::catalog::mssp()).values, {{x, &xs}, {k, &keys}});
  check_output<I4>(best, 0, "reduce_by_key mssp, " + what);
  Both fred = run_both(ff::reduce_by_key(k, f, ff::plus).values, {{k, &keys}}, {{f, &fs}});
  check_f32(fred.got[0].download<float>(), fs, runs_of_keys(keys), false, ff::inclusive, "reduce_by_key f32 sums, " + what);
}

// Every segmented op over one layout of segments: reductions by offsets (check_all), then
// scans by offsets, scans by key and reduce_by_key (check_scans).
inline void check_every_op(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
  check_all(offsets, n, what);
  check_scans(offsets, n, what);
}

}  // namespace fuseflow::test::segmented_support
