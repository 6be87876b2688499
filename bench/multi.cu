// Sharded runs over the GPUs of this host (issues 23 and 24), beside torch.distributed in
// the same call: for every world size w in 1, 2, 4, 8 (and all GPUs) up to the GPUs
// present, one process driving w GPUs through NCCL (ShardedRuntime::nccl_all):
//   weak_sum     sum of 2^28 f32 per GPU, combined (the scalar on the host)
//   strong_sum   sum of 2^30 f32 over w GPUs
//   strong_scan  inclusive scan of 2^28 f32 over w GPUs (totals, carry, carried scan),
//                every rank's stream synchronised
//   strong_mssp  maximum segment sum of 2^28 i32 (a non-commutative 4 x i32 monoid; torch
//                has no correct equivalent, so no anchor)
//   combine      a sharded reduce of one f32 per GPU: the cross-GPU combine of a scalar,
//                end to end (beside torch's all_reduce of one float)
//   combine_hostfold  the same, the partials folded on the host after the one copy
//                (FUSEFLOW_SHARDED_FOLD=host) instead of on the device
//   strong_segsum  segmented sum of 2^28 f32 over w GPUs, segments of 1000 elements (cut by
//                the shard boundaries; offsets on the host, each rank's cut to its shard),
//                every rank's stream synchronised; no torch equivalent
//   combine_i32  a sharded i32 sum of one element per GPU: all-reduced (one collective)
//   weak_sum_one_thread, combine_one_thread  weak_sum and combine with the calling thread
//                issuing every rank's work (ShardedRuntime::set_rank_threads(false))
//                instead of a thread per rank (the default): for comparing the two
// Host wall time per call, median; torch (bench/multi_anchors.py, one process per GPU,
// mp.spawn) reports the slowest rank's median. --quick divides the sizes by 16. Writes
// bench_multi.csv. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 ...) here and in the
// anchor processes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fuseflow/runtime/sharded.hpp>

#include "catalog/catalog.hpp"
#include "harness.hpp"

#ifndef FUSEFLOW_BENCH_MULTI_SCRIPT
#define FUSEFLOW_BENCH_MULTI_SCRIPT "bench/multi_anchors.py"
#endif

