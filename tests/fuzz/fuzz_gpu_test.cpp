// Random programs on the GPU against the CPU reference evaluator (issue 8):
// FUSEFLOW_FUZZ_COUNT (default 2000; CTest runs seeds 1..150 as fuzz_gpu_test, label gpu,
// and 151..2000 as fuzz_gpu_test_long, label gpu-long) generated programs
// (tests/fuzz/program_generator.hpp) run with their outputs poisoned (FUSEFLOW_POISON=1).
// Integers, bools and tuples (mssp, matmul2x2, argmin/argmax of exact values), histogram
// counts (u32, u64) and sorted keys and values compare exactly with the reference; float
// results compare with the same program evaluated in f64, within the error bound the
// generator derives for each expression (sums: plus 2e-5 of the sum of |terms|; a float
// segmented reduce, segmented scan, scan_by_key or reduce_by_key segment by segment, the
// segments of the by-key ops being the runs of the reference's keys). Compacted filter
// outputs and reduce_by_key's outputs have a length read from the device, compared first.
// Every failure prints its seed and program; FUSEFLOW_FUZZ_SEED=<seed> runs that one.
//
// Programs are prepared on all cores in batches (generation, reference evaluation, and
// NVRTC compilation into the runtime's kernel cache), then run one after another.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fuseflow/fuseflow.hpp>
#include "fuseflow/runtime/low_level.hpp"
#include "fuseflow/runtime/device_target.hpp"

#include "fuzz/program_generator.hpp"

namespace ff = fuseflow;
namespace fz = fuseflow::fuzz;

