// GPU execution tests for weighted histograms (f32, f64 and integer weights) and for a
// filter feeding a histogram (a masked histogram). Fresh random inputs, outputs poisoned
// (the shared Runtime's RuntimeOptions::poison), compared with the CPU reference: integer
// sums exactly, float sums by relative error against the reference's f64 sums; float sums
// are also checked to be the same bits on a second run (no float atomics), with every element
// in one bin, with NaN and inf weights, and over misaligned inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <fuseflow/fuseflow.hpp>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

using ff::test::runtime;

const std::vector<std::int64_t> kSizes = ff::test::capped({1, 31, 33, 1000, 1025, 4097, 70001, (1 << 20) + 7});

template <class T>
void compare(const std::vector<T>& got, const std::vector<T>& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const bool ok = std::is_floating_point_v<T>
                        ? std::fabs(double(got[k]) - double(want[k])) <= tolerance * (1.0 + std::fabs(double(want[k])))
                        : got[k] == want[k];
    if (!ok && wrong++ == 0) first = k;
  }
  INFO(wrong << " wrong of " << got.size() << "; first at " << first << ": got " << (wrong ? got[first] : T{})
              << ", want " << (wrong ? want[first] : T{}));
  CHECK(wrong == 0);
}

// histogram(bin(x), weight(x), bins) against the reference; floats twice, the same bits.
template <class T>
void check_weighted(const ff::Expr& hist, const ff::Bindings& dev, const ff::HostBindings& host, double tolerance) {
  INFO(ff::to_string(hist));
  const std::vector<T> got = runtime().run(hist, dev).template download<T>();
  compare(got, ff::evaluate(ff::Program(hist), host).at(0).array.to_vector<T>(), tolerance);
  if constexpr (std::is_floating_point_v<T>) {
    const std::vector<T> again = runtime().run(hist, dev).template download<T>();
    CHECK(std::memcmp(got.data(), again.data(), got.size() * sizeof(T)) == 0);
  }
}

// Random inputs x (f32 in [x_lo, 1)), d (f64 in [d_lo, 1)) and k (any i32) of n elements, on
// the device and bound for the reference.
struct Inputs {
  Inputs(const ff::Expr& x, const ff::Expr& d, const ff::Expr& k, std::int64_t n, float x_lo, double d_lo) {
    const std::vector<float> xh = ff::test::random_values<float>(n, x_lo, 1);
    const std::vector<double> dh = ff::test::random_values<double>(n, d_lo, 1);
    const std::vector<int> kh = ff::test::random_values<int>(n, -2000000000, 2000000000);
    xs = runtime().upload(xh);
    ds = runtime().upload(dh);
    ks = runtime().upload(kh);
    host.bind(x, ff::HostArray::from(xh));
    host.bind(d, ff::HostArray::from(dh));
    host.bind(k, ff::HostArray::from(kh));
  }
  ff::DeviceArray<float> xs;
  ff::DeviceArray<double> ds;
  ff::DeviceArray<int> ks;
  ff::HostBindings host;
};

}  // namespace

TEST_CASE("weighted histograms of f32, f64 and integer weights match the reference") {
  auto x = ff::input<float>("x");
  auto d = ff::input<double>("d");
  auto k = ff::input<int>("k");
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const Inputs in(x, d, k, n, 0.0f, -1.0);
    const ff::DeviceArray<float>& xs = in.xs;
    const ff::DeviceArray<double>& ds = in.ds;
    const ff::DeviceArray<int>& ks = in.ks;
    const ff::HostBindings& host = in.host;
    const ff::Expr bin = ff::cast<int>(x * 100.0f) - 3;  // -3 .. 96: a few dropped at both ends
    check_weighted<float>(ff::histogram(bin, x, 94), {{x, xs}}, host, 1e-4);
    check_weighted<double>(ff::histogram(ff::cast<int>(ff::abs(d) * 7.0), d * d, 7), {{d, ds}}, host, 1e-12);
    check_weighted<int>(ff::histogram(bin % 5, k, 5), {{x, xs}, {k, ks}}, host, 0);
    check_weighted<long long>(ff::histogram(k & 1023, ff::cast<long long>(k), 1024), {{k, ks}}, host, 0);
    check_weighted<float>(ff::histogram(k & 4095, x, 4096), {{x, xs}, {k, ks}}, host, 1e-4);
  }
}

