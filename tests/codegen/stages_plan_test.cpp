// Planning programs in stages (passes/stages.cpp, no GPU): a sort's or reduce_by_key's
// result read by a later map, reduction or scan cuts the program in two, stage 1 writing
// the results into intermediates (scratch, or the program output they are as well), stage
// 2 reading them; the kernels' arguments, the launch order and the schedule say so.
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

// The kernels (indexes into Plan::kernels) with an argument of `kind` and `index`.
std::vector<int> kernels_with(const ff::codegen::Plan& p, Kind kind, int index) {
  std::vector<int> out;
  for (std::size_t i = 0; i < p.kernels.size(); ++i)
    if (args_of(p.kernels[i], kind, index)) out.push_back(static_cast<int>(i));
  return out;
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

TEST_CASE("a sort's keys and values read by a scan and a reduction: the sort writes intermediates, stage 2 reads them") {
  auto k = ff::input<int>("k");
  auto v = ff::input<float>("v");
  auto [sk, sv] = ff::sort_by_key(k, v, 16);
  const ff::codegen::Plan p = plan(ff::outputs(ff::scan(sv, ff::plus), ff::reduce(sk * 2, ff::plus)));
  REQUIRE(p.intermediates.size() == 2);
  CHECK(p.intermediates[0].output == -1);  // in scratch: no output is the sorted array itself
  CHECK(p.intermediates[1].output == -1);
  CHECK_FALSE(p.intermediates[0].counted);
  // The sort writes both (kernel 1 of its two) and no program output.
  const std::vector<int> writers0 = kernels_with(p, Kind::Intermediate, 0);
  REQUIRE(!writers0.empty());
  const int sort_last = writers0.front();
  CHECK(p.kernels[static_cast<std::size_t>(sort_last)].name.find("ff_counting_sort") == 0);
  CHECK(args_of(p.kernels[static_cast<std::size_t>(sort_last)], Kind::Output) == 0);
  // Stage 2: a reduction reading the keys, a scan reading the values, each after the sort.
  for (std::size_t i = static_cast<std::size_t>(sort_last) + 1; i < p.kernels.size(); ++i) {
    const auto& kernel = p.kernels[i];
    CHECK(args_of(kernel, Kind::Input) == 0);  // k and v are read by the sort only
    CHECK(args_of(kernel, Kind::Intermediate) == 1);
    CHECK(kernel.order.after_kernel >= sort_last);
  }
  CHECK(kernels_with(p, Kind::Intermediate, 0).size() >= 2);  // the sort writes it, the scan reads it
  CHECK(kernels_with(p, Kind::Intermediate, 1).size() >= 2);
  CHECK(p.output_scalar[0] == -1);
  CHECK(p.output_scalar[1] >= 0);
  // The schedule puts the intermediates in scratch, n elements each, before the sort's own.
  const ff::codegen::Schedule s = p.schedule(1000);
  REQUIRE(s.intermediates.size() == 2);
  CHECK(s.intermediates[1] >= s.intermediates[0] + 1000 * sizeof(int));
  CHECK(s.scratch_bytes >= s.intermediates[1] + 1000 * sizeof(float));
  CHECK(p.kernels[static_cast<std::size_t>(s.launches.front().kernel)].name.find("ff_counting_sort") == 0);
  REQUIRE(!p.notes.empty());
  CHECK(p.notes.front().find("stages: 2 array results read later in the program cut it in two") == 0);
  const std::string text = ff::codegen::explain(ff::outputs(ff::scan(sv, ff::plus), ff::reduce(sk * 2, ff::plus)));
  CHECK(text.find("intermediate 0: f32 x n, result 1 of counting_sort, in scratch") != std::string::npos);
  CHECK(text.find("intermediate 1: i32 x n, result 0 of counting_sort, in scratch") != std::string::npos);
  CHECK(text.find("(intermediate 1)") != std::string::npos);
}

TEST_CASE("a sorted array that is also an output is written once, into the output, and read from there") {
  auto k = ff::input<unsigned>("k");
  const ff::Expr sorted = ff::sort(k);
  const ff::codegen::Plan p = plan(ff::outputs(sorted, ff::map(sorted, [](auto x) { return x + 1u; })));
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].output == 0);
  CHECK(kernels_with(p, Kind::Output, 0).empty());  // written as the intermediate
  REQUIRE(kernels_with(p, Kind::Output, 1).size() == 1);
  const int map = kernels_with(p, Kind::Output, 1).front();
  CHECK(args_of(p.kernels[static_cast<std::size_t>(map)], Kind::Intermediate, 0) == 1);
  CHECK(p.schedule(100).intermediates == std::vector<std::size_t>{0});  // no scratch for it
}

