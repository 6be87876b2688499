// Tiered compilation on the GPU (RuntimeOptions::tiered): a float sum (the tree strategy,
// whose fixed grid is tiered; the default chunked one stays tier 1), an inclusive scan and
// a segmented sum of random floats give the same bits at tier 0 (a first run), at tier 1
// after the swap, and on a Runtime without tiering; each checked against the CPU in double.
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "gpu_test_support.hpp"

namespace ff = fuseflow;

namespace {

ff::RuntimeOptions options(bool tiered) {
  ff::RuntimeOptions o = ff::test::poisoned_options();
  o.cache = ff::CacheSettings{};  // memory only: every kernel compiled here, none from disk
  o.tiered = tiered;
  return o;
}

struct Case {
  ff::Expr x = ff::input<float>("x");
  ff::Expr offsets = ff::input<int>("offsets");
  ff::Expr tree_sum = ff::reduce(x, ff::plus, ff::strategy::tree);
  ff::Expr sum = ff::reduce(x, ff::plus);
  ff::Expr prefix = ff::scan(x, ff::plus);
  ff::Expr segment_sums = ff::segmented_reduce(x, offsets, ff::plus);
  std::vector<float> xs = ff::test::random_values<float>(std::min<std::int64_t>((1 << 20) + 7, ff::test::max_elements()),
                                                          -1.0, 1.0);
  std::vector<int> bounds;
  Case() {
    std::uniform_int_distribution<int> length(0, 300);
    bounds.push_back(0);
    while (bounds.back() < static_cast<int>(xs.size()))
      bounds.push_back(std::min<int>(bounds.back() + length(ff::test::rng()), static_cast<int>(xs.size())));
  }
  // The four outputs (the scalars as one-element vectors).
  std::vector<std::vector<float>> run(ff::Runtime& rt) const {
    auto dx = rt.upload(xs);
    auto doff = rt.upload(bounds);
    return {{rt.run(tree_sum, {{x, dx}}).as<float>()},
            {rt.run(sum, {{x, dx}}).as<float>()},
            rt.run(prefix, {{x, dx}}).download<float>(),
            rt.run(segment_sums, {{x, dx}, {offsets, doff}}).download<float>()};
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Each output against double sums, relative to the sum of magnitudes it covers.
void check_against_cpu(const Case& c, const std::vector<std::vector<float>>& got) {
  double total = 0, magnitude = 0;
  std::vector<double> prefix, prefix_magnitude;
  for (float v : c.xs) {
    total += v;
    magnitude += std::abs(v);
    prefix.push_back(total);
    prefix_magnitude.push_back(magnitude);
  }
  const double eps = 1e-5;
  CHECK(std::abs(got[0][0] - total) <= eps * magnitude + 1e-6);
  CHECK(std::abs(got[1][0] - total) <= eps * magnitude + 1e-6);
  REQUIRE(got[2].size() == c.xs.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.xs.size(); ++i) bad += std::abs(got[2][i] - prefix[i]) > eps * prefix_magnitude[i] + 1e-6;
  CHECK(bad == 0);
  REQUIRE(got[3].size() + 1 == c.bounds.size());
  bad = 0;
  for (std::size_t s = 0; s + 1 < c.bounds.size(); ++s) {
    double want = 0, mag = 0;
    for (int i = c.bounds[s]; i < c.bounds[s + 1]; ++i) {
      want += c.xs[static_cast<std::size_t>(i)];
      mag += std::abs(c.xs[static_cast<std::size_t>(i)]);
    }
    bad += std::abs(got[3][s] - want) > eps * mag + 1e-6;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("tier 0 and tier 1 give the same bits for a float sum, scan and segmented sum") {
  const Case c;
  ff::Runtime plain(options(false));
  const std::vector<std::vector<float>> reference = c.run(plain);
  check_against_cpu(c, reference);

  ff::Runtime rt(options(true));
  const std::vector<std::vector<float>> first = c.run(rt);
  const ff::TierStats at0 = rt.stats().tiers;
  REQUIRE(at0.tier0_compiles >= 3);  // the tree sum's, the scan's and the segmented sum's
  CHECK(at0.tier0_launches >= 3);
  check_against_cpu(c, first);
  // Runs until every tier-0 kernel was swapped out (a compile takes well under a second).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (rt.stats().tiers.swaps + rt.stats().tiers.failures < at0.tier0_compiles) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (void)c.run(rt);
  }
  const std::vector<std::vector<float>> later = c.run(rt);
  const ff::TierStats at1 = rt.stats().tiers;
  CHECK(at1.failures == 0);
  CHECK(at1.swaps == at0.tier0_compiles);
  check_against_cpu(c, later);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(first[i], reference[i]));
    CHECK(same_bits(later[i], reference[i]));
  }
}