TEST_CASE("a filter feeding a histogram bins only the survivors") {
  auto x = ff::input<float>("x");
  for (std::int64_t n : kSizes) {
    INFO("n = " << n);
    const std::vector<float> xh = ff::test::random_values<float>(n, -1, 1);
    ff::DeviceArray<float> xs = runtime().upload(xh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    const ff::Expr kept = ff::filter(x, x > 0.0f);
    const ff::Expr counts = ff::histogram(ff::cast<int>(kept * 16.0f), 16);
    INFO(ff::to_string(counts));
    compare(runtime().run(counts, {{x, xs}}).download<unsigned>(),
            ff::evaluate(ff::Program(counts), host).at(0).array.to_vector<unsigned>(), 0);
    check_weighted<float>(ff::histogram(ff::cast<int>(kept * 16.0f), kept, 16), {{x, xs}}, host, 1e-4);
  }
}

// Many bins: the per-warp sums do not fit in shared memory, so the (bin, weight) pairs are
// sorted by bin and each bin's run added in a fixed order (histogram_sorted.cpp).
// Float sums twice: the same bits (check_weighted).
TEST_CASE("weighted histograms of many bins (sorted by bin, runs added) match the reference") {
  auto x = ff::input<float>("x");
  auto d = ff::input<double>("d");
  auto k = ff::input<int>("k");
  for (std::int64_t n : ff::test::capped({1, 1000, 70001, (1 << 20) + 7})) {
    INFO("n = " << n);
    const Inputs in(x, d, k, n, -1.0f, 0.0);
    const ff::DeviceArray<float>& xs = in.xs;
    const ff::DeviceArray<double>& ds = in.ds;
    const ff::DeviceArray<int>& ks = in.ks;
    const ff::HostBindings& host = in.host;
    // 20000 bins, a few elements each at 2^20: bins repeat inside warps and tiles too.
    check_weighted<float>(ff::histogram(ff::cast<int>((x + 1.0f) * 10100.0f) - 100, x, 20000), {{x, xs}}, host, 1e-4);
    // Few distinct bins among many: every lane of a warp in one of three bins.
    check_weighted<float>(ff::histogram((k & 3) * 9000, x * x, 20001), {{x, xs}, {k, ks}}, host, 1e-4);
    // 2^20 bins of f64 (a row of 8 MiB per block); negative bins dropped.
    check_weighted<double>(ff::histogram(k % (1 << 20), d, 1 << 20), {{d, ds}, {k, ks}}, host, 1e-12);
    // Integer weights wrap alike.
    check_weighted<int>(ff::histogram(k & 32767, k, 32768), {{k, ks}}, host, 0);
    check_weighted<long long>(ff::histogram(ff::cast<int>(d * 50000.0), ff::cast<long long>(k), 50000),
                              {{d, ds}, {k, ks}}, host, 0);
  }
}

// index() beside a filter's result inside a histogram is the position among the survivors: a
// scan of the survivors before each element runs first and the histogram reads it
// (histogram_positions.cpp). Counts exactly, float sums relative to f64 and twice, the same bits.
TEST_CASE("index() beside a filter's result in a histogram is the position among the survivors") {
  auto x = ff::input<float>("x");
  for (std::int64_t n : ff::test::capped({1, 31, 1000, 70001, (1 << 20) + 7})) {
    INFO("n = " << n);
    const std::vector<float> xh = ff::test::random_values<float>(n, -1, 1);
    ff::DeviceArray<float> xs = runtime().upload(xh);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(xh));
    const ff::Expr kept = ff::filter(x, x > 0.0f);
    const ff::Expr counts = ff::histogram(ff::cast<int>(kept * 4.0f) * 4 + ff::cast<int>(ff::index() % 4), 16);
    INFO(ff::to_string(counts));
    compare(runtime().run(counts, {{x, xs}}).download<unsigned>(),
            ff::evaluate(ff::Program(counts), host).at(0).array.to_vector<unsigned>(), 0);
    // The bin from the position alone (its every survivor's place), few and many bins.
    const ff::Expr by_rank = ff::histogram(ff::cast<int>(kept * 0.0f) + ff::cast<int>(ff::index() % 1000), 1000,
                                           ff::ScalarType::U64);
    compare(runtime().run(by_rank, {{x, xs}}).download<unsigned long long>(),
            ff::evaluate(ff::Program(by_rank), host).at(0).array.to_vector<unsigned long long>(), 0);
    check_weighted<float>(ff::histogram(ff::cast<int>(kept * 16.0f), kept * ff::cast<float>(ff::index() % 7), 16),
                          {{x, xs}}, host, 1e-4);
    check_weighted<float>(ff::histogram(ff::cast<int>(ff::index() % 20000) + ff::cast<int>(kept * 0.0f), kept, 20000),
                          {{x, xs}}, host, 1e-4);
  }
}

