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
