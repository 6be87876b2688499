// Programs users write (issue 25), beside torch and CuPy: CSR SpMV, 2^24 non-zeros over a
// vector of 2^20 f32 (30 per row, and power-law rows: Zipf 1.2), as
// segmented_reduce(vals * gather(x, cols), offsets, plus); and the adjacent difference of
// 2^28 f32, x - shift(x, -1, 0) (the stencil map: 16-byte vectors, the neighbour by a warp
// shuffle), beside a device-to-device copy of the same bytes (its floor) and torch.diff /
// cupy.diff. Device time per call (back to back), median; torch
// and CuPy from bench/programs_anchors.py in the same run (their own matrices, drawn by
// the same recipe). The gather is the checked one (the default) and an unchecked row.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_PROGRAMS_SCRIPT
#define FUSEFLOW_BENCH_PROGRAMS_SCRIPT "bench/programs_anchors.py"
#endif

namespace ffbench {

namespace {

constexpr std::size_t kNnz = std::size_t{1} << 24, kCols = std::size_t{1} << 20, kDiffN = std::size_t{1} << 28;

// Row offsets over kNnz non-zeros: 30 per row, or Zipf(1.2) lengths scaled to kNnz.
std::vector<int> csr_offsets(bool zipf) {
  std::vector<std::int64_t> lens(kNnz / 30, 30);
  if (zipf) {
    std::mt19937_64 g(25);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double total = 0;
    for (auto& l : lens) {  // inverse transform of a Pareto(0.2) tail, the shape of Zipf(1.2)
      l = std::min<std::int64_t>(static_cast<std::int64_t>(std::pow(1.0 - u(g), -1.0 / 0.2)), kCols);
      total += static_cast<double>(l);
    }
    for (auto& l : lens) l = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(l) * kNnz / total));
  }
  std::vector<int> offsets = {0};
  for (auto l : lens) offsets.push_back(offsets.back() + static_cast<int>(l));
  offsets.back() = static_cast<int>(kNnz);  // the rounding's remainder goes to the last row
  if (offsets[offsets.size() - 2] > offsets.back()) offsets[offsets.size() - 2] = offsets.back();
  return offsets;
}