// Few bins take a private column of sums per thread in shared memory, each thread adding its
// elements in a fixed order (ff::histogram_weighted_lanes); more take per-warp sums. Either
// way the float sums are the same bits on every run: with every element in one bin (the
// longest chain of adds into one sum), with NaN and inf weights, and whether the inputs
// are aligned to whole vectors (vector loads) or not (element loads of the same elements
// in the same order).
TEST_CASE("weighted histograms are the same bits on every run: one bin, NaN and inf weights, misaligned inputs") {
  auto x = ff::input<float>("x");
  auto w = ff::input<float>("w");
  for (std::int64_t n : ff::test::capped({33, 4097, 70001, (1 << 20) + 7})) {
    INFO("n = " << n);
    // n + 1 elements: the last n are also bound misaligned (one float past a whole vector).
    const std::vector<float> xh = ff::test::random_values<float>(n + 1, 0, 1);
    std::vector<float> wh = ff::test::random_values<float>(n + 1, -1, 1);
    const std::vector<float> x0(xh.begin(), xh.begin() + n), w0(wh.begin(), wh.begin() + n);
    ff::HostBindings host;
    host.bind(x, ff::HostArray::from(x0));
    host.bind(w, ff::HostArray::from(w0));
    ff::DeviceArray<float> xs = runtime().upload(x0), ws = runtime().upload(w0);
    const ff::Bindings dev = {{x, xs}, {w, ws}};
    // Every element in bin 5 of 256; the bench's 256 bins (a column of 1 KB per thread); 3000
    // bins (per-warp sums), all elements in two of them.
    check_weighted<float>(ff::histogram(ff::cast<int>(x * 0.0f) + 5, w, 256), dev, host, 1e-4);
    check_weighted<float>(ff::histogram(ff::cast<int>((x + 0.5f) * (256.0f / 1.5f)), w, 256), dev, host, 1e-4);
    check_weighted<float>(ff::histogram(ff::cast<int>(x * 2.0f) * 2999, w * w, 3000), dev, host, 1e-4);
    check_weighted<double>(ff::histogram(ff::cast<int>(x * 0.0f) + 1, ff::cast<double>(w), 4), dev, host, 1e-12);

    // The same elements bound one float past a whole vector: the same bits.
    const std::vector<float> x1(xh.begin() + 1, xh.end()), w1(wh.begin() + 1, wh.end());
    ff::DeviceArray<float> xa = runtime().upload(xh), wa = runtime().upload(wh);
    ff::DeviceArray<float> x1s = runtime().upload(x1), w1s = runtime().upload(w1);
    const ff::device_span<float> xm(xa.data() + sizeof(float), static_cast<std::size_t>(n));
    const ff::device_span<float> wm(wa.data() + sizeof(float), static_cast<std::size_t>(n));
    for (const std::int64_t bins : {std::int64_t{16}, std::int64_t{256}, std::int64_t{3000}}) {
      INFO(bins << " bins, misaligned");
      const ff::Expr h = ff::histogram(ff::cast<int>(x * static_cast<float>(bins)), w, bins);
      const std::vector<float> aligned = runtime().run(h, {{x, x1s}, {w, w1s}}).download<float>();
      const std::vector<float> shifted = runtime().run(h, {{x, xm}, {w, wm}}).download<float>();
      CHECK(std::memcmp(aligned.data(), shifted.data(), aligned.size() * sizeof(float)) == 0);
      ff::HostBindings h1;
      h1.bind(x, ff::HostArray::from(x1));
      h1.bind(w, ff::HostArray::from(w1));
      compare(shifted, ff::evaluate(ff::Program(h), h1).at(0).array.to_vector<float>(), 1e-4);
    }

    // NaN and inf weights: a NaN makes its bin NaN, +inf and -inf in one bin too, a lone
    // +inf its bin +inf; the other bins as the reference's, and the same bits twice.
    wh = w0;
    std::vector<float> xn = x0;
    xn[0] = 0.01f;                                    // bin 0: NaN
    wh[0] = std::numeric_limits<float>::quiet_NaN();
    xn[n / 2] = 0.51f;                                // bin 8: +inf and -inf
    wh[n / 2] = std::numeric_limits<float>::infinity();
    xn[n - 1] = 0.52f;
    wh[n - 1] = -std::numeric_limits<float>::infinity();
    xn[1] = 0.99f;                                    // bin 15: +inf
    wh[1] = std::numeric_limits<float>::infinity();
    ff::DeviceArray<float> xns = runtime().upload(xn), wns = runtime().upload(wh);
    const ff::Expr h = ff::histogram(ff::cast<int>(x * 16.0f), w, 16);
    const std::vector<float> got = runtime().run(h, {{x, xns}, {w, wns}}).download<float>();
    const std::vector<float> again = runtime().run(h, {{x, xns}, {w, wns}}).download<float>();
    CHECK(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)) == 0);
    ff::HostBindings hn;
    hn.bind(x, ff::HostArray::from(xn));
    hn.bind(w, ff::HostArray::from(wh));
    const std::vector<float> want = ff::evaluate(ff::Program(h), hn).at(0).array.to_vector<float>();
    REQUIRE(got.size() == 16);
    CHECK(std::isnan(got[0]));
    CHECK(std::isnan(got[8]));
    CHECK(got[15] == std::numeric_limits<float>::infinity());
    for (std::size_t b = 0; b < got.size(); ++b) {
      INFO("bin " << b << ": got " << got[b] << ", want " << want[b]);
      if (std::isnan(want[b]))
        CHECK(std::isnan(got[b]));
      else if (std::isinf(want[b]))
        CHECK(got[b] == want[b]);
      else
        CHECK(std::fabs(double(got[b]) - double(want[b])) <= 1e-4 * (1.0 + std::fabs(double(want[b]))));
    }
  }
}

