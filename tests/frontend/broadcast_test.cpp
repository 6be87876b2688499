// Per-segment broadcast (ff::broadcast, ff::broadcast_by_key) and uniform rows (ff::rows)
// in the frontend: their checks (errors naming what was wrong), length rules, printer and
// parser (round trip), and the CPU reference (values worked out by hand).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

TEST_CASE("broadcast takes a segmented reduction's result over its own offsets or keys") {
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("o");
  auto p = ff::input<int>("p");
  auto k = ff::input<int>("k");
  const auto seg = ff::segmented_reduce(x, o, ff::max);
  CHECK(ff::broadcast(seg, o).type() == ff::Type(ff::ScalarType::F32));
  CHECK(ff::is_array(x - ff::broadcast(seg, o)));
  CHECK(graph_error_of([&] { (void)ff::broadcast(ff::reduce(x, ff::plus), o); })
            .find("fuseflow: broadcast: reduce(...) is not the result of a segmented reduction") == 0);
  CHECK(graph_error_of([&] { (void)ff::broadcast(x, o); })
            .find("fuseflow: broadcast: x is not the result of a segmented reduction") == 0);
  CHECK(graph_error_of([&] { (void)ff::broadcast(ff::segmented_scan(x, o, ff::plus), o); })
            .find("is not the result of a segmented reduction") != std::string::npos);
  CHECK(graph_error_of([&] { (void)ff::broadcast(seg, p); }) ==
        "fuseflow: broadcast: the offsets p are not those segmented_reduce reduced over (o); a broadcast gives each "
        "element the segment the reduction gave it");
  const auto byk = ff::reduce_by_key(k, x, ff::plus);
  CHECK(graph_error_of([&] { (void)ff::broadcast(byk.values, k); })
            .find("use ff::broadcast_by_key(result, keys)") != std::string::npos);
  CHECK(graph_error_of([&] { (void)ff::broadcast_by_key(seg, o); })
            .find("use ff::broadcast(result, offsets)") != std::string::npos);
  CHECK(ff::broadcast_by_key(byk.values, k).type() == ff::Type(ff::ScalarType::F32));
  // Offsets built twice as the same computation are the same offsets.
  const auto r1 = ff::segmented_reduce(x, ff::rows(x, 4), ff::plus);
  CHECK(ff::broadcast(r1, ff::rows(x, 4)).args()[1].kind() == ff::ExprKind::Rows);
  CHECK(graph_error_of([&] { (void)ff::broadcast(r1, ff::rows(x, 5)); })
            .find("the offsets rows(x, 5) are not those segmented_reduce reduced over (rows(x, 4))") !=
        std::string::npos);
}

TEST_CASE("rows checks its row length and gives i64 offsets as long as the rows plus one") {
  auto x = ff::input<float>("x", 10);
  CHECK(ff::rows(x, 4).type() == ff::Type(ff::ScalarType::I64));
  CHECK(graph_error_of([&] { (void)ff::rows(x, 0); }) == "fuseflow: rows: the row length must be positive, got 0");
  CHECK(graph_error_of([&] { (void)ff::rows(ff::Expr(1.0f), 4); })
            .find("fuseflow: rows: 1.0f is not an array") == 0);
  // 10 elements in rows of 4: 3 rows, 4 offsets; a map of them with an array of 10 is refused.
  auto y = ff::input<long long>("y", 10);
  CHECK(graph_error_of([&] { (void)ff::Program(ff::rows(x, 4) + y); })
            .find("map over arrays of different lengths") != std::string::npos);
  // A broadcast is as long as the reduction's elements.
  auto z = ff::input<float>("z", 11);
  const auto offs = ff::rows(x, 4);
  CHECK(graph_error_of([&] { (void)ff::Program(z - ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs)); })
            .find("map over arrays of different lengths") != std::string::npos);
}

TEST_CASE("broadcast and rows print and read back") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  const auto offs = ff::rows(x, 1024);
  const auto e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs));
  const auto byk = ff::reduce_by_key(k, x, ff::plus);
  const ff::Program p({e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs),
                       x - ff::broadcast_by_key(byk.values, k)});
  const std::string text = ff::to_string(p);
  CHECK(text.find("%0 = segmented_reduce(max: f32, x, offsets=rows(x, 1024))") != std::string::npos);
  CHECK(text.find("exp(x - broadcast(%0, rows(x, 1024)))") != std::string::npos);
  CHECK(text.find("x - broadcast_by_key(%2.1, k)") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
  CHECK(graph_error_of([&] { (void)ff::parse_program("input x: f32\noutput rows(x, 2.5f)\n"); })
            .find("rows: the row length (second argument) must be a whole number") != std::string::npos);
  CHECK(graph_error_of([&] {
          (void)ff::parse_program("input x: f32\ninput o: i32\n%0 = reduce(plus: f32, x)\noutput broadcast(%0, o)\n");
        }).find("is not the result of a segmented reduction") != std::string::npos);
}

TEST_CASE("the reference gives each element its segment's value, by offsets, rows and keys") {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("o");
  auto k = ff::input<int>("k");
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(std::vector<int>{3, 1, 4, 1, 5, 9, 2}));
  b.bind(o, ff::HostArray::from(std::vector<int>{0, 2, 2, 6, 7}));  // an empty segment among them
  b.bind(k, ff::HostArray::from(std::vector<int>{7, 7, 7, 8, 8, 7, 7}));
  const auto seg = ff::segmented_reduce(x, o, ff::max);
  const auto rows = ff::rows(x, 3);
  const auto byk = ff::reduce_by_key(k, x, ff::plus);
  const ff::Program p({x - ff::broadcast(seg, o), x * 10 + ff::broadcast(ff::segmented_reduce(x, rows, ff::plus), rows),
                       ff::broadcast_by_key(byk.values, k), ff::broadcast_by_key(byk.keys, k) - k, rows});
  auto r = ff::evaluate(p, b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{0, -2, -5, -8, -4, 0, 0});
  CHECK(r[1].array.to_vector<int>() == std::vector<int>{38, 18, 48, 25, 65, 105, 22});
  CHECK(r[2].array.to_vector<int>() == std::vector<int>{8, 8, 8, 6, 6, 11, 11});
  CHECK(r[3].array.to_vector<int>() == std::vector<int>{0, 0, 0, 0, 0, 0, 0});
  CHECK(r[4].array.to_vector<long long>() == std::vector<long long>{0, 3, 6, 7});
  // Offsets that leave elements outside every segment cannot broadcast.
  b.bind(o, ff::HostArray::from(std::vector<int>{0, 2, 5}));
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(x - ff::broadcast(seg, o)), b); }) ==
        "fuseflow: broadcast: the offsets o cover elements [0, 5) of the 7 the reduction reads; a broadcast needs "
        "every element in a segment (first offset 0, last offset 7)");
  // The segmented reduction alone keeps its own meaning (elements outside are dropped).
  CHECK(ff::evaluate(ff::Program(seg), b)[0].array.to_vector<int>() == std::vector<int>{3, 5});
}