namespace ffbench {
namespace {

using Clock = std::chrono::steady_clock;

struct MultiKey {
  std::string name;
  int world;
  bool operator<(const MultiKey& o) const { return name != o.name ? name < o.name : world < o.world; }
};

// A shard per rank of `per_rank[r]` elements filled from the global index (the same data
// for every world size), uploaded to each rank's GPU.
template <class T, class F>
ff::ShardedArray<T> make_shards(ff::ShardedRuntime& srt, std::size_t n, F value_at) {
  const ff::ShardLayout layout = ff::ShardLayout::even(n, srt.world_size());
  std::vector<ff::ShardPiece> pieces;
  for (std::size_t i = 0; i < srt.local_count(); ++i) {
    const int r = srt.local_rank(i);
    std::vector<T> host(layout.size(r));
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = value_at(layout.offset(r) + k);
    auto shard = std::make_shared<ff::DeviceArray<T>>(srt.runtime(i).upload(host));
    pieces.push_back({r, &srt.runtime(i), shard->bytes(), shard});
  }
  return ff::ShardedArray<T>(layout, std::move(pieces));
}

float value_f(std::size_t i) { return (float)((i * 2654435761u) % 1024u) * (1.0f / 1024.0f) - 0.5f; }
int value_i(std::size_t i) { return (int)((i * 2654435761u) % 201u) - 100; }

template <class F>
double time_median(int warmup, int reps, F&& call) {
  std::vector<double> t;
  for (int r = 0; r < warmup + reps; ++r) {
    const auto t0 = Clock::now();
    call();
    if (r >= warmup) t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(t);
}

void sync_all(ff::ShardedRuntime& srt) {
  for (std::size_t i = 0; i < srt.local_count(); ++i) srt.runtime(i).synchronize();
}

void measure_fuseflow(int w, std::size_t scale_down, int reps, std::map<MultiKey, double>& out) {
  std::vector<int> devices;
  for (int d = 0; d < w; ++d) devices.push_back(d);
  ff::ShardedRuntime srt = ff::ShardedRuntime::nccl_all(devices);
  auto x = ff::input<float>("x");
  const ff::Program sum = ff::reduce(x, ff::plus);
  const int warmup = 3;

  auto run_sum = [&](const char* name, std::size_t n) {
    auto xs = make_shards<float>(srt, n, value_f);
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += value_f(i);
    const float got = srt.run(sum, {{x, xs}}).at(0).as<float>();
    if (!close_rel(got, want, 1e-4) && std::fabs(got - want) > 1e-2 * std::sqrt((double)n))
      report_mismatch(std::string("multi ") + name + " w=" + std::to_string(w) + ": " + std::to_string(got) +
                      " vs " + std::to_string(want));
    out[{name, w}] = time_median(warmup, reps, [&] { (void)srt.run(sum, {{x, xs}}).at(0).value(); });
    if (std::string(name) != "weak_sum") return;
    srt.set_rank_threads(false);  // the same with the calling thread issuing every rank's work
    out[{"weak_sum_one_thread", w}] = time_median(warmup, reps, [&] { (void)srt.run(sum, {{x, xs}}).at(0).value(); });
    srt.set_rank_threads(true);
  };
  run_sum("weak_sum", ((std::size_t{1} << 28) / scale_down) * (std::size_t)w);
  run_sum("strong_sum", (std::size_t{1} << 30) / scale_down);

  {  // strong scan
    const std::size_t n = (std::size_t{1} << 28) / scale_down;
    auto xs = make_shards<float>(srt, n, value_f);
    const ff::Program scan = ff::scan(x, ff::plus);
    std::vector<ff::ShardedResult> r = srt.run(scan, {{x, xs}});
    std::vector<float> got = r.at(0).download<float>();
    double running = 0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      running += value_f(i);
      if (i % 65537 == 0 && std::fabs(got[i] - running) > 1e-3 * std::sqrt((double)i + 1) + 1e-2) ++bad;
    }
    if (bad) report_mismatch("multi strong_scan w=" + std::to_string(w) + ": " + std::to_string(bad) + " sampled elements off");
    r.clear();
    out[{"strong_scan", w}] = time_median(warmup, reps, [&] {
      std::vector<ff::ShardedResult> res = srt.run(scan, {{x, xs}});
      sync_all(srt);
    });
  }
  {  // MSSP over shards: a non-commutative tuple monoid, folded in rank order
    const std::size_t n = (std::size_t{1} << 28) / scale_down;
    auto xi = make_shards<int>(srt, n, value_i);
    const ff::Program mssp = ff::catalog::find("mssp").build();
    const ff::Expr in = mssp.inputs().at(0);
    long long best = 0, suf = 0;
    for (std::size_t i = 0; i < n; ++i) {
      suf = std::max<long long>(0, suf + value_i(i));
      best = std::max(best, suf);
    }
    const ff::Value got = srt.run(mssp, {{in, xi}}).at(0).value();
    if (got[0].as_int() != best)
      report_mismatch("multi strong_mssp w=" + std::to_string(w) + ": " + std::to_string(got[0].as_int()) + " vs " +
                      std::to_string(best));
    out[{"strong_mssp", w}] = time_median(warmup, reps, [&] { (void)srt.run(mssp, {{in, xi}}).at(0).value(); });
  }
  {  // strong segmented sum: segments of 1000, cut by the shard boundaries
    const std::size_t n = (std::size_t{1} << 28) / scale_down, len = 1000;
    auto xs = make_shards<float>(srt, n, value_f);
    auto offs = ff::input<long long>("offsets");
    std::vector<long long> os;
    for (std::size_t at = 0; at < n; at += len) os.push_back((long long)at);
    os.push_back((long long)n);
    const ff::HostArray ho = ff::HostArray::from(os);
    const ff::Program seg = ff::segmented_reduce(x, offs, ff::plus);
    std::vector<ff::ShardedResult> r = srt.run(seg, {{x, xs}, {offs, ho}});
    std::vector<float> got = r.at(0).download<float>();
    std::size_t bad = got.size() == os.size() - 1 ? 0 : 1;
    for (std::size_t s = 0; s + 1 < os.size() && !bad; s += 997) {
      double want = 0;
      for (long long i = os[s]; i < os[s + 1]; ++i) want += value_f((std::size_t)i);
      if (std::fabs(got[s] - want) > 1e-3 * len) ++bad;
    }
    if (bad) report_mismatch("multi strong_segsum w=" + std::to_string(w) + ": segments off");
    r.clear();
    out[{"strong_segsum", w}] = time_median(warmup, reps, [&] {
      std::vector<ff::ShardedResult> res = srt.run(seg, {{x, xs}, {offs, ho}});
      sync_all(srt);
    });
  }
  {  // log-sum-exp over shards: two stages (the max, then the sum of exp(x - max)), the epilogue on the host
    const std::size_t n = (std::size_t{1} << 28) / scale_down;
    auto xs = make_shards<float>(srt, n, value_f);
    const ff::Expr m = ff::reduce(x, ff::max);
    const ff::Program lse = m + ff::log(ff::reduce(ff::exp(x - m), ff::plus));
    double mx = -1e30, e = 0;
    for (std::size_t i = 0; i < n; ++i) mx = std::max(mx, (double)value_f(i));
    for (std::size_t i = 0; i < n; ++i) e += std::exp((double)value_f(i) - mx);
    const float got = srt.run(lse, {{x, xs}}).at(0).as<float>();
    if (!close_rel(got, mx + std::log(e), 1e-4)) report_mismatch("multi strong_lse w=" + std::to_string(w));
    out[{"strong_lse", w}] = time_median(warmup, reps, [&] { (void)srt.run(lse, {{x, xs}}).at(0).value(); });
  }
  {  // adjacent difference over shards: the halo of one element exchanged before the map
    const std::size_t n = (std::size_t{1} << 28) / scale_down;
    auto xs = make_shards<float>(srt, n, value_f);
    const ff::Program diff = x - ff::shift(x, -1, 0.0f);
    std::vector<ff::ShardedResult> r = srt.run(diff, {{x, xs}});
    std::vector<float> got = r.at(0).download<float>();
    std::size_t bad = got.size() == n ? 0 : 1;
    for (std::size_t i = 0; i < n && !bad; i += 65537)
      if (got[i] != value_f(i) - (i ? value_f(i - 1) : 0.0f)) ++bad;
    if (bad) report_mismatch("multi strong_diff w=" + std::to_string(w) + ": sampled elements off");
    r.clear();
    out[{"strong_diff", w}] = time_median(warmup, reps, [&] {
      std::vector<ff::ShardedResult> res = srt.run(diff, {{x, xs}});
      sync_all(srt);
    });
  }
  {  // the combine of an integer sum: all-reduced
    auto k = ff::input<int>("k");
    const ff::Program isum = ff::reduce(k, ff::plus);
    auto ks = make_shards<int>(srt, (std::size_t)w, [](std::size_t) { return 1; });
    if (srt.run(isum, {{k, ks}}).at(0).as<int>() != w) report_mismatch("multi combine_i32 w=" + std::to_string(w));
    out[{"combine_i32", w}] = time_median(50, std::max(reps, 200), [&] { (void)srt.run(isum, {{k, ks}}).at(0).value(); });
  }
  {  // the combine of a scalar: one element per GPU
    auto xs = make_shards<float>(srt, (std::size_t)w, [](std::size_t) { return 1.0f; });
    const float got = srt.run(sum, {{x, xs}}).at(0).as<float>();
    if (got != (float)w) report_mismatch("multi combine w=" + std::to_string(w));
    out[{"combine", w}] = time_median(50, std::max(reps, 200), [&] { (void)srt.run(sum, {{x, xs}}).at(0).value(); });
    srt.set_rank_threads(false);
    out[{"combine_one_thread", w}] =
        time_median(50, std::max(reps, 200), [&] { (void)srt.run(sum, {{x, xs}}).at(0).value(); });
    srt.set_rank_threads(true);
  }
}

// The same combine with the partials folded on the host after the one copy
// (FUSEFLOW_SHARDED_FOLD=host, read when the runtime is made) instead of on the device.
void measure_host_fold(int w, int reps, std::map<MultiKey, double>& out) {
  std::vector<int> devices;
  for (int d = 0; d < w; ++d) devices.push_back(d);
  setenv("FUSEFLOW_SHARDED_FOLD", "host", 1);
  ff::ShardedRuntime srt = ff::ShardedRuntime::nccl_all(devices);
  unsetenv("FUSEFLOW_SHARDED_FOLD");
  auto x = ff::input<float>("x");
  const ff::Program sum = ff::reduce(x, ff::plus);
  auto xs = make_shards<float>(srt, (std::size_t)w, [](std::size_t) { return 1.0f; });
  const float got = srt.run(sum, {{x, xs}}).at(0).as<float>();
  if (got != (float)w) report_mismatch("multi combine_hostfold w=" + std::to_string(w));
  out[{"combine_hostfold", w}] = time_median(50, std::max(reps, 200), [&] { (void)srt.run(sum, {{x, xs}}).at(0).value(); });
}

// bench/multi_anchors.py: lines "row <case> <world> <us>"; other lines are notes.
void measure_torch(const std::vector<int>& worlds, std::size_t scale_down, int reps, std::map<MultiKey, double>& out) {
  std::string list;
  for (int w : worlds) list += (list.empty() ? "" : ",") + std::to_string(w);
  const std::string cmd = std::string("NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 python3 '") +
                          FUSEFLOW_BENCH_MULTI_SCRIPT + "' --worlds " + list + " --scale-down " +
                          std::to_string(scale_down) + " --reps " + std::to_string(reps) + " 2>&1";
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::printf("  (could not start python3: torch not measured)\n");
    return;
  }
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    char name[64];
    int w = 0;
    double us = NAN;
    if (std::sscanf(line, "row %63s %d %lf", name, &w, &us) == 3)
      out[{name, w}] = us;
    else
      std::printf("  torch: %s", line);
  }
  const int rc = pclose(p);
  if (rc != 0) std::printf("  (multi_anchors.py exited with status %d)\n", rc);
}

