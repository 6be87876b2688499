// Planner unit tests (no GPU): which programs codegen accepts, and the message of the
// GraphError for those it rejects.
#include <doctest/doctest.h>

#include <algorithm>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;

namespace {

const ff::codegen::Target& sm90() {
  static const ff::codegen::Target t = ff::codegen::Target::preset("sm_90");
  return t;
}

// The message of the GraphError that planning `p` throws, or "" when it plans.
std::string plan_error(const ff::Program& p) {
  try {
    (void)ff::codegen::plan(p, sm90());
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a scan of a filter's result is one look-back kernel over (value, survivor count) pairs, counted outputs") {
  auto x = ff::input<float>("x");
  for (ff::ScanKind kind : {ff::inclusive, ff::exclusive}) {
    ff::Expr s = ff::scan(ff::filter(x, x > 0.0f), ff::plus, kind);
    const ff::codegen::Plan plan = ff::codegen::plan(ff::outputs(s, s * 2.0f), sm90());
    REQUIRE(plan.kernels.size() == 1);  // no staged tile or pipelined kernel: the pairs are 16 bytes
    const ff::codegen::KernelSpec& k = plan.kernels[0];
    CHECK(k.name == std::string("ff_scan_lookback_survivors_f32_plus") + (kind == ff::exclusive ? "_exclusive" : ""));
    // Both outputs are as long as the survivors: counted, each count written by the kernel.
    REQUIRE(plan.output_shapes.size() == 2);
    CHECK(plan.output_shapes[0].counted);
    CHECK(plan.output_shapes[1].counted);
    int counts = 0;
    for (const auto& a : k.args) counts += a.kind == ff::codegen::Arg::Kind::OutputCount;
    CHECK(counts == 2);
    CHECK(k.source.find("struct ff_tuple0 {  // (f32, u64)") != std::string::npos);
    CHECK(k.source.find("const bool kept = keep(") != std::string::npos);
    // Launched for n = 0 too, so the counts are written.
    REQUIRE(plan.steps.size() == 1);
    CHECK(plan.steps[0].launch_empty);
    bool noted = false;
    for (const auto& note : plan.notes) noted = noted || note.find("filter -> scan:") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("the filter's own outputs join the kernel of the scan of its survivors: one pass, index() the position") {
  auto x = ff::input<int>("x");
  ff::Expr kept = ff::filter(x, x > 0);
  const ff::codegen::Plan plan = ff::codegen::plan(
      ff::outputs(kept, ff::scan(kept, ff::plus), kept * ff::cast<int>(ff::index()), ff::filter(x, x < 0)), sm90());
  // The scan's kernel writes outputs 0, 1 and 2; the filter of another predicate compacts on
  // its own (and its pipelined twin for large n).
  REQUIRE(plan.kernels.size() == 3);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_survivors_i32_plus");
  CHECK(plan.kernels[1].name == "ff_filter_compact_i32");
  std::vector<int> written;
  for (const auto& a : plan.kernels[0].args)
    if (a.kind == ff::codegen::Arg::Kind::OutputCount) written.push_back(a.index);
  std::sort(written.begin(), written.end());
  CHECK(written == std::vector<int>{0, 1, 2});
  for (int id = 0; id < 4; ++id) CHECK(plan.output_shapes[static_cast<std::size_t>(id)].counted);
  // index() is the survivor's position: the inclusive count less one.
  CHECK(plan.kernels[0].source.find("scanned.f1") != std::string::npos);
}

TEST_CASE("a reduction over index() beside a filter's result folds after a scan that counts the survivors") {
  auto x = ff::input<int>("x");
  ff::Expr kept = ff::filter(x, x > 0);
  const ff::codegen::Plan plan = ff::codegen::plan(
      ff::outputs(ff::reduce(ff::cast<long long>(kept) * ff::index(), ff::plus), ff::reduce(x, ff::max)), sm90());
  // The position reduction folds after the survivor count's scan; the plain max of the
  // same input folds into the same pass.
  REQUIRE(plan.kernels.size() == 1);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_survivor_positions");
  const std::string& src = plan.kernels[0].source;
  CHECK(src.find("into result slot 0") != std::string::npos);
  CHECK(src.find("into result slot 1") != std::string::npos);
  CHECK(src.find("ff::scanned_tile_fold(") != std::string::npos);
  CHECK(src.find("ff::TileStages::Separate, kInclusive>(") != std::string::npos);
  CHECK(src.find("constexpr bool kInclusive = false;") != std::string::npos);
  // A reduction reading such a result would have to run after the scan: staged instead
  // (stages_plan_test), its values compacted first, no survivor-position scan.
  ff::Expr s = ff::reduce(ff::cast<long long>(kept) * ff::index(), ff::plus);
  const ff::codegen::Plan staged = ff::codegen::plan(ff::Program(ff::reduce(ff::cast<long long>(x) * s, ff::plus)), sm90());
  CHECK(staged.intermediates.size() == 1);
  for (const auto& k : staged.kernels) CHECK(k.name != "ff_scan_lookback_survivor_positions");
  // A histogram over index() beside a filter's result: a scan of the survivors before each
  // element writes an intermediate, which the histogram reads in place of index().
  const ff::codegen::Plan hist = ff::codegen::plan(ff::Program(ff::histogram(ff::cast<int>(ff::index() % 4) + kept * 0, 4)), sm90());
  REQUIRE(hist.kernels.size() == 2);
  CHECK(hist.kernels[0].name == "ff_scan_lookback_i64_plus_exclusive");
  CHECK(hist.kernels[1].name == "ff_histogram_shared_u32");
  REQUIRE(hist.intermediates.size() == 1);
  CHECK(hist.intermediates[0].output == -1);  // in scratch
  CHECK(hist.intermediates[0].type == ff::Type(ff::ScalarType::I64));
  auto has = [](const ff::codegen::KernelSpec& k, ff::codegen::Arg::Kind kind, int index) {
    for (const auto& a : k.args)
      if (a.kind == kind && a.index == index) return true;
    return false;
  };
  CHECK(has(hist.kernels[0], ff::codegen::Arg::Kind::Intermediate, 0));  // the scan writes it
  CHECK(has(hist.kernels[1], ff::codegen::Arg::Kind::Intermediate, 0));  // the histogram reads it
  CHECK_FALSE(has(hist.kernels[0], ff::codegen::Arg::Kind::Output, 0));
  for (const auto& k : hist.kernels)
    for (const auto& a : k.args) CHECK(a.index >= 0);  // no placeholder input left
  CHECK(hist.kernels[1].source.find("in_ff_survivor_position") != std::string::npos);
  CHECK(hist.schedule(1000).scratch_bytes >= 8000u);
}

TEST_CASE("a scan of a filter's result refuses reduce_then_scan; a keyed scan of one is planned in stages") {
  auto x = ff::input<float>("x");
  const std::string rts = plan_error(
      ff::Program(ff::scan(ff::filter(x, x > 0.0f), ff::plus, ff::inclusive, ff::strategy::reduce_then_scan)));
  CHECK(rts == "fuseflow: codegen: a scan of a filter's result is one look-back pass that compacts as it scans; "
               "strategy reduce_then_scan does not apply to it, leave the strategy automatic");
  auto k = ff::input<int>("k");
  // k beside the survivors: read at their positions (stages_plan_test has the plan).
  CHECK(plan_error(ff::Program(ff::scan_by_key(k, ff::filter(x, x > 0.0f), ff::plus))).empty());
}

TEST_CASE("a masked scan written with select plans as one look-back kernel (and its staged tile for large n)") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Program p(ff::scan(ff::select(x > t, x, 0.0f), ff::plus));
  CHECK(plan_error(p).empty());
  const ff::codegen::Plan plan = ff::codegen::plan(p, sm90());
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_f32_plus");
  CHECK(plan.kernels[1].name == "ff_scan_pipelined_f32_plus");
  CHECK(plan.schedule(1000).launches.size() == 1);  // one of them runs
  const ff::codegen::Plan on_a100 = ff::codegen::plan(p, ff::codegen::Target::preset("sm_80"));
  REQUIRE(on_a100.kernels.size() == 2);
  CHECK(on_a100.kernels[1].name == "ff_scan_lookback_staged_f32_plus");
}

TEST_CASE("a filter feeding a reduction is still a masked reduction") {
  auto x = ff::input<float>("x");
  CHECK(plan_error(ff::Program(ff::reduce(ff::filter(x, x > 0.0f), ff::plus))).empty());
}

TEST_CASE("the look-back scan kernel says its look-back is deterministic and skips bounds checks on full tiles") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  REQUIRE(plan.kernels.size() == 2);  // the tile in registers, and the pipelined scan for large n
  for (const auto& k : plan.kernels) CHECK(k.summary.find("deterministic look-back") != std::string::npos);
  // The tile kernels call scan_tile.cuh's lookback_scan_tile, whose full tiles skip the
  // bounds checks.
  CHECK(plan.kernels[0].source.find("ff::lookback_scan_tile<") != std::string::npos);
  const ff::codegen::Plan on_a100 = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), ff::codegen::Target::preset("sm_80"));
  REQUIRE(on_a100.kernels.size() == 2);  // there the staged tile for large n
  for (const auto& k : on_a100.kernels) CHECK(k.source.find("ff::lookback_scan_tile<") != std::string::npos);
  CHECK(on_a100.kernels[1].source.find("ff::TileStages::Staged") != std::string::npos);
  std::string tile_header;
  for (const auto& h : ff::codegen::device_headers())
    if (std::string(h.name) == "fuseflow/scan_tile.cuh") tile_header = h.text;
  CHECK(tile_header.find("if (base + kTile <= n)") != std::string::npos);
}

