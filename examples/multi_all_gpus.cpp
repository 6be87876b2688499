// multi_all_gpus: one process driving every GPU of the host. An array is scattered in
// contiguous shards over the GPUs; each program runs on every shard and the partial
// results are combined through NCCL: the sum (partials folded in rank order), the argmax
// with its global index, the histogram (counts all-reduced), and an inclusive scan that
// stays sharded (each GPU's scan starts from the totals of the GPUs before it). Then a
// segmented sum over rows that straddle the shard boundaries (the offsets are global, a
// host array every rank reads; a cut row's pieces are folded in rank order) and a
// reduce_by_key whose runs straddle them too.
//
// With NCCL and 2 or more GPUs it uses ShardedRuntime::nccl_all; otherwise 4 ranks in
// this process through host memory (ShardedRuntime::in_process), which is how the CPU
// emulator runs it in CI.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include <fuseflow/runtime/sharded.hpp>

namespace ff = fuseflow;

int main() {
  ff::disable_nvlink_multicast();  // NCCL_NVLS_ENABLE=0 before NCCL starts
  if (!ff::gpu_available()) {
    std::printf("no GPU found: nothing was run\n");
    return 0;
  }
  const bool nccl = ff::nccl_available() && ff::gpu_count() >= 2;
  ff::ShardedRuntime srt = nccl ? ff::ShardedRuntime::nccl_all() : ff::ShardedRuntime::in_process(4);
  std::printf("%d ranks (%s)\n", srt.world_size(), nccl ? "NCCL, one GPU each" : "in process");

  auto x = ff::input<float>("x");
  auto program = ff::outputs(ff::reduce(x, ff::plus), ff::reduce(ff::zip(x, ff::index()), ff::argmax),
                             ff::histogram(x, [](auto v) { return ff::cast<int>((v + 1.0f) * 4.0f); }, 8),
                             ff::scan(x, ff::plus));

  const std::size_t n = 1'000'003;  // not a multiple of the rank count: uneven shards
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = std::sin(0.001f * static_cast<float>(i) * static_cast<float>(i % 13));
  ff::ShardedArray<float> xs = srt.scatter(host);
  auto [sum, arg, hist, prefix] = srt.run(program, {{x, xs}});

  double want_sum = 0;
  std::size_t want_at = 0;
  std::vector<unsigned> want_hist(8, 0);
  for (std::size_t i = 0; i < n; ++i) {
    want_sum += host[i];
    if (host[i] > host[want_at]) want_at = i;
    const int b = static_cast<int>((host[i] + 1.0f) * 4.0f);
    if (b >= 0 && b < 8) ++want_hist[static_cast<std::size_t>(b)];
  }
  auto [max, at] = arg.as<ff::Tuple<float, long long>>();
  std::vector<float> scan = prefix.download<float>();
  const bool ok = std::fabs(sum.as<float>() - want_sum) <= 1e-4 * n && at == static_cast<long long>(want_at) &&
                  max == host[want_at] && hist.download<unsigned>() == want_hist && scan.size() == n &&
                  std::fabs(scan.back() - sum.as<float>()) <= 1e-3 * std::sqrt(static_cast<double>(n));
  std::printf("sum %.4f (f64 %.4f), argmax x[%lld] = %.5f, histogram of 8 bins, scan over %zu shards ending at %.4f: %s\n",
              sum.as<float>(), want_sum, at, max, prefix.layout().offsets.size() - 1, scan.back(), ok ? "ok" : "WRONG");

  // Rows of 1 to 40000 elements (CSR offsets, global); keys in runs of 7919.
  std::vector<long long> rows{0};
  while (rows.back() < static_cast<long long>(n)) rows.push_back(std::min<long long>(rows.back() + 1 + (rows.size() * 7727) % 40000, n));
  std::vector<int> keys(n), ones(n, 1);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<int>(i / 7919 % 3);
  auto offsets = ff::input<long long>("offsets");
  auto key = ff::input<int>("key");
  auto one = ff::input<int>("one");
  auto runs = ff::reduce_by_key(key, one, ff::plus);
  auto [row_sums, run_keys, run_lengths] =
      srt.run(ff::outputs(ff::segmented_reduce(x, offsets, ff::plus), runs.keys, runs.values),
              {{x, xs}, {offsets, ff::HostArray::from(rows)}, {key, srt.scatter(keys)}, {one, srt.scatter(ones)}});
  std::vector<float> got_rows = row_sums.download<float>();
  std::vector<int> lengths = run_lengths.download<int>();
  bool rows_ok = got_rows.size() == rows.size() - 1;
  for (std::size_t r = 0; rows_ok && r + 1 < rows.size(); ++r) {
    double want = 0;
    for (long long i = rows[r]; i < rows[r + 1]; ++i) want += host[static_cast<std::size_t>(i)];
    rows_ok = std::fabs(got_rows[r] - want) <= 1e-4 * static_cast<double>(rows[r + 1] - rows[r]) + 1e-4;
  }
  bool runs_ok = lengths.size() == (n + 7918) / 7919 && run_keys.download<int>().front() == 0;
  for (std::size_t r = 0; runs_ok && r < lengths.size(); ++r)
    runs_ok = lengths[r] == static_cast<int>(std::min<std::size_t>(7919, n - r * 7919));
  std::printf("segmented sum of %zu rows, reduce_by_key of %zu runs, both across the shard boundaries: %s\n",
              rows.size() - 1, lengths.size(), rows_ok && runs_ok ? "ok" : "WRONG");
  return ok && rows_ok && runs_ok ? 0 : 1;
}
