// Planning a counting sort (no GPU): its three kernels, their launches for a given n, one
// plan for both results of sort_by_key, the staged / direct choice by the bin count, and
// the GraphErrors of what it cannot do.
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

TEST_CASE("a counting sort is three kernels: tile counts, their scan, the scatter") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan p = plan(ff::counting_sort(k, 9));
  REQUIRE(p.kernels.size() == 3);
  CHECK(p.kernels[0].name == "ff_counting_sort_tile_counts_i32");
  CHECK(p.kernels[1].name == "ff_counting_sort_scan_u64");
  CHECK(p.kernels[2].name == "ff_counting_sort_scatter_staged_i32");
  for (const auto& kernel : p.kernels) CHECK_FALSE(kernel.any_grid);  // one block per tile
  CHECK(p.kernels[0].items_per_block_step == p.kernels[2].items_per_block_step);  // one tile for both
}

TEST_CASE("a counting sort's launches: one block per tile, one per 4096 counts of the scan, none for n = 0") {
  auto k = ff::input<unsigned>("k");
  const ff::codegen::Plan p = plan(ff::counting_sort(k, 256));
  const std::int64_t tile = p.kernels[0].items_per_block_step;
  const std::int64_t n = 10 * tile + 1;  // 11 tiles, the last with one element
  const ff::codegen::Schedule s = p.schedule(n);
  REQUIRE(s.launches.size() == 3);
  CHECK(s.launches[0].grid == 11);
  CHECK(s.launches[0].n == n);
  CHECK(s.launches[1].n == 257 * 11);  // the count matrix: 256 bins + 1 for keys outside, x 11 tiles
  CHECK(s.launches[1].grid == (257 * 11 + 4095) / 4096);
  CHECK(s.launches[2].grid == 11);
  CHECK(s.launches[2].n == n);
  // Nothing is zeroed before the run: the counts and positions are written in full before
  // they are read, and the scan's look-back status comes from the runtime, tagged with each
  // launch's epoch: per tile of counts and per group of 32 tiles, a 64-bit position in two
  // flagged 64-bit words.
  CHECK(s.zeroed.empty());
  const std::size_t scan_tiles = (257 * 11 + 4095) / 4096;
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
  REQUIRE(both.kernels.size() == 3);
  CHECK(both.kernels[2].name == "ff_counting_sort_scatter_staged_i32_f32");
  CHECK(output_args(both.kernels[2]) == 2);
  CHECK(both.kernels[2].source.find("out0[p] = v;") != std::string::npos);
  CHECK(both.kernels[2].source.find("out1[p] = v;") != std::string::npos);

  const ff::codegen::Plan values_only = plan(ff::Program(sorted.values));
  REQUIRE(values_only.kernels.size() == 3);
  CHECK(output_args(values_only.kernels[2]) == 1);
  CHECK(values_only.kernels[2].source.find("value_at, ff::sort::Discard{}, store_value);") != std::string::npos);

  // The tile counts read only what the keys read.
  for (const auto& a : both.kernels[0].args) CHECK(a.name != "in_v");
}

TEST_CASE("the bins decide: staged through shared memory up to 1024 and beyond, direct from registers for 4096") {
  auto x = ff::input<unsigned>("x");
  auto v = ff::input<unsigned>("v");
  for (std::int64_t bins : {1LL, 2LL, 256LL, 1024LL}) {
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
  REQUIRE(p.kernels.size() == 3);
  CHECK(p.kernels[0].source.find("const auto key_at = [&](const long long i) -> int {") != std::string::npos);
  CHECK(p.kernels[0].source.find("in_x[i] * p_scale") != std::string::npos);
  CHECK(p.kernels[2].source.find("const auto value_at = [&](const long long i) -> ff_tuple0 {") != std::string::npos);
}

TEST_CASE("a counting sort's array result used in a map is refused with a GraphError naming it") {
  auto k = ff::input<int>("k");
  const std::string e = plan_error(ff::Program(ff::counting_sort(k, 4) * 2));
  CHECK(e.find("counting_sort") != std::string::npos);
}

TEST_CASE("a histogram and a counting sort of one input plan side by side") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan p = plan(ff::outputs(ff::histogram(k, 16), ff::counting_sort(k, 16)));
  REQUIRE(p.kernels.size() == 4);
  CHECK(p.kernels[0].name == "ff_histogram_shared_u32");
  CHECK(p.kernels[3].name == "ff_counting_sort_scatter_staged_i32");
  CHECK(p.schedule(1000).launches.size() == 4);
}