TEST_CASE("a reduction whose filter reads another reduction's result runs after it") {
  auto x = ff::input<float>("x");
  ff::Expr mean = ff::reduce(x, ff::plus);
  ff::Expr above = ff::reduce(ff::filter(x, x > mean), ff::plus, ff::strategy::tree);
  const ff::codegen::Plan plan = ff::codegen::plan(ff::outputs(above, mean), ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.kernels.size() == 3);
  CHECK(plan.kernels[0].name == "ff_reduce_chunked_f32_plus");
  CHECK(plan.kernels[1].name == "ff_reduce_tree_first_f32_plus");
  CHECK(plan.kernels[1].source.find("= *s0;") != std::string::npos);  // reads the mean from its slot
}

// ---- filter as a program output (stream compaction) -----------------------------------

namespace {

// Arguments of kind `k` of a kernel.
std::size_t count_args(const ff::codegen::KernelSpec& k, ff::codegen::Arg::Kind kind) {
  std::size_t n = 0;
  for (const auto& a : k.args) n += a.kind == kind ? 1 : 0;
  return n;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a filter's result as a program output is one compaction kernel with a counted output") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f)), sm90());
  REQUIRE(plan.kernels.size() == 2);  // and on sm_90 the pipelined compaction for large n
  const ff::codegen::KernelSpec& k = plan.kernels[0];
  CHECK(k.name == "ff_filter_compact_f32");
  CHECK(k.summary.find("compact (single pass, stable)") != std::string::npos);
  CHECK(count_args(k, ff::codegen::Arg::Kind::Output) == 1);
  CHECK(count_args(k, ff::codegen::Arg::Kind::OutputCount) == 1);
  REQUIRE(plan.output_shapes.size() == 1);
  CHECK(plan.output_shapes[0].counted);
  // The buffer has room for every element; the kernel writes how many survive.
  CHECK(plan.output_shapes[0].length({1000}) == 1000);
  // One block per tile, and one block even for no elements (it writes the count 0).
  const std::int64_t tile = k.items_per_block_step;
  CHECK(plan.schedule(0).launches.at(0).grid == 1);
  CHECK(plan.schedule(tile).launches.at(0).grid == 1);
  CHECK(plan.schedule(tile + 1).launches.at(0).grid == 2);
  CHECK(plan.schedule((std::int64_t{1} << 24) - 1).launches.at(0).kernel == 0);
  // From 2^24 the pipelined compaction: one block per SM (10 warps), tiles of 13312 in 4
  // stages (4 * 13312 * 4 = 212992 bytes), 64-bit counts in the status (two words per
  // entry: by hand, at 2^24 ceil(2^24 / 13312) = 1261 tiles in ceil(1261 / 32) = 40
  // groups, (1261 + 40) * 16 bytes).
  const ff::codegen::KernelSpec& pipelined = plan.kernels[1];
  CHECK(pipelined.name == "ff_filter_compact_pipelined_f32");
  CHECK(pipelined.block == 320);
  CHECK(pipelined.items_per_block_step == 13312);
  CHECK(pipelined.shared_bytes == 212992);
  CHECK(count_args(pipelined, ff::codegen::Arg::Kind::OutputCount) == 1);
  const ff::codegen::Launch at = plan.schedule(std::int64_t{1} << 24).launches.at(0);
  CHECK(at.kernel == 1);
  CHECK(at.grid == 132);
  CHECK(at.status_bytes == 20816);
  CHECK(plan.schedule((std::int64_t{1} << 31) + 17).launches.at(0).grid == 132);
  // sm_80, or PlanOptions::scan_pipeline off: the one kernel, one block per tile at every size.
  const ff::codegen::Plan on_a100 = ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f)), ff::codegen::Target::preset("sm_80"));
  REQUIRE(on_a100.kernels.size() == 1);
  CHECK(on_a100.schedule((std::int64_t{1} << 31) + 17).launches.at(0).grid ==
        ((std::int64_t{1} << 31) + 17 + on_a100.kernels[0].items_per_block_step - 1) / on_a100.kernels[0].items_per_block_step);
  ff::codegen::PlanOptions no_pipeline;
  no_pipeline.scan_pipeline = false;
  CHECK(ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f)), sm90(), no_pipeline).kernels.size() == 1);
  // Two inputs: no pipelined kernel (it stages one 4-byte input); nor for survivors wider
  // than 4 bytes (compacted over their inputs in the stage).
  auto y = ff::input<float>("y");
  CHECK(ff::codegen::plan(ff::Program(ff::filter(x + y, x > y)), sm90()).kernels.size() == 1);
  CHECK(ff::codegen::plan(ff::Program(ff::filter(ff::cast<double>(x), x > 0.0f)), sm90()).kernels.size() == 1);
  CHECK(ff::codegen::plan(ff::Program(ff::filter(ff::zip(x, ff::index()), x > 0.0f)), sm90()).kernels.size() == 1);
}

