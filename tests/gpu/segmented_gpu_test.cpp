// GPU execution tests for segmented ops over every layout of segments (helpers in
// segmented_gpu_support.hpp): every segment-length shape (lengths 1 and 3, random 10..50,
// power law, many empty, both sides of the short pass's limit, short ones with a few
// longer) at every size, for every segmented op and for the merge path alone; one segment;
// none; all empty; elements outside every segment; one huge segment among tiny ones;
// segments ending at and around tile ends; the catalog's segmented reductions. The
// segmented scans' and by-key ops' own cases are in segmented_scan_gpu_test.cpp.
#include <doctest/doctest.h>

#include <random>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/segmented_gpu_support.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;
using namespace ff::test::segmented_support;
using ff::test::rng;
using ff::test::runtime;

namespace {

void check_every_shape(const std::vector<std::int64_t>& sizes) {
  for (const auto& s : shapes())
    for (std::int64_t n : sizes) check_every_op(offsets_for(s, n), n, s.name + ", n = " + std::to_string(n));
}

// segmented_short = false (FUSEFLOW_SEGMENTED_SHORT=0): the merge path alone, so that it
// is checked on every shape too (after the short pass it sees only segments of more than 8
// elements and the tiles that hold one). On a Runtime of its own with that option
// (PlanVariant, gpu_test_support.hpp).
void check_merge_path_alone(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("offsets");
  const ff::Program sum(ff::segmented_reduce(x, o, ff::plus));
  // The default plan has the short pass, so that leaving it out below means something.
  REQUIRE(runtime().explain(sum).find(" ff_segmented_short_") != std::string::npos);
  ff::codegen::PlanOptions options;
  options.segmented_short = false;
  ff::test::PlanVariant alone(options);
  // The programs check_all runs (i32 sum, MSSP, f32 sum) have no short pass, and a run
  // launches the merge path.
  auto xf = ff::input<float>("x");
  for (const ff::Program& p : {sum, ff::Program(ff::segmented_reduce(ff::catalog::mssp_parts(x), o, ff::catalog::mssp())),
                               ff::Program(ff::segmented_reduce(xf, o, ff::plus))})
    alone.require_no_kernel(p, "ff_segmented_short_");
  auto dx = alone.rt().upload(std::vector<int>(1000, 1));
  auto doff = alone.rt().upload(std::vector<int>{0, 3, 10, 1000});
  alone.require_launch(sum, {{x, dx}, {o, doff}}, "ff_segmented_reduce_");
  for (const auto& s : shapes())
    for (std::int64_t n : sizes) check_all(offsets_for(s, n), n, s.name + ", merge path alone, n = " + std::to_string(n));
  for (std::int64_t n : sizes) check_all({0, static_cast<int>(n)}, n, "one segment, merge path alone, n = " + std::to_string(n));
}

void check_one_segment(const std::vector<std::int64_t>& sizes) {
  for (std::int64_t n : sizes) check_every_op({0, static_cast<int>(n)}, n, "one segment, n = " + std::to_string(n));
}

}  // namespace

TEST_CASE("every segmented op matches the reference for every shape and size up to 70001") {
  check_every_shape(kSizes);
}

TEST_CASE("the merge path alone matches the reference for every shape and size up to 70001") {
  check_merge_path_alone(kSizes);
}

TEST_CASE("one segment holding every element") {
  check_one_segment(kSizes);
}

TEST_CASE("every segmented op, the merge path alone, and one segment at 2^20 + 7 and 2^24 elements" * doctest::test_suite("long")) {
  check_every_shape(kLongSizes);
  check_merge_path_alone(kLongSizes);
  check_one_segment(kLongSizes);
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

namespace {

void check_empty_segments(const std::vector<std::int64_t>& sizes) {
  for (std::int64_t n : sizes) {
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

void check_outside_elements(std::int64_t n) {
  std::vector<int> offsets = {1000};
  while (offsets.back() < n - 5000) offsets.push_back(offsets.back() + 17);
  check_every_op(offsets, n, "offsets from 1000 to n - 5000, n = " + std::to_string(n));
}

}  // namespace

TEST_CASE("all segments empty give the identity, wherever they sit; so does a scan with no segments") {
  check_empty_segments(ff::test::capped({0LL, 1000LL, 70001LL}));
}

TEST_CASE("elements before the first offset and after the last belong to no segment") {
  check_outside_elements(70001);
}

// The large sizes of the two cases above, and the skew case (16 programs over 2^22 + 2^18
// elements, each evaluated by the CPU reference too).
TEST_CASE("empty segments and elements outside every segment at 2^20 + 7 elements; one segment of 2^22 elements "
          "among 2^18 tiny ones is exact (skew)" * doctest::test_suite("long")) {
  check_empty_segments(ff::test::capped({(1LL << 20) + 7}));
  if ((1 << 20) + 7 <= ff::test::max_elements()) check_outside_elements((1 << 20) + 7);
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