TEST_CASE("a radix sort is three counting-sort kernels per 8-bit digit, least significant first") {
  auto k = ff::input<unsigned>("k");
  auto v = ff::input<unsigned>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v);
  const ff::codegen::Plan p = plan(ff::outputs(sorted.keys, sorted.values));
  REQUIRE(p.kernels.size() == 12);
  CHECK(p.kernels[0].name == "ff_radix_sort_tile_counts_u32_bits0_8");
  CHECK(p.kernels[1].name == "ff_radix_sort_scan_u64_bits0_8");
  CHECK(p.kernels[2].name == "ff_radix_sort_scatter_staged_u32_u32_bits0_8");
  CHECK(p.kernels[11].name == "ff_radix_sort_scatter_staged_u32_u32_bits24_32");
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kind == ff::codegen::StepSpec::Kind::RadixSort);
  CHECK(p.steps[0].kernels == 12);
  CHECK(p.kernels[0].registered == "radix sort");
  // Only the last pass writes the program's outputs; the others write scratch.
  for (int pass = 0; pass < 4; ++pass) CHECK(output_args(p.kernels[static_cast<std::size_t>(3 * pass + 2)]) == (pass == 3 ? 2 : 0));
  CHECK(p.kernels[2].source.find("keys_out[p] = v;") != std::string::npos);
  CHECK(p.kernels[5].source.find("return keys_in[i];") != std::string::npos);
  CHECK(p.kernels[3].source.find("ff::sort::count_tile_by<kBlock, kTile, Digit, kCopies>") != std::string::npos);
  CHECK(p.kernels[9].source.find("constexpr int kShift = 24;") != std::string::npos);
}

TEST_CASE("a radix sort's launches ping-pong the keys and values through two scratch arrays") {
  auto k = ff::input<unsigned>("k");
  auto v = ff::input<unsigned>("v");
  const ff::KeyedResult sorted = ff::sort_by_key(k, v);
  const ff::codegen::Plan p = plan(ff::outputs(sorted.keys, sorted.values));
  const std::int64_t tile = p.kernels[0].items_per_block_step;
  const std::int64_t n = 10 * tile + 1;
  const ff::codegen::Schedule s = p.schedule(n);
  REQUIRE(s.launches.size() == 12);
  for (int pass = 0; pass < 4; ++pass) {
    const auto& counts = s.launches[static_cast<std::size_t>(3 * pass)];
    const auto& scan = s.launches[static_cast<std::size_t>(3 * pass + 1)];
    const auto& scatter = s.launches[static_cast<std::size_t>(3 * pass + 2)];
    CHECK(counts.grid == 11);
    CHECK(scan.n == 256 * 11);  // 256 bins, no bin for keys outside
    CHECK(scatter.n == n);
    // Scratch: (keys_in) tile_counts; (keys_in values_in) (keys_out values_out) positions.
    CHECK(counts.scratch.size() == (pass == 0 ? 1u : 2u));
    CHECK(scatter.scratch.size() == 1u + (pass > 0 ? 2u : 0u) + (pass < 3 ? 2u : 0u));
  }
  // Pass 2 reads what pass 1 wrote, and writes where pass 1 read from.
  CHECK(s.launches[5].scratch[2] == s.launches[8].scratch[0]);
  CHECK(s.launches[8].scratch[2] == s.launches[5].scratch[0]);
  CHECK(s.launches[8].scratch[0] != s.launches[8].scratch[2]);
  // Two arrays of n keys and two of n values at least.
  CHECK(s.scratch_bytes >= static_cast<std::size_t>(4 * 4 * n));
  CHECK(p.schedule(0).launches.empty());
}

TEST_CASE("a radix sort over a bit range takes one pass per 8 bits of it, the last narrower") {
  auto k = ff::input<int>("k");
  const ff::codegen::Plan one = plan(ff::sort(k, {0, 8}));
  REQUIRE(one.kernels.size() == 3);
  CHECK(one.kernels[2].name == "ff_radix_sort_scatter_staged_i32_bits0_8");
  CHECK(output_args(one.kernels[2]) == 1);
  const ff::codegen::Plan odd = plan(ff::sort(k, {3, 29}));
  REQUIRE(odd.kernels.size() == 12);
  CHECK(odd.kernels[9].name == "ff_radix_sort_tile_counts_i32_bits27_29");
  CHECK(odd.kernels[9].source.find("constexpr int kWidth = 2;") != std::string::npos);
  const ff::codegen::Schedule s = odd.schedule(5000);
  const std::int64_t tiles = (5000 + odd.kernels[9].items_per_block_step - 1) / odd.kernels[9].items_per_block_step;
  CHECK(s.launches[10].n == 4 * tiles);  // 2 bits: 4 bins
  CHECK(s.launches[1].n == 256 * ((5000 + odd.kernels[0].items_per_block_step - 1) / odd.kernels[0].items_per_block_step));
}

TEST_CASE("a radix sort's result cannot feed a map yet") {
  auto k = ff::input<float>("k");
  const std::string e = plan_error(ff::Program(ff::sort(k) * 2.0f));
  CHECK(e.find("counting_sort") != std::string::npos);
}
