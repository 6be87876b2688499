// Maps are arrays, and arrays without an input: ff::map of a body that reads no array is an
// array of its arguments' length; ff::fill(n, v) and ff::iota(n[, start, step]) are arrays
// of n elements. Their checks (errors naming what was wrong), printer and parser (round
// trip), and the CPU reference (values written out by hand).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

TEST_CASE("a map whose body reads no array is an array of its argument's length") {
  auto k = ff::input<int>("k");
  ff::Expr ones = ff::map(k, [](auto) { return ff::constant(1); });
  CHECK(ff::is_array(ones));
  CHECK(ones.kind() == ff::ExprKind::Fill);
  CHECK(ones.type() == ff::Type(ff::ScalarType::I32));
  // A body that reads its argument is the body itself, as before.
  CHECK(ff::map(k, [](auto v) { return v + 1; }).kind() == ff::ExprKind::Binary);
  // reduce_by_key takes it as its values: run lengths.
  ff::KeyedResult runs = ff::reduce_by_key(k, ones, ff::plus);
  ff::HostBindings b;
  b.bind(k, ff::HostArray::from(std::vector<int>{7, 7, 3, 3, 3, 9}));
  auto r = ff::evaluate(ff::outputs(runs.keys, runs.values), b);
  CHECK(r[0].array.to_vector<int>() == std::vector<int>{7, 3, 9});
  CHECK(r[1].array.to_vector<int>() == std::vector<int>{2, 3, 1});
  // index() and parameters in the body; two arguments must have one length.
  auto y = ff::input<float>("y", 4);
  auto x = ff::input<float>("x", 5);
  auto p = ff::param<long long>("p");
  ff::Expr pos = ff::map(k, [&](auto) { return ff::index() * p; });
  b.bind(p, ff::Value(3LL));
  CHECK(ff::evaluate(ff::Program(pos), b)[0].array.to_vector<long long>() ==
        std::vector<long long>{0, 3, 6, 9, 12, 15});
  CHECK(graph_error_of([&] { (void)ff::map(x, y, [](auto, auto) { return ff::constant(1); }); })
            .find("map over arrays of different lengths: input 'x' has 5 elements, input 'y' has 4") != std::string::npos);
}

TEST_CASE("fill and iota are arrays of n elements") {
  ff::HostBindings none;
  auto r = ff::evaluate(ff::outputs(ff::fill(4, 2.5f), ff::iota(5), ff::iota(4, 10, 3), ff::iota(3, 0.5f, 0.25f)), none);
  CHECK(r[0].array.to_vector<float>() == std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f});
  CHECK(r[1].array.to_vector<long long>() == std::vector<long long>{0, 1, 2, 3, 4});
  CHECK(r[2].array.to_vector<int>() == std::vector<int>{10, 13, 16, 19});
  CHECK(r[3].array.to_vector<float>() == std::vector<float>{0.5f, 0.75f, 1.0f});
  CHECK(ff::evaluate(ff::Program(ff::reduce(ff::iota(100), ff::plus)), none)[0].scalar.as_int() == 4950);
  CHECK(ff::evaluate(ff::Program(ff::fill(0, 1)), none)[0].array.size() == 0);
  // Mixed with an input of the same length; a declared length that differs is refused.
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(std::vector<int>{5, 6, 7}));
  CHECK(ff::evaluate(ff::Program(x * ff::iota(3, 1)), b)[0].array.to_vector<int>() == std::vector<int>{5, 12, 21});
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(x + ff::fill(4, 1)), b); }) ==
        "fuseflow: output 0: map over arrays of different lengths: input 'x' has 3 elements, fill(4, 1) has 4");
  auto d = ff::input<int>("d", 3);
  CHECK(graph_error_of([&] { (void)ff::reduce(d + ff::fill(4, 1), ff::plus); }) ==
        "fuseflow: reduce: map over arrays of different lengths: input 'd' has 3 elements, fill(4, 1) has 4");
}

TEST_CASE("fill checks its length and value") {
  auto x = ff::input<float>("x");
  CHECK(graph_error_of([] { (void)ff::fill(-1, 1); }) == "fuseflow: fill: the length must be at least 0, got -1");
  CHECK(graph_error_of([&] { (void)ff::fill(3, x); }) ==
        "fuseflow: fill: the value must not read an array, got x (write the array expression itself)");
  CHECK(graph_error_of([&] { (void)ff::fill(3, ff::reduce(x, ff::plus)); }) ==
        "fuseflow: fill: the value reads reduce(...); it may read constants, parameters and index() only");
  CHECK(graph_error_of([&] { (void)ff::iota(3, true); }) == "fuseflow: iota: the start must be a number, got bool");
}

