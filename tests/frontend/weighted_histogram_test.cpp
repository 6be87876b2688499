// Weighted histograms in the frontend: their type rules (the sums' type, errors naming what
// was wrong), printer and parser (round trip), and the CPU reference (sums written out by
// hand, integers wrapping, dropped bins). Also a filter feeding a histogram.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

TEST_CASE("a weighted histogram sums in the weights' type, small integers as i32") {
  auto b = ff::input<int>("b");
  CHECK(ff::histogram(b, ff::input<float>("w"), 4).type() == ff::Type(ff::ScalarType::F32));
  CHECK(ff::histogram(b, ff::input<double>("d"), 4).type() == ff::Type(ff::ScalarType::F64));
  CHECK(ff::histogram(b, ff::input<std::uint8_t>("u"), 4).type() == ff::Type(ff::ScalarType::I32));
  CHECK(ff::histogram(b, ff::input<unsigned long long>("q"), 4).type() == ff::Type(ff::ScalarType::U64));
  CHECK(graph_error_of([&] { (void)ff::histogram(b, b > 0, 4); }) ==
        "fuseflow: histogram: the weights must be numbers (f32, f64 or an integer type), got bool (b > 0)");
  CHECK(graph_error_of([&] { (void)ff::histogram(b, ff::input<float>("w"), 0); }) ==
        "fuseflow: histogram: the bin count must be positive, got 0");
  CHECK(graph_error_of([&] { (void)ff::histogram(ff::input<int>("c", 3), ff::input<float>("w", 4), 2); })
            .find("histogram: map over arrays of different lengths: input 'c' has 3 elements, input 'w' has 4") !=
        std::string::npos);
}

TEST_CASE("the reference sums the weights of each bin and drops the others") {
  auto b = ff::input<int>("b");
  auto w = ff::input<float>("w");
  auto s = ff::input<std::int8_t>("s");
  ff::HostBindings h;
  h.bind(b, ff::HostArray::from(std::vector<int>{0, 2, 2, -1, 3, 0, 7}));
  h.bind(w, ff::HostArray::from(std::vector<float>{0.5f, 1.0f, 2.0f, 100.0f, 4.0f, 0.25f, 100.0f}));
  h.bind(s, ff::HostArray::from(std::vector<std::int8_t>{-1, 100, 100, 5, -128, -1, 5}));
  auto r = ff::evaluate(ff::outputs(ff::histogram(b, w, 4), ff::histogram(b, s, 4), ff::histogram(b, 3, 4),
                                    ff::histogram(b, ff::cast<unsigned>(s), 4)),
                        h);
  CHECK(r[0].array.to_vector<float>() == std::vector<float>{0.75f, 0.0f, 3.0f, 4.0f});
  CHECK(r[1].array.to_vector<int>() == std::vector<int>{-2, 0, 200, -128});
  CHECK(r[2].array.to_vector<int>() == std::vector<int>{6, 0, 6, 3});
  // u32 sums wrap: 2^32 - 1 + 2^32 - 1 = 2^32 - 2.
  CHECK(r[3].array.to_vector<unsigned>() == std::vector<unsigned>{4294967294u, 0u, 200u, 4294967168u});
}

TEST_CASE("weighted histograms print and read back") {
  auto b = ff::input<int>("b");
  auto w = ff::input<double>("w");
  auto s = ff::input<std::int16_t>("s");
  const ff::Program p({ff::histogram(b % 8, w * 2.0, 8), ff::histogram(b, s, 3), ff::histogram(b, 5)});
  const std::string text = ff::to_string(p);
  CHECK(text.find("histogram(b % 8, bins=8, weights=w * 2.0)") != std::string::npos);
  CHECK(text.find("histogram(b, bins=3, weights=cast<i32>(s))") != std::string::npos);
  CHECK(text.find("histogram(b, bins=5, counts=u32)") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
}

TEST_CASE("a filter feeding a histogram bins its survivors") {
  auto x = ff::input<float>("x");
  ff::HostBindings h;
  h.bind(x, ff::HostArray::from(std::vector<float>{-0.5f, 0.125f, 0.25f, 0.75f, -2.0f, 0.375f}));
  const ff::Expr kept = ff::filter(x, x > 0.0f);
  auto r = ff::evaluate(ff::outputs(ff::histogram(ff::cast<int>(kept * 4.0f), 4), ff::histogram(ff::cast<int>(kept * 4.0f), kept, 4)), h);
  CHECK(r[0].array.to_vector<unsigned>() == std::vector<unsigned>{1, 2, 0, 1});
  CHECK(r[1].array.to_vector<float>() == std::vector<float>{0.125f, 0.625f, 0.0f, 0.75f});
}