namespace {

// Seeds that fail for a known, reported reason; they are skipped and listed (none now).
// Seed 1382 was one until session 10: ptxas 13.0 (V13.0.88, sm_90) miscompiled its
// segmented_reduce(min, min(cast<i32>(-(index + $t)), y)): the PTX was right, but ptxas
// fused the short-segment pass's unrolled fold into VIMNMX3 (three-way min) and dropped the
// negation (SASS `IADD3 R3, R3, 0x1, R7; VIMNMX3 R21, R24, R3, R21`: min(y, i + t, acc)); the
// H100 returned 214 of 777 segments wrong. Integer negation is now ~x + 1 with the not in
// inline PTX (CudaTypes::negate), which ptxas does not fold: NVRTC's cubin of that kernel
// has no VIMNMX3 and negates with LOP3 (checked with nvdisasm, not yet run on a GPU).
const std::set<std::uint64_t> kKnownFailures = {};

ff::Runtime& runtime() {
  static bool poisoned = (setenv("FUSEFLOW_POISON", "1", 1), true);
  static ff::Runtime rt;
  (void)poisoned;
  return rt;
}

const std::vector<ff::Header>& headers() {
  static const std::vector<ff::Header> all = [] {
    std::vector<ff::Header> out;
    for (const auto& h : ff::codegen::device_headers()) out.push_back({h.name, h.text});
    return out;
  }();
  return all;
}

struct Prepared {
  std::uint64_t seed = 0;
  fz::Case c;
  std::optional<fz::Built> built;
  std::vector<ff::HostArray> inputs;
  fz::Reference ref;
  std::string error;  // generation, reference or compilation failed
};

void prepare(Prepared& p, ff::Runtime& rt, const ff::codegen::Target& target, const ff::CompileOptions& options) {
  try {
    p.c = fz::generate(p.seed);
    p.built.emplace(fz::build(p.c, fz::Mode::Narrow));
    p.inputs = fz::make_inputs(p.c);
    p.ref = fz::compute_reference(p.c, p.inputs);
    for (const auto& k : ff::codegen::plan(p.built->program, target).kernels)
      (void)ff::low_level::cache(rt).get(k.name, k.source, options, headers());
  } catch (const std::exception& e) {
    p.error = std::string("preparing failed: ") + e.what();
  }
}

template <class T>
void upload(ff::Runtime& rt, const ff::HostArray& h, std::vector<std::shared_ptr<void>>& keep, ff::Bindings& b,
            const ff::Expr& input) {
  std::vector<T> values = h.to_vector<T>();
  auto array = std::make_shared<ff::DeviceArray<T>>(rt.upload(values));
  b.push_back({input, ff::Binding(*array)});
  keep.push_back(array);
}

template <class T>
bool fetch_as(ff::Result& r, ff::HostArray& out) {
  if (r.type() != ff::type_of<T>()) return false;
  const std::size_t n = r.size();
  ff::DeviceArray<T> d = r.array<T>();
  out = ff::HostArray(ff::type_of<T>(), n);
  if (n) d.download(std::span<T>(reinterpret_cast<T*>(out.data()), n));
  return true;
}

ff::HostResult fetch(ff::Result& r) {
  ff::HostResult h;
  if (r.is_scalar()) {
    h.is_scalar = true;
    h.scalar = r.value();
    return h;
  }
  using L = long long;
  using UL = unsigned long long;
  bool ok = fetch_as<bool>(r, h.array) || fetch_as<std::int32_t>(r, h.array) || fetch_as<L>(r, h.array) ||
            fetch_as<std::uint32_t>(r, h.array) || fetch_as<UL>(r, h.array) || fetch_as<float>(r, h.array) || fetch_as<double>(r, h.array) ||
            fetch_as<ff::Tuple<int, int, int, int>>(r, h.array) || fetch_as<ff::Tuple<int, L>>(r, h.array) ||
            fetch_as<ff::Tuple<L, L>>(r, h.array) || fetch_as<ff::Tuple<std::uint32_t, L>>(r, h.array) ||
            fetch_as<ff::Tuple<float, L>>(r, h.array) || fetch_as<ff::Tuple<double, L>>(r, h.array);
  if (!ok) throw ff::Error("fuzz: cannot download an array of " + r.type().name());
  return h;
}

// "" when the GPU's results match; else the mismatch.
std::string run_on_gpu(ff::Runtime& rt, Prepared& p) {
  std::vector<std::shared_ptr<void>> keep;
  ff::Bindings bindings;
  for (std::size_t k = 0; k < p.inputs.size(); ++k) {
    const ff::Expr& x = p.built->inputs[k];
    if (!fz::uses(p.built->program, x)) continue;  // Runtime::run rejects a binding the program does not read
    switch (p.c.inputs[k].type) {
      case ff::ScalarType::I32: upload<std::int32_t>(rt, p.inputs[k], keep, bindings, x); break;
      case ff::ScalarType::I64: upload<long long>(rt, p.inputs[k], keep, bindings, x); break;
      case ff::ScalarType::U32: upload<std::uint32_t>(rt, p.inputs[k], keep, bindings, x); break;
      case ff::ScalarType::F32: upload<float>(rt, p.inputs[k], keep, bindings, x); break;
      case ff::ScalarType::F64: upload<double>(rt, p.inputs[k], keep, bindings, x); break;
      default: throw ff::Error("fuzz: unexpected input type");
    }
  }
  for (std::size_t k = 0; k < p.built->params.size(); ++k)
    if (fz::uses(p.built->program, p.built->params[k])) bindings.push_back({p.built->params[k], ff::Binding(p.c.params[k].value)});
  std::vector<ff::Result> results = rt.run(p.built->program, bindings);
  std::vector<ff::HostResult> got;
  for (auto& r : results) got.push_back(fetch(r));
  return fz::compare(p.c, p.ref, got);
}

}  // namespace

