// The strategy registry and KernelSpec, asserted on the specs the planner returns (no GPU):
// which registered strategy each kernel comes from and why, the error for a forced
// strategy that does not apply, the scratch each kernel says it needs against what the
// schedule allocates, and the order launches wait in.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;
using ff::codegen::KernelSpec;
using ff::codegen::ScratchBuffer;

namespace {

const ff::codegen::Target& sm90() {
  static const ff::codegen::Target t = ff::codegen::Target::preset("sm_90");
  return t;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

const ScratchBuffer& scratch_named(const KernelSpec& k, const std::string& name) {
  for (const auto& b : k.scratch)
    if (b.name == name) return b;
  FAIL("kernel " << k.name << " has no scratch buffer " << name);
  return k.scratch.front();
}

std::int64_t policy_value(const KernelSpec& k, const std::string& name) {
  for (const auto& [n, v] : k.policy)
    if (n == name) return v;
  FAIL("kernel " << k.name << " has no policy value " << name);
  return -1;
}

}  // namespace

TEST_CASE("an automatic reduction takes the first reduce strategy that applies, and says why") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan sum = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus)), sm90());
  REQUIRE(sum.kernels.size() == 1);
  CHECK(sum.kernels[0].registered == "reduce chunked");
  CHECK(starts_with(sum.kernels[0].chosen, "the first reduce strategy that applies: every monoid is commutative"));
  // A non-commutative monoid: chunked does not apply, so the next in registry order.
  // (The composition of affine maps x -> a x + b, in order.)
  auto ab = ff::input<ff::Tuple<float, float>>("ab");
  const ff::Monoid affine = ff::monoid<ff::Tuple<float, float>>(
      [](const ff::Expr& l, const ff::Expr& r) { return ff::tuple(l[0] * r[0], r[0] * l[1] + r[1]); },
      ff::tuple(1.0f, 0.0f), ff::non_commutative, "affine");
  const ff::codegen::Plan ordered = ff::codegen::plan(ff::Program(ff::reduce(ab, affine)), sm90());
  REQUIRE(ordered.kernels.size() == 1);
  CHECK(ordered.kernels[0].registered == "reduce staged");
  CHECK(ordered.kernels[0].chosen.find("non-commutative") != std::string::npos);
}

TEST_CASE("a forced strategy is looked up in the registry: chosen as asked, with its policy values") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan staged = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus, ff::strategy::staged)), sm90());
  REQUIRE(staged.kernels.size() == 1);
  CHECK(staged.kernels[0].registered == "reduce staged");
  CHECK(starts_with(staged.kernels[0].chosen, "asked for (strategy=staged): "));
  CHECK(policy_value(staged.kernels[0], "block") == 256);
  const ff::codegen::Plan tree = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus, ff::strategy::tree)), sm90());
  REQUIRE(tree.kernels.size() == 2);
  CHECK(tree.kernels[0].registered == "reduce tree");
  CHECK(tree.kernels[1].registered == "reduce tree");
  const ff::codegen::Plan rts =
      ff::codegen::plan(ff::Program(ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan)), sm90());
  REQUIRE(rts.kernels.size() == 3);
  CHECK(rts.kernels[0].registered == "scan reduce-then-scan");
  CHECK(starts_with(rts.kernels[0].chosen, "asked for (strategy=reduce_then_scan)"));
}

TEST_CASE("a forced strategy that does not apply is a GraphError saying why") {
  auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS((void)ff::codegen::plan(ff::Program(ff::reduce(x, ff::max, ff::strategy::atomic)), sm90()),
                       "fuseflow: reduce: strategy atomic supports plus on 32- and 64-bit numbers and min/max on 32- "
                       "and 64-bit integers; got max on f32",
                       ff::GraphError);
  // Where it applies, one init + atomic pair per reduction, each with its own step.
  auto i = ff::input<int>("i");
  const ff::codegen::Plan atomic = ff::codegen::plan(
      ff::Program({ff::reduce(i, ff::max, ff::strategy::atomic), ff::reduce(i, ff::plus, ff::strategy::atomic)}), sm90());
  CHECK(atomic.kernels.size() == 4);
  CHECK(atomic.steps.size() == 4);
  for (const auto& k : atomic.kernels) CHECK(k.registered == "reduce atomic");
}

