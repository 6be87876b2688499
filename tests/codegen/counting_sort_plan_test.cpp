// Planning a counting sort (no GPU): Onesweep (a histogram, one pass) up to 383 bins, three
// kernels above, their launches for a given n, one plan for both results of sort_by_key,
// the staged / direct choice by the bin count, and the GraphErrors of what it cannot do;
// the radix sort's histogram and one Onesweep pass per digit.
#include <doctest/doctest.h>

#include <string>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;

namespace {

ff::codegen::Plan plan(const ff::Program& p) { return ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")); }

std::string plan_error(const ff::Program& p) {
  try {
    (void)plan(p);
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "";
}

int output_args(const ff::codegen::KernelSpec& k) {
  int outputs = 0;
  for (const auto& a : k.args) outputs += a.kind == ff::codegen::Arg::Kind::Output ? 1 : 0;
  return outputs;
}

}  // namespace

TEST_CASE("a counting sort by few bins is Onesweep: every bin counted in one read, then one pass") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan p = plan(ff::counting_sort(k, 9));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].name == "ff_counting_sort_histograms_i32");
  CHECK(p.kernels[1].name == "ff_counting_sort_onesweep_i32");
  CHECK(p.kernels[0].source.find("ff::sort::digit_histograms<kBlock, kItems, Digits>") != std::string::npos);
  CHECK(p.kernels[0].source.find("using Digits = ff::sort::CountingDigits<9>;") != std::string::npos);
  CHECK(p.kernels[1].source.find("ff::sort::onesweep_pass<kBlock, kItems, ff::sort::KeyBins<kKeyBins>") != std::string::npos);
  CHECK(p.kernels[1].source.find("#include <fuseflow/onesweep.cuh>") != std::string::npos);
  CHECK_FALSE(p.kernels[1].any_grid);  // one block per tile
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kernels == 2);
  // 383 bins and the one for keys outside: one thread each looks back; 384 keep three kernels.
  CHECK(plan(ff::counting_sort(k, 383)).kernels.size() == 2);
  const ff::codegen::Plan wide = plan(ff::counting_sort(k, 384));
  REQUIRE(wide.kernels.size() == 3);
  CHECK(wide.kernels[0].name == "ff_counting_sort_tile_counts_i32");
  CHECK(wide.kernels[1].name == "ff_counting_sort_scan_u64");
  CHECK(wide.kernels[2].name == "ff_counting_sort_scatter_staged_i32");
  CHECK(wide.kernels[0].items_per_block_step == wide.kernels[2].items_per_block_step);  // one tile for both
}

TEST_CASE("a Onesweep counting sort's launches: the histogram, then one block per tile; the counts zeroed") {
  auto k = ff::input<unsigned>("k");
  const ff::codegen::Plan p = plan(ff::counting_sort(k, 256));
  const std::int64_t tile = p.kernels[1].items_per_block_step;
  CHECK(tile % p.kernels[1].block == 0);
  const std::int64_t n = 10 * tile + 1;  // 11 tiles, the last with one element
  const ff::codegen::Schedule s = p.schedule(n);
  REQUIRE(s.launches.size() == 2);
  CHECK(s.launches[0].n == n);
  CHECK(s.launches[0].grid >= 1);
  CHECK(s.launches[0].grid <= p.kernels[0].max_grid);
  CHECK(s.launches[1].grid == 11);
  CHECK(s.launches[1].n == n);
  // The histogram's 257 64-bit counts and the 11 x 257 look-back words are zeroed before
  // the run; the look-back status is scratch, not the runtime's epoch-tagged status.
  std::size_t zeroed = 0;
  for (const auto& [offset, bytes] : s.zeroed) zeroed += bytes;
  CHECK(zeroed >= 257 * 8 + 11 * 257 * 4);
  CHECK(s.launches[1].status_bytes == 0);
  // Both read the same histogram.
  CHECK(s.launches[0].scratch.at(0) == s.launches[1].scratch.at(0));
  CHECK(p.schedule(0).launches.empty());
}

TEST_CASE("a counting sort by many bins: one block per tile, one per 4096 counts of the scan") {
  auto k = ff::input<unsigned>("k");
  const ff::codegen::Plan p = plan(ff::counting_sort(k, 1000));
  const std::int64_t tile = p.kernels[0].items_per_block_step;
  const std::int64_t n = 10 * tile + 1;  // 11 tiles, the last with one element
  const ff::codegen::Schedule s = p.schedule(n);
  REQUIRE(s.launches.size() == 3);
  CHECK(s.launches[0].grid == 11);
  CHECK(s.launches[0].n == n);
  CHECK(s.launches[1].n == 1001 * 11);  // the count matrix: 1000 bins + 1 for keys outside, x 11 tiles
  CHECK(s.launches[1].grid == (1001 * 11 + 4095) / 4096);
  CHECK(s.launches[2].grid == 11);
  CHECK(s.launches[2].n == n);
  // Nothing is zeroed before the run: the counts and positions are written in full before
  // they are read, and the scan's look-back status comes from the runtime, tagged with each
  // launch's epoch: per tile of counts and per group of 32 tiles, a 64-bit position in two
  // flagged 64-bit words.
  CHECK(s.zeroed.empty());
  const std::size_t scan_tiles = (1001 * 11 + 4095) / 4096;
  CHECK(s.launches[1].status_bytes == 2 * 8 * (scan_tiles + (scan_tiles + 31) / 32));
  CHECK(s.launches[0].status_bytes == 0);
  CHECK(s.launches[2].status_bytes == 0);
  CHECK(p.schedule(0).launches.empty());
}

