// Gather and shift of computed arrays (issue 25; passes/computed_tables.cpp, no GPU): a
// gather of a map of inputs is fused (the map applied to the gathered inputs, one kernel,
// no intermediate), and so is a map of inputs shifted backwards or forwards; any other
// computed table or shifted array (a scan's or a sort's result, a map of one) is computed
// by stage 1 into an intermediate of n elements that stage 2's
// kernel reads at computed positions; a histogram's bins and a segmented_reduce's results
// likewise, into an intermediate of their own length (the gather's length argument reads
// it); tables of a length only the device counts are refused.
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

std::string plan_error(const ff::Program& p) {
  try {
    (void)plan(p);
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a gather of a map of inputs is fused: one kernel gathers the inputs and applies the map") {
  auto t = ff::input<float>("t");
  auto u = ff::input<float>("u");
  auto idx = ff::input<int>("idx");
  auto y = ff::input<float>("y");
  const ff::codegen::Plan p = plan(ff::Program(y * ff::gather(ff::exp(t) + u * ff::cast<float>(ff::index()), idx)));
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.intermediates.empty());
  CHECK(has_note(p, "computed tables: a gather (or a shift) of a map of inputs"));
  const ff::codegen::KernelSpec& k = p.kernels[0];
  CHECK(args_of(k, Kind::Table) == 2);  // t and u, read at idx
  CHECK(args_of(k, Kind::InvalidFlag) == 1);  // checked
  CHECK(k.source.find("tab_t[") != std::string::npos);
  CHECK(k.source.find("tab_u[") != std::string::npos);
  CHECK(k.source.find("expf(") != std::string::npos);
  // t and u have a length of their own, one domain for both (the map's), not the elements'.
  const ff::Program program(y * ff::gather(ff::exp(t) + u * ff::cast<float>(ff::index()), idx));
  REQUIRE(p.input_domain.size() == 4);
  std::vector<int> domain_of(2, -1);
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    if (ff::same_node(program.inputs()[i], t)) domain_of[0] = p.input_domain[i];
    if (ff::same_node(program.inputs()[i], u)) domain_of[1] = p.input_domain[i];
  }
  CHECK(domain_of[0] > 0);
  CHECK(domain_of[0] == domain_of[1]);
}

TEST_CASE("a fused gather inside a segmented reduction keeps the user's op for the offsets' check") {
  auto vals = ff::input<float>("vals");
  auto x = ff::input<float>("x");
  auto cols = ff::input<int>("cols");
  auto offs = ff::input<long long>("offs");
  const ff::Expr y = ff::segmented_reduce(vals * ff::gather(x * x, cols), offs, ff::plus);
  const ff::Program program(y);
  const ff::codegen::Plan p = plan(program);
  CHECK(p.intermediates.empty());
  bool user_op = false;
  for (const auto& op : p.checked_offsets)
    if (op) user_op = user_op || op == program.ops().back();
  CHECK(user_op);
}

TEST_CASE("a map shifted backwards is fused: the stencil applies it to the neighbours it loads") {
  auto x = ff::input<float>("x");
  auto w = ff::input<float>("w");
  const ff::codegen::Plan p = plan(ff::Program(x - ff::shift(x * w + ff::cast<float>(ff::index()), -2, 7.0f)));
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.intermediates.empty());
  CHECK(p.kernels[0].name.find("stencil") != std::string::npos);
  CHECK(has_note(p, "x - select(index >= 2L, shift(x, -2, 0.0f) * shift(w, -2, 0.0f) + cast<f32>(index + -2L), 7.0f)"));
}

TEST_CASE("a map shifted forwards is fused: i + k < n tests the length of its first input") {
  auto x = ff::input<float>("x");
  auto w = ff::input<float>("w");
  const ff::codegen::Plan p = plan(ff::Program(x - ff::shift(x * w + ff::cast<float>(ff::index()), 3, 7.0f)));
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.intermediates.empty());
  CHECK(p.kernels[0].name.find("stencil") != std::string::npos);
  CHECK(has_note(p, "x - select(cuda<bool>(\"$0 < tab_x_n\", index + 3L), shift(x, 3, 0.0f) * shift(w, 3, 0.0f) + "
                    "cast<f32>(index + 3L), 7.0f)"));
  CHECK(p.kernels[0].source.find(" < tab_x_n)") != std::string::npos);  // the n of the test, a kernel argument
  // The first input read element by element names n, not a gather's table (t has a length of its own).
  auto t = ff::input<float>("t");
  auto idx = ff::input<int>("idx");
  const ff::codegen::Plan q = plan(ff::Program(ff::reduce(ff::shift(ff::gather(t, idx) * x, 1, 0.0f), ff::plus)));
  CHECK(q.intermediates.empty());
  CHECK(has_note(q, "cuda<bool>(\"$0 < tab_idx_n\", index + 1L)"));
}