TEST_CASE("a scan takes the pipelined look-back where the target has it, the plain look-back elsewhere") {
  auto x = ff::input<float>("x");
  const ff::Program p(ff::scan(x, ff::plus));
  const ff::codegen::Plan h100 = ff::codegen::plan(p, sm90());
  REQUIRE(h100.kernels.size() == 2);
  CHECK(h100.kernels[0].registered == "scan pipelined");
  CHECK(policy_value(h100.kernels[0], "stages") == 4);
  const ff::codegen::Plan a100 = ff::codegen::plan(p, ff::codegen::Target::preset("sm_80"));
  CHECK(a100.kernels.at(0).registered == "scan lookback");
  ff::codegen::PlanOptions off;
  off.scan_pipeline = false;
  CHECK(ff::codegen::plan(p, sm90(), off).kernels.at(0).registered == "scan lookback");
}

TEST_CASE("scratch sizes: what each kernel says it needs is what the schedule allocates") {
  auto x = ff::input<float>("x");
  // Chunked: block partials for the largest grid, fixed.
  const ff::codegen::Plan sum = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus)), sm90());
  const KernelSpec& k = sum.kernels.at(0);
  const ScratchBuffer& partials = scratch_named(k, "partials");
  CHECK(partials.per == ScratchBuffer::Per::Fixed);
  CHECK(partials.bytes == sizeof(float) * static_cast<std::size_t>(k.max_grid));
  CHECK(sum.schedule(1 << 20).scratch_bytes == sizeof(float) * static_cast<std::size_t>(k.max_grid));
  CHECK(ff::codegen::to_string(partials).rfind("partials: " + std::to_string(partials.bytes) + " B (", 0) == 0);

  // Tree: the first level's partials are 4 B per block of 256 elements of n.
  const ff::codegen::Plan tree = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus, ff::strategy::tree)), sm90());
  const ScratchBuffer& level0 = scratch_named(tree.kernels.at(0), "partials");
  CHECK(level0.per == ScratchBuffer::Per::Element);
  CHECK(level0.divisor == 256);
  CHECK(level0.bytes == 4);
  CHECK(ff::codegen::to_string(level0).rfind("partials: 4 B x ceil(n / 256)", 0) == 0);
  const ff::codegen::Schedule levels = tree.schedule(1 << 16);
  CHECK(levels.launches.at(0).grid == (1 << 16) / 256);
  // 256 partials of the first level (4 B each, 1024 B), then one of the second, 256-aligned.
  CHECK(levels.launches.at(1).scratch.at(1) == 1024);
  CHECK(levels.scratch_bytes == 1024 + 4);

  // Counting sort by few bins (Onesweep): the histogram's 64-bit counts (zeroed), a 4-byte
  // look-back word per bin per tile (zeroed), the bin starts of a portion.
  const ff::codegen::Plan sort = ff::codegen::plan(ff::Program(ff::counting_sort(ff::input<int>("k"), 9)), sm90());
  REQUIRE(sort.kernels.size() == 2);
  const ScratchBuffer& counts = scratch_named(sort.kernels.at(0), "digit_counts");
  CHECK(counts.per == ScratchBuffer::Per::Fixed);
  CHECK(counts.bytes == 8 * 10);
  CHECK(counts.zeroed);
  const ScratchBuffer& lookback = scratch_named(sort.kernels.at(1), "lookback");
  CHECK(lookback.per == ScratchBuffer::Per::BinTile);
  CHECK(lookback.bytes == 4);
  CHECK(lookback.zeroed);
  CHECK(scratch_named(sort.kernels.at(1), "bin_starts").bytes == 8 * 10);
  const std::int64_t n = 1 << 16, bins = 10;
  const std::int64_t tiles = (n + sort.kernels[1].items_per_block_step - 1) / sort.kernels[1].items_per_block_step;
  const ff::codegen::Schedule s = sort.schedule(n);
  REQUIRE(s.launches.size() == 2);
  CHECK(s.launches[1].scratch.at(0) == s.launches[0].scratch.at(0));  // one histogram
  const std::size_t at_lookback = s.launches[1].scratch.at(2), at_starts = s.launches[1].scratch.at(1);
  CHECK(at_starts >= at_lookback + static_cast<std::size_t>(bins * tiles * 4));  // the starts after the look-back
  CHECK(s.scratch_bytes == at_starts + static_cast<std::size_t>(bins * 8));     // one portion
  std::size_t zeroed = 0;
  for (const auto& [offset, bytes] : s.zeroed) zeroed += bytes;
  CHECK(zeroed == static_cast<std::size_t>(bins * 8 + bins * tiles * 4));

  // Counting sort by many bins: 4-byte counts and 8-byte positions per bin per tile.
  const ff::codegen::Plan wide = ff::codegen::plan(ff::Program(ff::counting_sort(ff::input<int>("k"), 999)), sm90());
  REQUIRE(wide.kernels.size() == 3);
  const ScratchBuffer& wide_counts = scratch_named(wide.kernels.at(0), "tile_counts");
  CHECK(wide_counts.per == ScratchBuffer::Per::BinTile);
  CHECK(wide_counts.bytes == 4);
  CHECK(scratch_named(wide.kernels.at(1), "positions").bytes == 8);
  const std::int64_t wide_tiles = n / wide.kernels[0].items_per_block_step, wide_bins = 1000;
  const ff::codegen::Schedule ws = wide.schedule(n);
  REQUIRE(ws.launches.size() == 3);
  CHECK(ws.launches[1].scratch.at(1) >= static_cast<std::size_t>(wide_bins * wide_tiles * 4));  // positions after the counts
  CHECK(ws.scratch_bytes == ws.launches[1].scratch[1] + static_cast<std::size_t>(wide_bins * wide_tiles * 8));

  // Segmented reduce with short segments: the mask of deferred segments, a bit each in
  // 4-byte words, after the merge path's per-block carries.
  auto xs = ff::input<float>("xs");
  auto offsets = ff::input<int>("offsets");
  const ff::codegen::Plan seg = ff::codegen::plan(ff::Program(ff::segmented_reduce(xs, offsets, ff::plus)), sm90());
  REQUIRE(seg.kernels.size() == 2);
  const ScratchBuffer& mask = scratch_named(seg.kernels[0], "deferred");
  CHECK(mask.per == ScratchBuffer::Per::Segment);
  CHECK(mask.divisor == 32);
  CHECK(ff::codegen::to_string(mask).rfind("deferred: 4 B x ceil(segments / 32)", 0) == 0);
  // The merge path's carries, one per block of its largest grid: the segment (8 B), the
  // carried value and the head value (4 B each), each 256-aligned.
  const auto aligned = [](std::size_t at) { return (at + 255) / 256 * 256; };
  const std::size_t grid = static_cast<std::size_t>(seg.kernels[1].max_grid);
  const std::size_t carries = aligned(aligned(8 * grid) + 4 * grid) + 4 * grid;
  const std::int64_t segments = 4096;  // of 4 elements each: the short pass runs
  const ff::codegen::Schedule ss = seg.schedule({segments * 4, segments + 1});
  REQUIRE(ss.launches.size() == 2);
  CHECK(ss.scratch_bytes == aligned(carries) + static_cast<std::size_t>(segments / 32 * 4));

  // A scan's look-back status: 8 bytes per tile for 4-byte values.
  const ff::codegen::Plan scan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  const ScratchBuffer& status = scratch_named(scan.kernels.at(0), "tile_status");
  CHECK(status.per == ScratchBuffer::Per::Tile);
  CHECK(status.bytes == 8);
}

