// GPU execution tests for segmented reductions by offsets: every segment-length shape
// (none, all empty, one, lengths 1 and 3, random 10..50, power law, one huge segment
// among tiny ones) at every size, outputs poisoned (FUSEFLOW_POISON=1), compared with the
// CPU reference: integers and the non-commutative maximum segment sum exactly, f32 sums
// per segment by relative error against f64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

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

}  // namespace

TEST_CASE("segmented sums and maximum segment sums match the reference for every shape and size") {
  for (const auto& s : shapes())
    for (std::int64_t n : kSizes) check_all(offsets_for(s, n), n, s.name + ", n = " + std::to_string(n));
}

TEST_CASE("one segment holding every element") {
  for (std::int64_t n : kSizes) check_all({0, static_cast<int>(n)}, n, "one segment, n = " + std::to_string(n));
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
}

TEST_CASE("all segments empty give the identity, wherever they sit") {
  for (std::int64_t n : ff::test::capped({0LL, 1000LL, (1LL << 20) + 7})) {
    for (std::int64_t segments : {1LL, 1000LL, 100000LL}) {
      check_all(std::vector<int>(static_cast<std::size_t>(segments + 1), 0), n,
                std::to_string(segments) + " empty segments at 0, n = " + std::to_string(n));
      check_all(std::vector<int>(static_cast<std::size_t>(segments + 1), static_cast<int>(n / 2)), n,
                std::to_string(segments) + " empty segments in the middle, n = " + std::to_string(n));
    }
  }
}

TEST_CASE("elements before the first offset and after the last belong to no segment") {
  const std::int64_t n = (1 << 20) + 7;
  std::vector<int> offsets = {1000};
  while (offsets.back() < n - 5000) offsets.push_back(offsets.back() + 17);
  check_all(offsets, n, "offsets from 1000 to n - 5000");
}

TEST_CASE("one segment of 2^22 elements among 2^18 tiny ones is exact (skew)") {
  FF_TEST_NEEDS_ELEMENTS((1 << 22) + (1 << 18));
  std::vector<int> offsets = {0};
  std::uniform_int_distribution<int> tiny(0, 3);
  for (int s = 0; s < (1 << 17); ++s) offsets.push_back(offsets.back() + tiny(rng()));
  offsets.push_back(offsets.back() + (1 << 22));
  for (int s = 0; s < (1 << 17); ++s) offsets.push_back(offsets.back() + tiny(rng()));
  check_all(offsets, offsets.back(), "2^22 among 2^18 tiny");
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