TEST_CASE("sort_by_key plans its keys and values once, writing every output that asks for them") {
  auto k = ff::input<int>("k");
  auto v = ff::input<float>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v, 16);
  const ff::codegen::Plan both = plan(ff::outputs(sorted.keys, sorted.values));
  REQUIRE(both.kernels.size() == 2);
  CHECK(both.kernels[1].name == "ff_counting_sort_onesweep_i32_f32");
  CHECK(output_args(both.kernels[1]) == 2);
  CHECK(both.kernels[1].source.find("out0[p] = v;") != std::string::npos);
  CHECK(both.kernels[1].source.find("out1[p] = v;") != std::string::npos);

  const ff::codegen::Plan values_only = plan(ff::Program(sorted.values));
  REQUIRE(values_only.kernels.size() == 2);
  CHECK(output_args(values_only.kernels[1]) == 1);
  CHECK(values_only.kernels[1].source.find("value_at, ff::sort::Discard{}, store_value);") != std::string::npos);

  // The histogram reads only what the keys read.
  for (const auto& a : both.kernels[0].args) CHECK(a.name != "in_v");
}

TEST_CASE("the bins decide: staged through shared memory from 384 to 1024 and beyond, direct from registers for 4096") {
  auto x = ff::input<unsigned>("x");
  auto v = ff::input<unsigned>("v");
  for (std::int64_t bins : {384LL, 1024LL}) {
    const ff::codegen::Plan p = plan(ff::Program(ff::sort_by_key(x, v, bins).values));
    INFO("bins = " << bins);
    CHECK(p.kernels[2].name == "ff_counting_sort_scatter_staged_u32_u32");
    CHECK(p.kernels[2].block == 256);
  }
  const ff::codegen::Plan wide = plan(ff::counting_sort(x, 4096));
  CHECK(wide.kernels[2].name == "ff_counting_sort_scatter_direct_u32");
  CHECK(wide.kernels[2].block == 128);  // 4 warps x 4097 16-bit counts fit in shared memory
  CHECK(plan(ff::counting_sort(x, 8192)).kernels[2].block == 64);
}

TEST_CASE("more than 8192 bins is a GraphError that names the limit and what to do") {
  auto x = ff::input<int>("x");
  const std::string e = plan_error(ff::counting_sort(x, 8193));
  CHECK(e.find("counting_sort: 8193 bins is more than the 8192 this version sorts by") != std::string::npos);
  CHECK(e.find("ff::sort / sort_by_key without a bin count") != std::string::npos);
  CHECK(plan_error(ff::counting_sort(x, 8192)).empty());
}

TEST_CASE("a counting sort's fused key and value maps read each input once per kernel") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("scale");
  const ff::codegen::Plan p = plan(ff::Program(ff::sort_by_key(ff::cast<int>(x * t), ff::zip(x, ff::index()), 8).values));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].source.find("const auto key_at = [&](const long long i) -> int {") != std::string::npos);
  CHECK(p.kernels[0].source.find("in_x[i] * p_scale") != std::string::npos);
  CHECK(p.kernels[1].source.find("const auto value_at = [&](const long long i) -> ff_tuple0 {") != std::string::npos);
}

TEST_CASE("a counting sort's array result used in a map is planned in two stages (stages_plan_test.cpp)") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan p = plan(ff::Program(ff::counting_sort(k, 4) * 2));
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.kernels.back().args.front().kind == ff::codegen::Arg::Kind::Intermediate);
}

TEST_CASE("a histogram and a counting sort of one input plan side by side") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan p = plan(ff::outputs(ff::histogram(k, 16), ff::counting_sort(k, 16)));
  REQUIRE(p.kernels.size() == 3);
  CHECK(p.kernels[0].name == "ff_histogram_shared_u32");
  CHECK(p.kernels[2].name == "ff_counting_sort_onesweep_i32");
  CHECK(p.schedule(1000).launches.size() == 3);
}

