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

TEST_CASE("what the broadcast paths do not plan yet is a GraphError naming it") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto q = ff::input<long long>("q");
  auto k = ff::input<int>("k");
  const auto centred = x - ff::broadcast(ff::segmented_reduce(x, o, ff::plus), o);
  // broadcast_by_key numbers each element's run from the key before it: not of tuple keys,
  // nor of keys read through a gather.
  const auto pair = ff::zip(k, k * 2);
  const std::string tuple = graph_error_of([&] {
    (void)plan_of(ff::Program(x - ff::broadcast_by_key(ff::reduce_by_key(pair, x, ff::plus).values, pair)));
  });
  CHECK(contains(tuple, "broadcast_by_key of reduce_by_key over keys (k, k * 2) of a tuple type"));
  auto t = ff::input<int>("t");
  const auto looked_up = ff::gather(t, ff::cast<long long>(k));
  const std::string gathered = graph_error_of([&] {
    (void)plan_of(ff::Program(x - ff::broadcast_by_key(ff::reduce_by_key(looked_up, x, ff::plus).values, looked_up)));
  });
  CHECK(contains(gathered, "reading gather(t, cast<i64>(k))"));
  // A reduction's values find segments by its own offsets only.
  const auto by_o = ff::segmented_reduce(x, o, ff::max);
  const std::string cross = graph_error_of([&] {
    (void)plan_of(ff::Program(x - ff::broadcast(ff::segmented_reduce(x - ff::broadcast(by_o, o), q, ff::plus), q)));
  });
  CHECK(contains(cross, "the values of a segmented_reduce over q read a broadcast over other offsets, o"));
  // Ops beside a broadcast over ff::rows offsets: planned now (the per-row kernel writes the
  // broadcast first; broadcast_stages_plan_test), unless the rows do not fit a block.
  const auto rows = ff::rows(x, 1024);
  CHECK(plan_of(ff::Program(ff::outputs(x - ff::broadcast(ff::segmented_reduce(x, rows, ff::plus), rows),
                                        ff::reduce(x, ff::plus)))).intermediates.size() == 1);
  const auto long_rows = ff::rows(x, 1 << 20);
  const std::string other = graph_error_of([&] {
    (void)plan_of(ff::Program(ff::outputs(x - ff::broadcast(ff::segmented_reduce(x, long_rows, ff::plus), long_rows),
                                          ff::reduce(x, ff::plus))));
  });
  CHECK(contains(other, "do not fit a block"));
  // A per-segment result read as an array by an op beside its broadcast (one element per segment).
  const auto sum = ff::segmented_reduce(x, o, ff::plus);
  const std::string as_array = graph_error_of([&] {
    (void)plan_of(ff::Program(ff::outputs(x - ff::broadcast(sum, o), ff::reduce(sum, ff::plus))));
  });
  CHECK(contains(as_array, "reading the per-segment results of a segmented_reduce over o as an array beside a broadcast of them"));
  CHECK(plan_of(ff::Program(ff::outputs(centred, ff::reduce(x, ff::plus)))).intermediates.size() == 1);  // planned now
}

