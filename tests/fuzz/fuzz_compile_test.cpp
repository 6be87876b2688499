// Random programs on the CPU (runs in CI, no GPU): FUSEFLOW_FUZZ_COUNT (default 500)
// generated programs are planned for sm_90, and every kernel they produce compiles with
// NVRTC for sm_90 (every 10th program also for sm_80), with tiered compilation's tier-0
// options (CompileOptions::quick, no FMA contraction, -minimal: what a tiered Runtime's
// first run compiles; half the NVVM + ptxas time of the default options, bench/RESULTS.md
// "First-run compile"; the default options are compiled by the golden PTX tests for the
// catalog and by the GPU fuzz test for every seed it runs). Sources identical but for
// their leading comment lines (the program's text) are compiled once, on all cores. The kernels of the compaction, segmented-scan and by-key shapes
// take NVRTC about three times as long as the others (0.5 s against 0.15 s): to keep the
// test's CI time, only the even seeds of those shapes compile (all are planned, read back
// and checked for determinism; FUSEFLOW_FUZZ_SEED compiles its one; the GPU and emulator
// tests compile every one they run). The printer and the code generator are deterministic:
// two builds of the same seed print the same to_string text and give the same CUDA, byte
// for byte.
// Every program's text reads back: to_string(parse_program(to_string(p))) == to_string(p).
//
// A second case runs the comparison used by the GPU test on the CPU reference itself
// (f32 evaluation against the f64 one, sizes capped at 256): it checks that the
// generated programs evaluate (no division by zero, no type errors) and that the error
// bounds of the float checks hold for the host's math library.
//
// A third case plans every seed the GPU test runs (1..2000) and evaluates it on the CPU
// reference, as the GPU test prepares it: a program the generator got wrong (an output map
// over arrays of different lengths, seed 1475 before its fix) fails here, in CI.
//
// A failure prints the seed; FUSEFLOW_FUZZ_SEED=<seed> runs that program alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include <fuseflow/fuseflow.hpp>

#include "fuzz/program_generator.hpp"
#include "kernel_code.hpp"  // runtime/src: the code the kernel cache keys on

namespace ff = fuseflow;
namespace fz = fuseflow::fuzz;