// Many bins (sorted by bin, histogram_sorted.cpp) from 2^12 to 2^20 bins, with skewed
// inputs: every element in one bin (one run over every piece), most in a few bins, and bins
// far apart (long stretches of empty bins), dropped bins among them. Float sums twice, the
// same bits.
TEST_CASE("weighted histograms of 2^12 to 2^20 bins with skewed bins match the reference") {
  auto x = ff::input<float>("x");
  auto d = ff::input<double>("d");
  auto k = ff::input<int>("k");
  // Up to 70001 elements: the sizes past the pieces of 4096 (the large ones are in the case above).
  for (std::int64_t n : ff::test::capped({1, 4097, 70001})) {
    INFO("n = " << n);
    const Inputs in(x, d, k, n, -1.0f, -1.0);
    const ff::HostBindings& host = in.host;
    const ff::Bindings xk = {{x, in.xs}, {k, in.ks}}, dk = {{d, in.ds}, {k, in.ks}};
    for (const int log_bins : {12, 14, 16, 18, 20}) {
      const int bins = 1 << log_bins;
      INFO("bins = " << bins);
      // Uniform over [-bins / 8, bins): an eighth of the elements dropped.
      check_weighted<float>(ff::histogram(k % (bins + bins / 8) - bins / 8, x, bins), xk, host, 1e-4);
      // Every element in one bin, the last: one run through every piece.
      check_weighted<float>(ff::histogram(ff::cast<int>(x * 0.0f) + (bins - 1), x, bins), {{x, in.xs}}, host, 1e-4);
      // Most in bin 0 (k & 7 != 0), the rest spread 64 apart, some past the end.
      check_weighted<double>(ff::histogram(ff::select((k & 7) == 0, (k & (bins - 1)) * 64, k & 0), d, bins), dk, host,
                             1e-12);
      // Integer weights wrap alike.
      check_weighted<int>(ff::histogram(k & (bins - 1), k, bins), {{k, in.ks}}, host, 0);
    }
  }
}