TEST_CASE("filter -> map: the map is applied to the survivors in the compaction kernel") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Expr kept = ff::filter(x, x > t);
  ff::Program p(ff::outputs(kept * 2.0f, kept, ff::cast<double>(kept) + ff::cast<double>(ff::index())));
  const ff::codegen::Plan plan = ff::codegen::plan(p, sm90());
  // Three outputs of one filter: one kernel, one pass (and its pipelined twin for large n,
  // which writes with streaming stores).
  REQUIRE(plan.kernels.size() == 2);
  for (const ff::codegen::KernelSpec& k : plan.kernels) {
    CHECK(count_args(k, ff::codegen::Arg::Kind::Output) == 3);
    CHECK(count_args(k, ff::codegen::Arg::Kind::OutputCount) == 3);
  }
  const std::string& one = plan.kernels[0].source;
  CHECK(one.find("out0[at] = epilogue0(kept, at);") != std::string::npos);
  CHECK(one.find("out1[at] = kept;") != std::string::npos);
  CHECK(one.find("out2[at] = epilogue2(kept, at);") != std::string::npos);
  const std::string& pipelined = plan.kernels[1].source;
  CHECK(pipelined.find("__stcs(out0 + at, static_cast<float>(epilogue0(kept, at)));") != std::string::npos);
  CHECK(pipelined.find("__stcs(out1 + at, static_cast<float>(kept));") != std::string::npos);
  CHECK(pipelined.find("__stcs(out2 + at, static_cast<double>(epilogue2(kept, at)));") != std::string::npos);
  for (const auto& s : plan.output_shapes) CHECK(s.counted);
  const std::string notes = ff::explain(p);
  CHECK(notes.find("filter -> map: output 0's map is applied to the survivors in ff_filter_compact_f32") != std::string::npos);
  CHECK(notes.find("output 1's map") == std::string::npos);
}

TEST_CASE("two filters are two compaction kernels; a filter feeding a reduction beside them stays masked") {
  auto x = ff::input<int>("x");
  ff::Program p(ff::outputs(ff::filter(x, x > 0), ff::filter(x, x < 0), ff::reduce(ff::filter(x, x > 5), ff::plus)));
  const ff::codegen::Plan plan = ff::codegen::plan(p, sm90());
  REQUIRE(plan.kernels.size() == 5);
  CHECK(plan.kernels[0].name == "ff_reduce_chunked_i32_plus");
  CHECK(plan.kernels[1].name == "ff_filter_compact_i32");
  CHECK(plan.kernels[2].name == "ff_filter_compact_pipelined_i32");
  CHECK(plan.kernels[3].name == "ff_filter_compact_i32");
  CHECK(plan.kernels[4].name == "ff_filter_compact_pipelined_i32");
  CHECK(plan.schedule(1000).launches.size() == 3);
  CHECK(plan.output_shapes[0].counted);
  CHECK(plan.output_shapes[1].counted);
}

TEST_CASE("a compaction whose predicate reads a reduction's result runs after it and reads its slot") {
  auto x = ff::input<float>("x");
  ff::Expr mean = ff::reduce(x, ff::plus) / 1000.0f;
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::filter(x, x > mean)), sm90());
  REQUIRE(plan.kernels.size() == 3);
  CHECK(plan.kernels[0].name == "ff_reduce_chunked_f32_plus");
  CHECK(plan.kernels[1].name == "ff_filter_compact_f32");
  CHECK(plan.kernels[1].source.find("= *s0;") != std::string::npos);
  CHECK(plan.kernels[2].name == "ff_filter_compact_pipelined_f32");
  CHECK(plan.kernels[2].source.find("= *s0;") != std::string::npos);
}

TEST_CASE("a filter of a filter's result compacts once with both predicates") {
  auto x = ff::input<int>("x");
  ff::Expr positive = ff::filter(x, x > 0);
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::filter(positive * 3, positive < 100)), sm90());
  REQUIRE(plan.kernels.size() == 2);  // and the pipelined compaction for large n
  const std::string& s = plan.kernels[0].source;
  CHECK(s.find("x > 0") != std::string::npos);
  CHECK(s.find("x < 100") != std::string::npos);
  CHECK(s.find("&&") != std::string::npos);
}

