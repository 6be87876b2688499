// GPU execution tests for the second kernel of large scans (the staged tile; the pipelined
// scan on sm_90), forced at every size, and for the look-back state that runs share
// (helpers in scan_gpu_support.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include <fuseflow/fuseflow.hpp>

#include "gpu/scan_gpu_support.hpp"

namespace ff = fuseflow;
using namespace ff::test::scan_support;

namespace {

// Plain scans of 4-byte values take a second kernel from 2^24 elements: the pipelined
// scan on sm_90 and later, else a staged tile (elements re-read from shared memory, 11264
// per tile). scan_staged_from = 0 (FUSEFLOW_SCAN_STAGED_FROM) gives it to every size, so
// the sizes below cover first, middle and last tiles; scan_pipeline = false
// (FUSEFLOW_SCAN_PIPELINE=0) takes the staged tile on sm_90 too. The cases run on a
// Runtime of their own with these options (PlanVariant, gpu_test_support.hpp).
ff::codegen::PlanOptions second_kernel_everywhere(bool pipelined) {
  ff::codegen::PlanOptions options;
  options.scan_staged_from = 0;
  options.scan_pipeline = pipelined;
  return options;
}

// Requires that a scan of 1000 floats on the variant's Runtime launches `kernel` (and so do
// the cases' runs, planned with the same options), and that a plan for sm_90 with its
// options has it as its second kernel, picked at 1000 elements.
void require_second_kernel(ff::test::PlanVariant& variant, const std::string& kernel) {
  auto x = ff::input<float>("x");
  const ff::Program program(ff::scan(x, ff::plus));
  auto dev = variant.rt().upload(std::vector<float>(1000, 1.0f));
  variant.require_launch(program, {{x, dev}}, kernel);
  const ff::codegen::Plan plan = ff::codegen::plan(program, ff::codegen::Target::preset("sm_90"), variant.options());
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[1].name == kernel);
  CHECK(plan.schedule(1000).launches.at(0).kernel == 1);
}

// "The first non-zero element so far": associative, identity 0, not commutative, 4 bytes,
// so the pipelined reducer folds each round across the warp in order.
ff::Monoid first_nonzero() {
  return ff::monoid<int>([](auto a, auto b) { return ff::select(a != 0, a, b); }, 0, ff::non_commutative,
                         "first_nonzero");
}

// The pipelined scan (forced at every size) at these sizes: sums, exclusive, in place,
// max, maps before and after, a non-commutative monoid, two outputs.
void check_pipelined(const std::vector<std::int64_t>& sizes) {
  for (std::int64_t n : sizes) {
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic, true);
    run_sum<unsigned>(n, ff::exclusive, ff::strategy::automatic, true);
    run_against_reference<float, float>("pipelined max-scan", [](const ff::Expr& x) {
      return ff::Program(ff::scan(x, ff::max));
    }, n, -1e6, 1e6);
    run_against_reference<int, int>("pipelined scan with a map before and an epilogue over the input", [](const ff::Expr& x) {
      return ff::Program(ff::scan(ff::select(x > 0, x * 3 - 1, 0), ff::plus, ff::exclusive) * 2 + x);
    }, n, -1000, 1000);
    run_against_reference<int, int>("pipelined scan of a non-commutative monoid", [](const ff::Expr& x) {
      // Mostly zeros, so the first non-zero element moves along the array.
      return ff::Program(ff::scan(ff::select(x > 990, x, 0), first_nonzero()));
    }, n, -1000, 1000);
    run_against_reference<int, float>("pipelined scan, i32 input, f32 values, two outputs", [](const ff::Expr& x) {
      ff::Expr s = ff::scan(ff::cast<float>(x) * 0.5f, ff::plus);
      return ff::outputs(s, s * 2.0f);
    }, n, -1000, 1000);
  }
}

// A scan and a compaction in one program: two look-back launches per run, each with its
// own epoch, over the same status memory, which no run clears.
void run_scan_and_filter(ff::Runtime& rt, std::int64_t n, const std::string& what) {
  auto host = random_values<int>(n, -1000, 1000);
  auto x = ff::input<int>("x");
  ff::Program prog(ff::outputs(ff::scan(x, ff::plus), ff::filter(x, x > 0)));
  auto dev = rt.upload(host);
  std::vector<ff::Result> got = rt.run(prog, {{x, dev}});
  ff::HostBindings b;
  b.bind(x, ff::HostArray::from(host));
  auto want = ff::evaluate(prog, b);
  const std::string where = what + ", n = " + std::to_string(n);
  check_exact(got[0].download<int>(), want[0].array.to_vector<int>(), where + ", scan");
  check_exact(got[1].download<int>(), want[1].array.to_vector<int>(), where + ", filter");
}

}  // namespace