TEST_CASE("launch order: every launch waits for the one before it, and each spec says which kernel that is") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan tree = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus, ff::strategy::tree)), sm90());
  REQUIRE(tree.kernels.size() == 2);
  CHECK(tree.kernels[0].order.after_kernel == -1);
  CHECK(tree.kernels[1].order.after_kernel == 0);
  // 2^20 elements: 4096 partials, then 16, then 1: the first kernel once, the level twice.
  const ff::codegen::Schedule s = tree.schedule(1 << 20);
  REQUIRE(s.launches.size() == 3);
  CHECK(s.launches[0].kernel == 0);
  CHECK(s.launches[1].kernel == 1);
  CHECK(s.launches[2].kernel == 1);
  for (std::size_t i = 0; i < s.launches.size(); ++i) CHECK(s.launches[i].waits_on == static_cast<int>(i) - 1);

  // Two stages (a reduction read by a later map): the map waits on the reduction.
  auto total = ff::reduce(x, ff::plus);
  const ff::codegen::Plan split = ff::codegen::plan(ff::Program({total, x / total}), sm90());
  REQUIRE(split.kernels.size() == 2);
  CHECK(split.kernels[0].registered == "reduce chunked");
  CHECK(split.kernels[1].registered == "map");
  CHECK(split.kernels[1].order.after_kernel == 0);
  CHECK(split.kernels[1].order.reason.find(split.kernels[0].name) != std::string::npos);

  // A look-back step's second kernel replaces the first for large n: both wait on the step before.
  const ff::codegen::Plan scan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  CHECK(scan.kernels.at(0).order.after_kernel == -1);
  CHECK(scan.kernels.at(1).order.after_kernel == -1);
}