TEST_CASE("ops beside a broadcast: the segmented reductions first, their results intermediates the later kernels search") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  const auto top = ff::segmented_reduce(x, o, ff::max);
  const auto centred = x - ff::broadcast(top, o);
  const ff::Program p(ff::outputs(ff::reduce(centred, ff::plus), ff::filter(centred, x > 0.0f), top));
  const ff::codegen::Plan plan = plan_of(p);
  REQUIRE(plan.intermediates.size() == 1);
  const ff::codegen::Intermediate& im = plan.intermediates[0];
  CHECK(im.domain == plan.input_domain.at(1));  // one per offset of o
  CHECK(im.output == 2);                          // top is an output: written there
  CHECK(plan.output_shapes.at(2).domain == im.domain);
  CHECK(plan.output_shapes.at(2).less == 1);
  REQUIRE(plan.steps.size() >= 3);
  CHECK(plan.steps[0].kind == ff::codegen::StepSpec::Kind::Broadcast);
  // Stage 1's broadcast step has no element-wise output: its map only checks the offsets.
  const ff::codegen::KernelSpec& check = plan.kernels.at(static_cast<std::size_t>(plan.steps[0].kernel + plan.steps[0].kernels - 1));
  CHECK(check.name == "ff_broadcast_check_offsets");
  CHECK(check.max_grid == 1);
  CHECK(contains(check.source, "ff::broadcast::check_offsets(off_o, segments, n, offsets_invalid);"));
  CHECK(!contains(check.source, "for_each_element"));
  // Stage 2: the reduction and the compaction each find an element's segment by a binary
  // search over o and read the intermediate there.
  int readers = 0;
  for (std::size_t k = static_cast<std::size_t>(plan.steps[1].kernel); k < plan.kernels.size(); ++k) {
    const ff::codegen::KernelSpec& kernel = plan.kernels[k];
    if (!contains(kernel.source, "tab_ff_stage_0[")) continue;
    ++readers;
    CHECK(contains(kernel.source, " = tab_o_n - 1;  // the segment of element i in tab_o: a binary search"));
    bool intermediate = false;
    for (const auto& a : kernel.args)
      intermediate = intermediate || (a.kind == ff::codegen::Arg::Kind::Intermediate && a.name == "tab_ff_stage_0");
    CHECK(intermediate);
  }
  CHECK(readers >= 2);
  // 1000 elements, 10 segments: the intermediate lives in output 2 (no scratch for it).
  const ff::codegen::Schedule s = plan.schedule(std::vector<std::int64_t>{1000, 11});
  REQUIRE(s.intermediates.size() == 1);
  CHECK(s.intermediates[0] == 0);
  CHECK(contains(ff::explain(p), "intermediate 0: f32 x one per offset of domain 1"));
  // Not an output: in scratch, room for one per offset.
  const ff::codegen::Plan scratch = plan_of(ff::Program(ff::reduce(centred, ff::plus)));
  REQUIRE(scratch.intermediates.size() == 1);
  CHECK(scratch.intermediates[0].output == -1);
  const ff::codegen::Schedule t = scratch.schedule(std::vector<std::int64_t>{1000, 11});
  CHECK(t.scratch_bytes >= t.intermediates.at(0) + 11 * sizeof(float));
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

TEST_CASE("broadcast_by_key: reduce_by_key and a scan numbering the runs first, then a gather at run - 1") {
  auto x = ff::input<float>("x");
  auto k = ff::input<int>("k");
  const auto runs = ff::reduce_by_key(k / 4, x, ff::plus);
  const ff::codegen::Plan plan = plan_of(ff::Program(ff::outputs(x / ff::broadcast_by_key(runs.values, k / 4), runs.keys)));
  REQUIRE(plan.intermediates.size() == 3);  // the totals (scratch), the run numbers, the keys (output 1)
  CHECK(plan.intermediates[0].counted);
  CHECK(plan.intermediates[1].type == ff::Type(ff::ScalarType::I64));
  CHECK(!plan.intermediates[1].counted);
  CHECK(plan.intermediates[2].output == 1);
  bool numbered = false;
  for (const auto& n : plan.notes)
    numbered = numbered || contains(n, "scan(plus: i64, inclusive, select(index == 0L, 1L, cast<i64>(k / 4 != shift(k, -1, 0) / 4)))");
  CHECK(numbered);
  const ff::codegen::KernelSpec& map = plan.kernels.back();
  CHECK(contains(map.source, "tab_ff_stage_0["));
  bool table = false, runs_read = false;
  for (const auto& a : map.args) {
    table = table || (a.name == "tab_ff_stage_0" && a.kind == ff::codegen::Arg::Kind::Intermediate && a.index == 0);
    runs_read = runs_read || (a.kind == ff::codegen::Arg::Kind::Intermediate && a.index == 1);
  }
  CHECK(table);
  CHECK(runs_read);
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