TEST_CASE("the staged tile of large scans, at every size: sums, exclusive, in place, max, a mask, a map before") {
  ff::test::PlanVariant staged(second_kernel_everywhere(false));
  require_second_kernel(staged, "ff_scan_lookback_staged_f32_plus");  // what the runs below take
  const std::vector<std::int64_t> sizes = ff::test::capped({1, 31, 1000, 11263, 11264, 11265, 3 * 11264 + 5, (1 << 20) + 7});
  for (std::int64_t n : sizes) {
    run_sum<int>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic);
    run_sum<float>(n, ff::inclusive, ff::strategy::automatic);
    run_sum<int>(n, ff::exclusive, ff::strategy::automatic, true);
    run_against_reference<float, float>("staged max-scan", [](const ff::Expr& x) {
      return ff::Program(ff::scan(x, ff::max));
    }, n, -1e6, 1e6);
    run_against_reference<int, int>("staged masked scan with a map before", [](const ff::Expr& x) {
      return ff::Program(ff::scan(ff::select(x > 0, x * 3 - 1, 0), ff::plus));
    }, n, -1000, 1000);
  }
}

TEST_CASE("the pipelined scan (sm_90), at every size: sums, exclusive, in place, max, maps before and after, "
          "a non-commutative monoid, unaligned views") {
  if (runtime().properties().cc_major < 9) {
    MESSAGE("left out: the pipelined scan needs sm_90 (the device is older)");
    return;
  }
  ff::test::PlanVariant pipelined(second_kernel_everywhere(true));
  require_second_kernel(pipelined, "ff_scan_pipelined_f32_plus");  // what the runs below take
  // Tiles of 12288: one element; a few; one tile and its edges; more tiles than the 4
  // stages; 2^20 + 7. More tiles than SMs (blocks go round the ring many times) and
  // 2^24 + 3: the case below, in the suite "long".
  check_pipelined(ff::test::capped({1, 3, 4, 5, 31, 1000, 12287, 12288, 12289, 4 * 12288 + 5, (1 << 20) + 7}));
  // Views that start 4 bytes past an aligned address: the input is copied without the
  // bulk copy engine, the output is written without 16-byte stores.
  ff::Runtime& rt = pipelined.rt();
  for (std::int64_t n : ff::test::capped({1000, 8193, (1 << 20) + 7})) {
    auto host = random_values<int>(n + 2, -1000, 1000);
    auto dev = rt.upload(host);
    auto out = rt.upload(std::vector<int>(static_cast<std::size_t>(n) + 1, -7));
    auto x = ff::input<int>("x");
    ff::Expr scanned = ff::scan(x, ff::plus);
    const auto count = static_cast<std::size_t>(n);
    rt.run(scanned, {{x, ff::device_span<int>(dev.data() + sizeof(int), count)},
                     {scanned, ff::device_span<int>(out.data() + sizeof(int), count)}});
    std::vector<int> got = out.download(), want(count + 1, -7);
    unsigned sum = 0;
    for (std::size_t i = 1; i <= count; ++i) want[i] = static_cast<int>(sum += static_cast<unsigned>(host[i]));
    check_exact(got, want, "pipelined scan of unaligned views, n = " + std::to_string(n));
  }
}

TEST_CASE("the pipelined scan (sm_90) over more tiles than SMs and at 2^24 + 3 elements" * doctest::test_suite("long")) {
  if (runtime().properties().cc_major < 9) {
    MESSAGE("left out: the pipelined scan needs sm_90 (the device is older)");
    return;
  }
  ff::test::PlanVariant pipelined(second_kernel_everywhere(true));
  require_second_kernel(pipelined, "ff_scan_pipelined_f32_plus");  // what the runs below take
  check_pipelined(ff::test::capped({300 * 12288 + 1, (1 << 24) + 3}));
}

TEST_CASE("look-back state is reused without clearing: sizes that grow and shrink, epochs that start again") {
  // Fresh inputs every run: an entry a run accepted from an earlier launch (stale status)
  // would carry another input's sums and show as a wrong element.
  const std::vector<std::int64_t> sizes =
      ff::test::capped({(1 << 20) + 7, 1000, 1 << 22, 33, 5000, (1 << 20) + 7, 1, 0, 1 << 22, 4099});
  for (std::int64_t n : sizes) run_scan_and_filter(runtime(), n, "shared runtime");
  // A runtime whose epochs start again every 3 launches: the status is zeroed in stream
  // order between runs, and within one run between its two launches.
  ff::RuntimeOptions options = ff::test::poisoned_options();
  options.lookback_epochs = 3;
  ff::Runtime restarting(options);
  REQUIRE(restarting.options().lookback_epochs == 3u);
  for (int round = 0; round < 2; ++round)
    for (std::int64_t n : sizes) run_scan_and_filter(restarting, n, "epochs restarted every 3 launches");
}