TEST_CASE("compaction tiles fit the element sizes") {
  auto plan_of = [](const ff::Program& p) { return ff::codegen::plan(p, sm90()).kernels.at(0); };
  auto x = ff::input<float>("x");
  auto b = ff::input<std::uint8_t>("b");
  auto m = ff::input<ff::Tuple<int, int, int, int>>("m");
  CHECK(plan_of(ff::filter(x, x > 0.0f)).source.find("constexpr int kVec = 4;") != std::string::npos);
  CHECK(plan_of(ff::filter(b, b > 3)).source.find("constexpr int kVec = 8;") != std::string::npos);
  // Tuple inputs load element by element; the survivors' stage (dynamic shared memory, one
  // tile of values) stays within 64 KB, so two blocks fit an SM.
  const ff::codegen::KernelSpec tuples = plan_of(ff::filter(m, m[0] > 0));
  CHECK(tuples.source.find("constexpr int kVec = 1;") != std::string::npos);
  CHECK(tuples.source.find("ff::load_vec") == std::string::npos);
  CHECK(tuples.shared_bytes == static_cast<std::size_t>(tuples.items_per_block_step) * 16);
  CHECK(tuples.shared_bytes <= 64 * 1024);
  const ff::codegen::KernelSpec floats = plan_of(ff::filter(x, x > 0.0f));
  CHECK(floats.shared_bytes == static_cast<std::size_t>(floats.items_per_block_step) * 4);
}

// filter(x, p) + y reads y at the survivors' positions (filter_lift.hpp): the map before
// the filter, one compaction of x + y; filters of one predicate mix the same way; filters
// of different predicates keep different elements and are refused.
TEST_CASE("maps mixing a filter's result with arrays of its length are one compaction; other predicates are refused") {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  const ff::codegen::Plan with_input = ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f) + y), sm90());
  REQUIRE(with_input.kernels.size() == 1);  // two inputs: not the pipelined compaction
  CHECK(with_input.kernels[0].name == "ff_filter_compact_f32");
  CHECK(with_input.kernels[0].source.find("x + y") != std::string::npos);
  CHECK(with_input.output_shapes[0].counted);
  const ff::codegen::Plan same = ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f) * ff::filter(y, x > 0.0f)), sm90());
  REQUIRE(same.kernels.size() == 1);
  CHECK(same.kernels[0].source.find("x * y") != std::string::npos);
  // A gather beside the survivors, at a position computed from index() (the position among
  // them): its table is read at computed positions, not beside the filter (fuzz seed 282).
  auto t = ff::input<float>("t");
  CHECK(plan_error(ff::Program(ff::filter(x, x > 0.0f) + ff::gather(t, ff::index() / 2) + y)).empty());
  const std::string two = plan_error(ff::Program(ff::filter(x, x > 0.0f) + ff::filter(x, x < 1.0f)));
  INFO(two);
  CHECK(two.find("mixes the results of filters with different predicates (x > 0.0f and x < 1.0f)") != std::string::npos);
}

// The reference evaluator's index() over a filter's result is the position among the
// survivors: a reduction of it plans as a scan that counts them (survivor positions);
// index() zipped before the filter is the original one, a masked reduction.
TEST_CASE("index() beside a filter's result in a reduction counts survivors; before the filter it is masked") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan among =
      ff::codegen::plan(ff::Program(ff::reduce(ff::zip(ff::filter(x, x > 0.0f), ff::index()), ff::argmax)), sm90());
  REQUIRE(among.kernels.size() == 1);
  CHECK(among.kernels[0].name == "ff_scan_lookback_survivor_positions");
  const ff::codegen::Plan before =
      ff::codegen::plan(ff::Program(ff::reduce(ff::filter(ff::zip(x, ff::index()), x > 0.0f), ff::argmax)), sm90());
  REQUIRE(before.kernels.size() == 1);
  CHECK(before.kernels[0].name.find("ff_reduce_") == 0);
}

TEST_CASE("two reductions of one filter's result are both masked") {
  auto x = ff::input<float>("x");
  ff::Expr kept = ff::filter(x, x > 0.0f);
  const ff::codegen::Plan plan = ff::codegen::plan(ff::outputs(ff::reduce(kept, ff::plus), ff::reduce(kept, ff::max)), sm90());
  REQUIRE(plan.kernels.size() == 1);
  CHECK(occurrences(plan.kernels[0].source, "x > 0.0f") == 2);
}

// On sm_90 each has a second kernel, the pipelined one (segmented_scan_pipelined.cpp), for
// large n; the first is the one-tile-per-block look-back kernel.
TEST_CASE("segmented scans and reduce_by_key plan as one look-back kernel each, and the pipelined one for large n") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto o = ff::input<int>("o");
  // The pipelined kernels are opt-in (PlanOptions::segmented_pipeline): by default one kernel.
  CHECK(ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus)), sm90()).kernels.size() == 1);
  CHECK(ff::codegen::plan(ff::Program(ff::scan_by_key(k, x, ff::plus)), sm90()).kernels.size() == 1);
  ff::codegen::PlanOptions piped;
  piped.segmented_pipeline = true;
  const ff::codegen::Plan by_offsets = ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus)), sm90(), piped);
  // A reduction beside it is not folded into the segmented kernel (only plain look-back scans fold).
  CHECK(ff::codegen::plan(ff::outputs(ff::segmented_scan(x, o, ff::plus), ff::reduce(x, ff::plus)), sm90(), piped).kernels.size() == 3);
  REQUIRE(by_offsets.kernels.size() == 2);
  CHECK(by_offsets.kernels[0].name == "ff_segmented_scan_f32_plus");
  CHECK(by_offsets.kernels[1].name == "ff_segmented_scan_f32_plus_pipelined");
  CHECK(by_offsets.domains == 2);  // the offsets have a length of their own
  CHECK(by_offsets.input_domain == std::vector<int>{0, 1});
  const ff::codegen::Plan by_key =
      ff::codegen::plan(ff::Program(ff::scan_by_key(k, x, ff::max, ff::exclusive)), sm90(), piped);
  REQUIRE(by_key.kernels.size() == 2);
  CHECK(by_key.kernels[0].name == "ff_scan_by_key_i32_f32_max_exclusive");
  CHECK(by_key.kernels[1].name == "ff_scan_by_key_i32_f32_max_exclusive_pipelined");
  // Both results of reduce_by_key come from one kernel, each with a device-written count.
  ff::KeyedResult r = ff::reduce_by_key(k, x, ff::plus);
  const ff::codegen::Plan reduced = ff::codegen::plan(ff::outputs(r.values, r.keys), sm90(), piped);
  REQUIRE(reduced.kernels.size() == 2);
  CHECK(reduced.kernels[0].name == "ff_reduce_by_key_i32_f32_plus");
  CHECK(reduced.kernels[1].name == "ff_reduce_by_key_i32_f32_plus_pipelined");
  REQUIRE(reduced.output_shapes.size() == 2);
  CHECK(reduced.output_shapes[0].counted);
  CHECK(reduced.output_shapes[1].counted);
  for (const auto& kernel : reduced.kernels) {
    int counts = 0;
    for (const auto& a : kernel.args) counts += a.kind == ff::codegen::Arg::Kind::OutputCount;
    CHECK(counts == 2);
  }
  // On sm_80 one kernel each.
  const ff::codegen::Target a100 = ff::codegen::Target::preset("sm_80");
  CHECK(ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus)), a100).kernels.size() == 1);
  CHECK(ff::codegen::plan(ff::outputs(r.values, r.keys), a100).kernels.size() == 1);
}