TEST_CASE("a map of an op's result shifted forwards is computed by stage 1 into an intermediate that the stencil reads") {
  auto x = ff::input<float>("x");
  const ff::Expr y = ff::scan(x, ff::plus) * 2.0f;
  const ff::codegen::Plan p = plan(ff::Program(x - ff::shift(y, 1, 0.0f)));
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].output == -1);
  CHECK(p.intermediates[0].domain == 0);
  CHECK(p.intermediates[0].role.find("read at computed positions") != std::string::npos);
  REQUIRE(p.kernels.size() >= 2);
  CHECK(p.kernels.back().name.find("stencil") != std::string::npos);
  CHECK(args_of(p.kernels.back(), Kind::Intermediate, 0) >= 1);  // stage 2 reads it
}

TEST_CASE("a shifted array that is also an output is written once, into the output") {
  auto x = ff::input<float>("x");
  const ff::Expr y = ff::scan(x, ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(y, y - ff::shift(y, 1, 0.0f)));
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].output == 0);
  REQUIRE(p.kernels.size() >= 2);
  CHECK(args_of(p.kernels.back(), Kind::Output, 1) == 1);
}

TEST_CASE("a scan's and a sort's result as gather tables and shifted arrays: staged, n elements") {
  auto x = ff::input<float>("x");
  auto idx = ff::input<int>("idx");
  auto k = ff::input<int>("k");
  SUBCASE("scan") {
    const ff::codegen::Plan p = plan(ff::Program(ff::gather(ff::scan(x, ff::plus), idx) + x));
    REQUIRE(p.intermediates.size() == 1);
    CHECK(p.intermediates[0].domain == 0);
    CHECK(args_of(p.kernels.back(), Kind::Intermediate, 0) == 1);
    CHECK(args_of(p.kernels.back(), Kind::InvalidFlag) == 1);
    // The table's length is n: the table length argument reads domain 0.
    CHECK(std::none_of(p.input_domain.begin(), p.input_domain.end(), [](int d) { return d != 0; }));
  }
  SUBCASE("segmented scan") {
    auto offs = ff::input<long long>("offs");
    const ff::Expr s = ff::segmented_scan(x, offs, ff::plus);
    const ff::codegen::Plan p = plan(ff::Program(x - ff::shift(s, -1, 0.0f)));
    REQUIRE(p.intermediates.size() == 1);
    CHECK(p.intermediates[0].role.find("segmented_scan") != std::string::npos);
    CHECK(args_of(p.kernels.back(), Kind::Intermediate, 0) >= 1);
  }
  SUBCASE("sort, gathered and shifted") {
    const ff::Expr s = ff::counting_sort(k, 16);
    const ff::codegen::Plan p = plan(ff::outputs(ff::gather_unchecked(s, k), ff::reduce(s - ff::shift(s, 1, 0), ff::plus)));
    REQUIRE(p.intermediates.size() == 1);
    CHECK(p.intermediates[0].role.find("counting_sort") != std::string::npos);
  }
}

