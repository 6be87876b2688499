// Broadcasts beside other ops in stages (issue 25; passes/computed_tables.cpp, stages.cpp,
// no GPU): a broadcast over ff::rows beside a reduction, scan or filter is an n-element array
// that stage 1's per-row kernel writes into an intermediate and stage 2 reads; broadcasts by
// offsets and broadcast_by_key in one program are stage 1 in two parts (the segmented
// reductions on the broadcast path, which checks the offsets, then reduce_by_key and the
// run numbers), stage 2 reading both.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;
using Kind = ff::codegen::Arg::Kind;

namespace {

ff::codegen::Plan plan(const ff::Program& p) { return ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")); }

int args_of(const ff::codegen::KernelSpec& k, Kind kind, int index = -1) {
  return static_cast<int>(std::count_if(k.args.begin(), k.args.end(), [&](const ff::codegen::Arg& a) {
    return a.kind == kind && (index < 0 || a.index == index);
  }));
}

bool has_note(const ff::codegen::Plan& p, const std::string& text) {
  return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("a reduction and a filter beside broadcasts over ff::rows: the per-row kernel writes them first") {
  auto x = ff::input<float>("x");
  auto offs = ff::rows(x, 256);
  const ff::Expr m = ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs);
  const ff::Expr e = ff::exp(x - m);
  const ff::Expr s = ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs);
  const ff::codegen::Plan p = plan(ff::outputs(ff::reduce(e / s, ff::plus), ff::filter(x - m, x > 0.0f)));
  REQUIRE(p.intermediates.size() == 2);
  for (const auto& im : p.intermediates) {
    CHECK(im.domain == 0);
    CHECK(im.output == -1);
    CHECK(im.role.find("over rows") != std::string::npos);
  }
  // Stage 1: one per-row kernel writing both broadcasts; stage 2 reads them element by element.
  REQUIRE(p.kernels.size() >= 3);
  CHECK(p.kernels[0].name.find("rows") != std::string::npos);
  CHECK(args_of(p.kernels[0], Kind::Intermediate) == 2);
  for (std::size_t i = 1; i < p.kernels.size(); ++i) CHECK(p.kernels[i].name.find("rows") == std::string::npos);
  CHECK(has_note(p, "stage 1 (kernels 1..1)"));
}

TEST_CASE("a per-row program alone is still one per-row kernel, without stages") {
  auto x = ff::input<float>("x");
  auto offs = ff::rows(x, 1024);
  const ff::Expr e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, offs, ff::max), offs));
  const ff::codegen::Plan p = plan(ff::Program(e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs)));
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.intermediates.empty());
}

TEST_CASE("broadcasts by offsets and by key in one program: stage 1 in two parts, the offsets checked") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto k = ff::input<int>("k");
  const ff::Expr rowmax = ff::broadcast(ff::segmented_reduce(x, o, ff::max), o);
  const ff::Expr runsum = ff::broadcast_by_key(ff::reduce_by_key(k, x, ff::plus).values, k);
  const ff::Program program(ff::outputs(x - rowmax + runsum, ff::reduce(x * runsum, ff::plus)));
  const ff::codegen::Plan p = plan(program);
  // Intermediates: the per-segment maxima (one per offset), the run totals, the run numbers.
  REQUIRE(p.intermediates.size() == 3);
  CHECK(std::count_if(p.intermediates.begin(), p.intermediates.end(), [](const auto& im) { return im.domain > 0; }) == 1);
  CHECK(has_note(p, ", then "));
  // The offsets are checked (the broadcast path's flag) under the user's segmented reduction.
  CHECK(std::any_of(p.checked_offsets.begin(), p.checked_offsets.end(),
                    [&](const auto& op) { return op && op->kind == ff::OpKind::SegmentedReduce; }));
  // Every kernel waits on the one before it (one stream), the last ones read the intermediates.
  for (std::size_t i = 1; i < p.kernels.size(); ++i) CHECK(p.kernels[i].order.after_kernel >= 0);
  int reads = 0;
  for (const auto& kern : p.kernels) reads += args_of(kern, Kind::Intermediate) > 0 ? 1 : 0;
  CHECK(reads >= 3);
}

TEST_CASE("a broadcast by offsets beside a sort's result read later: stage 1 in two parts too") {
  auto x = ff::input<float>("x");
  auto o = ff::input<long long>("o");
  auto k = ff::input<int>("k");
  const ff::Expr rowmax = ff::broadcast(ff::segmented_reduce(x, o, ff::max), o);
  const ff::codegen::Plan p =
      plan(ff::outputs(ff::reduce(x - rowmax, ff::plus), ff::reduce(ff::counting_sort(k, 16) * ff::index(), ff::plus)));
  REQUIRE(p.intermediates.size() == 2);
  CHECK(has_note(p, ", then "));
  CHECK(p.kernels.front().name.find("segmented") != std::string::npos);
}