TEST_CASE("explain prints each spec: registered strategy and why, policy values, scratch, what it waits on") {
  auto x = ff::input<float>("x");
  const std::string text = ff::codegen::explain(ff::Program(ff::reduce(x, ff::plus, ff::strategy::tree)));
  CHECK(text.find("     registered: reduce tree (asked for (strategy=tree): ") != std::string::npos);
  CHECK(text.find("     policy: block 256\n") != std::string::npos);
  CHECK(text.find("     scratch partials: 4 B x ceil(n / 256)") != std::string::npos);
  CHECK(text.find("     waits on: nothing") != std::string::npos);
}

TEST_CASE("a weighted histogram of many bins: a radix sort of (bin, weight) by bin, then each bin's run added") {
  auto x = ff::input<float>("x");
  auto d = ff::input<double>("d");
  auto k = ff::input<int>("k");
  // 1000 bins of f32 fit in shared memory: the one-pass kernel.
  const ff::codegen::Plan few = ff::codegen::plan(ff::Program(ff::histogram(k & 1023, x, 1000)), sm90());
  REQUIRE(few.kernels.size() == 1);
  CHECK(few.kernels[0].registered == "histogram");
  // 2^22 bins of f32 do not, nor do 4 warps' copies of a bucket of 2^14 (histogram_bucketed.cpp):
  // bins need 22 bits, so the sort's histogram and three Onesweep passes (bits 0..8, 8..16,
  // 16..22), then the run and bin kernels.
  const std::int64_t bins = std::int64_t{1} << 22;
  const ff::codegen::Plan many = ff::codegen::plan(ff::Program(ff::histogram(k % (1 << 22), x, bins)), sm90());
  REQUIRE(many.kernels.size() == 6);
  CHECK(many.kernels[0].name == "ff_histogram_sort_histograms_u32_bits0_22");
  CHECK(many.kernels[1].name == "ff_histogram_sort_onesweep_u32_f32_bits0_8");
  CHECK(many.kernels[2].name == "ff_histogram_sort_onesweep_u32_f32_bits8_16");
  CHECK(many.kernels[3].name == "ff_histogram_sort_onesweep_u32_f32_bits16_22");
  CHECK(many.kernels[4].name == "ff_histogram_sorted_runs_f32");
  CHECK(many.kernels[5].name == "ff_histogram_sorted_bins_f32");
  for (const auto& kernel : many.kernels) {
    CHECK(kernel.registered == "histogram weighted sorted");
    CHECK(kernel.source.find("atomicAdd") == std::string::npos);  // no atomics on the sums
  }
  CHECK(many.kernels[0].chosen.find("first histogram strategy that applies") != std::string::npos);
  REQUIRE(many.steps.size() == 1);
  CHECK(many.steps[0].kind == ff::codegen::StepSpec::Kind::HistogramSorted);
  CHECK(many.steps[0].kernels == 6);
  // A dropped bin sorts as the last bin with weight 0, in the sort's key and value.
  CHECK(many.kernels[0].source.find("? v3 : 4194303u") != std::string::npos);
  // The run table: 16 bytes a bin, zeroed (an empty bin is [0, 0)); a sum per piece.
  const ScratchBuffer& runs = scratch_named(many.kernels[4], "runs");
  CHECK(runs.per == ScratchBuffer::Per::Fixed);
  CHECK(runs.bytes == static_cast<std::size_t>(bins) * 16);
  CHECK(runs.zeroed);
  const ScratchBuffer& pieces = scratch_named(many.kernels[5], "piece_sums");
  CHECK(pieces.per == ScratchBuffer::Per::Element);
  CHECK(pieces.divisor == 4096);
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{100000}, std::int64_t{1} << 26}) {
    INFO("n = " << n);
    const ff::codegen::Schedule s = many.schedule(n);
    // The histogram, each pass over one portion of tiles, the run and bin kernels.
    REQUIRE(s.launches.size() == 6);
    const ff::codegen::Launch& last_pass = s.launches[3];
    const ff::codegen::Launch& run = s.launches[4];
    const ff::codegen::Launch& bin = s.launches[5];
    CHECK(run.kernel == 4);
    CHECK(bin.kernel == 5);
    // The run kernel reads the sorted keys and weights the last pass wrote (its keys_out,
    // values_out: scratch 2 and 3); the bin kernel the same weights, run table and piece sums.
    CHECK(run.scratch.at(0) == last_pass.scratch.at(2));
    CHECK(run.scratch.at(1) == last_pass.scratch.at(3));
    CHECK(bin.scratch.at(0) == run.scratch.at(1));
    CHECK(bin.scratch.at(1) == run.scratch.at(2));
    CHECK(bin.scratch.at(2) == run.scratch.at(3));
    // The last pass does not write over the keys it reads (keys_in, scratch 0).
    CHECK(last_pass.scratch.at(2) != last_pass.scratch.at(0));
    // A warp per piece of 4096 and a lane per bin, on every piece and bin.
    CHECK(static_cast<std::int64_t>(run.grid) * 8 * 4096 >= std::min<std::int64_t>(n, 65535LL * 8 * 4096));
    CHECK(static_cast<std::int64_t>(bin.grid) * 256 >= bins);
    CHECK(s.scratch_bytes >= static_cast<std::size_t>(n) * 16 + static_cast<std::size_t>(bins) * 16);
  }
  CHECK(many.schedule(0).launches.empty());  // n = 0: the zeroed output is the answer
  // f64 sums over 2^22 bins (past the old 256 MiB of rows per grid): 22 bits, three passes,
  // scratch of about the pairs, not grid x bins.
  const ff::codegen::Plan wide = ff::codegen::plan(ff::Program(ff::histogram(k & ((1 << 22) - 1), d, 1 << 22)), sm90());
  REQUIRE(wide.kernels.size() == 6);
  CHECK(wide.kernels[3].name == "ff_histogram_sort_onesweep_u32_f64_bits16_22");
  CHECK(wide.kernels[5].name == "ff_histogram_sorted_bins_f64");
  const ff::codegen::Schedule ws = wide.schedule(std::int64_t{1} << 20);
  CHECK(ws.scratch_bytes < (std::size_t{1} << 20) * 32 + (std::size_t{1} << 22) * 16 + (std::size_t{8} << 20));
  // 2^25 + 1 bins of f64, which the rows refused: planned (26 bits, four passes).
  const ff::codegen::Plan huge =
      ff::codegen::plan(ff::Program(ff::histogram(k, d, (std::int64_t{1} << 25) + 1)), sm90());
  CHECK(huge.kernels.size() == 7);
  CHECK(huge.kernels[0].name == "ff_histogram_sort_histograms_u32_bits0_26");
}