// Many bins by coarse buckets (histogram_bucketed.cpp: one stable pass by bin >> bits, then a
// bucket's bins in shared memory, slice by slice) from 2^14 to 2^21 bins of f32 (2^20 of
// f64); 2^12 bins take the per-warp kernel and 2^22 the sort by bin (histogram_sorted.cpp),
// checked alike. Skewed inputs: every element in one bin (one slice after another of one
// bucket), most in bin 0, bins 64 apart with long empty stretches, dropped bins among them;
// f32, f64, i32 and i64 weights. Float sums twice, the same bits.
// Sizes up to 70001 run under the CTest label gpu, 2^20 + 7 under gpu-long (the doctest
// suite "long"): the sweep over six bin counts and five histograms at 2^20 + 7 took most of
// the test's minute on an H100.
static void bucketed_sweep(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<float>("x");
  auto d = ff::input<double>("d");
  auto k = ff::input<int>("k");
  for (std::int64_t n : sizes) {
    INFO("n = " << n);
    const Inputs in(x, d, k, n, -1.0f, -1.0);
    const ff::HostBindings& host = in.host;
    const ff::Bindings xk = {{x, in.xs}, {k, in.ks}}, dk = {{d, in.ds}, {k, in.ks}};
    for (const int log_bins : {12, 14, 17, 20, 21, 22}) {
      const int bins = 1 << log_bins;
      INFO("bins = " << bins);
      check_weighted<float>(ff::histogram(k % (bins + bins / 8) - bins / 8, x, bins), xk, host, 1e-4);
      check_weighted<float>(ff::histogram(ff::cast<int>(x * 0.0f) + (bins / 3), x, bins), {{x, in.xs}}, host, 1e-4);
      check_weighted<double>(ff::histogram(ff::select((k & 7) == 0, (k & (bins - 1)) * 64, k & 0), d, bins), dk, host,
                             1e-12);
      check_weighted<int>(ff::histogram(k & (bins - 1), k, bins), {{k, in.ks}}, host, 0);
      check_weighted<long long>(ff::histogram((k >> 3) & (bins - 1), ff::cast<long long>(k), bins), {{k, in.ks}}, host, 0);
    }
    // Bins not a power of two: the last bucket part empty.
    check_weighted<float>(ff::histogram(ff::cast<int>((x + 1.0f) * 50000.0f), x, 100001), {{x, in.xs}}, host, 1e-4);
  }
}