TEST_CASE("a histogram's bins and a segmented_reduce's results as gather tables: stage 1, their own length") {
  auto b = ff::input<int>("b");
  auto w = ff::input<float>("w");
  auto x = ff::input<float>("x");
  auto offs = ff::input<long long>("offs");
  auto seg = ff::input<int>("seg");
  SUBCASE("bins, counted and weighted: intermediates of 16, zeroed, the gather's length theirs") {
    const ff::Expr counts = ff::histogram(b, 16);
    const ff::codegen::Plan p =
        plan(ff::Program(ff::cast<float>(ff::gather(counts, b)) + ff::gather(ff::histogram(b, w, 16), b)));
    REQUIRE(p.intermediates.size() == 2);
    for (const auto& im : p.intermediates) {
      CHECK(im.fixed == 16);
      CHECK(im.zeroed);
      CHECK(im.output < 0);
    }
    REQUIRE(p.kernels.size() >= 3);
    const ff::codegen::KernelSpec& last = p.kernels.back();
    CHECK(args_of(last, Kind::Intermediate) == 2);
    CHECK(args_of(last, Kind::IntermediateLength, 0) == 1);
    CHECK(args_of(last, Kind::IntermediateLength, 1) == 1);
    CHECK(args_of(last, Kind::InvalidFlag) == 1);
    CHECK(p.intermediates[0].length({5}) == 16);
    for (std::size_t i = 0; i + 1 < p.kernels.size(); ++i)  // the histograms write the tables, first
      CHECK(args_of(p.kernels[i], Kind::IntermediateLength) == 0);
    // Room for the bins, not n: 16 of 4 bytes each even where n is 0.
    CHECK(p.schedule(std::int64_t{0}).scratch_bytes >= 64);
  }
  SUBCASE("bins that are an output as well: one intermediate, in the output, of 16") {
    const ff::Expr counts = ff::histogram(b, 16);
    const ff::codegen::Plan p = plan(ff::outputs(ff::gather(counts, b), counts));
    REQUIRE(p.intermediates.size() == 1);
    CHECK(p.intermediates[0].output == 1);
    REQUIRE(p.output_shapes.size() == 2);
    CHECK(p.output_shapes[1].fixed == 16);
    CHECK(p.output_shapes[1].zeroed);
  }
  SUBCASE("a map of bins: fused, the map applied to the counts gathered from the staged bins") {
    const ff::codegen::Plan p = plan(ff::Program(ff::gather(ff::cast<float>(ff::histogram(b, 16)) * 2.0f, b)));
    CHECK(has_note(p, "computed tables: a gather (or a shift) of a map of inputs"));
    REQUIRE(p.intermediates.size() == 1);
    CHECK(p.intermediates[0].fixed == 16);
    CHECK(args_of(p.kernels.back(), Kind::IntermediateLength, 0) == 1);
    CHECK(p.kernels.back().source.find("(float)") != std::string::npos);  // the cast, after the gather
  }
  SUBCASE("segments: an intermediate of the offsets' domain less one") {
    const ff::codegen::Plan p = plan(ff::Program(ff::gather(ff::segmented_reduce(x, offs, ff::plus), seg)));
    REQUIRE(p.intermediates.size() == 1);
    const auto& im = p.intermediates[0];
    CHECK(im.fixed == -1);
    CHECK(im.less == 1);
    REQUIRE(p.input_domain.size() == 3);
    CHECK(im.domain == p.input_domain[1]);  // offs's
    CHECK(im.domain != 0);
    CHECK(p.input_domain[2] == 0);  // seg: the elements
    CHECK(im.length({100, 8}) == 7);
    CHECK(im.length({100, 0}) == 0);
    CHECK(args_of(p.kernels.back(), Kind::IntermediateLength, 0) == 1);
    CHECK(args_of(p.kernels.back(), Kind::Intermediate, 0) == 1);
  }
  SUBCASE("segments by offsets the program computes: the sums of the offsets' own domain less one") {
    auto lengths = ff::input<int>("lengths");
    const ff::Expr sums = ff::segmented_reduce(x, ff::scan(lengths, ff::plus, ff::exclusive), ff::plus);
    const ff::codegen::Plan p = plan(ff::Program(ff::gather(sums, seg)));
    REQUIRE(p.intermediates.size() == 2);  // the sums (the table), the offsets (their own length)
    const auto& table = p.intermediates[0];
    const auto& offsets = p.intermediates[1];
    CHECK(offsets.own_length);
    CHECK(table.less == 1);
    CHECK(table.domain == offsets.domain);
    CHECK(table.domain != 0);
    CHECK(args_of(p.kernels.back(), Kind::IntermediateLength, 0) == 1);
  }
}

TEST_CASE("computed tables without a length the run knows are refused, naming why") {
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  auto idx = ff::input<int>("idx");
  auto offs = ff::input<long long>("offs");
  std::string e = plan_error(ff::Program(ff::gather(ff::cast<float>(ff::histogram(k, 4)) + x, idx)));
  INFO(e);
  CHECK(e.find("a gather's table") != std::string::npos);
  CHECK(e.find("histogram's bins mixed with arrays of another length") != std::string::npos);
  e = plan_error(ff::Program(ff::shift(ff::filter(x, x > 0.0f), 1, 0.0f)));
  CHECK(e.find("a shifted array") != std::string::npos);
  CHECK(e.find("as many elements as the device counts") != std::string::npos);
  e = plan_error(ff::Program(ff::gather(ff::filter(x, x > 0.0f), idx)));
  CHECK(e.find("a gather's table") != std::string::npos);
  CHECK(e.find("as many elements as the device counts") != std::string::npos);
  e = plan_error(ff::Program(ff::gather(ff::reduce_by_key(k, x, ff::plus).values, idx)));
  CHECK(e.find("the result of reduce_by_key, as many elements as the device counts") != std::string::npos);
  e = plan_error(ff::Program(x + ff::shift(ff::segmented_reduce(x, offs, ff::plus), 1, 0.0f)));
  CHECK(e.find("a shifted array") != std::string::npos);
  CHECK(e.find("one per segment, not one per element") != std::string::npos);
  e = plan_error(ff::Program(ff::gather(ff::fill(7, 1.0f), idx)));
  CHECK(e.find("an array of a length of its own") != std::string::npos);
}
