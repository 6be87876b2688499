// Per-row programs (issue 25): per-row softmax of 2^26 f32 in rows of 1024 and of 4096,
//   offs = ff::rows(x, c); m = segmented_reduce(x, offs, max);
//   e = exp(x - broadcast(m, offs)); y = e / broadcast(segmented_reduce(e, offs, plus), offs)
// (one kernel: a block holds a row in registers), beside a device-to-device copy of the
// same 2^26 f32 (its floor: the program reads x and writes y, 8 bytes per element, as the
// copy does) and torch.softmax(x.view(-1, c), dim=1) from bench/rows_anchors.py in the same
// run. Device time per call (back to back), median. Goals: rows of 1024 within 1.03x of
// the copy; rows of 4096 at least 1.2x torch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_ROWS_SCRIPT
#define FUSEFLOW_BENCH_ROWS_SCRIPT "bench/rows_anchors.py"
#endif

namespace ffbench {

namespace {

constexpr std::size_t kN = std::size_t{1} << 26;

// The first rows of y against softmax in double on the host.
bool check_softmax(const float* dx, const float* dy, std::size_t c) {
  const std::size_t rows = 64, count = rows * c;
  std::vector<float> hx(count), hy(count);
  CK(cudaMemcpy(hx.data(), dx, count * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hy.data(), dy, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (std::size_t j = 0; j < c; ++j) m = std::fmax(m, hx[r * c + j]);
    for (std::size_t j = 0; j < c; ++j) s += std::exp((double)hx[r * c + j] - m);
    for (std::size_t j = 0; j < c; ++j) {
      const double want = std::exp((double)hx[r * c + j] - m) / s;
      if (std::fabs(hy[r * c + j] - want) > 1e-4 * want) return false;
    }
  }
  return true;
}

}  // namespace

void bench_rows(const Context& base, const Options& opt) {
  const DeviceGroup group(base, opt);
  const Context& c = group.c;
  std::printf("\nPer-row softmax of 2^26 f32 (issue 25), device time per call (us), median; torch in the same run:\n");
  std::printf("  traffic floor: read x + write y = 8 B/element, %.0f MiB per call (the copy moves the same bytes)\n",
              kN * 8.0 / (1 << 20));
  DeviceBuffer x(kN * sizeof(float)), y(kN * sizeof(float));
  fill(c, x.as<float>(), kN, 41);
  CK(cudaStreamSynchronize(c.stream));
  std::map<std::size_t, double> ff_us, copy_us;
  std::map<std::size_t, std::string> checks;
  for (std::size_t cols : {std::size_t{1024}, std::size_t{4096}}) {
    auto xs = ff::input<float>("x");
    const auto offs = ff::rows(xs, static_cast<std::int64_t>(cols));
    const auto e = ff::exp(xs - ff::broadcast(ff::segmented_reduce(xs, offs, ff::max), offs));
    const ff::Program p(e / ff::broadcast(ff::segmented_reduce(e, offs, ff::plus), offs));
    const ff::Bindings b = {{xs, span_of<float>(x, 0, kN)}, {p.outputs()[0], span_of<float>(y, 0, kN)}};
    std::tie(ff_us[cols], copy_us[cols]) = time_against_copy(c, p, b, y.ptr, x.ptr, kN * sizeof(float));
    (void)ff_call(*c.rt, p, b);
    CK(cudaStreamSynchronize(c.stream));
    checks[cols] = check_word(check_softmax(x.as<float>(), y.as<float>(), cols), "softmax rows of " + std::to_string(cols));
  }
  const std::map<std::string, double> a = run_anchor_script(FUSEFLOW_BENCH_ROWS_SCRIPT, c.reps);
  std::printf("  %-18s %10s %10s %10s %10s %9s %9s  %s\n", "program", "fuseflow", "copy", "torch", "GB/s", "/copy",
              "torch/ff", "check");
  for (const auto& [cols, us] : ff_us) {
    const std::string name = "softmax" + std::to_string(cols);
    const double t = anchor_at(a, "torch " + name);
    std::printf("  %-18s %10.1f %10.1f %10.1f %10.0f %8.3fx %8.2fx  %s\n", name.c_str(), us, copy_us[cols], t,
                kN * 8.0 / us / 1e3, us / copy_us[cols], t / us, checks[cols].c_str());
    keep_program_row("program " + name, kN, kN * 8.0, us, copy_us[cols], checks[cols]);
  }
  std::printf("  (goals: softmax1024 within 1.03x of the copy; softmax4096 at least 1.2x torch)\n");
}

}  // namespace ffbench