TEST_CASE("a map after a segmented scan is its epilogue; a map of reduce_by_key's result is a compaction of its runs") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto o = ff::input<int>("o");
  ff::codegen::PlanOptions piped;
  piped.segmented_pipeline = true;  // opt-in: the pipelined kernel for large n, the epilogue in its stores too
  const ff::codegen::Plan p = ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus) * 2.0f), sm90(), piped);
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].source.find("out0[i] = epilogue0(scanned[slot], ") != std::string::npos);
  CHECK(p.kernels[1].source.find("out0[i] = epilogue0(scanned, stage_x[e], i);") != std::string::npos);
  // The epilogue reads the input at the store: the input and scanned stages stay apart.
  CHECK(p.kernels[0].source.find("ff::segmented::scan_tile<kBlock, kItems, kInputStageBytes, false, kInclusive>(") !=
        std::string::npos);
  // reduce_by_key's totals in a map: a compaction of the runs the device counted (stages_plan_test.cpp).
  const ff::codegen::Plan staged = ff::codegen::plan(ff::Program(ff::reduce_by_key(k, x, ff::plus).values * 2.0f), sm90());
  REQUIRE(staged.output_shapes.size() == 1);
  CHECK(staged.output_shapes[0].counted);
}

TEST_CASE("segmented scan offsets read as elements too, or read through a parameter, are refused") {
  auto x = ff::input<int>("x");
  auto o = ff::input<int>("o");
  auto t = ff::param<int>("t");
  CHECK(plan_error(ff::Program(ff::segmented_scan(x, x, ff::plus))) ==
        "fuseflow: segmented_scan: input 'x' is read both as offsets and as elements; the two have different "
        "lengths, so bind the offsets to an input of their own");
  CHECK(plan_error(ff::Program(ff::segmented_scan(x, o + t, ff::plus))).find("segmented_scan offsets that read a parameter") !=
        std::string::npos);
  // A filter's result among scan_by_key's keys (the values x taken at the survivors'
  // positions) is a scan over the survivors, planned in stages (stage_feeds.cpp).
  CHECK(plan_error(ff::Program(ff::scan_by_key(ff::filter(x, x > 0), x, ff::plus))).empty());
}

TEST_CASE("reductions over a scan's inputs are folded into the look-back kernel: one kernel, one pass") {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  ff::Expr s = ff::scan(x * y, ff::plus);
  const ff::codegen::Plan plan =
      ff::codegen::plan(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(ff::filter(y, y > 0.0f), ff::max)), sm90());
  REQUIRE(plan.kernels.size() == 1);
  const ff::codegen::KernelSpec& k = plan.kernels[0];
  CHECK(k.name == "ff_scan_lookback_f32_plus");
  CHECK(k.summary.find("2 reductions folded into the same pass (plus, max") != std::string::npos);
  int results = 0;
  std::vector<int> tickets;
  for (const auto& a : k.args) {
    results += a.kind == ff::codegen::Arg::Kind::ScalarOutput;
    if (a.kind == ff::codegen::Arg::Kind::Ticket) tickets.push_back(a.index);
  }
  CHECK(results == 2);
  // Two different counters: the tile counter of the look-back (1) and the ticket of the
  // last tile, which combines the reductions' partials (0).
  CHECK(tickets == std::vector<int>{1, 0});
  CHECK(plan.output_scalar == std::vector<int>{-1, 0, 1});
  REQUIRE(plan.notes.size() == 2);
  CHECK(plan.notes[0].find("folded with plus in ff_scan_lookback_f32_plus's pass") != std::string::npos);
  // One launch even for n = 0: the reductions' identities come from the kernel.
  CHECK(plan.schedule(0).launches.size() == 1);
  CHECK(ff::codegen::plan(ff::Program(s), sm90()).schedule(0).launches.empty());
}

TEST_CASE("a reduction is not folded into a scan that needs its result, reads other inputs, or is not single-pass") {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  ff::Expr total = ff::reduce(x, ff::plus);
  // Not folded: the reduction's kernel, then the scan's two (its tile, and the staged tile
  // a plain scan takes for large n; folded, the scan would have one).
  // The scan's map reads the total: the reduction runs first, in its own kernel.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x / total, ff::plus), total), sm90()).kernels.size() == 3);
  // The reduction reads y, which the scan does not load.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus), ff::reduce(x * y, ff::plus)), sm90()).kernels.size() == 3);
  // reduce_then_scan, and a reduction with a strategy of its own, keep their kernels.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan), total), sm90())
            .kernels.size() == 4);
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus), ff::reduce(x, ff::plus, ff::strategy::staged)), sm90())
            .kernels.size() == 3);
  // Another reduction reads the total (it runs before the scans): not folded.
  ff::Expr above = ff::reduce(ff::filter(x, x > total), ff::plus);
  const ff::codegen::Plan plan = ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus), above, total), sm90());
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].name == "ff_reduce_chunked_f32_plus");
  CHECK(plan.kernels[1].summary.find("1 reduction folded") != std::string::npos);  // `above`, the last to need
}

TEST_CASE("scan kernels that write their outputs tile by tile may write in place; others may not") {
  auto x = ff::input<float>("x");
  CHECK(ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90()).kernels[0].in_place);
  const ff::codegen::Plan rts =
      ff::codegen::plan(ff::Program(ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan)), sm90());
  REQUIRE(rts.kernels.size() == 3);
  CHECK(!rts.kernels[0].in_place);
  CHECK(rts.kernels[2].in_place);
  CHECK(!ff::codegen::plan(ff::Program(x * 2.0f), sm90()).kernels[0].in_place);
}

