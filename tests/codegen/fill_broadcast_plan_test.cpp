// Planner tests for fills of a parameter's length (Plan::fill_length_param) and for the
// general per-segment broadcast (broadcast_plan.cpp, strategies/broadcast.cpp): the plan
// (kernels, registered strategy, steps, launches) and what is refused, with the message.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>

#include "../graph_error_of.hpp"

namespace ff = fuseflow;
using ff::test::graph_error_of;

namespace {

ff::codegen::Plan plan_of(const ff::Program& p) { return ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a fill of a parameter's length: the plan names the parameter, the runtime sets n from it") {
  auto v = ff::param<float>("v");
  auto n = ff::param<long long>("n");
  const ff::Program p(ff::outputs(ff::fill(n, v) * 2.0f, ff::reduce(ff::iota(n), ff::plus)));
  const ff::codegen::Plan plan = plan_of(p);
  REQUIRE(p.params().size() == 2);
  REQUIRE(plan.fill_length_param >= 0);
  CHECK(p.params()[static_cast<std::size_t>(plan.fill_length_param)].node().name == "n");
  CHECK(plan.fill_length == -1);
  // Nothing is read for the fill: no input argument in any kernel.
  for (const auto& k : plan.kernels)
    for (const auto& a : k.args) CHECK(a.kind != ff::codegen::Arg::Kind::Input);
  // A host size beside it: both are kept (the runtime checks that they agree).
  const ff::codegen::Plan both = plan_of(ff::Program(ff::outputs(ff::fill(n, 1) + ff::fill(5, 2))));
  CHECK(both.fill_length == 5);
  CHECK(both.fill_length_param == 0);
  // Two parameters' lengths in one program are refused, naming both.
  auto m = ff::param<int>("m");
  const std::string two = graph_error_of([&] { (void)plan_of(ff::Program(ff::outputs(ff::iota(n), ff::iota(m)))); });
  CHECK(contains(two, "fills of two parameters' lengths"));
  CHECK(contains(two, "$n"));
  CHECK(contains(two, "$m"));
}

TEST_CASE("the general broadcast plans each reduction's kernels, then the map, in one broadcast step") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  const auto e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, o, ff::max), o));
  const ff::codegen::Plan plan = plan_of(ff::Program(e / ff::broadcast(ff::segmented_reduce(e, o, ff::plus), o)));
  REQUIRE(plan.steps.size() == 1);
  CHECK(plan.steps[0].kind == ff::codegen::StepSpec::Kind::Broadcast);
  CHECK(plan.steps[0].bins == 2);  // two reductions
  REQUIRE(plan.kernels.size() == 5);
  const ff::codegen::KernelSpec& map = plan.kernels.back();
  CHECK(map.name == "ff_broadcast_map_f32");
  CHECK(map.registered == "broadcast segments");
  CHECK(contains(map.source, "#include <fuseflow/broadcast.cuh>"));
  CHECK(contains(map.source, "ff::broadcast::for_each_element<kBlock, kItems>(off_o, segments, n,"));
  // 1000 elements in 10 segments: the reductions' merge paths (segments average 100 > 8: no
  // short pass), then the map, the per-segment buffers shared.
  const ff::codegen::Schedule s = plan.schedule(std::vector<std::int64_t>{1000, 11});
  REQUIRE(s.launches.size() == 3);
  CHECK(plan.kernels[static_cast<std::size_t>(s.launches[0].kernel)].name == "ff_segmented_reduce_f32_max");
  CHECK(plan.kernels[static_cast<std::size_t>(s.launches[1].kernel)].name == "ff_segmented_reduce_f32_plus");
  CHECK(s.launches[2].kernel == 4);
  REQUIRE(s.launches[2].scratch.size() == 2);  // seg0, seg1: the reductions' outputs
  CHECK(s.launches[2].scratch[0] == s.launches[1].scratch[0]);  // the sum reads seg0 as the map does
}