double spmv(const Context& c, bool zipf, bool checked, std::string& check) {
  const std::vector<int> offsets = csr_offsets(zipf);
  const std::size_t rows = offsets.size() - 1;
  std::vector<int> cols(kNnz);
  std::mt19937 g(7);
  for (auto& k : cols) k = static_cast<int>(g() % kCols);
  DeviceBuffer vals(kNnz * sizeof(float)), dcols(kNnz * sizeof(int)), doffs(offsets.size() * sizeof(int)),
      x(kCols * sizeof(float)), y(rows * sizeof(float));
  fill(c, vals.as<float>(), kNnz, 31);
  fill(c, x.as<float>(), kCols, 32);
  CK(cudaMemcpy(dcols.ptr, cols.data(), kNnz * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(doffs.ptr, offsets.data(), offsets.size() * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaStreamSynchronize(c.stream));
  auto v = ff::input<float>("vals"), xs = ff::input<float>("x");
  auto k = ff::input<int>("cols"), o = ff::input<int>("offsets");
  const ff::Expr product = v * (checked ? ff::gather(xs, k) : ff::gather_unchecked(xs, k));
  const ff::Program p(ff::segmented_reduce(product, o, ff::plus));
  const ff::Bindings b = {{v, span_of<float>(vals, 0, kNnz)}, {k, span_of<int>(dcols, 0, kNnz)},
                          {o, span_of<int>(doffs, 0, offsets.size())}, {xs, span_of<float>(x, 0, kCols)},
                          {p.outputs()[0], span_of<float>(y, 0, rows)}};
  const double us = time_interleaved(c.stream, c.warmup, c.reps, 1, {[&](std::size_t) { (void)ff_call(*c.rt, p, b); }})[0];
  // Check the first rows on the host (in double).
  std::vector<float> hv(kNnz), hx(kCols), hy(rows);
  CK(cudaMemcpy(hv.data(), vals.ptr, kNnz * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hx.data(), x.ptr, kCols * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hy.data(), y.ptr, rows * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = true;
  for (std::size_t r = 0; r < std::min<std::size_t>(rows, 4096); ++r) {
    double want = 0;
    for (int e = offsets[r]; e < offsets[r + 1]; ++e) want += (double)hv[e] * hx[static_cast<std::size_t>(cols[e])];
    ok = ok && close_float(hy[r], static_cast<float>(want));
  }
  check = check_word(ok, std::string("spmv ") + (zipf ? "zipf" : "30/row"));
  return us;
}

}  // namespace

void bench_programs(const Context& base, const Options& opt) {
  const DeviceGroup group(base, opt);
  const Context& c = group.c;
  std::printf("\nPrograms users write (issue 25), device time per call (us), median; torch and CuPy in the same run:\n");
  std::map<std::string, double> ff_us;
  std::map<std::string, std::string> checks;
  for (bool zipf : {false, true})
    for (bool checked : {true, false}) {
      const std::string name = std::string(zipf ? "spmvzipf" : "spmv30") + (checked ? "" : " unchecked");
      ff_us[name] = spmv(c, zipf, checked, checks[name]);
    }
  {
    DeviceBuffer x(kDiffN * sizeof(float)), out(kDiffN * sizeof(float));
    fill(c, x.as<float>(), kDiffN, 33);
    CK(cudaStreamSynchronize(c.stream));
    auto xs = ff::input<float>("x");
    const ff::Program p(xs - ff::shift(xs, -1, 0.0f));
    const ff::Bindings b = {{xs, span_of<float>(x, 0, kDiffN)}, {p.outputs()[0], span_of<float>(out, 0, kDiffN)}};
    std::tie(ff_us["diff"], ff_us["copy"]) = time_against_copy(c, p, b, out.ptr, x.ptr, kDiffN * sizeof(float));
    std::vector<float> hx(1 << 20), hy(1 << 20);
    (void)ff_call(*c.rt, p, b);
    CK(cudaStreamSynchronize(c.stream));
    CK(cudaMemcpy(hx.data(), x.ptr, hx.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy.data(), out.ptr, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
    bool ok = true;
    for (std::size_t i = 0; i < hx.size(); ++i) ok = ok && hy[i] == hx[i] - (i ? hx[i - 1] : 0.0f);
    checks["diff"] = check_word(ok, "adjacent difference");
  }
  const std::map<std::string, double> a = run_anchor_script(FUSEFLOW_BENCH_PROGRAMS_SCRIPT, c.reps);
  std::printf("  %-22s %10s %10s %10s %8s  %s\n", "program", "fuseflow", "torch", "CuPy", "vs best", "check");
  for (const auto& [name, us] : ff_us) {
    const std::string anchor = name.substr(0, name.find(' '));
    const double t = anchor_at(a, "torch " + anchor), cp = anchor_at(a, "cupy " + anchor);
    const double best = std::fmin(t, cp);
    std::printf("  %-22s %10.1f %10.1f %10.1f %7.2fx  %s\n", name.c_str(), us, t, cp, best / us,
                checks.count(name) ? checks[name].c_str() : "-");
    const bool spmv_row = name.rfind("spmv", 0) == 0;
    keep_program_row("program " + name, spmv_row ? kNnz : kDiffN, spmv_row ? kNnz * 12.0 : kDiffN * 8.0, us, NAN,
                     checks.count(name) ? checks[name] : "-");
  }
  std::printf("  (adjacent difference: fuseflow / copy = %.3f; the goal is within 1.03)\n", ff_us["diff"] / ff_us["copy"]);
}

}  // namespace ffbench
