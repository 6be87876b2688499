// GPU execution tests for arrays without an input and maps whose body reads no array:
// ff::fill(n, v), ff::iota(n[, start, step]) and ff::map(k, constant) as outputs and inside
// reductions, scans, compactions, histograms and reduce_by_key. Outputs poisoned (the
// shared Runtime's RuntimeOptions::poison), each result compared exactly with the CPU
// reference (integer values, and float values that are exact in f32).
#include <doctest/doctest.h>

#include <random>

#include <fuseflow/fuseflow.hpp>

#include "../graph_error_of.hpp"
#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({0, 1, 31, 33, 1000, 1025, 4097, 70001, (1 << 20) + 7});

// Every output of `p` run with `dev` equals the CPU reference's with `host`, element for element.
template <class T>
void check_output(const ff::Program& p, std::size_t i, const std::vector<ff::Result>& got,
                  const std::vector<ff::HostResult>& want) {
  INFO("output " << i << ": " << ff::to_string(p.outputs()[i]));
  if (want[i].is_scalar) {
    CHECK(got[i].as<T>() == want[i].scalar.as<T>());
    return;
  }
  const std::vector<T> g = got[i].download<T>(), w = want[i].array.to_vector<T>();
  REQUIRE(g.size() == w.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t k = 0; k < g.size(); ++k)
    if (g[k] != w[k] && wrong++ == 0) first = k;
  INFO(wrong << " wrong of " << g.size() << "; first at " << first << ": got " << (wrong ? g[first] : T{})
              << ", want " << (wrong ? w[first] : T{}));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("fill and iota run as outputs and inside every consumer") {
  auto p = ff::param<float>("p");
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const ff::Expr i = ff::iota(n);
    const ff::Expr small = ff::cast<int>(i % 1000);
    const ff::Program prog(std::vector<ff::Expr>{
        ff::fill(n, p), ff::iota(n, 3, 2), ff::scan(ff::fill(n, 1), ff::plus, ff::exclusive),
        ff::filter(small, small % 3 == 0), ff::histogram(small % 16, 16),
        ff::reduce(i, ff::plus), ff::reduce(ff::fill(n, 2.0f), ff::plus)});
    const std::vector<ff::Result> got = runtime().run(prog, {{p, 1.5f}});
    ff::HostBindings host;
    host.bind(p, ff::Value(1.5f));
    const std::vector<ff::HostResult> want = ff::evaluate(prog, host);
    check_output<float>(prog, 0, got, want);
    check_output<int>(prog, 1, got, want);
    check_output<int>(prog, 2, got, want);
    check_output<int>(prog, 3, got, want);
    check_output<unsigned>(prog, 4, got, want);
    check_output<long long>(prog, 5, got, want);
    check_output<float>(prog, 6, got, want);  // n * 2 is exact in f32 up to 2^24
  }
}

TEST_CASE("a fill mixed with an input takes the input's length, and a different one is refused") {
  auto x = ff::input<int>("x");
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<int> xh = ff::test::random_values<int>(n, -1000, 1000);
    ff::DeviceArray<int> xs = runtime().upload(xh);
    const ff::Program prog(std::vector<ff::Expr>{x * ff::iota(n, 1), ff::reduce(x + ff::fill(n, 1), ff::plus)});
    const std::vector<ff::Result> got = runtime().run(prog, {{x, xs}});
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    const std::vector<ff::HostResult> want = ff::evaluate(prog, host);
    check_output<int>(prog, 0, got, want);
    check_output<int>(prog, 1, got, want);
  }
  ff::DeviceArray<int> three = runtime().upload(std::vector<int>{1, 2, 3});
  CHECK(ff::test::graph_error_of([&] { (void)runtime().run(ff::Program(x + ff::fill(4, 1)), {{x, three}}); }) ==
        "fuseflow: run: arrays of different lengths: a fill or iota of the program has 4 elements, input 'x' has 3");
}

