// A filter's result mixed with other arrays (filter_lift.hpp): the other arrays are read at
// the survivors' positions, filters of one predicate mix element by element, index() beside
// a filter's result is the position among the survivors, and filters of different
// predicates are refused. Values written out by hand; the rewritten program's text; the
// printer and parser round trip.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>
#include <fuseflow/frontend/filter_lift.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

namespace {

// x's survivors of x > 0 are at positions 0, 2, 4, 6, 7: x 3 4 5 2 6, y 10 30 50 70 80.
struct Data {
  ff::Expr x = ff::input<int>("x");
  ff::Expr y = ff::input<int>("y");
  ff::Expr z = ff::input<int>("z");
  ff::HostBindings b;
  Data() {
    b.bind(x, ff::HostArray::from(std::vector<int>{3, -1, 4, -1, 5, -9, 2, 6}));
    b.bind(y, ff::HostArray::from(std::vector<int>{10, 20, 30, 40, 50, 60, 70, 80}));
    b.bind(z, ff::HostArray::from(std::vector<int>{0, 100, 200, 300, 400, 500, 600, 700}));
  }
  std::vector<int> array(const ff::Expr& e) { return ff::evaluate(ff::Program(e), b)[0].array.to_vector<int>(); }
};

}  // namespace

TEST_CASE("an array beside a filter's result is read at the survivors' positions") {
  Data d;
  ff::Expr kept = ff::filter(d.x, d.x > 0);
  CHECK(d.array(kept + d.y) == std::vector<int>{13, 34, 55, 72, 86});
  CHECK(d.array(d.y - kept) == std::vector<int>{7, 26, 45, 68, 74});
  // Two filters of one predicate (two nodes of the same tree) keep the same elements.
  CHECK(d.array(kept * ff::filter(d.y, d.x > 0)) == std::vector<int>{30, 120, 250, 140, 480});
  // index() beside them is the position among the survivors.
  CHECK(d.array(kept * ff::cast<int>(ff::index()) + d.y) == std::vector<int>{10, 34, 60, 76, 104});
  // A gather's index is an array too: idx at the survivors' positions.
  auto t = ff::input<int>("t");
  auto idx = ff::input<int>("idx");
  d.b.bind(t, ff::HostArray::from(std::vector<int>{100, 200}));
  d.b.bind(idx, ff::HostArray::from(std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  CHECK(d.array(kept + ff::gather(t, idx)) == std::vector<int>{103, 104, 105, 102, 206});
}

TEST_CASE("reductions and histograms of a filter's result mixed with other arrays") {
  Data d;
  ff::Expr kept = ff::filter(d.x, d.x > 0);
  CHECK(ff::evaluate(ff::Program(ff::reduce(kept + d.y, ff::plus)), d.b)[0].scalar.as_int() == 260);
  // Bins x % 3 of the survivors (0 1 2 2 0), weighted by y there (10 30 50 70 80).
  auto r = ff::evaluate(ff::Program(ff::histogram(kept % 3, d.y, 3)), d.b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{90, 30, 120});
}

TEST_CASE("a filter of such a mix, mixed again: every array at the final survivors' positions") {
  Data d;
  ff::Expr a = ff::filter(d.x, d.x > 0) + d.y;  // 13 34 55 72 86 at 0 2 4 6 7
  ff::Expr big = ff::filter(a, a > 40);         // 55 72 86 at 4 6 7
  CHECK(d.array(big + d.z) == std::vector<int>{455, 672, 786});
}

TEST_CASE("filters of different predicates are refused; lengths are still checked") {
  Data d;
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(ff::filter(d.x, d.x > 0) + ff::filter(d.y, d.x < 0)), d.b); }) ==
        "fuseflow: filter: filter(...) + filter(...) mixes the results of filters with different predicates (x > 0 "
        "and x < 0), which keep different elements; filter once, filter(zip(x, y), p)");
  auto short_y = ff::input<int>("y", 4);
  auto long_x = ff::input<int>("x", 8);
  CHECK(graph_error_of([&] { (void)ff::lift_filters(ff::Program(ff::filter(long_x, long_x > 0) + short_y)); }) ==
        "fuseflow: filter: map over arrays of different lengths: input 'x' has 8 elements, input 'y' has 4");
}

TEST_CASE("lift_filters moves the other arrays before the filter and keeps the inputs' order") {
  Data d;
  auto p = ff::param<int>("p");
  // y is met first, then x and z (through the filter's predicate), then the parameter.
  const ff::Program program(d.y + ff::filter(d.x, d.z > p));
  const ff::Program lifted = ff::lift_filters(program);
  CHECK(ff::to_string(lifted) ==
        "input y: i32\ninput x: i32\ninput z: i32\nparam p: i32\n%0 = filter(y + x, where=z > $p)\noutput %0\n");
  REQUIRE(lifted.inputs().size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(ff::same_node(lifted.inputs()[i], program.inputs()[i]));
  // index() beside it: the values go through the filter as a tuple, the map after it.
  const ff::Program indexed(ff::filter(d.x, d.x > 0) * ff::cast<int>(ff::index()) + d.y);
  CHECK(ff::to_string(ff::lift_filters(indexed)) ==
        "input x: i32\ninput y: i32\n%0 = filter((x, y), where=x > 0)\noutput %0[0] * cast<i32>(index) + %0[1]\n");
  // Nothing to lift: the same program.
  const ff::Program plain(ff::filter(d.x, d.x > 0) * 2);
  CHECK(ff::same_node(ff::lift_filters(plain).outputs()[0], plain.outputs()[0]));
}

TEST_CASE("a filter's result mixed with other arrays prints and reads back") {
  Data d;
  const ff::Program p(ff::outputs(ff::filter(d.x, d.x > 0) + d.y, ff::reduce(ff::filter(d.x, d.x > 0) * d.z, ff::plus)));
  const std::string text = ff::to_string(p);
  CHECK(text.find("output %0 + y") != std::string::npos);
  const ff::Program back = ff::parse_program(text);
  CHECK(ff::to_string(back) == text);
  ff::HostBindings b;
  b.bind(back.inputs()[0], ff::HostArray::from(std::vector<int>{3, -1, 4, -1, 5, -9, 2, 6}));
  b.bind(back.inputs()[1], ff::HostArray::from(std::vector<int>{10, 20, 30, 40, 50, 60, 70, 80}));
  b.bind(back.inputs()[2], ff::HostArray::from(std::vector<int>{0, 100, 200, 300, 400, 500, 600, 700}));
  auto r = ff::evaluate(back, b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{13, 34, 55, 72, 86});
  CHECK(r[1].scalar.as_int() == 3 * 0 + 4 * 200 + 5 * 400 + 2 * 600 + 6 * 700);
}
