// Planner unit tests (no GPU): which programs codegen accepts, and the message of the
// GraphError for those it rejects.
#include <doctest/doctest.h>

#include <string>

#include <fuseflow/fuseflow.hpp>

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

const std::string kFilterScan =
    "scan of a filter result needs stream compaction, which is not supported yet; "
    "for a masked scan write scan(select(p, x, identity))";

}  // namespace

TEST_CASE("a scan of a filter result is rejected until stream compaction exists") {
  auto x = ff::input<float>("x");
  for (ff::ScanKind kind : {ff::inclusive, ff::exclusive}) {
    const std::string e = plan_error(ff::Program(ff::scan(ff::filter(x, x > 0.0f), ff::plus, kind)));
    INFO("error: " << e);
    CHECK(e == "fuseflow: codegen: " + kFilterScan);
  }
  // Also through a map of the filter's result, and with an epilogue, and with reduce_then_scan.
  const std::string mapped = plan_error(ff::Program(ff::scan(ff::filter(x, x > 0.0f) * 2.0f, ff::plus) + 1.0f));
  CHECK(mapped.find(kFilterScan) != std::string::npos);
  const std::string rts = plan_error(
      ff::Program(ff::scan(ff::filter(x, x > 0.0f), ff::plus, ff::inclusive, ff::strategy::reduce_then_scan)));
  CHECK(rts.find(kFilterScan) != std::string::npos);
}

TEST_CASE("a masked scan written with select plans as one look-back kernel") {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("t");
  ff::Program p(ff::scan(ff::select(x > t, x, 0.0f), ff::plus));
  CHECK(plan_error(p).empty());
  const ff::codegen::Plan plan = ff::codegen::plan(p, sm90());
  REQUIRE(plan.kernels.size() == 1);
  CHECK(plan.kernels[0].name == "ff_scan_lookback_f32_plus");
}

TEST_CASE("a filter feeding a reduction is still a masked reduction") {
  auto x = ff::input<float>("x");
  CHECK(plan_error(ff::Program(ff::reduce(ff::filter(x, x > 0.0f), ff::plus))).empty());
}

TEST_CASE("the look-back scan kernel says its look-back is deterministic and skips bounds checks on full tiles") {
  auto x = ff::input<float>("x");
  const ff::codegen::Plan plan = ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), sm90());
  REQUIRE(plan.kernels.size() == 1);
  CHECK(plan.kernels[0].summary.find("deterministic look-back") != std::string::npos);
  CHECK(plan.kernels[0].source.find("if (base + kTile <= n)") != std::string::npos);
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

TEST_CASE("reductions over a scan's inputs are folded into the look-back kernel: one kernel, one pass") {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  ff::Expr s = ff::scan(x * y, ff::plus);
  const ff::codegen::Plan plan =
      ff::codegen::plan(ff::outputs(s, ff::reduce(x, ff::plus), ff::reduce(ff::filter(y, y > 0.0f), ff::max)), sm90());
  REQUIRE(plan.kernels.size() == 1);
  const ff::codegen::Kernel& k = plan.kernels[0];
  CHECK(k.name == "ff_scan_lookback_f32_plus");
  CHECK(k.summary.find("2 reductions folded into the same pass (plus, max") != std::string::npos);
  int results = 0, tickets = 0;
  for (const auto& a : k.args) {
    results += a.kind == ff::codegen::Arg::Kind::ScalarOutput;
    tickets += a.kind == ff::codegen::Arg::Kind::Ticket;
  }
  CHECK(results == 2);
  CHECK(tickets == 1);
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
  // The scan's map reads the total: the reduction runs first, in its own kernel.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x / total, ff::plus), total), sm90()).kernels.size() == 2);
  // The reduction reads y, which the scan does not load.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus), ff::reduce(x * y, ff::plus)), sm90()).kernels.size() == 2);
  // reduce_then_scan, and a reduction with a strategy of its own, keep their kernels.
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan), total), sm90())
            .kernels.size() == 4);
  CHECK(ff::codegen::plan(ff::outputs(ff::scan(x, ff::plus), ff::reduce(x, ff::plus, ff::strategy::staged)), sm90())
            .kernels.size() == 2);
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