TEST_CASE("a weighted histogram of 2^14 to 2^21 bins: one pass by bucket, then a bucket's sums per warp in shared memory") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  // 20000 bins of f32: 15 bits, buckets of 2^7 bins (bits 7..15, 256 buckets, one pass).
  const ff::codegen::Plan p = ff::codegen::plan(ff::Program(ff::histogram(k % 20000, x, 20000)), sm90());
  REQUIRE(p.kernels.size() == 4);
  CHECK(p.kernels[0].name == "ff_histogram_bucket_histograms_u32_bits7_15");
  CHECK(p.kernels[1].name == "ff_histogram_bucket_onesweep_u32_f32_bits7_15");
  CHECK(p.kernels[2].name == "ff_histogram_bucketed_slices_f32");
  CHECK(p.kernels[3].name == "ff_histogram_bucketed_bins_f32");
  for (const auto& kernel : p.kernels) {
    CHECK(kernel.registered == "histogram weighted bucketed");
    CHECK(kernel.source.find("atomicAdd") == std::string::npos);  // no atomics on the sums
  }
  REQUIRE(p.steps.size() == 1);
  CHECK(p.steps[0].kind == ff::codegen::StepSpec::Kind::HistogramSorted);
  CHECK(p.kernels[2].block == 256);                      // 8 warps' copies of 128 sums
  CHECK(p.kernels[2].shared_bytes == 8 * 128 * 4);
  const ScratchBuffer& rows = scratch_named(p.kernels[2], "slice_rows");
  CHECK(rows.per == ScratchBuffer::Per::Element);
  CHECK(rows.divisor == 16384);
  CHECK(scratch_named(p.kernels[2], "bucket_rows").bytes == 256 * 128 * 4);
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{100000}, std::int64_t{1} << 26}) {
    INFO("n = " << n);
    const ff::codegen::Schedule s = p.schedule(n);
    REQUIRE(s.launches.size() == 4);  // the histogram, the pass (one portion), slices, bins
    const ff::codegen::Launch& pass = s.launches[1];
    const ff::codegen::Launch& slices = s.launches[2];
    const ff::codegen::Launch& bins = s.launches[3];
    CHECK(slices.kernel == 2);
    CHECK(bins.kernel == 3);
    // The slice kernel reads the pairs the pass wrote and the histogram's counts (the pass's too).
    CHECK(slices.scratch.at(0) == pass.scratch.at(0));
    CHECK(slices.scratch.at(1) == pass.scratch.at(1));
    CHECK(slices.scratch.at(2) == pass.scratch.at(2));
    CHECK(bins.scratch.at(0) == slices.scratch.at(3));
    CHECK(bins.scratch.at(1) == slices.scratch.at(4));
    CHECK(bins.scratch.at(2) == slices.scratch.at(5));
    CHECK(static_cast<std::int64_t>(bins.grid) * 256 >= 20000);
    CHECK(slices.grid >= 1);
  }
  CHECK(p.schedule(0).launches.empty());
  // 2^20 bins: buckets of 2^12 (bits 12..20); 2^21: 2^13, 6 warps of 32 KB; 2^22 and f64 2^21: the sort.
  const ff::codegen::Plan m = ff::codegen::plan(ff::Program(ff::histogram(k & ((1 << 20) - 1), x, 1 << 20)), sm90());
  REQUIRE(m.kernels.size() == 4);
  CHECK(m.kernels[1].name == "ff_histogram_bucket_onesweep_u32_f32_bits12_20");
  const ff::codegen::Plan m21 = ff::codegen::plan(ff::Program(ff::histogram(k & ((1 << 21) - 1), x, 1 << 21)), sm90());
  REQUIRE(m21.kernels.size() == 4);
  CHECK(m21.kernels[2].block == 6 * 32);
  auto d = ff::input<double>("d");
  const ff::codegen::Plan d21 = ff::codegen::plan(ff::Program(ff::histogram(k & ((1 << 21) - 1), d, 1 << 21)), sm90());
  CHECK(d21.kernels.back().registered == "histogram weighted sorted");
}