namespace {

struct Job {
  std::uint64_t seed;
  std::string arch;
  std::string name;
  std::string source;
};

const std::vector<ff::Header>& headers() {
  static const std::vector<ff::Header> all = [] {
    std::vector<ff::Header> out;
    for (const auto& h : ff::codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return all;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("random programs read back from their text, plan deterministically and every kernel compiles with NVRTC") {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::uint64_t> seeds = fz::seeds_from_environment(500);
  std::vector<std::string> failures;
  std::vector<Job> jobs;
  std::map<std::string, std::size_t> job_of;  // arch + name + code: compile each distinct kernel once
  std::map<std::uint64_t, std::vector<std::size_t>> jobs_of_seed;
  std::map<std::uint64_t, std::string> known;  // seeds that hit a known code generator bug
  std::size_t kernels = 0, round_trips = 0, not_compiled = 0;
  const std::set<std::string> heavy = {"filter", "segmented_scan", "scan_by_key", "reduce_by_key"};
  std::map<std::string, int> shapes;

  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::uint64_t seed = seeds[i];
    fz::Case c;
    try {
      c = fz::generate(seed);
      ++shapes[c.shape];
      if (std::string bug = fz::known_bug(c); !bug.empty()) known[seed] = bug;
      fz::Built a = fz::build(c, fz::Mode::Narrow);
      fz::Built b = fz::build(fz::generate(seed), fz::Mode::Narrow);
      const std::string text = ff::to_string(a.program);
      if (text != ff::to_string(b.program)) {
        failures.push_back("to_string differs between two builds of the same seed:\n" + fz::describe(c) +
                           "\nsecond build:\n" + ff::to_string(b.program));
        continue;
      }
      if (const std::string again = ff::to_string(ff::parse_program(text)); again != text) {
        failures.push_back("to_string(parse_program(text)) differs from the text:\n" + fz::describe(c) +
                           "\nread back:\n" + again);
        continue;
      }
      ++round_trips;
      std::vector<std::string> archs = {"sm_90"};
      if (i % 10 == 0) archs.push_back("sm_80");
      for (const auto& arch : archs) {
        const ff::codegen::Target target = ff::codegen::Target::preset(arch);
        const std::string source_a = ff::codegen::cuda_source(a.program, target);
        const std::string source_b = ff::codegen::cuda_source(b.program, target);
        if (source_a != source_b) {
          failures.push_back("cuda_source for " + arch + " differs between two builds of the same seed:\n" + fz::describe(c));
          continue;
        }
        const ff::codegen::Plan plan = ff::codegen::plan(a.program, target);
        for (const auto& k : plan.kernels) {
          ++kernels;
          if (k.source.find(" " + k.name + "(") == std::string::npos) {
            failures.push_back("kernel " + k.name + " is not defined in its source:\n" + fz::describe(c));
            continue;
          }
          // A radix sort is 3 kernels per 8-bit pass (up to 12): compiled on even seeds, as the heavy shapes.
          const bool radix = std::any_of(c.ops.begin(), c.ops.end(), [](const fz::OpDesc& op) {
            return op.kind == ff::OpKind::CountingSort && op.bins == 0;
          });
          if (seeds.size() > 1 && (heavy.count(c.shape) || radix) && seed % 2 == 1) {  // a single seed always compiles
            ++not_compiled;
            continue;
          }
          auto [it, fresh] = job_of.emplace(arch + '\n' + k.name + '\n' + std::string(ff::detail::code_of(k.source)), jobs.size());
          if (fresh) jobs.push_back({seed, arch, k.name, k.source});
          jobs_of_seed[seed].push_back(it->second);
        }
      }
    } catch (const std::exception& e) {
      failures.push_back(std::string("generating or planning failed: ") + e.what() + "\n" + fz::describe(c));
    }
  }
  const double plan_seconds = seconds_since(start);

  // Compile the distinct kernels on all cores (the first one alone: NVRTC is loaded once).
  std::vector<std::string> errors(jobs.size());
  auto compile = [&](std::size_t j) {
    const Job& job = jobs[j];
    ff::CompileOptions options;  // tier 0 (tiered.cpp): the quick compile a tiered first run makes
    options.arch = job.arch;
    options.quick = true;
    options.fmad = false;
    options.minimal = true;
    try {
      ff::CompiledKernel binary = ff::Compiler::compile(job.source, job.name, options, headers());
      if (binary.image.empty()) errors[j] = "NVRTC produced an empty image";
    } catch (const std::exception& e) {
      errors[j] = e.what();
    }
  };
  const auto compile_start = std::chrono::steady_clock::now();
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  if (!jobs.empty()) {
    compile(0);
    std::atomic<std::size_t> next{1};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < workers; ++t)
      threads.emplace_back([&] {
        for (std::size_t j = next++; j < jobs.size(); j = next++) compile(j);
      });
    for (auto& t : threads) t.join();
  }
  for (const auto& [seed, indices] : jobs_of_seed) {
    std::string error;
    for (std::size_t j : indices)
      if (!errors[j].empty()) {
        error = "NVRTC (" + jobs[j].arch + ") rejected kernel " + jobs[j].name + ": " + errors[j];
        break;
      }
    auto bug = known.find(seed);
    if (bug == known.end() && !error.empty()) failures.push_back(error + "\n" + fz::describe(fz::generate(seed)));
    if (bug != known.end() && error.empty())
      failures.push_back("seed " + std::to_string(seed) + " hits known bug '" + bug->second +
                         "' but compiles now: remove the bug from known_bug() (describe.cpp)\n" +
                         fz::describe(fz::generate(seed)));
  }

  std::string shape_counts;
  for (const auto& [shape, count] : shapes) shape_counts += " " + shape + "=" + std::to_string(count);
  std::string known_seeds;
  for (const auto& [seed, bug] : known) known_seeds += " " + std::to_string(seed) + " (" + bug.substr(0, bug.find(':')) + ")";
  char summary[512];
  std::snprintf(summary, sizeof summary,
                "fuzz_compile_test: %zu programs (seeds %llu..%llu), %zu read back from their text, %zu kernels "
                "planned, %zu of them not compiled (odd seeds of the heavy shapes), %zu distinct compiled with NVRTC (tier-0 options) "
                "on %u threads; planning %.1f s, compiling %.1f s\n",
                seeds.size(), seeds.empty() ? 0ULL : static_cast<unsigned long long>(seeds.front()),
                seeds.empty() ? 0ULL : static_cast<unsigned long long>(seeds.back()), round_trips, kernels, not_compiled,
                jobs.size(),
                workers,
                plan_seconds, seconds_since(compile_start));
  std::string report = summary;
  report += "  shapes:" + shape_counts + "\n";
  report += "  known code generator bugs (still failing as expected):" + (known_seeds.empty() ? std::string(" none") : known_seeds) + "\n";
  for (const auto& f : failures) report += "\nFAILURE: " + f + "\n";
  std::printf("%s", report.c_str());
  fz::write_report("fuzz_compile_test", report);
  CHECK(failures.empty());
}

TEST_CASE("the differential comparison accepts the f32 CPU reference against the f64 one") {
  const std::vector<std::uint64_t> seeds = fz::seeds_from_environment(500);
  std::vector<std::string> failures;
  std::size_t outputs = 0, exact = 0;
  for (std::uint64_t seed : seeds) {
    fz::Case c;
    try {
      c = fz::generate(seed);
      if (!fz::known_bug(c).empty()) continue;  // evaluates fine; its CUDA does not compile
      // The error bounds only grow with n. Small sizes: the reference sums sequentially in
      // f32, whose error grows like n ulps for positive terms (the device's sums do not).
      c.n = std::min<std::int64_t>(c.n, 256);
      std::vector<ff::HostArray> inputs = fz::make_inputs(c);
      fz::Reference ref = fz::compute_reference(c, inputs);
      fz::Built b = fz::build(c, fz::Mode::Narrow);
      std::vector<ff::HostResult> got = ff::evaluate(b.program, fz::bind_data(c, b, inputs, fz::Mode::Narrow));
      for (std::size_t i = 0; i < c.outputs.size(); ++i) {
        ++outputs;
        if (fz::check_kind(c, i) == "exact") ++exact;
      }
      std::string mismatch = fz::compare(c, ref, got);
      if (!mismatch.empty()) failures.push_back(mismatch + "\n" + fz::describe(c));
    } catch (const std::exception& e) {
      failures.push_back(std::string("evaluation failed: ") + e.what() + "\n" + fz::describe(c));
    }
  }
  std::printf("fuzz reference self-check: %zu programs, %zu outputs (%zu compared exactly)\n", seeds.size(), outputs,
              exact);
  for (const auto& f : failures) std::printf("FAILURE: %s\n\n", f.c_str());
  CHECK(failures.empty());
}

// The shape of a seed comes from a Weyl sequence (generate_ops.cpp, shape_draw), so
// the emulator's 60 seeds meet every shape; this holds the shares and weights to that.
TEST_CASE("seeds 1..60 meet every shape at least 3 times") {
  std::map<std::string, int> count;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) ++count[fz::generate(seed).shape];
  std::string counts;
  for (const auto& [shape, k] : count) counts += " " + shape + "=" + std::to_string(k);
  INFO("shapes of seeds 1..60:" << counts);
  CHECK(count.size() == fz::all_shapes().size());
  for (const auto& shape : fz::all_shapes()) CHECK_MESSAGE(count[shape] >= 3, shape);
}

// The emulator's run (seeds 1..60) checks fill / iota of an input's length, the log-sum-exp
// pattern, per-row broadcasts and filter outputs mixing other inputs or index() against the CPU reference:
// this keeps them among its programs.
TEST_CASE("seeds 1..60 meet fill / iota, log-sum-exp, per-row broadcasts and filter outputs mixed with inputs or index()") {
  std::function<bool(const fz::NodeRef&, fz::NodeKind)> has = [&](const fz::NodeRef& n, fz::NodeKind k) {
    if (!n) return false;
    if (n->kind == k) return true;
    for (const auto& a : n->args)
      if (has(a, k)) return true;
    return false;
  };
  int fills = 0, lse = 0, filter_mixes = 0, broadcasts = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const fz::Case c = fz::generate(seed);
    bool fill = false;
    for (const auto& op : c.ops)
      fill = fill || has(op.values, fz::NodeKind::Fill) || has(op.predicate, fz::NodeKind::Fill) || has(op.keys, fz::NodeKind::Fill);
    for (const auto& o : c.outputs) {
      fill = fill || has(o.map, fz::NodeKind::Fill);
      broadcasts += has(o.map, fz::NodeKind::Broadcast) ? 1 : 0;
    }
    fills += fill ? 1 : 0;
    const std::string text = ff::to_string(fz::build(c, fz::Mode::Narrow).program);
    lse += text.find("reduce(plus: f32, exp(") != std::string::npos || text.find("reduce(plus: f64, exp(") != std::string::npos ? 1 : 0;
    for (const auto& o : c.outputs)
      if (!c.ops.empty() && c.ops.front().kind == ff::OpKind::Filter && o.map &&
          (has(o.map, fz::NodeKind::Input) || has(o.map, fz::NodeKind::Index)))
        ++filter_mixes;
  }
  INFO("fills " << fills << ", log-sum-exp " << lse << ", filter mixes " << filter_mixes << ", broadcasts " << broadcasts);
  CHECK(broadcasts >= 1);
  CHECK(fills >= 3);
  CHECK(lse >= 1);
  CHECK(filter_mixes >= 1);
}