TEST_CASE("a map whose body reads no array counts run lengths with reduce_by_key") {
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    std::vector<int> kh = ff::test::random_values<int>(n, 0, 3);
    for (std::size_t j = 1; j < kh.size(); ++j)
      if (j % 7 != 0) kh[j] = kh[j - 1];  // runs of about 7
    const std::vector<float> xh = ff::test::random_values<float>(n, -1, 1);
    ff::DeviceArray<int> ks = runtime().upload(kh);
    ff::DeviceArray<float> xs = runtime().upload(xh);
    ff::KeyedResult runs = ff::reduce_by_key(k, ff::map(k, [](auto) { return ff::constant(1); }), ff::plus);
    const ff::Expr where = ff::map(x, [](auto) { return ff::index() * 2; });
    const ff::Expr count = ff::reduce(ff::map(x, [](auto) { return ff::constant(1); }), ff::plus);
    const ff::Program prog(std::vector<ff::Expr>{runs.keys, runs.values, where, count});
    const std::vector<ff::Result> got = runtime().run(prog, {{k, ks}, {x, xs}});
    ff::HostBindings host;
    host.bind(k, ff::HostArray::from(kh));
    host.bind(x, ff::HostArray::from(xh));
    const std::vector<ff::HostResult> want = ff::evaluate(prog, host);
    check_output<int>(prog, 0, got, want);
    check_output<int>(prog, 1, got, want);
    check_output<long long>(prog, 2, got, want);
    check_output<int>(prog, 3, got, want);
  }
}

// ff::iota(x), ff::fill(x, v): the length of the bound input, so one program (one plan, its
// kernels compiled once) serves every length; poisoned outputs, compared with the reference.
TEST_CASE("fill and iota of an input's length: one program for every length") {
  auto x = ff::input<int>("x");
  const ff::Expr i = ff::iota(x);
  const ff::Program prog(std::vector<ff::Expr>{ff::iota(x, 3, 2) + x, ff::scan(ff::fill(x, 1), ff::plus),
                                               ff::reduce(i, ff::plus), ff::filter(ff::cast<int>(i), x > 0)});
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<int> hx = ff::test::random_values<int>(n, -100, 100);
    auto dx = runtime().upload(hx);
    const std::vector<ff::Result> got = runtime().run(prog, {{x, dx}});
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(hx));
    const std::vector<ff::HostResult> want = ff::evaluate(prog, host);
    check_output<int>(prog, 0, got, want);
    check_output<int>(prog, 1, got, want);
    check_output<long long>(prog, 2, got, want);
    check_output<int>(prog, 3, got, want);
  }
}

TEST_CASE("fill and iota of a parameter's length: n from the bound parameter, one program for every length") {
  auto len = ff::param<long long>("len");
  auto v = ff::param<int>("v");
  const ff::Expr i = ff::iota(len);
  const ff::Expr small = ff::cast<int>(i % 1000);
  const ff::Program prog(std::vector<ff::Expr>{ff::fill(len, v) * small, ff::iota(len, 3, 2), ff::scan(ff::fill(len, 1), ff::plus),
                                               ff::filter(small, small % 3 == 0), ff::reduce(i, ff::plus)});
  std::mt19937 g(19);
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const int value = static_cast<int>(g() % 200) - 100;  // fresh each size
    const std::vector<ff::Result> got = runtime().run(prog, {{len, static_cast<long long>(n)}, {v, value}});
    ff::HostBindings host;
    host.bind(len, ff::Value(static_cast<long long>(n)));
    host.bind(v, ff::Value(value));
    const std::vector<ff::HostResult> want = ff::evaluate(prog, host);
    REQUIRE(got[0].download<int>().size() == static_cast<std::size_t>(n));
    check_output<int>(prog, 0, got, want);
    check_output<int>(prog, 1, got, want);
    check_output<int>(prog, 2, got, want);
    check_output<int>(prog, 3, got, want);
    check_output<long long>(prog, 4, got, want);
  }
  // An input beside it must have the parameter's length; a negative length names the parameter.
  auto x = ff::input<int>("x");
  auto three = runtime().upload(std::vector<int>{1, 2, 3});
  const ff::Program mixed(x + ff::iota(len, 0, 1));
  const std::vector<int> sums = runtime().run(mixed, {{x, three}, {len, 3LL}}).at(0).download<int>();
  CHECK(sums == std::vector<int>{1, 3, 5});
  CHECK(ff::test::graph_error_of([&] { (void)runtime().run(mixed, {{x, three}, {len, 4LL}}); }) ==
        "fuseflow: run: arrays of different lengths: parameter 'len' (the length of a fill or iota) holds 4, input 'x' "
        "has 3 elements");
  CHECK(ff::test::graph_error_of([&] { (void)runtime().run(prog, {{len, -5LL}, {v, 1}}); }) ==
        "fuseflow: run: parameter 'len' is the length of a fill or iota and holds -5; a length must be at least 0");
}