TEST_CASE("a program that reads no array op's result is planned in one stage, without intermediates") {
  auto k = ff::input<int>("k");
  auto v = ff::input<float>("v");
  const ff::codegen::Plan p = plan(ff::outputs(ff::sort_by_key(k, v, 16).values, ff::reduce(v, ff::plus)));
  CHECK(p.intermediates.empty());
  for (const auto& n : p.notes) CHECK(n.find("stages") == std::string::npos);
}

TEST_CASE("a sort of a sort's keys is cut twice: each sort writes its intermediate before the next reads it") {
  auto k = ff::input<int>("k");
  const ff::Expr first = ff::counting_sort(k, 8);
  const ff::Expr second = ff::counting_sort(first + 1, 16);
  const ff::codegen::Plan p = plan(ff::Program(ff::reduce(second * 3, ff::plus)));
  REQUIRE(p.intermediates.size() == 2);
  const std::vector<int> first_readers = kernels_with(p, Kind::Intermediate, 1);
  const std::vector<int> second_readers = kernels_with(p, Kind::Intermediate, 0);
  REQUIRE(!first_readers.empty());
  REQUIRE(!second_readers.empty());
  CHECK(first_readers.front() < second_readers.front());
  CHECK(args_of(p.kernels.back(), Kind::Intermediate, 0) == 1);  // the reduction reads the last sort's keys
}

TEST_CASE("reduce_by_key's totals in a later map and reduction: masked by the run count the device wrote") {
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(totals * 2.0f, ff::reduce(totals, ff::max), keys));
  REQUIRE(p.intermediates.size() == 2);
  CHECK(p.intermediates[0].counted);
  // The keys are output 2: their intermediate is that output, counted like it.
  int keys_at = p.intermediates[0].output == 2 ? 0 : 1;
  CHECK(p.intermediates[static_cast<std::size_t>(keys_at)].output == 2);
  REQUIRE(p.output_shapes.size() == 3);
  CHECK(p.output_shapes[0].counted);  // the map of the totals: a compaction of the runs
  CHECK(p.output_shapes[2].counted);
  CHECK(p.output_scalar[1] >= 0);
  // The consumers read the count the reduce_by_key kernel wrote, as a table.
  int count_readers = 0;
  for (const auto& kernel : p.kernels)
    if (args_of(kernel, Kind::IntermediateCount) && args_of(kernel, Kind::Output, 0) + args_of(kernel, Kind::ScalarOutput))
      ++count_readers;
  CHECK(count_readers >= 2);  // the masked reduction and the compaction (one or two kernels)
}

TEST_CASE("what stays refused: a histogram's result inside the program; a sort's result as segment offsets plans") {
  auto k = ff::input<int>("k");
  CHECK(plan_error(ff::Program(ff::histogram(k, 4) * 2)).find("histogram") != std::string::npos);
  auto x = ff::input<float>("x");
  // Computed offsets are staged over their own length (stage_domains_plan_test.cpp).
  CHECK(plan_error(ff::Program(ff::segmented_reduce(x, ff::counting_sort(k, 4), ff::plus))).empty());
}

TEST_CASE("reduce_by_key's runs mixed with an array of n elements are refused: their lengths differ") {
  auto k = ff::input<int>("k");
  auto x = ff::input<float>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const std::string e = plan_error(ff::Program(totals + x));
  CHECK(e.find("fuseflow: codegen: reduce_by_key(...) + x mixes reduce_by_key's results (one element per run") == 0);
  CHECK(e.find("with x, an array of another length") != std::string::npos);
  CHECK(plan_error(ff::Program(ff::reduce(ff::filter(totals, x > 0.0f), ff::plus))).find("mixes reduce_by_key") !=
        std::string::npos);
  CHECK(plan_error(ff::Program(ff::reduce(totals * ff::cast<float>(keys), ff::plus))).empty());  // one op's runs
}