// Every seed the GPU runs (1..2000, labels gpu and gpu-long) gives a valid program: it plans
// for sm_90, and the CPU reference evaluates it (as the GPU test prepares each seed) without
// a GraphError such as an output map over arrays of different lengths (fuzz seed 1475 mixed
// a scan of a filter's result, the survivors' length, with an input of all n elements).
// Sizes capped at 256, as above: a filter keeps fewer elements than n at such sizes.
TEST_CASE("seeds 1..2000 plan for sm_90 and evaluate on the CPU reference") {
  std::vector<std::string> failures;
  std::size_t planned = 0;
  const ff::codegen::Target target = ff::codegen::Target::preset("sm_90");
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    fz::Case c;
    try {
      c = fz::generate(seed);
      if (!fz::known_bug(c).empty()) continue;
      c.n = std::min<std::int64_t>(c.n, 256);
      const fz::Built b = fz::build(c, fz::Mode::Narrow);
      (void)ff::codegen::plan(b.program, target);
      ++planned;
      (void)fz::compute_reference(c, fz::make_inputs(c));
    } catch (const std::exception& e) {
      failures.push_back("seed " + std::to_string(seed) + ": " + e.what() + "\n" + fz::describe(c));
    }
  }
  std::printf("fuzz seeds 1..2000: %zu planned, %zu failed to plan or evaluate\n", planned, failures.size());
  for (const auto& f : failures) std::printf("FAILURE: %s\n\n", f.c_str());
  CHECK(failures.empty());
}

