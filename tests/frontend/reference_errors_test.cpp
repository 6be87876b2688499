// The CPU reference evaluator's errors: each names what was wrong (an unbound input, arrays
// of different lengths, bad offsets, raw CUDA, division by zero, a wrong element type).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "frontend/reference_test_support.hpp"

using namespace reference_test;

TEST_CASE("an unbound input is an error naming it") {
  auto x = ff::input<int>("x");
  auto y = ff::input<int>("y");
  ff::HostBindings b;
  b.bind(x, array<int>({1}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(x + y), b); }) == "fuseflow: input 'y' is not bound");
}

TEST_CASE("an unbound parameter is an error naming it") {
  auto x = ff::input<int>("x");
  auto t = ff::param<int>("threshold");
  ff::HostBindings b;
  b.bind(x, array<int>({1}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::filter(x, x > t)), b); }) ==
        "fuseflow: parameter 'threshold' is not bound");
}

TEST_CASE("a map over arrays of different lengths is an error naming both") {
  auto x = ff::input<int>("x");
  auto y = ff::input<int>("y");
  ff::HostBindings b;
  b.bind(x, ff::HostArray(ff::ScalarType::I32, 10));
  b.bind(y, ff::HostArray(ff::ScalarType::I32, 12));
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::reduce(x * y, ff::plus)), b); }) ==
        "fuseflow: reduce: map over arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
  CHECK(error_of([&] { ff::evaluate(ff::Program(x * y), b); }) ==
        "fuseflow: output 0: map over arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
}

TEST_CASE("a map mixing a filter's result with an input of another length names both") {
  auto x = ff::input<int>("x");
  auto y = ff::input<int>("y");
  ff::HostBindings b;
  b.bind(x, array<int>({1, -2, 3}));
  b.bind(y, array<int>({1, 2}));
  // y is read at the survivors' positions, so it must have x's length.
  CHECK(error_of([&] { ff::evaluate(ff::Program(y + ff::filter(x, x > 0)), b); }) ==
        "fuseflow: filter: map over arrays of different lengths: input 'y' has 2 elements, input 'x' has 3");
}

TEST_CASE("bad segment offsets are errors naming the offset") {
  auto x = ff::input<int>("x");
  auto off = ff::input<int>("off");
  auto seg = ff::segmented_reduce(x, off, ff::plus);
  auto check = [&](std::vector<int> offsets) {
    ff::HostBindings b;
    b.bind(x, array<int>({1, 2, 3, 4, 5}));
    b.bind(off, ff::HostArray::from(offsets));
    return error_of([&] { ff::evaluate(ff::Program(seg), b); });
  };
  CHECK(check({-1, 2}) == "fuseflow: segmented_reduce: offset 0 is -1; offsets must be >= 0");
  CHECK(check({0, 4, 3}) ==
        "fuseflow: segmented_reduce: offset 2 is 3, less than offset 1 (4); offsets must be non-decreasing");
  CHECK(check({0, 6}) == "fuseflow: segmented_reduce: offset 1 is 6, beyond the end of the 5 values");
  CHECK(check({}) == "fuseflow: segmented_reduce: the offsets are empty; s segments need s + 1 offsets");
  CHECK(check({0, 5}) == "(no GraphError thrown)");
}

TEST_CASE("counting sort puts keys outside the bins last, in input order") {
  // bins [0, 4): 1 0 3 2 3 are in range; 9 (index 3), -1 (index 5) and 4 (index 7) are
  // not, and follow every key in range in their input order: nothing is dropped.
  auto k = ff::input<int>("k");
  ff::HostBindings b;
  b.bind(k, array<int>({1, 0, 3, 9, 2, -1, 3, 4}));
  auto sorted = ff::sort_by_key(k, ff::cast<int>(ff::index()), 4);
  auto results = ff::evaluate(ff::outputs(sorted.keys, sorted.values, ff::counting_sort(k, 4)), b);
  REQUIRE(results.size() == 3);
  CHECK(results[0].array.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 3, 9, -1, 4});
  CHECK(results[1].array.to_vector<int>() == std::vector<int>{1, 0, 4, 2, 6, 3, 5, 7});
  CHECK(results[2].array.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 3, 9, -1, 4});
}