TEST_CASE("what the broadcast path does not plan yet is a GraphError naming it") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto q = ff::input<long long>("q");
  auto k = ff::input<int>("k");
  const auto centred = x - ff::broadcast(ff::segmented_reduce(x, o, ff::plus), o);
  const std::string by_key = graph_error_of([&] {
    (void)plan_of(ff::Program(x - ff::broadcast_by_key(ff::reduce_by_key(k, x, ff::plus).values, k)));
  });
  CHECK(contains(by_key, "reduce_by_key in a program with a broadcast"));
  // A reduction's values find segments by its own offsets only.
  const auto by_o = ff::segmented_reduce(x, o, ff::max);
  const std::string cross = graph_error_of([&] {
    (void)plan_of(ff::Program(x - ff::broadcast(ff::segmented_reduce(x - ff::broadcast(by_o, o), q, ff::plus), q)));
  });
  CHECK(contains(cross, "the values of a segmented_reduce over q read a broadcast over other offsets, o"));
  const std::string other = graph_error_of([&] { (void)plan_of(ff::Program(ff::outputs(centred, ff::reduce(x, ff::plus)))); });
  CHECK(contains(other, "reduce in a program with a broadcast"));
}

TEST_CASE("two offsets arrays in one broadcast program: a domain, a flag and a segment cursor each") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto q = ff::input<int>("q");
  const auto sum_o = ff::segmented_reduce(x, o, ff::plus);
  const auto max_q = ff::segmented_reduce(x, q, ff::max);
  const ff::Program p(ff::outputs(x - ff::broadcast(sum_o, o) + ff::broadcast(max_q, q), max_q));
  const ff::codegen::Plan plan = plan_of(p);
  CHECK(plan.domains == 3);  // the elements, o, q
  REQUIRE(plan.checked_offsets.size() == 2);
  CHECK(plan.output_shapes.at(1).domain == plan.input_domain.at(2));  // max_q has q's segments
  const ff::codegen::KernelSpec& map = plan.kernels.back();
  REQUIRE(map.name == "ff_broadcast_map_f32");
  int flags = 0, counts = 0;
  for (const auto& a : map.args) {
    flags += a.kind == ff::codegen::Arg::Kind::InvalidFlag;
    counts += a.kind == ff::codegen::Arg::Kind::Length && a.index > 0;
  }
  CHECK(flags == 2);
  CHECK(counts == 2);
  CHECK(contains(map.source, "s_q = ff::rows::segment_from(off_q, segments_q, s_q, i);"));
  CHECK(contains(map.source, "seg0[s]"));
  CHECK(contains(map.source, "seg1[s_q]"));
  // 100 elements: 4 segments by o, 50 by q; each reduction's buffer has its own segments.
  const ff::codegen::Schedule s = plan.schedule(std::vector<std::int64_t>{100, 5, 51});
  REQUIRE(s.launches.size() >= 3);
  CHECK(s.launches.back().kernel == static_cast<int>(plan.kernels.size()) - 1);
}

TEST_CASE("per-row softmax: the block's shape by row length (RowsPolicy)") {
  // Rows of up to 2048 take 8 elements a thread; longer rows start from 4 with a budget of
  // 32 registers (two blocks per SM), and take more elements a thread only where a block of
  // 1024 would not hold the row.
  struct Shape {
    std::int64_t columns;
    const char* block;
    const char* items;
    const char* bounds;  // "" where the budget is the 8-element one
  };
  for (const Shape& s : {Shape{1024, "kBlock = 128;", "kItems = 8;", ""}, Shape{2048, "kBlock = 256;", "kItems = 8;", ""},
                         Shape{4096, "kBlock = 1024;", "kItems = 4;", "__launch_bounds__(1024, 2)"},
                         Shape{3000, "kBlock = 768;", "kItems = 4;", "__launch_bounds__(768, 2)"},
                         Shape{8192, "kBlock = 1024;", "kItems = 8;", ""}}) {
    CAPTURE(s.columns);
    auto x = ff::input<float>("x");
    const auto offs = ff::rows(x, s.columns);
    const auto e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs));
    const ff::codegen::Plan plan = plan_of(ff::Program(e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs)));
    REQUIRE(plan.kernels.size() == 1);
    CHECK(plan.kernels[0].registered == "rows");
    CHECK(contains(plan.kernels[0].source, s.block));
    CHECK(contains(plan.kernels[0].source, s.items));
    CHECK(contains(plan.kernels[0].source, s.bounds));
  }
}