TEST_CASE("a segmented reduce runs the short-segment pass when its segments average at most 8 elements") {
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("offsets");
  const ff::codegen::Plan p = ff::codegen::plan(ff::Program(ff::segmented_reduce(x, o, ff::plus)), sm90());
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].name == "ff_segmented_short_f32_plus");
  CHECK(p.kernels[1].name == "ff_segmented_reduce_f32_plus");
  CHECK_FALSE(p.kernels[0].any_grid);  // a block per 512 segments, all launched at once
  // lengths: n, then the offsets' (segments + 1).
  const auto launches = [&](std::int64_t n, std::int64_t segments) { return p.schedule({n, segments + 1}).launches; };
  // 1000 segments of 3: both, the short pass with ceil(1000 / 512) = 2 blocks, the merge
  // path over 3000 + 1000 items = one tile of 4096.
  const std::vector<ff::codegen::Launch> short3 = launches(3000, 1000);
  REQUIRE(short3.size() == 2);
  CHECK(short3[0].kernel == 0);
  CHECK(short3[0].grid == 2);
  CHECK(short3[1].kernel == 1);
  CHECK(short3[1].grid == 1);
  // They share the mask: the short pass's only scratch is the merge path's last (after the
  // three carry arrays), 1000 bits in 32 words.
  REQUIRE(short3[0].scratch.size() == 1);
  REQUIRE(short3[1].scratch.size() == 4);
  CHECK(short3[0].scratch[0] == short3[1].scratch[3]);
  // An average of 8 elements still takes the pass; 9, or one long segment, does not.
  CHECK(launches(8000, 1000).size() == 2);
  CHECK(launches(8001, 1000).size() == 1);
  CHECK(launches(9000, 1000).at(0).kernel == 1);
  CHECK(launches(std::int64_t{1} << 28, 1).size() == 1);
  // 2^28 elements in segments of 3: 2^28 / 3 segments, a block per 512.
  const std::int64_t m = (std::int64_t{1} << 28) / 3;
  CHECK(launches(3 * m, m).at(0).grid == (m + 511) / 512);
  CHECK(launches(1000, 0).empty());
  // segmented_short off (FUSEFLOW_SEGMENTED_SHORT=0): the merge path alone, without the mask and the flag.
  ff::codegen::PlanOptions merge_alone;
  merge_alone.segmented_short = false;
  const ff::codegen::Plan alone = ff::codegen::plan(ff::Program(ff::segmented_reduce(x, o, ff::plus)), sm90(), merge_alone);
  REQUIRE(alone.kernels.size() == 1);
  CHECK(alone.kernels[0].source.find("DeferredSegments") == std::string::npos);
  REQUIRE(alone.schedule({3000, 1001}).launches.size() == 1);
  CHECK(alone.schedule({3000, 1001}).launches[0].scratch.size() == 3);
}

// The message of the ConfigError `f` throws, or "(no ConfigError thrown)".
template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ff::ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError thrown)";
}

TEST_CASE("segmented_tile sets the segmented reduce's tile shape, and a bad one is a ConfigError naming the option") {
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("offsets");
  const ff::Program p(ff::segmented_reduce(x, o, ff::plus));
  ff::codegen::PlanOptions options;
  const auto source_of = [&] { return ff::codegen::plan(p, sm90(), options).kernels.back().source; };  // the merge path
  const std::string automatic = source_of();
  CHECK(automatic.find("constexpr int kItems = 16;") != std::string::npos);
  options.segmented_tile = ff::codegen::TileShape{128, 8, 6};
  const std::string chosen = source_of();
  CHECK(chosen.find("constexpr int kBlock = 128;") != std::string::npos);
  CHECK(chosen.find("constexpr int kItems = 8;") != std::string::npos);
  CHECK(chosen.find("constexpr int kMinBlocks = 6;") != std::string::npos);
  const std::vector<std::pair<ff::codegen::TileShape, std::string>> bad = {
      {{100, 8, 0}, "100x8"}, {{128, 0, 0}, "128x0"}, {{128, 17, 0}, "128x17"}, {{128, 8, 40}, "128x8x40"},
      {{2048, 8, 0}, "2048x8"}, {{0, 8, 0}, "0x8"}};
  for (const auto& [tile, text] : bad) {
    options.segmented_tile = tile;
    INFO(text);
    CHECK(config_error_of(source_of) ==
          "fuseflow: segmented_tile (FUSEFLOW_SEGMENTED_TILE) = " + text +
              ": expected a tile <block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], items in "
              "[1, 16] and min blocks in [0, 32]");
  }
  // Too big for static shared memory: 1024 threads x 16 items of 4-byte values.
  options.segmented_tile = ff::codegen::TileShape{1024, 16, 0};
  CHECK(config_error_of(source_of).find("segmented_tile (FUSEFLOW_SEGMENTED_TILE): 1024 x 16 items of 4-byte values need") !=
        std::string::npos);
  options.segmented_tile.reset();
  CHECK(source_of() == automatic);
}

TEST_CASE("filter_tile sets the compaction's tile shape, and one too big for shared memory is a ConfigError") {
  auto x = ff::input<float>("x");
  const ff::Program p(ff::filter(x, x > 0.0f));
  ff::codegen::PlanOptions options;
  const auto source_of = [&] { return ff::codegen::plan(p, sm90(), options).kernels.at(0).source; };
  const std::string automatic = source_of();
  options.filter_tile = ff::codegen::TileShape{256, 4, 6};
  const std::string chosen = source_of();
  CHECK(chosen.find("constexpr int kBlock = 256;") != std::string::npos);
  CHECK(chosen.find("constexpr int kRows = 4;") != std::string::npos);
  CHECK(chosen.find("__launch_bounds__(256, 6)") != std::string::npos);
  options.filter_tile = ff::codegen::TileShape{256, 0, 0};
  CHECK(config_error_of(source_of).find("filter_tile (FUSEFLOW_FILTER_TILE) = 256x0: expected") != std::string::npos);
  options.filter_tile = ff::codegen::TileShape{1024, 16, 0};  // 65536 f32 survivors: 256 KB
  CHECK(config_error_of(source_of).find("need more than the") != std::string::npos);
  options.filter_tile.reset();
  CHECK(source_of() == automatic);
}