TEST_CASE("fill prints and reads back") {
  auto k = ff::input<int>("k");
  const ff::Program p({ff::fill(3, 1.5f) + ff::iota(3, 2.0f, 0.5f), ff::map(k, [](auto) { return ff::constant(7); }),
                       ff::reduce(ff::iota(8), ff::plus)});
  const std::string text = ff::to_string(p);
  CHECK(text.find("fill(3, 1.5f) + fill(3, 2.0f + cast<f32>(index) * 0.5f)") != std::string::npos);
  CHECK(text.find("fill(k, 7)") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
  CHECK(graph_error_of([] { (void)ff::parse_program("output fill(2.5f, 1)\n"); })
            .find("fill: the length (first argument) must be a whole number or an array, got 2.5f") != std::string::npos);
}

TEST_CASE("fill and iota of an array's length: the length of the bound input, at run time") {
  auto x = ff::input<float>("x");
  const ff::Program p(ff::outputs(ff::iota(x), ff::fill(x, 2.5f) * x, ff::iota(x, 10, 3), ff::reduce(ff::iota(x), ff::plus)));
  for (std::size_t n : {0u, 1u, 5u}) {
    ff::HostBindings b;
    b.bind(x, ff::HostArray::from(std::vector<float>(n, 2.0f)));
    auto r = ff::evaluate(p, b);
    std::vector<long long> ramp(n);
    std::vector<int> steps(n);
    for (std::size_t i = 0; i < n; ++i) {
      ramp[i] = static_cast<long long>(i);
      steps[i] = 10 + 3 * static_cast<int>(i);
    }
    CHECK(r[0].array.to_vector<long long>() == ramp);
    CHECK(r[1].array.to_vector<float>() == std::vector<float>(n, 5.0f));
    CHECK(r[2].array.to_vector<int>() == steps);
    CHECK(r[3].scalar.as_int() == static_cast<long long>(n * (n - (n ? 1 : 0)) / 2));
  }
  // Printed with the array as its length; read back the same.
  const std::string text = ff::to_string(p);
  CHECK(text.find("fill(x, index)") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
  // A constant length is a host size (checked for a negative one); a parameter is a length
  // bound at run time (next case), a float parameter is refused.
  CHECK(ff::fill(ff::constant(3), 1).node().length == 3);
  CHECK(graph_error_of([] { (void)ff::fill(ff::constant(-2), 1); }) == "fuseflow: fill: the length must be at least 0, got -2");
  CHECK(graph_error_of([] { (void)ff::iota(ff::param<float>("n")); }) ==
        "fuseflow: fill: a length bound at run time must be an integral parameter (ff::param<long long>(\"n\")), got "
        "$n (f32)");
  CHECK(graph_error_of([&] { (void)ff::fill(x, x); }) ==
        "fuseflow: fill: the value must not read an array, got x (write the array expression itself)");
}

TEST_CASE("fill and iota of a parameter's length: as many elements as the parameter holds when it runs") {
  auto n = ff::param<long long>("n");
  auto v = ff::param<float>("v");
  const ff::Expr i = ff::iota(n);
  const ff::Program p(ff::outputs(i, ff::fill(n, v) * 2.0f, ff::iota(n, 10, 3), ff::reduce(i, ff::plus)));
  CHECK(ff::fill_has_own_length(i));
  CHECK(p.inputs().empty());
  REQUIRE(p.params().size() == 2);
  for (long long len : {0LL, 1LL, 7LL}) {
    ff::HostBindings b;
    b.bind(n, ff::Value(len));
    b.bind(v, ff::Value(1.25f));
    auto r = ff::evaluate(p, b);
    std::vector<long long> ramp;
    std::vector<int> steps;
    for (long long k = 0; k < len; ++k) {
      ramp.push_back(k);
      steps.push_back(10 + 3 * static_cast<int>(k));
    }
    CHECK(r[0].array.to_vector<long long>() == ramp);
    CHECK(r[1].array.to_vector<float>() == std::vector<float>(static_cast<std::size_t>(len), 2.5f));
    CHECK(r[2].array.to_vector<int>() == steps);
    CHECK(r[3].scalar.as_int() == len * (len - (len ? 1 : 0)) / 2);
  }
  // A negative value names the parameter; an input of another length is refused.
  ff::HostBindings bad;
  bad.bind(n, ff::Value(-3LL));
  bad.bind(v, ff::Value(1.0f));
  CHECK(graph_error_of([&] { (void)ff::evaluate(p, bad); }).find("parameter 'n' is the length of a fill or iota and holds -3") !=
        std::string::npos);
  auto x = ff::input<float>("x");
  ff::HostBindings mixed;
  mixed.bind(n, ff::Value(4LL));
  mixed.bind(x, ff::HostArray::from(std::vector<float>(3, 1.0f)));
  CHECK(graph_error_of([&] { (void)ff::evaluate(ff::Program(x + ff::fill(n, 1.0f)), mixed); }) != "(no GraphError thrown)");
  // Printed as fill($n, v) and read back as the same program; integral parameters only.
  const std::string text = ff::to_string(p);
  CHECK(text.find("fill($n, index)") != std::string::npos);
  CHECK(text.find("fill($n, $v) * 2.0f") != std::string::npos);
  CHECK(ff::to_string(ff::parse_program(text)) == text);
  CHECK(graph_error_of([] { (void)ff::parse_program("param f: f32\noutput fill($f, 1)\n"); })
            .find("must be an integral parameter") != std::string::npos);
}
