// GPU execution tests for per-row programs (ff::rows, ff::broadcast; issue 25): per-row
// softmax, centring rows, integer and index-reading rows, two inputs, several outputs, each
// the one per-row kernel (strategy "rows"). Fresh random inputs, outputs poisoned (the
// shared Runtime's RuntimeOptions::poison), each result compared with the CPU reference run
// on the same inputs widened to f64 (floats, by relative error) or exactly (integers). Row
// lengths cross the shapes the policy picks (a warp, 256 x 4, 1024 x 4, more items per
// thread, a last row shorter than the others).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <type_traits>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"
#include "segment_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::runtime;

// Builds the program's outputs over inputs x and w with rows of `c` elements.
using Build = std::function<std::vector<ff::Expr>(const ff::Expr& x, const ff::Expr& w, std::int64_t c)>;

// Runs build<T> on the GPU and build<Wide> (f64 for floats, T for integers) on the CPU
// reference over the same values; every output element within `tolerance` relative error
// (0: exactly), relative to |want| or `floor`, whichever is larger.
template <class T>
void check_rows(const Build& build, std::int64_t n, std::int64_t c, double lo, double hi, double tolerance,
                const std::string& what, double floor = 1e-30) {
  const auto x = ff::input<T>("x");
  const auto w = ff::input<T>("w");
  const ff::Program prog(build(x, w, c));
  const auto xh = ff::test::random_values<T>(n, lo, hi);
  const auto wh = ff::test::random_values<T>(n, lo, hi);
  auto xd = runtime().upload(xh);
  auto wd = runtime().upload(wh);
  ff::Bindings b;
  for (const auto& in : prog.inputs()) b.push_back({in, in.node().name == "x" ? xd : wd});
  const auto got = runtime().run(prog, b);

  using Wide = ff::test::Wide<T>;
  const auto xw = ff::input<Wide>("x");
  const auto ww = ff::input<Wide>("w");
  const ff::Program wide(build(xw, ww, c));
  ff::HostBindings hb;
  for (const auto& in : wide.inputs())
    hb.bind(in, ff::HostArray::from(in.node().name == "x" ? std::vector<Wide>(xh.begin(), xh.end())
                                                          : std::vector<Wide>(wh.begin(), wh.end())));
  const auto want = ff::evaluate(wide, hb);
  ff::test::check_outputs<T>(got, want, tolerance, floor,
                            what + ", n = " + std::to_string(n) + ", rows of " + std::to_string(c));
}

std::vector<ff::Expr> softmax(const ff::Expr& x, const ff::Expr&, std::int64_t c) {
  const auto offs = ff::rows(x, c);
  const auto rowmax = ff::segmented_reduce(x, offs, ff::max);
  const auto e = ff::exp(x - ff::broadcast(rowmax, offs));
  const auto rowsum = ff::segmented_reduce(e, offs, ff::plus);
  return {e / ff::broadcast(rowsum, offs)};
}

// Row lengths and row counts: one element, under a warp, the policy's 256 x 4 and 1024 x 4,
// more items per thread, an unaligned length; the last row whole or shorter.
const std::vector<std::int64_t> kColumns = {1, 5, 33, 1024, 4096, 5000};