TEST_CASE("random programs on the GPU match the CPU reference") {
  const auto start = std::chrono::steady_clock::now();
  ff::Runtime& rt = runtime();
  const ff::codegen::Target target = ff::device_target(rt.properties());  // the executor's own
  const ff::CompileOptions options = ff::low_level::compile_options(rt);
  const std::vector<std::uint64_t> seeds = fz::seeds_from_environment(2000);
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t batch = 4 * static_cast<std::size_t>(workers);

  std::vector<std::string> failures;
  std::vector<std::uint64_t> failing_seeds, skipped;
  std::map<std::string, int> shapes;
  std::size_t run = 0, outputs = 0, exact_outputs = 0;
  std::int64_t elements = 0;
  bool device_lost = false;

  for (std::size_t first = 0; first < seeds.size() && !device_lost; first += batch) {
    const std::size_t count = std::min(batch, seeds.size() - first);
    std::vector<Prepared> prepared(count);
    for (std::size_t i = 0; i < count; ++i) prepared[i].seed = seeds[first + i];
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::min<std::size_t>(workers, count); ++t)
      threads.emplace_back([&] {
        for (std::size_t i = next++; i < count; i = next++) prepare(prepared[i], rt, target, options);
      });
    for (auto& t : threads) t.join();

    std::printf("seeds:");
    for (Prepared& p : prepared) {
      std::printf(" %llu", static_cast<unsigned long long>(p.seed));  // a hang shows where it happened
      std::fflush(stdout);
      if (kKnownFailures.count(p.seed) || !fz::known_bug(p.c).empty()) {
        skipped.push_back(p.seed);
        continue;
      }
      std::string mismatch = p.error;
      if (mismatch.empty()) {
        try {
          mismatch = run_on_gpu(rt, p);
        } catch (const std::exception& e) {
          mismatch = std::string("running failed: ") + e.what();
          try {
            rt.ensure_usable();
          } catch (const std::exception&) {
            device_lost = true;
          }
        }
      }
      ++run;
      ++shapes[p.c.shape];
      elements += p.c.n;
      for (std::size_t i = 0; i < p.c.outputs.size(); ++i) {
        ++outputs;
        if (fz::check_kind(p.c, i) == "exact") ++exact_outputs;
      }
      if (!mismatch.empty()) {
        failing_seeds.push_back(p.seed);
        failures.push_back(mismatch + "\n" + fz::describe(p.c));
        std::printf("\nFAILURE (seed %llu): %s\n%s\n", static_cast<unsigned long long>(p.seed), mismatch.c_str(),
                    fz::describe(p.c).c_str());
        std::fflush(stdout);
      }
      if (device_lost) break;
    }
    std::printf("\nfuzz_gpu_test: %zu / %zu programs run, %zu failed, %.1f s\n", run, seeds.size(), failures.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::fflush(stdout);
  }

  std::string shape_counts;
  for (const auto& [shape, n] : shapes) shape_counts += " " + shape + "=" + std::to_string(n);
  std::string failing;
  for (auto s : failing_seeds) failing += " " + std::to_string(s);
  std::string skipped_list;
  for (auto s : skipped) skipped_list += " " + std::to_string(s);
  const ff::CacheStats stats = ff::low_level::cache(rt).stats();
  char summary[1024];
  std::snprintf(summary, sizeof summary,
                "fuzz_gpu_test summary on %s: %zu programs run (%lld elements), %zu outputs (%zu compared exactly), "
                "%zu failed; %llu kernels compiled; %.1f s\n",
                rt.properties().name.c_str(), run, static_cast<long long>(elements), outputs, exact_outputs,
                failures.size(), static_cast<unsigned long long>(stats.compiles),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::string report = summary;
  report += "  shapes:" + shape_counts + "\n";
  report += "  failing seeds:" + (failing.empty() ? std::string(" none") : failing) + "\n";
  report += "  known failures skipped:" + (skipped_list.empty() ? std::string(" none") : skipped_list) + "\n";
  if (device_lost) report += "the device became unusable after the last failing seed: the remaining seeds did not run\n";
  for (const auto& f : failures) report += "\nFAILURE: " + f + "\n";
  std::printf("%s", report.c_str());
  // The gpu-long part (seeds from 151) writes a report of its own beside the first part's.
  const bool from_first = seeds.empty() || seeds.front() == 1;
  fz::write_report(from_first ? "fuzz_gpu_test" : "fuzz_gpu_test_from_" + std::to_string(seeds.front()), report);
  CHECK(!device_lost);
  CHECK(failures.empty());
}