TEST_CASE("weighted histograms of 2^12 to 2^22 bins by coarse buckets match the reference") {
  bucketed_sweep(ff::test::capped({1, 4097, 70001}));
}

TEST_CASE("weighted histograms of 2^12 to 2^22 bins by coarse buckets at 2^20 + 7" * doctest::test_suite("long")) {
  bucketed_sweep(ff::test::capped({(1 << 20) + 7}));
}

// The bucketed path's sums are the same bits with NaN and inf weights and over misaligned
// inputs (its pass reads the same elements either way).
static void bucketed_same_bits(const std::vector<std::int64_t>& sizes) {
  auto x = ff::input<float>("x");
  auto w = ff::input<float>("w");
  const std::int64_t bins = 1 << 16;
  for (std::int64_t n : sizes) {
    INFO("n = " << n);
    const std::vector<float> xh = ff::test::random_values<float>(n + 1, 0, 1);
    std::vector<float> wh = ff::test::random_values<float>(n + 1, -1, 1);
    wh[1] = std::numeric_limits<float>::quiet_NaN();  // element 0 of the misaligned view
    wh[2] = std::numeric_limits<float>::infinity();
    wh[3] = -std::numeric_limits<float>::infinity();
    const ff::Expr h = ff::histogram(ff::cast<int>(x * static_cast<float>(bins)), w, bins);
    const std::vector<float> x1(xh.begin() + 1, xh.end()), w1(wh.begin() + 1, wh.end());
    ff::DeviceArray<float> xa = runtime().upload(xh), wa = runtime().upload(wh);
    ff::DeviceArray<float> x1s = runtime().upload(x1), w1s = runtime().upload(w1);
    const ff::device_span<float> xm(xa.data() + sizeof(float), static_cast<std::size_t>(n));
    const ff::device_span<float> wm(wa.data() + sizeof(float), static_cast<std::size_t>(n));
    const std::vector<float> aligned = runtime().run(h, {{x, x1s}, {w, w1s}}).download<float>();
    const std::vector<float> shifted = runtime().run(h, {{x, xm}, {w, wm}}).download<float>();
    const std::vector<float> again = runtime().run(h, {{x, xm}, {w, wm}}).download<float>();
    CHECK(std::memcmp(aligned.data(), shifted.data(), aligned.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(shifted.data(), again.data(), shifted.size() * sizeof(float)) == 0);
    ff::HostBindings h1;
    h1.bind(x, ff::HostArray::from(x1));
    h1.bind(w, ff::HostArray::from(w1));
    const std::vector<float> want = ff::evaluate(ff::Program(h), h1).at(0).array.to_vector<float>();
    REQUIRE(shifted.size() == want.size());
    std::size_t wrong = 0, first = 0;
    for (std::size_t b = 0; b < want.size(); ++b) {
      const float g = shifted[b];
      const bool ok = std::isnan(want[b])   ? std::isnan(g)
                      : std::isinf(want[b]) ? g == want[b]
                                            : std::fabs(double(g) - double(want[b])) <= 1e-4 * (1.0 + std::fabs(double(want[b])));
      if (!ok && wrong++ == 0) first = b;
    }
    INFO(wrong << " wrong; first bin " << first << ": got " << shifted[first] << ", want " << want[first]);
    CHECK(wrong == 0);
    const std::size_t nan_bin = static_cast<std::size_t>(x1[0] * static_cast<float>(bins));
    CHECK(std::isnan(shifted[nan_bin]));
  }
}

TEST_CASE("weighted histograms by coarse buckets: NaN and inf weights, misaligned inputs, the same bits") {
  bucketed_same_bits(ff::test::capped({33, 70001}));
}

TEST_CASE("weighted histograms by coarse buckets: the same bits at 2^20 + 7" * doctest::test_suite("long")) {
  bucketed_same_bits(ff::test::capped({(1 << 20) + 7}));
}
