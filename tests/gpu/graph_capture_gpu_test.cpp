// Runs captured into a CUDA graph (Runtime::run_async inside cuStreamBeginCapture): a sum,
// a look-back scan into the caller's memory, and a compaction (which cannot be captured:
// its output is allocated by the run). The graph is launched 100 times over changing input
// and every result checked against a sum computed here; normal runs of the same scan in
// between check that captured and uncaptured look-back epochs never mix.
#include <dlfcn.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <fuseflow/fuseflow.hpp>

#include "fuseflow/runtime/driver_api.hpp"

namespace ff = fuseflow;

namespace {

#define FF_STRING(x) #x
#define FF_EXPANDED(x) FF_STRING(x)

// The graph calls fuseflow does not make, from the driver fuseflow loaded.
struct GraphApi {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F get(const char* name) const {
    void* f = library ? ::dlsym(library, name) : nullptr;
    REQUIRE_MESSAGE(f != nullptr, "libcuda.so.1 lacks ", name);
    return reinterpret_cast<F>(f);
  }
  decltype(&::cuStreamBeginCapture) begin = get<decltype(&::cuStreamBeginCapture)>(FF_EXPANDED(cuStreamBeginCapture));
  decltype(&::cuStreamEndCapture) end = get<decltype(&::cuStreamEndCapture)>(FF_EXPANDED(cuStreamEndCapture));
  decltype(&::cuGraphInstantiateWithFlags) instantiate =
      get<decltype(&::cuGraphInstantiateWithFlags)>(FF_EXPANDED(cuGraphInstantiateWithFlags));
  decltype(&::cuGraphLaunch) launch = get<decltype(&::cuGraphLaunch)>(FF_EXPANDED(cuGraphLaunch));
  decltype(&::cuGraphExecDestroy) exec_destroy = get<decltype(&::cuGraphExecDestroy)>(FF_EXPANDED(cuGraphExecDestroy));
  decltype(&::cuGraphDestroy) destroy = get<decltype(&::cuGraphDestroy)>(FF_EXPANDED(cuGraphDestroy));
};

}  // namespace

TEST_CASE("a sum and a look-back scan captured into a CUDA graph, launched 100 times over changing input") {
  const GraphApi graph_api;
  const ff::detail::DriverApi& cu = ff::detail::driver();
  // Keeps the primary context alive and current for the whole test: the stream and the
  // graph belong to it.
  ff::Runtime owner;
  REQUIRE(cu.cuCtxPushCurrent(owner.context()) == CUDA_SUCCESS);
  CUstream stream = nullptr;
  REQUIRE(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  ff::RuntimeOptions options;
  options.stream = stream;
  options.poison = true;  // the poison memsets are captured too
  {
    ff::Runtime rt(options);
    // Several tiles of look-back, and an odd size.
    const std::size_t n = (std::size_t{1} << 20) + 7;
    const ff::Expr x = ff::input<std::int32_t>("x");
    const ff::Expr sum = ff::reduce(x, ff::plus);
    const ff::Expr prefix = ff::scan(x, ff::plus, ff::inclusive, ff::Strategy::Lookback);
    const ff::Expr kept = ff::filter(x, x > 0);
    std::mt19937 rng(20);
    std::uniform_int_distribution<std::int32_t> digit(-9, 9);
    std::vector<std::int32_t> host(n);
    auto refill = [&] {
      for (auto& v : host) v = digit(rng);
    };
    refill();
    auto xs = rt.upload(host);
    auto out = rt.alloc<std::int32_t>(n);
    // Prepared before the capture, with the sizes the graph uses.
    CHECK(rt.run(sum, {{x, xs}}).as<std::int32_t>() == std::accumulate(host.begin(), host.end(), 0));
    (void)rt.run(prefix, {{x, xs}, {prefix, out}});
    (void)rt.run(kept, {{x, xs}}).size();

    REQUIRE(graph_api.begin(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    std::optional<ff::Result> captured_sum;
    std::string compaction_error;
    try {
      captured_sum.emplace(rt.run_async(sum, {{x, xs}}));
      (void)rt.run_async(prefix, {{x, xs}, {prefix, out}});
      try {
        (void)rt.run_async(kept, {{x, xs}});
      } catch (const ff::CudaError& e) {
        compaction_error = e.what();
      }
    } catch (...) {
      CUgraph broken = nullptr;
      graph_api.end(stream, &broken);
      if (broken) graph_api.destroy(broken);
      throw;
    }
    CUgraph graph = nullptr;
    REQUIRE(graph_api.end(stream, &graph) == CUDA_SUCCESS);  // the capture was not invalidated
    INFO("compaction: ", compaction_error);
    CHECK(compaction_error.find("a compaction") != std::string::npos);
    CUgraphExec exec = nullptr;
    REQUIRE(graph_api.instantiate(&exec, graph, 0) == CUDA_SUCCESS);

    std::vector<std::int32_t> expected(n);
    for (int replay = 0; replay < 100; ++replay) {
      INFO("replay ", replay);
      refill();
      xs.upload(std::span<const std::int32_t>(host));
      REQUIRE(graph_api.launch(exec, stream) == CUDA_SUCCESS);
      std::inclusive_scan(host.begin(), host.end(), expected.begin());
      CHECK(captured_sum->as<std::int32_t>() == expected.back());
      const std::vector<std::int32_t> got = rt.download(out);
      CHECK(got == expected);
      if (replay % 10 == 9) {
        // An uncaptured run of the same scan between replays: its epochs and the graph's
        // must not read each other's status entries.
        auto separate = rt.alloc<std::int32_t>(n);
        (void)rt.run(prefix, {{x, xs}, {prefix, separate}});
        CHECK(rt.download(separate) == expected);
      }
    }
    CHECK(graph_api.exec_destroy(exec) == CUDA_SUCCESS);
    CHECK(graph_api.destroy(graph) == CUDA_SUCCESS);
  }
  CHECK(cu.cuStreamDestroy(stream) == CUDA_SUCCESS);
  CUcontext popped = nullptr;
  cu.cuCtxPopCurrent(&popped);
}