TEST_CASE("a sort of a filter's result: stage 1 compacts the survivors (counted), the sort reads them and the count") {
  auto k = ff::input<int>("k");
  auto v = ff::input<float>("v");
  const ff::Expr sorted = ff::counting_sort(ff::filter(k, v > 0.0f), 16);
  const ff::codegen::Plan p = plan(ff::outputs(sorted, ff::reduce(sorted * 2, ff::plus)));
  REQUIRE(p.intermediates.size() == 2);
  CHECK(p.intermediates[0].counted);  // the survivors, as many as the compaction counted
  CHECK(p.intermediates[0].role == "the survivors counting_sort reads");
  CHECK_FALSE(p.intermediates[1].counted);  // the sort's n slots, the survivors' part first
  // The compaction writes intermediate 0 and its count; the sort reads both, no input.
  REQUIRE(p.kernels.front().name.find("ff_filter_compact") == 0);
  CHECK(args_of(p.kernels.front(), Kind::Intermediate, 0) == 1);
  CHECK(args_of(p.kernels.front(), Kind::IntermediateCount, 0) == 1);
  const std::vector<int> sort_readers = kernels_with(p, Kind::Intermediate, 0);
  REQUIRE(sort_readers.size() >= 2);
  const auto& sort = p.kernels[static_cast<std::size_t>(sort_readers[1])];
  CHECK(sort.name.find("ff_counting_sort") == 0);
  CHECK(args_of(sort, Kind::Input) == 0);
  CHECK(args_of(sort, Kind::IntermediateCount, 0) == 1);
  // The sorted array as an output is the survivors' part: a compaction with its own count.
  REQUIRE(p.output_shapes.size() == 2);
  CHECK(p.output_shapes[0].counted);
  CHECK(p.output_scalar[1] >= 0);
  // Past the count, keys are out of the bins' range (-1), which sorts after every bin: the
  // stable sort leaves them behind the survivors (those out of range too).
  const std::string text = ff::codegen::explain(ff::outputs(sorted));
  CHECK(text.find("counting_sort(select(index < cast<i64>(gather_unchecked(ff_stage_count_0, 0L)), ff_stage_0, "
                  "cast<i32>(-1L)), bins=16)") != std::string::npos);
  // Unsigned keys: the type's largest value, out of range or else the last bin a key reaches.
  auto u = ff::input<unsigned>("u");
  CHECK(ff::codegen::explain(ff::outputs(ff::counting_sort(ff::filter(u, u > 3u), 8)))
            .find("ff_stage_0, cast<u32>(18446744073709551615uL))") != std::string::npos);
}

TEST_CASE("reduce_by_key of a filter's result: a flag before the keys keeps the padding past the count a run apart") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(ff::filter(k, x > 0), ff::filter(x, x > 0), ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(keys, totals));
  REQUIRE(p.intermediates.size() == 3);
  CHECK(p.intermediates[0].type == ff::Type::tuple({ff::Type(ff::ScalarType::I32), ff::Type(ff::ScalarType::I32)}));
  // reduce_by_key's keys: (flag, key), the flag 0 for a survivor's run.
  bool flagged = false;
  for (const auto& im : p.intermediates)
    flagged = flagged || (im.role == "result 0 of reduce_by_key" && im.type.arity() == 2 && im.counted);
  CHECK(flagged);
  REQUIRE(p.output_shapes.size() == 2);
  CHECK(p.output_shapes[0].counted);
  CHECK(p.output_shapes[1].counted);
  const std::string text = ff::codegen::explain(ff::outputs(keys, totals));
  CHECK(text.find("where=%0.0[0] == 0") != std::string::npos);
}

TEST_CASE("scan_by_key's result read by a filter: cut like a sort's, n elements; a map of it as an output is not cut") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  const ff::Expr s = ff::scan_by_key(k, x, ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(ff::filter(s * 2, x > 0)));
  REQUIRE(p.intermediates.size() == 1);
  CHECK_FALSE(p.intermediates[0].counted);
  CHECK(p.kernels.front().name.find("ff_scan_by_key") == 0);
  CHECK(kernels_with(p, Kind::Intermediate, 0).size() >= 2);
  CHECK(plan(ff::outputs(s * 2 + x)).intermediates.empty());  // the scan's epilogue, in its kernel
}