// The emulator's run (seeds 1..60) meets scan_by_key, reduce_by_key and sorts of a filter's
// result (shape filtered_keyed), and they plan through the staging pass: the survivors
// compacted into an intermediate before the op.
TEST_CASE("seeds 1..60 meet by-key ops and sorts of a filter's result, planned over the compacted survivors") {
  int seen = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const fz::Case c = fz::generate(seed);
    if (c.shape != "filtered_keyed") continue;
    INFO(fz::describe(c));
    const ff::codegen::Plan p = ff::codegen::plan(fz::build(c, fz::Mode::Narrow).program,
                                                  ff::codegen::Target::preset("sm_90"));
    CHECK(std::any_of(p.intermediates.begin(), p.intermediates.end(),
                      [](const ff::codegen::Intermediate& im) { return im.role.find("the survivors ") == 0; }));
    ++seen;
  }
  CHECK(seen >= 3);
}

// Issue 25's compositions among the programs of the emulator's run (seeds 1..60) and the
// GPU run (1..250): a reduction beside a broadcast over an offsets input (staged), and
// broadcast_by_key of reduce_by_key's keys.
TEST_CASE("seeds meet a reduction beside a broadcast over offsets and broadcast_by_key") {
  const auto count = [](std::uint64_t last, bool by_key) {
    int n = 0;
    for (std::uint64_t seed = 1; seed <= last; ++seed) {
      const std::string text = ff::to_string(fz::build(fz::generate(seed), fz::Mode::Narrow).program);
      const auto has = [&](const std::string& part) { return text.find(part) != std::string::npos; };
      n += (by_key ? has("broadcast_by_key(") : has(" = reduce(") && has("broadcast(%0, o)")) ? 1 : 0;
    }
    return n;
  };
  const int beside_60 = count(60, false), by_key_60 = count(60, true);
  const int beside_250 = count(250, false), by_key_250 = count(250, true);
  INFO("broadcasts beside a reduction: " << beside_60 << " of seeds 1..60, " << beside_250 << " of 1..250; "
       "broadcast_by_key: " << by_key_60 << ", " << by_key_250);
  CHECK(beside_250 >= 3);
  CHECK(by_key_250 >= 3);
  CHECK(beside_60 + by_key_60 >= 1);
}