std::vector<std::int64_t> sizes(std::int64_t c) {
  std::vector<std::int64_t> out;
  for (std::int64_t n : {c, 3 * c, 37 * c + c / 2 + 1, 300 * c})
    if (n <= ff::test::max_elements() && n <= (1 << 21)) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("per-row softmax over ff::rows, one kernel, matches the f64 reference") {
  for (std::int64_t c : kColumns)
    for (std::int64_t n : sizes(c)) {
      check_rows<float>(softmax, n, c, -30.0, 30.0, 2e-5, "f32 softmax");
      check_rows<double>(softmax, n, c, -30.0, 30.0, 1e-12, "f64 softmax");
    }
  // Large logits: exp(x - max) is taken of the difference (exact where x and max are
  // close), not of x log2(e) - max log2(e), whose rounding at |x| = 1000 would cost 4e-5.
  for (std::int64_t c : {1024, 5000})
    for (std::int64_t n : sizes(c)) check_rows<float>(softmax, n, c, 1000.0, 1060.0, 2e-5, "f32 softmax of large logits");
}

TEST_CASE("centred rows, two inputs and several outputs in one per-row kernel") {
  const Build centred = [](const ff::Expr& x, const ff::Expr& w, std::int64_t c) -> std::vector<ff::Expr> {
    const auto offs = ff::rows(x, c);
    const auto sum = ff::segmented_reduce(x * w, offs, ff::plus);
    const auto mean = ff::broadcast(sum, offs) / ff::cast(x.type(), ff::Expr(static_cast<int>(c)));
    const auto low = ff::broadcast(ff::segmented_reduce(w, offs, ff::min), offs);
    return {x * w - mean, w - low};
  };
  for (std::int64_t c : kColumns)
    for (std::int64_t n : sizes(c)) check_rows<float>(centred, n, c, -1.0, 1.0, 1e-5, "f32 centred rows", 1.0);
}

TEST_CASE("integer rows exactly: a maximum, a sum reading index(), both broadcast") {
  const Build ints = [](const ff::Expr& x, const ff::Expr&, std::int64_t c) -> std::vector<ff::Expr> {
    const auto offs = ff::rows(x, c);
    const auto top = ff::segmented_reduce(x, offs, ff::max);
    const auto weighted = ff::segmented_reduce(x * ff::cast<int>(ff::index() % 7), offs, ff::plus);
    return {x * 3 - ff::broadcast(top, offs) + ff::broadcast(weighted, offs) * ff::cast<int>(ff::index() % 3)};
  };
  for (std::int64_t c : kColumns)
    for (std::int64_t n : sizes(c)) check_rows<int>(ints, n, c, -1000.0, 1000.0, 0, "i32 rows");
}

TEST_CASE("divisions by a row result: floats by its reciprocal (in a later reduction too), integers exactly") {
  // A float division by a row's result multiplies by the reciprocal, taken once per row:
  // within a few ulps of the f64 reference. Integer divisions stay divisions (exact).
  const Build normalized = [](const ff::Expr& x, const ff::Expr& w, std::int64_t c) -> std::vector<ff::Expr> {
    const auto offs = ff::rows(x, c);
    const auto scale = ff::broadcast(ff::segmented_reduce(x * x + w * w + 1.0f, offs, ff::plus), offs);
    const auto share = ff::broadcast(ff::segmented_reduce(x / scale, offs, ff::plus), offs);
    return {w / scale - share / scale};
  };
  const Build quotient = [](const ff::Expr& x, const ff::Expr& w, std::int64_t c) -> std::vector<ff::Expr> {
    const auto offs = ff::rows(x, c);
    return {x * 97 / ff::broadcast(ff::segmented_reduce(w, offs, ff::max), offs)};
  };
  for (std::int64_t c : {1, 5, 1024, 4096})
    for (std::int64_t n : {c, 3 * c - c / 2, 5 * c}) {
      check_rows<float>(normalized, n, c, -2.0, 2.0, 1e-5, "f32 divisions by row results", 1e-3);
      check_rows<double>(normalized, n, c, -2.0, 2.0, 1e-12, "f64 divisions by row results", 1e-3);
      check_rows<int>(quotient, n, c, 1.0, 1000.0, 0, "i32 division by a row maximum");
    }
}

TEST_CASE("random per-row programs: one to three chained row reductions and an output of their broadcasts") {
  // Integers compare exactly (any monoid, sums wrap alike on both sides); floats take max
  // and min, whose results are elements, within a relative 1e-5 of the f64 reference.
  const std::vector<std::int64_t> columns = {1, 7, 32, 100, 256, 1024, 3000};
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 g(seed);
    const auto pick = [&](int k) { return static_cast<int>(g() % static_cast<std::uint64_t>(k)); };
    const std::int64_t c = columns[static_cast<std::size_t>(pick(7))];
    const std::int64_t rows = 1 + pick(12);
    const std::int64_t n = rows * c - (c > 1 ? pick(static_cast<int>(c)) : 0);
    const int kind = pick(3);  // i32, f32, f64
    const int ops = 1 + pick(3), out_shape = pick(4);
    std::vector<int> monoid, shape;
    for (int k = 0; k < ops; ++k) {
      monoid.push_back(kind == 0 ? pick(3) : 1 + pick(2));  // plus, max, min
      shape.push_back(pick(4));
    }
    const Build build = [=](const ff::Expr& x, const ff::Expr& w, std::int64_t cols) -> std::vector<ff::Expr> {
      const auto offs = ff::rows(x, cols);
      std::vector<ff::Expr> b;  // the broadcasts so far
      for (int k = 0; k < ops; ++k) {
        const ff::Expr prev = b.empty() ? w : b.back();
        ff::Expr value = x;
        if (shape[static_cast<std::size_t>(k)] == 1) value = x * w - prev;
        if (shape[static_cast<std::size_t>(k)] == 2) value = ff::select(x > w, x, w) + prev;
        if (shape[static_cast<std::size_t>(k)] == 3) value = ff::max(x, prev) - ff::min(w, prev);
        const int m = monoid[static_cast<std::size_t>(k)];
        const ff::Monoid mono = m == 0 ? ff::plus : m == 1 ? ff::Monoid(ff::max) : ff::Monoid(ff::min);
        b.push_back(ff::broadcast(ff::segmented_reduce(value, offs, mono), offs));
      }
      ff::Expr y = x - b.back();
      if (out_shape == 1) y = x * w + b.front() - b.back();
      if (out_shape == 2) y = ff::select(x > w, b.front(), b.back());
      if (out_shape == 3) {
        y = x;
        for (const auto& e : b) y = y + e;
      }
      return {y};
    };
    const std::string what = "seed " + std::to_string(seed) + " (" + std::to_string(ops) + " reductions)";
    if (kind == 0) check_rows<int>(build, n, c, -1000.0, 1000.0, 0, "i32 " + what);
    if (kind == 1) check_rows<float>(build, n, c, -4.0, 4.0, 1e-5, "f32 " + what, 1.0);
    if (kind == 2) check_rows<double>(build, n, c, -4.0, 4.0, 1e-12, "f64 " + what, 1.0);
  }
}

TEST_CASE("a row too long for a block is refused with what does not fit; other offsets take the general path") {
  const auto x = ff::input<float>("x");
  const auto offs = ff::rows(x, 1 << 20);
  const auto big = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs));
  auto dev = runtime().upload(std::vector<float>(16, 1.0f));
  try {
    runtime().run(big, {{x, dev}});
    FAIL("rows of 2^20 elements ran");
  } catch (const ff::GraphError& e) {
    CHECK(std::string(e.what()).find("do not fit a block") != std::string::npos);
  }
  // Over an offsets input: the broadcast strategy (broadcast_gpu_test tests it at length).
  const auto o = ff::input<int>("o");
  const auto general = x - ff::broadcast(ff::segmented_reduce(x, o, ff::max), o);
  auto xd = runtime().upload(std::vector<float>{1, 5, 2, 7, 7, 3});
  const auto got = runtime().run(ff::Program(general), {{x, xd}, {o, runtime().upload(std::vector<int>{0, 2, 2, 5, 6})}});
  CHECK(got.at(0).download<float>() == std::vector<float>{-4, 0, -5, 0, 0, 0});
}
