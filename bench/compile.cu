// The first run of a fresh program, NVRTC compile included, in Runtimes of their own.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "fuseflow/runtime/low_level.hpp"
#include "harness.hpp"

namespace ffbench {

using Clock = std::chrono::steady_clock;

std::vector<CompileRow> measure_compile(const Options&) {
  const std::vector<std::string> names = {"sum", "sum_of_squares", "dot", "argmax", "mssp"};
  const std::size_t n = 1 << 16;
  std::vector<CompileRow> rows(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) rows[i].program = names[i];

  auto run_first = [&](ff::Runtime& rt, std::size_t i, double* first_ms, double* warm_us) {
    ff::Program p = ff::catalog::find(names[i]).build();
    ff::Bindings b;
    std::vector<ff::DeviceArray<float>> fa;
    std::vector<ff::DeviceArray<int>> ia;
    for (const ff::Expr& in : p.inputs()) {
      if (names[i] == "mssp") {
        std::vector<int> h(n);
        for (std::size_t j = 0; j < n; ++j) h[j] = (int)(hash32(j, 5) % 201u) - 100 == 0 ? 1 : (int)(hash32(j, 5) % 201u) - 100;
        ia.push_back(rt.upload(h));
      } else {
        std::vector<float> h(n);
        for (std::size_t j = 0; j < n; ++j) h[j] = 0.5f + (float)(hash32(j, 7 + (unsigned)fa.size()) >> 8) / 16777216.0f;
        fa.push_back(rt.upload(h));
      }
    }
    std::size_t fi = 0, ii = 0;
    for (const ff::Expr& in : p.inputs()) {
      if (names[i] == "mssp")
        b.push_back({in, ff::Binding(ia[ii++])});
      else
        b.push_back({in, ff::Binding(fa[fi++])});
    }
    rt.synchronize();
    auto t0 = Clock::now();
    (void)rt.run(p, b);
    auto t1 = Clock::now();
    *first_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (warm_us) {
      std::vector<double> w;
      for (int r = 0; r < 21; ++r) {
        auto a = Clock::now();
        (void)rt.run(p, b);
        w.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      }
      *warm_us = median(w);
    }
  };

  {
    ff::RuntimeOptions o;
    o.cache = ff::CacheSettings{};  // memory only: as FUSEFLOW_CACHE=0, every kernel is compiled
    ff::Runtime cold(o);
    for (std::size_t i = 0; i < names.size(); ++i) run_first(cold, i, &rows[i].cold_ms, &rows[i].warm_us);
  }
  {
    ff::Runtime def;  // the environment's cache settings
    for (std::size_t i = 0; i < names.size(); ++i) {
      const ff::CacheStats before = ff::low_level::cache(def).stats();
      run_first(def, i, &rows[i].default_ms, nullptr);
      const ff::CacheStats after = ff::low_level::cache(def).stats();
      rows[i].default_outcome = after.compiles > before.compiles     ? "compiled"
                                : after.disk_hits > before.disk_hits ? "disk hit"
                                                                     : "memory hit";
    }
  }
  return rows;
}


}  // namespace ffbench