TEST_CASE("counting sort of u64 keys above 2^63 puts them last") {
  auto k = ff::input<std::uint64_t>("k");
  ff::HostBindings b;
  const std::uint64_t huge = (std::uint64_t{1} << 63) + 5;
  b.bind(k, array<std::uint64_t>({huge, 2, 0, huge - 6, 1}));
  CHECK(run_array<std::uint64_t>(ff::counting_sort(k, 3), b) == std::vector<std::uint64_t>{0, 1, 2, huge, huge - 6});
}

TEST_CASE("a raw CUDA expression cannot run on the CPU reference") {
  auto x = ff::input<float>("x");
  ff::HostBindings b;
  b.bind(x, array<float>({1.0f}));
  auto e = ff::cuda_expr<float>("__saturatef($0)", x);
  CHECK(error_of([&] { ff::evaluate(ff::Program(e), b); }) ==
        "fuseflow: the CPU reference evaluator cannot run a raw CUDA expression: cuda_expr<f32>(\"__saturatef($0)\"); "
        "check such a program against values you work out by hand");
  CHECK(error_of([&] { ff::evaluate(ff::Program(ff::reduce(e, ff::plus)), b); }).find("raw CUDA") != std::string::npos);
}

TEST_CASE("an integer division by zero in a map is an error") {
  auto x = ff::input<int>("x");
  ff::HostBindings b;
  b.bind(x, array<int>({1, 0}));
  CHECK(error_of([&] { ff::evaluate(ff::Program(10 / x), b); }).find("division by zero in operator / on i32") !=
        std::string::npos);
}

TEST_CASE("binding checks the element type and the declared length") {
  auto x = ff::input<float>("x", 3);
  auto p = ff::param<float>("p");
  ff::HostBindings b;
  CHECK(error_of([&] { b.bind(x, array<int>({1, 2, 3})); }) ==
        "fuseflow: bind: input 'x' holds f32 but the array holds i32");
  CHECK(error_of([&] { b.bind(x, array<float>({1.0f})); }) ==
        "fuseflow: bind: input 'x' was declared with 3 elements, the array has 1");
  CHECK(error_of([&] { b.bind(p, ff::Value(2.5)); }) ==
        "fuseflow: bind: parameter 'p' is f32 but the value 2.5 is f64 (convert it first)");
  CHECK(error_of([&] { b.bind(x + 1.0f, array<float>({1, 2, 3})); }) ==
        "fuseflow: bind: an array binds to an ff::input, not to x + 1.0f");
}

TEST_CASE("HostArray checks element types and indices") {
  ff::HostArray a(ff::ScalarType::I32, 2);
  a.set(1, ff::Value(7));
  a.push_back(ff::Value(9));
  CHECK(a.to_vector<int>() == std::vector<int>{0, 7, 9});
  CHECK(a.at(2) == ff::Value(9));
  CHECK(error_of([&] { a.set(0, ff::Value(1.0f)); }) ==
        "fuseflow: HostArray::set: the array holds i32, the value 1.0f is f32");
  CHECK(error_of([&] { a.set(3, ff::Value(1)); }) ==
        "fuseflow: HostArray::set: index 3 is out of range for an array of 3 elements");
  CHECK(error_of([&] { ff::HostArray::from_values(ff::ScalarType::U8, {ff::Value(1)}); }) ==
        "fuseflow: HostArray::set: the array holds u8, the value 1 is i32");
}

TEST_CASE("evaluate_constant rejects an expression over inputs") {
  auto x = ff::input<int>("x");
  CHECK(error_of([&] { ff::evaluate_constant(x + 1); }) ==
        "fuseflow: the expression x + 1 is not a constant: it uses x");
}
