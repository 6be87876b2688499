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

TEST_CASE("segmented scans and reduce_by_key plan as one look-back kernel each") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto o = ff::input<int>("o");
  const ff::codegen::Plan by_offsets = ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus)), sm90());
  REQUIRE(by_offsets.kernels.size() == 1);
  CHECK(by_offsets.kernels[0].name == "ff_segmented_scan_f32_plus");
  CHECK(by_offsets.domains == 2);  // the offsets have a length of their own
  CHECK(by_offsets.input_domain == std::vector<int>{0, 1});
  const ff::codegen::Plan by_key =
      ff::codegen::plan(ff::Program(ff::scan_by_key(k, x, ff::max, ff::exclusive)), sm90());
  REQUIRE(by_key.kernels.size() == 1);
  CHECK(by_key.kernels[0].name == "ff_scan_by_key_i32_f32_max_exclusive");
  // Both results of reduce_by_key come from one kernel, each with a device-written count.
  ff::KeyedResult r = ff::reduce_by_key(k, x, ff::plus);
  const ff::codegen::Plan reduced = ff::codegen::plan(ff::outputs(r.values, r.keys), sm90());
  REQUIRE(reduced.kernels.size() == 1);
  CHECK(reduced.kernels[0].name == "ff_reduce_by_key_i32_f32_plus");
  REQUIRE(reduced.output_shapes.size() == 2);
  CHECK(reduced.output_shapes[0].counted);
  CHECK(reduced.output_shapes[1].counted);
  int counts = 0;
  for (const auto& a : reduced.kernels[0].args) counts += a.kind == ff::codegen::Arg::Kind::OutputCount;
  CHECK(counts == 2);
}

TEST_CASE("a map after a segmented scan is its epilogue; a map of reduce_by_key's result is refused") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  auto o = ff::input<int>("o");
  const ff::codegen::Plan p = ff::codegen::plan(ff::Program(ff::segmented_scan(x, o, ff::plus) * 2.0f), sm90());
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].source.find("epilogue0(scanned_stage[slot(s)]") != std::string::npos);
  const std::string e = plan_error(ff::Program(ff::reduce_by_key(k, x, ff::plus).values * 2.0f));
  CHECK(e == "fuseflow: codegen: using the array result of reduce_by_key in a map is not supported by this version "
             "of fuseflow's code generator yet");
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
  // A filter's result among scan_by_key's keys is refused, naming the op.
  CHECK(plan_error(ff::Program(ff::scan_by_key(ff::filter(x, x > 0), x, ff::plus))).find("inside scan_by_key") !=
        std::string::npos);
}