TEST_CASE("a radix sort is one histogram kernel for every digit, then one Onesweep pass per 8-bit digit") {
  auto k = ff::input<unsigned>("k");
  auto v = ff::input<unsigned>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v);
  const ff::codegen::Plan p = plan(ff::outputs(sorted.keys, sorted.values));
  REQUIRE(p.kernels.size() == 5);
  CHECK(p.kernels[0].name == "ff_radix_sort_histograms_u32_bits0_32");
  CHECK(p.kernels[1].name == "ff_radix_sort_onesweep_u32_u32_bits0_8");
  CHECK(p.kernels[4].name == "ff_radix_sort_onesweep_u32_u32_bits24_32");
  CHECK(p.kernels[0].source.find("using Digits = ff::sort::RadixDigits<0, 32>;") != std::string::npos);
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kind == ff::codegen::StepSpec::Kind::RadixSort);
  CHECK(p.steps[0].kernels == 5);
  CHECK(p.kernels[0].registered == "radix sort");
  // Only the last pass writes the program's outputs; the others write scratch.
  for (int pass = 0; pass < 4; ++pass) CHECK(output_args(p.kernels[static_cast<std::size_t>(pass + 1)]) == (pass == 3 ? 2 : 0));
  CHECK(p.kernels[1].source.find("keys_out[p] = v;") != std::string::npos);
  CHECK(p.kernels[2].source.find("return keys_in[i];") != std::string::npos);
  CHECK(p.kernels[4].source.find("constexpr int kShift = 24;") != std::string::npos);
  // Passes alternate the look-back flags and read their own histogram row.
  CHECK(p.kernels[1].source.find("constexpr int kParity = 0;") != std::string::npos);
  CHECK(p.kernels[2].source.find("constexpr int kParity = 1;") != std::string::npos);
  CHECK(p.kernels[3].source.find("constexpr int kDigit = 2;") != std::string::npos);
}

TEST_CASE("a radix sort's launches ping-pong the keys and values through two scratch arrays") {
  auto k = ff::input<unsigned>("k");
  auto v = ff::input<unsigned>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v);
  const ff::codegen::Plan p = plan(ff::outputs(sorted.keys, sorted.values));
  const std::int64_t tile = p.kernels[1].items_per_block_step;
  const std::int64_t n = 10 * tile + 1;
  const ff::codegen::Schedule s = p.schedule(n);
  REQUIRE(s.launches.size() == 5);
  CHECK(s.launches[0].scratch.size() == 1u);  // the histogram: digit_counts
  for (int pass = 0; pass < 4; ++pass) {
    const auto& l = s.launches[static_cast<std::size_t>(pass + 1)];
    CHECK(l.grid == 11);
    CHECK(l.n == n);
    // Scratch: (keys_in values_in) (keys_out values_out) digit_counts positions tile_counts.
    CHECK(l.scratch.size() == 3u + (pass > 0 ? 2u : 0u) + (pass < 3 ? 2u : 0u));
    CHECK(l.scratch[l.scratch.size() - 3] == s.launches[0].scratch[0]);  // every pass reads the one histogram
  }
  // Pass 2 reads what pass 1 wrote, and writes where pass 1 read from.
  CHECK(s.launches[2].scratch[2] == s.launches[3].scratch[0]);
  CHECK(s.launches[3].scratch[2] == s.launches[2].scratch[0]);
  CHECK(s.launches[3].scratch[0] != s.launches[3].scratch[2]);
  // Two arrays of n keys and two of n values at least, and the look-back words.
  CHECK(s.scratch_bytes >= static_cast<std::size_t>(4 * 4 * n + 11 * 256 * 4));
  CHECK(p.schedule(0).launches.empty());
}

TEST_CASE("a radix sort over a bit range takes one pass per 8 bits of it, the last narrower") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan one = plan(ff::sort(k, {0, 8}));
  REQUIRE(one.kernels.size() == 2);
  CHECK(one.kernels[1].name == "ff_radix_sort_onesweep_i32_bits0_8");
  CHECK(output_args(one.kernels[1]) == 1);
  const ff::codegen::Plan odd = plan(ff::sort(k, {3, 29}));
  REQUIRE(odd.kernels.size() == 5);
  CHECK(odd.kernels[0].source.find("using Digits = ff::sort::RadixDigits<3, 29>;") != std::string::npos);
  CHECK(odd.kernels[4].name == "ff_radix_sort_onesweep_i32_bits27_29");
  CHECK(odd.kernels[4].source.find("constexpr int kWidth = 2;") != std::string::npos);
  const ff::codegen::Plan narrow = plan(ff::sort(k, {4, 9}));  // one digit of 5 bits: 32 bins
  REQUIRE(narrow.kernels.size() == 2);
  CHECK(narrow.kernels[0].source.find("4 bins") == std::string::npos);
  CHECK(narrow.kernels[1].source.find("constexpr int kRowBins = 32;") != std::string::npos);
  const ff::codegen::Schedule s = odd.schedule(5000);
  REQUIRE(s.launches.size() == 5);
  const std::int64_t tiles = (5000 + odd.kernels[4].items_per_block_step - 1) / odd.kernels[4].items_per_block_step;
  CHECK(s.launches[4].grid == tiles);
}

TEST_CASE("a radix sort's result feeds a map of the same program through an intermediate") {
  auto k = ff::input<float>("k");
  const ff::codegen::Plan p = plan(ff::Program(ff::sort(k) * 2.0f));
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].output == -1);
  CHECK(p.kernels.back().args.front().kind == ff::codegen::Arg::Kind::Intermediate);
}
