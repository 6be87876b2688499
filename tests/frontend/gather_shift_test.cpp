// gather and shift in the frontend: their type checks (errors naming what was wrong),
// printer and parser (round trip), and the CPU reference (values by hand, out-of-range
// errors naming the position and the index).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

TEST_CASE("gather and shift check their operands") {
  auto t = ff::input<float>("t");
  auto idx = ff::input<int>("idx");
  auto x = ff::input<float>("x");
  CHECK(ff::gather(t, idx).type() == ff::Type(ff::ScalarType::F32));
  CHECK(graph_error_of([&] { (void)ff::gather(t, x); }) ==
        "fuseflow: gather: the index must be an integer, got f32 (x); cast it with ff::cast<long long>");
  CHECK(graph_error_of([&] { (void)ff::gather(t, idx > 0); }).find("the index must be an integer, got bool") !=
        std::string::npos);
  // A computed table or shifted array is an array too; a scalar expression is not.
  CHECK(ff::gather(t * 2.0f, idx).type() == ff::Type(ff::ScalarType::F32));
  CHECK(ff::shift(x + 1.0f, 1, 0.0f).type() == ff::Type(ff::ScalarType::F32));
  CHECK(graph_error_of([&] { (void)ff::gather_unchecked(ff::Expr(1.0f), idx); }) ==
        "fuseflow: gather_unchecked: the table must be an array (an input, a map of arrays or an op's array result), "
        "got 1.0f, which uses no input or array result");
  CHECK(graph_error_of([&] { (void)ff::shift(ff::Expr(1.0f) + 2.0f, 1, 0.0f); })
            .find("fuseflow: shift: the shifted array must be an array") == 0);
  auto pair = ff::input<ff::Tuple<int, float>>("pair");
  CHECK(graph_error_of([&] { (void)ff::shift(pair, 1, 0); }) ==
        "fuseflow: shift: the fill must have the array's type (i32, f32), got i32");
  // shift by 0 is the array itself; an integer fill is converted to the array's type.
  CHECK(ff::same_node(ff::shift(x, 0, 1.0f), x));
  CHECK(ff::shift(x, 2, 1).args()[1].type() == ff::Type(ff::ScalarType::F32));
}

TEST_CASE("gather and shift print and read back") {
  auto t = ff::input<float>("t");
  auto idx = ff::input<int>("idx");
  auto x = ff::input<float>("x");
  const ff::Program p({ff::gather(t, idx) + ff::gather_unchecked(t, idx + 1), x - ff::shift(x, -1, 0.0f),
                       ff::shift(x, 3, ff::param<float>("edge"))});
  const std::string text = ff::to_string(p);
  CHECK(text.find("gather(t, idx) + gather_unchecked(t, idx + 1)") != std::string::npos);
  CHECK(text.find("x - shift(x, -1, 0.0f)") != std::string::npos);
  CHECK(text.find("shift(x, 3, $edge)") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
}

TEST_CASE("the parser names a bad shift offset") {
  const std::string text = "input x: f32\noutput shift(x, 1.5f, 0.0f)\n";
  CHECK(graph_error_of([&] { (void)ff::parse_program(text); })
            .find("shift: the offset (second argument) must be a whole number") != std::string::npos);
}

TEST_CASE("the reference reads gathers and shifts, and names the first index outside the table") {
  auto t = ff::input<int>("t");
  auto idx = ff::input<long long>("idx");
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(t, ff::HostArray::from(std::vector<int>{10, 20, 30}));
  b.bind(idx, ff::HostArray::from(std::vector<long long>{2, 0, 1, 2}));
  b.bind(x, ff::HostArray::from(std::vector<int>{1, 4, 9, 16}));
  const ff::Program p({ff::gather(t, idx) + x, x - ff::shift(x, -1, 0), ff::shift(x, 2, -1)});
  auto r = ff::evaluate(p, b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{31, 14, 29, 46});
  CHECK(r[1].array.to_vector<int>() == std::vector<int>{1, 3, 5, 7});
  CHECK(r[2].array.to_vector<int>() == std::vector<int>{9, 16, -1, -1});
  b.bind(idx, ff::HostArray::from(std::vector<long long>{2, 0, 3, -1}));
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(ff::gather(t, idx)), b); }) ==
        "fuseflow: gather: the index at position 2 is 3, outside the table 't' of 3 elements (idx)");
  // gather_unchecked is checked by the reference too: it has no memory to read past.
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(ff::gather_unchecked(t, idx)), b); })
            .find("position 2 is 3") != std::string::npos);
}

TEST_CASE("the reference gathers from and shifts computed arrays: maps, a scan's result") {
  auto t = ff::input<int>("t");
  auto idx = ff::input<long long>("idx");
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(t, ff::HostArray::from(std::vector<int>{10, 20, 30}));
  b.bind(idx, ff::HostArray::from(std::vector<long long>{2, 0, 1, 2}));
  b.bind(x, ff::HostArray::from(std::vector<int>{1, 4, 9, 16}));
  const ff::Expr sx = ff::scan(x, ff::plus);  // 1 5 14 30
  const ff::Program p({ff::gather(t * 2 + 1, idx), ff::shift(x * 2, -1, 0), ff::shift(sx, 1, -1),
                       ff::gather(sx, idx) - x});
  auto r = ff::evaluate(p, b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{61, 21, 41, 61});
  CHECK(r[1].array.to_vector<int>() == std::vector<int>{0, 2, 8, 18});
  CHECK(r[2].array.to_vector<int>() == std::vector<int>{5, 14, 30, -1});
  CHECK(r[3].array.to_vector<int>() == std::vector<int>{13, -3, -4, -2});
  b.bind(idx, ff::HostArray::from(std::vector<long long>{2, 0, 3, -1}));
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(ff::gather(t * 2, idx)), b); }) ==
        "fuseflow: gather: the index at position 2 is 3, outside the table t * 2 of 3 elements (idx)");
}
