// Planning segment offsets the program computes (passes/stage_domains.cpp, no GPU): a scan
// of row lengths or a sort's keys read as offsets, a broadcast over offsets that are an
// expression beside other ops. Stage 1 computes the offsets alone into an intermediate of
// their own length, its launches over the domain of the inputs it reads (StepSpec::over);
// stage 2 reads the intermediate as offsets of that domain. What stays refused is a clear
// GraphError.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;
using Kind = ff::codegen::Arg::Kind;

namespace {

ff::codegen::Plan plan(const ff::Program& p) { return ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")); }

const ff::codegen::Arg* arg_named(const ff::codegen::KernelSpec& k, const std::string& name) {
  for (const auto& a : k.args)
    if (a.name == name) return &a;
  return nullptr;
}

int index_of_input(const ff::Program& p, const ff::Expr& in) {
  for (std::size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].get() == in.get()) return static_cast<int>(i);
  return -1;
}

std::string plan_error(const ff::Program& p) {
  try {
    (void)plan(p);
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("CSR offsets as an exclusive scan of row lengths: the scan runs over the lengths' domain, stage 2 reads its intermediate as offsets") {
  auto vals = ff::input<int>("vals");
  auto lengths = ff::input<int>("lengths");
  const ff::Expr offs = ff::scan(lengths, ff::plus, ff::exclusive);
  const ff::Program prog = ff::outputs(ff::segmented_reduce(vals, offs, ff::plus), ff::segmented_scan(vals, offs, ff::max));
  const ff::codegen::Plan p = plan(prog);
  REQUIRE(p.intermediates.size() == 1);
  const ff::codegen::Intermediate& im = p.intermediates[0];
  CHECK(im.own_length);
  CHECK_FALSE(im.counted);
  CHECK(im.output == -1);
  const int d = im.domain;
  REQUIRE(d > 0);
  REQUIRE(p.input_domain.size() == 2);
  CHECK(p.input_domain[static_cast<std::size_t>(index_of_input(prog, lengths))] == d);
  CHECK(p.input_domain[static_cast<std::size_t>(index_of_input(prog, vals))] == 0);
  // The scan's steps run over the lengths' domain, every later one over the elements.
  REQUIRE(!p.steps.empty());
  CHECK(p.steps.front().over == d);
  for (std::size_t s = 1; s < p.steps.size(); ++s) CHECK(p.steps[s].over == 0);
  // The segmented kernels read the intermediate as their offsets, counted by its domain.
  int readers = 0;
  for (const auto& k : p.kernels) {
    const ff::codegen::Arg* off = arg_named(k, "off_ff_stage_0");
    if (!off) continue;
    ++readers;
    CHECK(off->kind == Kind::Intermediate);
    const ff::codegen::Arg* count = arg_named(k, "offsets_count");
    REQUIRE(count != nullptr);
    CHECK(count->kind == Kind::Length);
    CHECK(count->index == d);
  }
  CHECK(readers >= 2);
  // Output 0 has one element per segment: the lengths' count less one.
  REQUIRE(p.output_shapes.size() == 2);
  CHECK(p.output_shapes[0].domain == d);
  CHECK(p.output_shapes[0].less == 1);
  // The schedule: the scan's launches over 11 lengths, its intermediate room for 11.
  std::vector<std::int64_t> lengths_of(static_cast<std::size_t>(p.domains), 0);
  lengths_of[0] = 100000;
  lengths_of[static_cast<std::size_t>(d)] = 11;
  const ff::codegen::Schedule s = p.schedule(lengths_of);
  REQUIRE(!s.launches.empty());
  CHECK(s.launches.front().n == 11);
  REQUIRE(s.intermediates.size() == 1);
  CHECK(std::any_of(s.launches.begin(), s.launches.end(), [](const auto& l) { return l.n == 100000; }));
  const std::string text = ff::codegen::explain(prog);
  CHECK(text.find("intermediate 0: i32 x the length of domain " + std::to_string(d) +
                  ", the segment offsets scan(...), of their own length, in scratch") !=
        std::string::npos);
}

TEST_CASE("a sort's keys as segment offsets (sorted positions): the sort is stage 1 over the keys' domain") {
  auto x = ff::input<float>("x");
  auto cuts = ff::input<int>("cuts");
  const ff::Program prog(ff::segmented_reduce(x, ff::counting_sort(cuts, 4096), ff::plus));
  const ff::codegen::Plan p = plan(prog);
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].own_length);
  const int d = p.intermediates[0].domain;
  CHECK(d > 0);
  CHECK(p.input_domain[static_cast<std::size_t>(index_of_input(prog, cuts))] == d);
  CHECK(p.kernels.front().name.find("counting_sort") != std::string::npos);
  for (const auto& step : p.steps)
    if (step.kind == ff::codegen::StepSpec::Kind::CountingSort) CHECK(step.over == d);
  // Offsets of a sort's keys mapped: staged whole, a map of the sorted keys.
  const ff::Expr shifted = ff::counting_sort(cuts, 4096) + 1;
  const ff::codegen::Plan q = plan(ff::Program(ff::segmented_scan(x, shifted, ff::plus)));
  REQUIRE(q.intermediates.size() == 2);  // the sort's keys (cut inside the offsets' part), the offsets
  for (const auto& im : q.intermediates) CHECK(im.domain == q.intermediates.back().domain);  // both over the keys' length
  CHECK(q.intermediates.back().domain > 0);
  CHECK(std::count_if(q.intermediates.begin(), q.intermediates.end(), [](const auto& im) { return im.own_length; }) == 1);
}

TEST_CASE("a broadcast over offsets that are an expression, beside a reduction: the offsets staged first, then the broadcast's reductions, then the rest") {
  auto x = ff::input<float>("x");
  auto offs = ff::input<int>("offs");
  const ff::Expr o = offs + 0;
  const ff::Expr centred = x - ff::broadcast(ff::segmented_reduce(x, o, ff::max), o);
  const ff::Program prog = ff::outputs(ff::reduce(centred, ff::plus), ff::scan(centred, ff::plus));
  const ff::codegen::Plan p = plan(prog);
  REQUIRE(p.intermediates.size() == 2);
  CHECK(p.intermediates[0].own_length);
  const int d = p.intermediates[0].domain;
  CHECK(d > 0);
  CHECK(p.input_domain[static_cast<std::size_t>(index_of_input(prog, offs))] == d);
  // The per-segment maxima: one per offset of the same domain, read by the later kernels.
  CHECK_FALSE(p.intermediates[1].own_length);
  CHECK(p.intermediates[1].domain == d);
  CHECK(p.steps.front().over == d);
  for (std::size_t s = 1; s < p.steps.size(); ++s) CHECK(p.steps[s].over == 0);  // the broadcast's step over the elements
  CHECK(p.output_scalar[0] >= 0);

  // Offsets computed by a scan of lengths under a broadcast, with the elements' map as an output.
  auto lengths = ff::input<int>("lengths");
  const ff::Expr starts = ff::scan(lengths, ff::plus, ff::exclusive);
  const ff::Expr e = ff::exp(x - ff::broadcast(ff::segmented_reduce(x, starts, ff::max), starts));
  const ff::codegen::Plan q = plan(ff::outputs(e, ff::reduce(e, ff::plus)));
  REQUIRE(q.intermediates.size() == 2);
  CHECK(q.intermediates[0].own_length);
  CHECK(q.intermediates[1].domain == q.intermediates[0].domain);
}

TEST_CASE("computed offsets that stay refused: counted ones, no input's length, an input read both ways") {
  auto x = ff::input<float>("x");
  auto offs = ff::input<int>("offs");
  auto lengths = ff::input<int>("lengths");
  const std::string counted = plan_error(ff::Program(ff::segmented_reduce(x, ff::filter(offs, offs >= 0), ff::plus)));
  CHECK(counted.find("fuseflow: codegen: segment offsets filter(") == 0);
  CHECK(counted.find("whose length only the device counts") != std::string::npos);
  auto k = ff::input<int>("k");
  const std::string keyed =
      plan_error(ff::Program(ff::segmented_reduce(x, ff::reduce_by_key(k, offs, ff::plus).values, ff::plus)));
  CHECK(keyed.find("reduce_by_key, whose length only the device counts") != std::string::npos);
  const std::string bins = plan_error(ff::Program(ff::segmented_reduce(x, ff::histogram(k, 16), ff::plus)));
  CHECK(bins.find("have a length no input array gives (a histogram's bins") != std::string::npos);
  const ff::Expr starts = ff::scan(lengths, ff::plus, ff::exclusive);
  const std::string both = plan_error(
      ff::outputs(ff::segmented_reduce(x, starts, ff::plus), ff::reduce(x * ff::cast<float>(lengths), ff::plus)));
  CHECK(both.find("fuseflow: codegen: input 'lengths' is read both as elements and through the segment offsets") == 0);
  const std::string twice = plan_error(ff::outputs(ff::segmented_reduce(x, starts, ff::plus), starts * 2));
  CHECK(twice.find("are read as elements too") != std::string::npos);
}