TEST_CASE("scan_tile and scan_staged_from are checked: items up to 32, a count >= 0") {
  auto x = ff::input<float>("x");
  const ff::Program p(ff::scan(x, ff::plus));
  ff::codegen::PlanOptions options;
  options.scan_tile = ff::codegen::TileShape{256, 32, 0};
  const ff::codegen::Plan one_tile = ff::codegen::plan(p, sm90(), options);
  REQUIRE(one_tile.kernels.size() == 1);  // a study's tile: no second kernel for large n
  CHECK(one_tile.kernels[0].items_per_block_step == 256 * 32);
  options.scan_tile = ff::codegen::TileShape{256, 33, 0};
  CHECK(config_error_of([&] { (void)ff::codegen::plan(p, sm90(), options); })
            .find("scan_tile (FUSEFLOW_SCAN_TILE) = 256x33: expected") != std::string::npos);
  options.scan_tile.reset();
  options.scan_staged_from = -1;
  CHECK(config_error_of([&] { (void)ff::codegen::plan(p, sm90(), options); }) ==
        "fuseflow: scan_staged_from (FUSEFLOW_SCAN_STAGED_FROM) = -1: expected an element count >= 0");
}

TEST_CASE("PlanOptions::key names every option set, and nothing for the defaults") {
  ff::codegen::PlanOptions o;
  CHECK(o.key().empty());
  o.scan_tile = ff::codegen::TileShape{192, 22, 7};
  o.filter_tile = ff::codegen::TileShape{256, 4, 0};
  o.scan_staged_from = 0;
  o.scan_pipeline = false;
  o.segmented_short = false;
  CHECK(o.key() == "scan_tile=192x22x7;filter_tile=256x4;scan_staged_from=0;scan_pipeline=0;segmented_short=0");
  ff::codegen::PlanOptions other = o;
  other.filter_tile = ff::codegen::TileShape{256, 4, 1};
  CHECK(other.key() != o.key());
}

TEST_CASE("a plain scan of 4-byte values takes the staged tile from 2^24 elements on sm_80; other scans keep one kernel") {
  auto x = ff::input<float>("x");
  const ff::codegen::Target sm80 = ff::codegen::Target::preset("sm_80");
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm80);
  REQUIRE(plan.kernels.size() == 2);
  const ff::codegen::KernelSpec& small = plan.kernels[0];
  const ff::codegen::KernelSpec& staged = plan.kernels[1];
  CHECK(small.name == "ff_scan_lookback_f32_plus");
  CHECK(staged.name == "ff_scan_lookback_staged_f32_plus");
  // 4 warps x 88 elements read from the stage: 11264 elements per tile (by hand: 128 * 88).
  CHECK(staged.block == 128);
  CHECK(staged.items_per_block_step == 11264);
  CHECK(staged.summary.find("88 items per thread read from the shared stage") != std::string::npos);
  const std::int64_t from = std::int64_t{1} << 24;
  const ff::codegen::Launch below = plan.schedule(from - 1).launches.at(0);
  const ff::codegen::Launch at = plan.schedule(from).launches.at(0);
  CHECK(below.kernel == 0);
  CHECK(below.grid == (from - 1 + small.items_per_block_step - 1) / small.items_per_block_step);
  CHECK(at.kernel == 1);
  CHECK(at.grid == (from + 11263) / 11264);
  // Status per tile and per group of 32 tiles, for the staged kernel's own tile count.
  const std::size_t tiles = static_cast<std::size_t>(at.grid);
  CHECK(at.status_bytes == 8 * (tiles + (tiles + 31) / 32));
  CHECK(plan.schedule(0).launches.empty());
  // Not staged: 8-byte values, an epilogue over the input, a reduction folded in.
  auto d = ff::input<double>("d");
  CHECK(ff::codegen::plan(ff::Program(ff::scan(d, ff::plus)), sm80).kernels.size() == 1);
  ff::Expr s = ff::scan(x, ff::plus);
  CHECK(ff::codegen::plan(ff::Program(s - x), sm80).kernels.size() == 1);
  CHECK(ff::codegen::plan(ff::outputs(s, ff::reduce(x, ff::max)), sm80).kernels.size() == 1);
}

TEST_CASE("on sm_90 a plain scan of 4-byte values takes the pipelined scan from 2^24 elements, persistent blocks") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  REQUIRE(plan.kernels.size() == 2);
  const ff::codegen::KernelSpec& k = plan.kernels[1];
  CHECK(k.name == "ff_scan_pipelined_f32_plus");
  // Producer, reducer, look-back and 8 scanner warps: 11 * 32 threads; tiles of 12288
  // elements in 4 stages of 48 KB (by hand: 4 * 12288 * 4 = 196608 bytes).
  CHECK(k.block == 352);
  CHECK(k.items_per_block_step == 12288);
  CHECK(k.shared_bytes == 196608);
  CHECK(k.source.find("cp.async") == std::string::npos);  // the PTX is in scan_pipeline.cuh
  CHECK(k.source.find("#include <fuseflow/scan_pipeline.cuh>") != std::string::npos);
  const std::int64_t from = std::int64_t{1} << 24;
  CHECK(plan.schedule(from - 1).launches.at(0).kernel == 0);
  const ff::codegen::Launch at = plan.schedule(from).launches.at(0);
  CHECK(at.kernel == 1);
  CHECK(at.grid == 132);  // one block per SM of the preset, fewer than the 1366 tiles
  // 2^24 / 12288 = 1365.3: 1366 tiles and 43 groups of 32, a 64-bit status word each (by
  // hand: 1409 * 8).
  CHECK(at.status_bytes == 11272);
  // Fewer tiles than SMs: a block each (scan_staged_from 0: the second kernel at every size).
  ff::codegen::PlanOptions staged_from_0;
  staged_from_0.scan_staged_from = 0;
  const ff::codegen::Plan everywhere = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90(), staged_from_0);
  const ff::codegen::Launch few = everywhere.schedule(2 * 12288 + 1).launches.at(0);
  CHECK(few.kernel == 1);
  CHECK(few.grid == 3);
  // 8-byte values and folded reductions keep one kernel; an epilogue over the input is
  // fine here (the stage holds the input while the scanners store).
  auto d = ff::input<double>("d");
  CHECK(ff::codegen::plan(ff::Program(ff::scan(d, ff::plus)), sm90()).kernels.size() == 1);
  ff::Expr s = ff::scan(x, ff::plus);
  CHECK(ff::codegen::plan(ff::outputs(s, ff::reduce(x, ff::max)), sm90()).kernels.size() == 1);
  const ff::codegen::Plan epilogue = ff::codegen::plan(ff::Program(s - x), sm90());
  REQUIRE(epilogue.kernels.size() == 2);
  CHECK(epilogue.kernels[1].name == "ff_scan_pipelined_f32_plus");
  // scan_pipeline off (FUSEFLOW_SCAN_PIPELINE=0): the staged tile, as on sm_80.
  ff::codegen::PlanOptions off_options;
  off_options.scan_pipeline = false;
  const ff::codegen::Plan off = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90(), off_options);
  REQUIRE(off.kernels.size() == 2);
  CHECK(off.kernels[1].name == "ff_scan_lookback_staged_f32_plus");
}

