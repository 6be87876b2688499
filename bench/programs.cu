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

void add(const std::string& op, std::size_t n, double bytes, double us, const std::string& check) {
  Row r;
  r.mode = "device";
  r.op = op;
  r.n = n;
  r.bytes = bytes;
  r.ff_us = us;
  r.cub_variant = "-";
  r.check = check;
  r.reps = 0;
  g_rows.push_back(r);
}

std::map<std::string, double> anchors(int reps) {
  std::map<std::string, double> out;
  const std::string cmd = std::string("python3 '") + FUSEFLOW_BENCH_PROGRAMS_SCRIPT + "' --reps " + std::to_string(reps) + " 2>&1";
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512], lib[32], prog[32];
  double us = NAN;
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "row %31s %31s %lf", lib, prog, &us) == 3) out[std::string(lib) + " " + prog] = us;
    else std::printf("  anchors: %s", line);
  }
  pclose(p);
  return out;
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
  ff::Runtime& rt = *c.rt;
  const double us = time_interleaved(c.stream, c.warmup, c.reps, 1, {[&](std::size_t) { (void)ff_call(rt, p, b); }})[0];
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
  check = ok ? "ok" : "WRONG";
  if (!ok) report_mismatch(std::string("spmv ") + (zipf ? "zipf" : "30/row"));
  return us;
}

}  // namespace

void bench_programs(const Context& base, const Options& opt) {
  Context c = base;
  c.reps = opt.reps > 0 ? opt.reps : opt.quick ? 5 : 20;
  c.warmup = 2;
  const bool saved = g_device_mode;
  g_device_mode = true;
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
    ff::Runtime& rt = *c.rt;
    const std::vector<double> t = time_interleaved(
        c.stream, c.warmup, c.reps, 1,
        {[&](std::size_t) { (void)ff_call(rt, p, b); },
         [&](std::size_t) { CK(cudaMemcpyAsync(out.ptr, x.ptr, kDiffN * sizeof(float), cudaMemcpyDeviceToDevice, c.stream)); }});
    ff_us["diff"] = t[0];
    ff_us["copy"] = t[1];
    std::vector<float> hx(1 << 20), hy(1 << 20);
    (void)ff_call(rt, p, b);
    CK(cudaStreamSynchronize(c.stream));
    CK(cudaMemcpy(hx.data(), x.ptr, hx.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy.data(), out.ptr, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
    bool ok = true;
    for (std::size_t i = 0; i < hx.size(); ++i) ok = ok && hy[i] == hx[i] - (i ? hx[i - 1] : 0.0f);
    checks["diff"] = ok ? "ok" : "WRONG";
    if (!ok) report_mismatch("adjacent difference");
  }
  const std::map<std::string, double> a = anchors(c.reps);
  auto at = [&](const std::string& key) {
    auto it = a.find(key);
    return it == a.end() ? NAN : it->second;
  };
  std::printf("  %-22s %10s %10s %10s %8s  %s\n", "program", "fuseflow", "torch", "CuPy", "vs best", "check");
  for (const auto& [name, us] : ff_us) {
    const std::string anchor = name.substr(0, name.find(' '));
    const double t = at("torch " + anchor), cp = at("cupy " + anchor);
    const double best = std::fmin(t, cp);
    std::printf("  %-22s %10.1f %10.1f %10.1f %7.2fx  %s\n", name.c_str(), us, t, cp, best / us,
                checks.count(name) ? checks[name].c_str() : "-");
    const bool spmv_row = name.rfind("spmv", 0) == 0;
    add("program " + name, spmv_row ? kNnz : kDiffN, spmv_row ? kNnz * 12.0 : kDiffN * 8.0, us,
        checks.count(name) ? checks[name] : "-");
  }
  std::printf("  (adjacent difference: fuseflow / copy = %.3f; the goal is within 1.03)\n", ff_us["diff"] / ff_us["copy"]);
  g_device_mode = saved;
}

}  // namespace ffbench