TEST_CASE("a segmented op by offsets of a filter's result: stage 1 compacts the survivors, the offsets index them") {
  auto x = ff::input<float>("x");
  auto offs = ff::input<int>("offs");
  const ff::Expr sums = ff::segmented_reduce(ff::filter(x, x > 0.0f), offs, ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(sums, ff::segmented_scan(ff::filter(x, x > 0.0f) * 2.0f, offs, ff::plus)));
  // The survivors each op reads, counted (one compaction kernel writes both), and the
  // scan's n slots, cut again where the program reads their survivors' part.
  REQUIRE(p.intermediates.size() == 3);
  CHECK(p.intermediates[0].counted);
  CHECK(p.intermediates[0].role == "the survivors segmented_reduce reads");
  CHECK(p.intermediates[1].counted);
  CHECK(p.intermediates[1].role == "the survivors segmented_scan reads");
  CHECK_FALSE(p.intermediates[2].counted);
  CHECK(p.intermediates[2].role == "result 0 of segmented_scan");
  REQUIRE(p.kernels.front().name.find("ff_filter_compact") == 0);
  CHECK(args_of(p.kernels.front(), Kind::IntermediateCount) == 2);
  // The segmented reduction reads the survivors, the offsets input and the count (a table
  // of one element whose pointer is the intermediate's count word), and flags bad offsets
  // under the program's own op.
  const std::vector<int> readers = kernels_with(p, Kind::Intermediate, 0);
  REQUIRE(readers.size() >= 2);
  const auto& reduce = p.kernels[static_cast<std::size_t>(readers.back())];
  CHECK(reduce.name.find("ff_segmented_reduce") == 0);
  CHECK(args_of(reduce, Kind::IntermediateCount, 0) == 1);
  CHECK(args_of(reduce, Kind::Input) == 1);  // the offsets
  CHECK(args_of(reduce, Kind::InvalidFlag) == 1);
  REQUIRE(p.checked_offsets.size() == 2);
  for (const auto& op : p.checked_offsets) CHECK(op->values.kind() != ff::ExprKind::Input);  // the user's ops
  // The reduction has one result per segment (offsets less one); the scan's output is the
  // survivors' part of its n slots, counted like a filter's.
  REQUIRE(p.output_shapes.size() == 2);
  CHECK_FALSE(p.output_shapes[0].counted);
  CHECK(p.output_shapes[0].less == 1);
  CHECK(p.output_shapes[1].counted);
  // An offset past the survivors' count reads as -1, which the kernel's own check flags.
  const std::string text = ff::codegen::explain(ff::Program(sums));
  CHECK(text.find("select(cast<i64>(offs) <= cast<i64>(gather_unchecked(ff_stage_count_0, 0L)), cast<i64>(offs), "
                  "-1L)") != std::string::npos);
  const std::string source = ff::codegen::cuda_source(ff::Program(sums));
  CHECK(source.find("tab_ff_stage_count_0[") != std::string::npos);
}

TEST_CASE("index() beside reduce_by_key's runs is the run's position: the runs are the first slots, no survivor count") {
  auto k = ff::input<int>("k");
  auto x = ff::input<int>("x");
  auto [keys, totals] = ff::reduce_by_key(k, x, ff::plus);
  const ff::codegen::Plan p = plan(ff::Program(ff::reduce(ff::zip(totals, ff::index()), ff::argmax)));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[1].name.find("ff_reduce") == 0);  // a masked reduction, not a scan of survivor positions
  CHECK(args_of(p.kernels[1], Kind::IntermediateCount) == 1);
  const std::string text = ff::codegen::explain(ff::Program(ff::scan(totals + ff::cast<int>(ff::index()), ff::plus)));
  CHECK(text.find("filter(ff_stage_0 + cast<i32>(index), where=index < cast<i64>(gather_unchecked(ff_stage_count_0, "
                  "0L)))") != std::string::npos);
  // The runs beside an array of n elements stay refused: their lengths differ.
  CHECK(plan_error(ff::Program(totals * ff::cast<int>(ff::index()) + x)).find("mixes reduce_by_key's results") !=
        std::string::npos);
}

TEST_CASE("a reduction read by another beside index() among a filter's survivors: its values compacted first") {
  auto x = ff::input<int>("x");
  const ff::Expr ranked = ff::reduce(ff::cast<long long>(ff::filter(x, x > 0)) * ff::index(), ff::plus);
  const ff::Expr later = ff::reduce(ff::cast<long long>(x) + ranked, ff::plus);
  const ff::codegen::Plan p = plan(ff::outputs(later, ranked));
  // Stage 1 compacts cast(filter(x, x > 0)) * index() (index() the position among the
  // survivors, applied as each is written), counted; stage 2 reduces it masked by the count,
  // then the reduction that reads it: no survivor-position scan.
  REQUIRE(p.intermediates.size() == 1);
  CHECK(p.intermediates[0].counted);
  CHECK(p.intermediates[0].role == "the survivors reduce reads");
  REQUIRE(p.kernels.front().name.find("ff_filter_compact") == 0);
  for (const auto& k : p.kernels) CHECK(k.name.find("survivor_positions") == std::string::npos);
  const std::vector<int> readers = kernels_with(p, Kind::Intermediate, 0);
  REQUIRE(readers.size() >= 2);
  const auto& masked = p.kernels[static_cast<std::size_t>(readers.back())];
  CHECK(masked.name.find("ff_reduce") == 0);
  CHECK(args_of(masked, Kind::IntermediateCount, 0) == 1);
  CHECK(args_of(masked, Kind::ScalarOutput) == 1);
  CHECK(args_of(p.kernels.back(), Kind::Scalar) == 1);  // the later reduction reads it on the device
  CHECK(p.output_scalar[0] >= 0);
  CHECK(p.output_scalar[1] >= 0);
  // Read by nothing but the outputs, it stays one pass (the positions scanned as it folds).
  CHECK(plan(ff::Program(ranked)).intermediates.empty());
}