TEST_CASE("a plan's steps are data: the launch pattern, its kernels and its numbers") {
  using Kind = ff::codegen::StepSpec::Kind;
  auto x = ff::input<float>("x");
  auto o = ff::input<int>("offsets");
  // A scan on sm_90: one look-back step over the kernel and the pipelined one from 2^24.
  const ff::codegen::Plan scan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  REQUIRE(scan.steps.size() == 1);
  CHECK(scan.steps[0].kind == Kind::Lookback);
  CHECK(scan.steps[0].kernel == 0);
  CHECK(scan.steps[0].kernels == 2);
  CHECK(scan.steps[0].from == (std::int64_t{1} << 24));
  CHECK(scan.steps[0].value_bytes == 4);
  CHECK_FALSE(scan.steps[0].launch_empty);
  // A compaction launches for n = 0 too (its one tile writes the count 0), with 64-bit counts.
  const ff::codegen::Plan filter = ff::codegen::plan(ff::Program(ff::filter(x, x > 0.0f)), sm90());
  REQUIRE(filter.steps.size() == 1);
  CHECK(filter.steps[0].kind == Kind::Lookback);
  CHECK(filter.steps[0].value_bytes == 8);
  CHECK(filter.steps[0].launch_empty);
  CHECK(filter.schedule(0).launches.size() == 1);
  // A reduction, then the map that reads it: two one-pass steps, in that order.
  ff::Expr total = ff::reduce(x, ff::plus);
  const ff::codegen::Plan normalize = ff::codegen::plan(ff::Program(x / total), sm90());
  REQUIRE(normalize.steps.size() == 2);
  CHECK(normalize.steps[0].kind == Kind::OnePass);
  CHECK(normalize.steps[1].kind == Kind::OnePass);
  CHECK(normalize.steps[1].kernel == 1);
  const ff::codegen::Schedule run = normalize.schedule(1000);
  REQUIRE(run.launches.size() == 2);
  CHECK(run.launches[0].kernel == 0);
  CHECK(run.launches[1].kernel == 1);
  // A tree reduction: its two kernels in one step; 70000 elements in blocks of 256 take
  // levels of 274, then 2, then 1 block.
  const ff::codegen::Plan tree = ff::codegen::plan(ff::Program(ff::reduce(x, ff::plus, ff::strategy::tree)), sm90());
  REQUIRE(tree.steps.size() == 1);
  CHECK(tree.steps[0].kind == Kind::Tree);
  const ff::codegen::Schedule levels = tree.schedule(70000);
  REQUIRE(levels.launches.size() == 3);
  CHECK(levels.launches[0].grid == 274);
  CHECK(levels.launches[1].grid == 2);
  CHECK(levels.launches[2].grid == 1);
  // A segmented reduce reads the length of its offsets' domain.
  const ff::codegen::Plan seg = ff::codegen::plan(ff::Program(ff::segmented_reduce(x, o, ff::plus)), sm90());
  REQUIRE(seg.steps.size() == 1);
  CHECK(seg.steps[0].kind == Kind::SegmentedReduce);
  CHECK(seg.steps[0].domain == 1);
  CHECK(seg.steps[0].kernels == 2);
  // A counting sort of 16 bins: 17 counts per tile.
  const ff::codegen::Plan sort = ff::codegen::plan(ff::Program(ff::counting_sort(ff::input<int>("k"), 16)), sm90());
  REQUIRE(sort.steps.size() == 1);
  CHECK(sort.steps[0].kind == Kind::CountingSort);
  CHECK(sort.steps[0].bins == 17);
}

TEST_CASE("explain lists each kernel's launch shape and buffers, the steps, and sample schedules") {
  auto x = ff::input<float>("x");
  const std::string text = ff::codegen::explain(ff::Program(ff::scan(x, ff::plus)));
  CHECK(text.find("(tuning policies: sm_90)") != std::string::npos);
  CHECK(text.find("     buffers: in_x (input 0), n (length), out0 (output 0), tile_counter (ticket 1)") != std::string::npos);
  CHECK(text.find("  step 1: look-back of kernels 1..2 (kernel 2 from 16777216 elements)") != std::string::npos);
  // 2^16 elements in tiles of 192 x 22 = 4224: 16 blocks; 2^26 in the pipelined kernel: a block per SM.
  CHECK(text.find("    ff_scan_lookback_f32_plus: n 65536, grid 16,") != std::string::npos);
  CHECK(text.find("    ff_scan_pipelined_f32_plus: n 67108864, grid 132,") != std::string::npos);
  ff::codegen::PlanOptions o;
  o.scan_pipeline = false;
  CHECK(ff::codegen::explain(ff::Program(ff::scan(x, ff::plus)), ff::codegen::Target::preset("sm_90"), o)
            .find("options: scan_pipeline=0\n") != std::string::npos);
}

TEST_CASE("each kernel carries its tuning values: the target's policy, the options over it") {
  auto x = ff::input<float>("x");
  const ff::Program p(ff::scan(x, ff::plus));
  using Tuning = std::vector<std::pair<std::string, std::int64_t>>;
  // The H100's measured tile for 4-byte scans: 6 warps x 22 items, 7 blocks per SM; the
  // pipelined kernel's ring of 4 stages of 12288.
  const ff::codegen::Plan automatic = ff::codegen::plan(p, sm90());
  CHECK(automatic.kernels[0].tuning == Tuning{{"block", 192}, {"items", 22}, {"min_blocks", 7}});
  CHECK(automatic.kernels[1].tuning == Tuning{{"tile", 12288}, {"stages", 4}, {"scan_warps", 8}});
  ff::codegen::PlanOptions o;
  o.scan_tile = ff::codegen::TileShape{256, 16, 2};
  CHECK(ff::codegen::plan(p, sm90(), o).kernels.at(0).tuning == Tuning{{"block", 256}, {"items", 16}, {"min_blocks", 2}});
  CHECK(ff::codegen::explain(p).find("     tuning: block 192 items 22 min_blocks 7\n") != std::string::npos);
}
