// GPU execution tests for segmented reductions by offsets, segmented scans (by offsets and
// by key) and reduce_by_key: every segment-length shape (none, all empty, one, lengths 1
// and 3, random 10..50, power law, 0..32 with a few longer, one huge segment among tiny
// ones) at every size,
// outputs poisoned (FUSEFLOW_POISON=1), compared with the CPU reference: integers and the
// non-commutative maximum segment sum exactly, f32 sums by relative error against f64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;

namespace {

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 32, 33, 1000, 1023, 1025, (1 << 20) + 7, 1 << 24});

using ff::test::rng;
using ff::test::runtime;

// A segment-length shape: the next segment's length.
struct Shape {
  std::string name;
  std::function<std::int64_t()> next;
};

const std::vector<Shape>& shapes() {
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
std::vector<int> offsets_for(const Shape& s, std::int64_t n) {
  std::vector<int> off = {0};
  while (off.back() < n) off.push_back(static_cast<int>(std::min<std::int64_t>(n, off.back() + s.next())));
  return off;
}

std::vector<int> ints(std::int64_t n, int lo, int hi) {
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

void check_f32_sum(const std::vector<float>& xs, const std::vector<int>& offsets, const std::string& what) {
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

std::vector<float> floats(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : v) x = d(rng());
  return v;
}

void check_all(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
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
std::vector<int> keys_for(const std::vector<int>& offsets, std::int64_t n) {
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

Both run_both(const ff::Program& prog, const std::vector<std::pair<ff::Expr, const std::vector<int>*>>& ints,
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
std::vector<std::int64_t> runs_of_offsets(const std::vector<int>& offsets, std::int64_t n) {
  std::vector<std::int64_t> run(static_cast<std::size_t>(n), -1);
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s)
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) run[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(s);
  return run;
}
std::vector<std::int64_t> runs_of_keys(const std::vector<int>& keys) {
  std::vector<std::int64_t> run(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) run[i] = i == 0 ? 0 : run[i - 1] + (keys[i] != keys[i - 1]);
  return run;
}

// f32 sums (a scan when `per_element`, else one per run) against f64, each within 1e-5 of
// the sum of |x| it went through.
void check_f32(const std::vector<float>& got, const std::vector<float>& xs, const std::vector<std::int64_t>& run,
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
void check_scans(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
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
void check_every_op(const std::vector<int>& offsets, std::int64_t n, const std::string& what) {
  check_all(offsets, n, what);
  check_scans(offsets, n, what);
}

}  // namespace

TEST_CASE("every segmented op matches the reference for every shape and size") {
  for (const auto& s : shapes())
    for (std::int64_t n : kSizes) check_every_op(offsets_for(s, n), n, s.name + ", n = " + std::to_string(n));
}

// FUSEFLOW_SEGMENTED_SHORT=0: the merge path alone, for programs planned while it is set,
// so that it is checked on every shape too (after the short pass it sees only segments of
// more than 8 elements and the tiles that hold one).
struct MergePathAlone {
  MergePathAlone() { setenv("FUSEFLOW_SEGMENTED_SHORT", "0", 1); }
  ~MergePathAlone() { unsetenv("FUSEFLOW_SEGMENTED_SHORT"); }
};

TEST_CASE("the merge path alone matches the reference for every shape and size") {
  const MergePathAlone alone;
  for (const auto& s : shapes())
    for (std::int64_t n : kSizes) check_all(offsets_for(s, n), n, s.name + ", merge path alone, n = " + std::to_string(n));
  for (std::int64_t n : kSizes) check_all({0, static_cast<int>(n)}, n, "one segment, merge path alone, n = " + std::to_string(n));
}

TEST_CASE("one segment holding every element") {
  for (std::int64_t n : kSizes) check_every_op({0, static_cast<int>(n)}, n, "one segment, n = " + std::to_string(n));
}

TEST_CASE("no segments: one offset gives an empty result; no offsets is an error") {
  ff::Runtime& rt = runtime();
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("offsets");
  auto dx = rt.upload(floats(1000));
  auto one = rt.upload(std::vector<int>{0});
  CHECK(rt.run(ff::segmented_reduce(x, o, ff::plus), {{x, dx}, {o, one}}).size() == 0);
  auto none = rt.upload(std::vector<int>{});
  CHECK_THROWS_AS(rt.run(ff::segmented_reduce(x, o, ff::plus), {{x, dx}, {o, none}}), ff::GraphError);
  CHECK_THROWS_AS(rt.run(ff::segmented_scan(x, o, ff::plus), {{x, dx}, {o, none}}), ff::GraphError);
}

TEST_CASE("all segments empty give the identity, wherever they sit; so does a scan with no segments") {
  for (std::int64_t n : ff::test::capped({0LL, 1000LL, (1LL << 20) + 7})) {
    check_scans({0}, n, "no segments, n = " + std::to_string(n));
    check_scans({static_cast<int>(n / 3)}, n, "one offset in the middle, n = " + std::to_string(n));
    for (std::int64_t segments : {1LL, 1000LL, 100000LL}) {
      check_every_op(std::vector<int>(static_cast<std::size_t>(segments + 1), 0), n,
                     std::to_string(segments) + " empty segments at 0, n = " + std::to_string(n));
      check_every_op(std::vector<int>(static_cast<std::size_t>(segments + 1), static_cast<int>(n / 2)), n,
                     std::to_string(segments) + " empty segments in the middle, n = " + std::to_string(n));
    }
  }
}

TEST_CASE("elements before the first offset and after the last belong to no segment") {
  const std::int64_t n = (1 << 20) + 7;
  std::vector<int> offsets = {1000};
  while (offsets.back() < n - 5000) offsets.push_back(offsets.back() + 17);
  check_every_op(offsets, n, "offsets from 1000 to n - 5000");
}

TEST_CASE("one segment of 2^22 elements among 2^18 tiny ones is exact (skew)") {
  FF_TEST_NEEDS_ELEMENTS((1 << 22) + (1 << 18));
  std::vector<int> offsets = {0};
  std::uniform_int_distribution<int> tiny(0, 3);
  for (int s = 0; s < (1 << 17); ++s) offsets.push_back(offsets.back() + tiny(rng()));
  offsets.push_back(offsets.back() + (1 << 22));
  for (int s = 0; s < (1 << 17); ++s) offsets.push_back(offsets.back() + tiny(rng()));
  check_every_op(offsets, offsets.back(), "2^22 among 2^18 tiny");
}

// The kernel's tiles are 256 x 12 items (elements + segment ends) for 4-byte sums and
// 256 x 4 for the maximum segment sum; a tile holding no segment end takes a vector-load
// path when its first element is a multiple of the vector width (4 elements).
TEST_CASE("long segments ending at, before and after tile ends, then many short ones, at every alignment") {
  for (std::int64_t tile : {1024LL, 3072LL}) {
    for (std::int64_t tiles : {1LL, 2LL, 5LL}) {
      for (std::int64_t shift : {-1LL, 0LL, 1LL}) {
        for (int start : {0, 1, 2}) {
          // Items count from the first offset. Segment 0 is [start, start + length): its end
          // is item `length`, the last item of a tile when length + 1 = tiles x tile.
          const std::int64_t length = tiles * tile - 1 + shift;
          std::vector<int> offsets = {start, static_cast<int>(start + length)};
          std::uniform_int_distribution<int> tiny(0, 3);
          for (int s = 0; s < 3000; ++s) offsets.push_back(offsets.back() + tiny(rng()));
          offsets.push_back(offsets.back() + static_cast<int>(tile) * 3 + 5);  // another long one, unaligned
          const std::int64_t n = offsets.back() + 7;
          check_all(offsets, n,
                    "tile " + std::to_string(tile) + " x " + std::to_string(tiles) + ", shift " + std::to_string(shift) +
                        ", first element " + std::to_string(start));
        }
      }
    }
  }
}

TEST_CASE("tiles with no segment end alternate with tiles full of ends") {
  std::vector<int> offsets = {0};
  std::uniform_int_distribution<int> tiny(0, 2), huge(3000, 9000);
  for (int round = 0; round < 40; ++round) {
    offsets.push_back(offsets.back() + huge(rng()));
    const int shorts = tiny(rng()) * 1500;
    for (int s = 0; s < shorts; ++s) offsets.push_back(offsets.back() + tiny(rng()));
  }
  check_all(offsets, offsets.back(), "huge and tiny segments alternating");
}

TEST_CASE("the catalog's segmented_sum and segmented_mssp run with i32 offsets") {
  for (const char* name : {"segmented_sum", "segmented_mssp"}) {
    const ff::Program p = ff::catalog::find(name).build();
    ff::Runtime& rt = runtime();
    const std::int64_t n = 100003;
    std::vector<int> offsets = offsets_for(shapes()[2], n);
    auto xs = ints(n, -100, 100);
    ff::Bindings b;
    ff::HostBindings hb;
    std::vector<ff::DeviceArray<float>> keep_f;
    std::vector<ff::DeviceArray<int>> keep_i;
    for (const auto& in : p.inputs()) {
      if (in.node().name == "offsets") {
        keep_i.push_back(rt.upload(offsets));
        b.push_back({in, keep_i.back()});
        hb.bind(in, ff::HostArray::from(offsets));
      } else if (in.type() == ff::type_of<float>()) {
        std::vector<float> f(xs.begin(), xs.end());  // small integers: sums are exact in f32
        keep_f.push_back(rt.upload(f));
        b.push_back({in, keep_f.back()});
        hb.bind(in, ff::HostArray::from(f));
      } else {
        keep_i.push_back(rt.upload(xs));
        b.push_back({in, keep_i.back()});
        hb.bind(in, ff::HostArray::from(xs));
      }
    }
    auto got = rt.run(p, b);
    auto want = ff::evaluate(p, hb);
    const ff::Type& t = p.outputs()[0].type();
    if (t == ff::type_of<float>()) {
      auto g = got[0].download<float>();
      CHECK(g == want[0].array.to_vector<float>());
    } else {
      using M = ff::Tuple<int, int, int, int>;
      auto g = got[0].download<M>();
      CHECK(g == want[0].array.to_vector<M>());
    }
  }
}

TEST_CASE("offsets read as elements too are refused: their lengths differ") {
  auto x = ff::input<int>("x");
  CHECK_THROWS_AS(ff::codegen::plan(ff::Program(ff::segmented_reduce(x, x, ff::plus)), ff::codegen::Target::preset("sm_90")),
                  ff::GraphError);
}


TEST_CASE("segmented scans read i64 offsets; reduce_by_key compares f32 keys with == and tuple keys field by field") {
  const std::int64_t n = 100003;
  const std::vector<int> off32 = offsets_for(shapes()[2], n);
  const std::vector<long long> off64(off32.begin(), off32.end());
  ff::Runtime& rt = runtime();
  auto x = ff::input<int>("x");
  auto o = ff::input<long long>("offsets");
  const auto xs = ints(n, -100, 100);
  auto dx = rt.upload(xs);
  auto doff = rt.upload(off64);
  ff::HostBindings hb;
  hb.bind(x, ff::HostArray::from(xs));
  hb.bind(o, ff::HostArray::from(off64));
  const ff::Expr prog = ff::segmented_scan(x, o, ff::plus);
  CHECK(rt.run(prog, {{x, dx}, {o, doff}}).download<int>() == ff::evaluate(prog, hb)[0].array.to_vector<int>());

  // f32 keys: -0 and +0 are one run, each NaN a run of its own; (i32, f32) keys.
  std::vector<float> fkeys(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < fkeys.size(); ++i) {
    const std::size_t r = i / 5;
    fkeys[i] = r % 4 == 0 ? std::numeric_limits<float>::quiet_NaN() : (r % 4 == 1 ? (i % 2 ? -0.0f : 0.0f) : float(r % 3));
  }
  const std::vector<int> ikeys = keys_for(off32, n);
  auto fk = ff::input<float>("fk");
  auto ik = ff::input<int>("k");
  ff::KeyedResult by_float = ff::reduce_by_key(fk, x, ff::plus);
  Both f = run_both(ff::outputs(by_float.keys, by_float.values), {{x, &xs}}, {{fk, &fkeys}});
  CHECK(f.got[1].download<int>() == f.want[1].array.to_vector<int>());
  const std::vector<float> fgot = f.got[0].download<float>(), fwant = f.want[0].array.to_vector<float>();
  REQUIRE(fgot.size() == fwant.size());
  CHECK(std::memcmp(fgot.data(), fwant.data(), fgot.size() * sizeof(float)) == 0);  // NaNs and -0 bit for bit
  ff::KeyedResult by_pair = ff::reduce_by_key(ff::zip(ik, fk), x, ff::plus);
  Both p = run_both(ff::outputs(by_pair.values), {{x, &xs}, {ik, &ikeys}}, {{fk, &fkeys}});
  check_output<int>(p, 0, "reduce_by_key over (i32, f32) keys");
}

TEST_CASE("reduce_by_key's length is read from the device when asked: run_async, array(), n = 0") {
  ff::Runtime& rt = runtime();
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  const std::vector<int> keys = {1, 1, 2, 2, 2, 1}, xs = {1, 2, 3, 4, 5, 6};
  auto dk = rt.upload(keys);
  auto dx = rt.upload(xs);
  ff::KeyedResult r = ff::reduce_by_key(k, x, ff::plus);
  std::vector<ff::Result> got = rt.run_async(ff::outputs(r.keys, r.values), {{k, dk}, {x, dx}});
  CHECK(got[0].size() == 3);
  CHECK(got[0].download<int>() == std::vector<int>{1, 2, 1});
  ff::DeviceArray<int> sums = got[1].array<int>();
  CHECK(sums.size() == 3);
  CHECK(sums.download() == std::vector<int>{3, 12, 6});
  auto empty_k = rt.upload(std::vector<int>{});
  auto empty_x = rt.upload(std::vector<int>{});
  CHECK(rt.run(r.values, {{k, empty_k}, {x, empty_x}}).size() == 0);
}

TEST_CASE("the catalog's segmented scans and keyed programs run and match the reference") {
  const std::int64_t n = 100003;
  const std::vector<int> offsets = offsets_for(shapes()[2], n);
  const std::vector<int> keys = keys_for(offsets, n);
  const auto xs = ints(n, -100, 100);
  const std::vector<float> small(xs.begin(), xs.end());  // small integers: f32 sums are exact
  for (const char* name : {"segmented_scan_sum", "segmented_scan_exclusive_i32", "scan_by_key_sum", "scan_by_key_mssp",
                           "reduce_by_key_sum", "reduce_by_key_mssp"}) {
    const ff::Program p = ff::catalog::find(name).build();
    std::vector<std::pair<ff::Expr, const std::vector<int>*>> int_inputs;
    std::vector<std::pair<ff::Expr, const std::vector<float>*>> float_inputs;
    std::vector<float> parity(keys.begin(), keys.end());
    for (float& v : parity) v = v < 0 ? v : float(int(v) % 2);  // "c": constant within each run of k
    for (const auto& in : p.inputs()) {
      const std::string& id = in.node().name;
      if (in.type() == ff::type_of<float>()) float_inputs.push_back({in, id == "c" ? &parity : &small});
      else int_inputs.push_back({in, id == "offsets" ? &offsets : (id == "k" ? &keys : &xs)});
    }
    Both r = run_both(p, int_inputs, float_inputs);
    for (std::size_t i = 0; i < r.got.size(); ++i) {
      const ff::Type& t = p.outputs()[i].type();
      const std::string what = std::string(name) + " output " + std::to_string(i);
      if (t == ff::type_of<float>()) check_output<float>(r, i, what);
      else if (t == ff::type_of<int>()) check_output<int>(r, i, what);
      else check_output<I4>(r, i, what);
    }
  }
}

// Bad offsets only the device sees: the segmented scan clamps them (no access out of
// bounds), flags them, and Runtime::run throws what the CPU reference throws, word for word.
TEST_CASE("segmented_scan reports decreasing or out-of-range offsets after the run, as the reference does") {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("o");
  const ff::Expr scan = ff::segmented_scan(x, o, ff::plus);
  ff::Runtime& rt = runtime();
  auto verdicts = [&](const std::vector<int>& xs, const std::vector<int>& offsets) {
    auto dx = rt.upload(xs);
    auto doff = rt.upload(offsets);
    const std::string device = ff::test::graph_error_of([&] { (void)rt.run(scan, {{x, dx}, {o, doff}}); });
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(xs));
    b.bind(o, ff::HostArray::from(offsets));
    return std::make_pair(device, ff::test::graph_error_of([&] { (void)ff::evaluate(ff::Program(scan), b); }));
  };
  const std::vector<int> ten(10, 1);
  auto [device, reference] = verdicts(ten, {0, 4, 3, 10});
  CHECK(device == "fuseflow: segmented_scan: offset 2 is 3, less than offset 1 (4); offsets must be non-decreasing");
  CHECK(device == reference);
  std::tie(device, reference) = verdicts(ten, {0, 5, 11});
  CHECK(device == "fuseflow: segmented_scan: offset 2 is 11, beyond the end of the 10 values");
  CHECK(device == reference);
  std::tie(device, reference) = verdicts(ten, {-1, 5, 10});
  CHECK(device == reference);
  CHECK(device != "(no GraphError thrown)");
  // One decreasing pair anywhere among many offsets, in any tile (and past the last
  // element's tile: more offsets than elements), is found.
  const std::int64_t n = std::min<std::int64_t>((1 << 20) + 7, ff::test::max_elements());
  const std::vector<int> xs(static_cast<std::size_t>(n), 1);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<int> off;
    for (std::int64_t s = 0; s <= n + 5000; s += trial % 2 ? 1 : 7) off.push_back(static_cast<int>(std::min(s, n)));
    const std::size_t at = std::uniform_int_distribution<std::size_t>(1, off.size() - 1)(rng());
    off[at] = off[at - 1] - 1;
    std::tie(device, reference) = verdicts(xs, off);
    INFO("trial " << trial << ", offset " << at << " of " << off.size());
    CHECK(device == reference);
    CHECK(device != "(no GraphError thrown)");
  }
  // The Runtime works on.
  auto dx = rt.upload(std::vector<int>{1, 2, 3, 4, 5});
  auto doff = rt.upload(std::vector<int>{0, 2, 2, 5});
  CHECK(rt.run(scan, {{x, dx}, {o, doff}}).download<int>() == std::vector<int>{1, 3, 3, 7, 12});
}