// Issue 23's goals, at 4 GPUs: each with its value and met / not met (or not measured,
// with fewer GPUs).
void print_goals(std::map<MultiKey, double>& us) {
  struct Goal {
    const char* what;
    const char* name;
    bool scaled;   // a ratio over 1 GPU (at least `bound`), else microseconds (at most `bound`)
    double bound;
  };
  const Goal goals[] = {{"weak scaling sum, efficiency", "weak_sum", true, 0.97},
                        {"strong scaling sum 2^30, speedup", "strong_sum", true, 3.8},
                        {"strong scaling scan 2^28, speedup", "strong_scan", true, 3.7},
                        {"combine of a scalar, us", "combine", false, 25.0}};
  std::printf("\n  goals (issue 23, 4 GPUs):\n");
  for (const Goal& g : goals) {
    const bool have = us.count({g.name, 4}) && (!g.scaled || us.count({g.name, 1}));
    if (!have) {
      std::printf("  goal %-36s %s %6.2f: not measured (fewer than 4 GPUs)\n", g.what, g.scaled ? ">=" : "<=", g.bound);
      continue;
    }
    const double v = g.scaled ? us[{g.name, 1}] / us[{g.name, 4}] : us[{g.name, 4}];
    const bool met = g.scaled ? v >= g.bound : v <= g.bound;
    std::printf("  goal %-36s %s %6.2f: %8.3f  %s\n", g.what, g.scaled ? ">=" : "<=", g.bound, v,
                met ? "met" : "NOT met");
  }
}

}  // namespace