// Issue 21's segmented ops by offsets of a filter's result (a variant of shape
// "filtered_keyed") among the programs of the emulator's run and the GPU run.
TEST_CASE("seeds meet a segmented op by offsets of a filter's result") {
  const auto count = [](std::uint64_t last) {
    int n = 0;
    for (std::uint64_t seed = 1; seed <= last; ++seed) {
      const fz::Case c = fz::generate(seed);
      n += std::any_of(c.ops.begin(), c.ops.end(), [](const fz::OpDesc& op) {
        return (op.kind == ff::OpKind::SegmentedReduce || op.kind == ff::OpKind::SegmentedScan) && op.predicate;
      });
    }
    return n;
  };
  const int in_60 = count(60), in_250 = count(250);
  INFO("segmented ops of a filter's result: " << in_60 << " of seeds 1..60, " << in_250 << " of 1..250");
  CHECK(in_60 >= 1);
  CHECK(in_250 >= 3);
}

// Gather and shift of computed arrays (issue 25): the programs of the emulator's run (seeds
// 1..60) and the GPU run (1..250) gather from or shift a map of an input (fused, or computed
// into an intermediate by stage 1), and every such seed of 1..250 plans.
namespace {
bool reads_computed_table(const ff::Expr& e, std::set<const void*>& seen) {
  if (!e.valid() || !seen.insert(e.get()).second) return false;
  if ((e.kind() == ff::ExprKind::Gather || e.kind() == ff::ExprKind::Shift) && e.args()[0].kind() != ff::ExprKind::Input)
    return true;
  if (e.kind() == ff::ExprKind::Result) {
    const ff::OpNode& op = *e.node().op;
    for (const ff::Expr* x : {&op.values, &op.predicate, &op.keys, &op.offsets})
      if (reads_computed_table(*x, seen)) return true;
  }
  return std::any_of(e.args().begin(), e.args().end(), [&](const ff::Expr& a) { return reads_computed_table(a, seen); });
}
}  // namespace