void bench_multi(const Context&, const Options& opt) {
  ff::disable_nvlink_multicast();
  int gpus = 0;
  CK(cudaGetDeviceCount(&gpus));
  std::printf("\nSharded runs over %d GPU(s) through NCCL, beside torch.distributed (one process per GPU)\n", gpus);
  if (!ff::nccl_available()) {
    std::printf("  NCCL not available (%s): the multi group is skipped\n", ff::nccl_load_error().c_str());
    return;
  }
  std::printf("  NCCL %d; NCCL_NVLS_ENABLE=%s\n", ff::nccl_version(), std::getenv("NCCL_NVLS_ENABLE"));
  std::vector<int> worlds;
  for (int w : {1, 2, 4, 8})
    if (w <= gpus) worlds.push_back(w);
  if (gpus > 0 && worlds.back() != gpus) worlds.push_back(gpus);
  const std::size_t scale_down = opt.quick ? 16 : 1;
  const int reps = opt.reps > 0 ? opt.reps : opt.quick ? 10 : 30;
  std::map<MultiKey, double> ff_us, torch_us;
  for (int w : worlds) measure_fuseflow(w, scale_down, reps, ff_us);
  for (int w : worlds) measure_host_fold(w, reps, ff_us);
  measure_torch(worlds, scale_down, reps, torch_us);

  const char* cases[] = {"weak_sum", "weak_sum_one_thread", "strong_sum",    "strong_scan",  "strong_mssp",
                         "combine",  "combine_one_thread",  "combine_hostfold", "strong_segsum", "combine_i32",
                         "strong_lse", "strong_diff"};
  std::printf("\n  %-20s %5s %12s %12s %10s %10s\n", "case", "GPUs", "fuseflow us", "torch us", "ff scale", "torch scale");
  const std::string path = out_dir() + "/bench_multi.csv";
  FILE* csv = std::fopen(path.c_str(), "w");
  if (csv) std::fprintf(csv, "case,gpus,fuseflow_us,torch_us,fuseflow_scaling,torch_scaling\n");
  for (const char* name : cases)
    for (int w : worlds) {
      const double f = ff_us.count({name, w}) ? ff_us[{name, w}] : NAN;
      const double t = torch_us.count({name, w}) ? torch_us[{name, w}] : NAN;
      const double f1 = ff_us.count({name, 1}) ? ff_us[{name, 1}] : NAN;
      const double t1 = torch_us.count({name, 1}) ? torch_us[{name, 1}] : NAN;
      // weak scaling: efficiency t1 / tw; strong: speedup t1 / tw; combine: none.
      const bool scaled = std::string(name).rfind("combine", 0) != 0;
      const double fs = scaled ? f1 / f : NAN, ts = scaled ? t1 / t : NAN;
      std::printf("  %-20s %5d %12.1f %12.1f %10.3f %10.3f\n", name, w, f, t, fs, ts);
      if (csv) std::fprintf(csv, "%s,%d,%.2f,%.2f,%.4f,%.4f\n", name, w, f, t, fs, ts);
    }
  if (csv) std::fclose(csv);
  std::printf("  weak_sum scale = efficiency (1 GPU time / w GPUs time); strong = speedup over 1 GPU. %s\n",
              path.c_str());
  print_goals(ff_us);
}

}  // namespace ffbench