TEST_CASE("seeds meet gathers and shifts of computed arrays, and they plan") {
  int in_60 = 0, in_250 = 0;
  for (std::uint64_t seed = 1; seed <= 250; ++seed) {
    const ff::Program p = fz::build(fz::generate(seed), fz::Mode::Narrow).program;
    std::set<const void*> seen;
    const bool reads = std::any_of(p.outputs().begin(), p.outputs().end(),
                                   [&](const ff::Expr& o) { return reads_computed_table(o, seen); });
    if (!reads) continue;
    in_250 += 1;
    in_60 += seed <= 60 ? 1 : 0;
    INFO("seed " << seed << ": " << ff::to_string(p));
    CHECK_NOTHROW((void)ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")));
  }
  INFO("seeds reading a computed table: " << in_60 << " of 1..60, " << in_250 << " of 1..250");
  CHECK(in_60 >= 1);
  CHECK(in_250 >= 5);
}

// Issue 25's staged broadcasts among the programs of the GPU run (1..250): a reduction
// beside a broadcast over ff::rows, and broadcasts by offsets and by key in one program.
TEST_CASE("seeds meet a reduction beside a broadcast over rows, and broadcasts by offsets and by key together") {
  int rows = 0, both = 0, rows_60 = 0, both_60 = 0;
  for (std::uint64_t seed = 1; seed <= 250; ++seed) {
    const std::string text = ff::to_string(fz::build(fz::generate(seed), fz::Mode::Narrow).program);
    const auto has = [&](const std::string& part) { return text.find(part) != std::string::npos; };
    const bool r = has("offsets=rows(") && has(" = reduce(");
    const bool b = has("broadcast_by_key(") && has("offsets=") && !has("offsets=rows(");
    rows += r ? 1 : 0;
    both += b ? 1 : 0;
    rows_60 += r && seed <= 60 ? 1 : 0;
    both_60 += b && seed <= 60 ? 1 : 0;
  }
  INFO("reduction beside rows: " << rows_60 << " of seeds 1..60, " << rows << " of 1..250; offsets and key: " << both_60
       << ", " << both);
  CHECK(rows >= 2);
  CHECK(both >= 2);
  CHECK(rows_60 + both_60 >= 1);
}

// Segment offsets computed in the program (issues 21 and 25): an exclusive scan of segment
// lengths as a segmented op's offsets, or under a broadcast beside a reduction, staged over
// the lengths' own length; the programs of the emulator's run (1..60) and the GPU run
// (1..250) have them, and every such seed plans.
TEST_CASE("seeds meet offsets computed by a scan of segment lengths, and they plan") {
  int in_60 = 0, in_250 = 0, broadcasts = 0;
  for (std::uint64_t seed = 1; seed <= 250; ++seed) {
    const ff::Program p = fz::build(fz::generate(seed), fz::Mode::Narrow).program;
    const std::string text = ff::to_string(p);
    bool scanned = false;
    for (const auto& op : p.ops())
      if (op->offsets.valid())
        for (const ff::Expr& leaf : ff::array_leaves(op->offsets))
          scanned = scanned || (leaf.kind() == ff::ExprKind::Result && leaf.node().op->kind == ff::OpKind::Scan);
    if (!scanned) continue;
    in_250 += 1;
    in_60 += seed <= 60 ? 1 : 0;
    broadcasts += text.find("broadcast(") != std::string::npos ? 1 : 0;
    INFO("seed " << seed << ": " << text);
    CHECK_NOTHROW((void)ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")));
  }
  INFO("seeds with scanned offsets: " << in_60 << " of 1..60, " << in_250 << " of 1..250, " << broadcasts << " under a broadcast");
  CHECK(in_60 >= 1);
  CHECK(in_250 >= 5);
  CHECK(broadcasts >= 1);
}
