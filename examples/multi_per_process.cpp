// multi_per_process: one process per GPU, the way NCCL runs across nodes too. Rank 0
// makes the NCCL id and writes it to a file every rank can read (a shared file system,
// or here /tmp); the others wait for it; each process then holds one rank of the world
// and runs the same program on its shard. The id could as well go through MPI or a socket.
//
//   multi_per_process <rank> <world> <id file>      one rank (start one per GPU)
//   multi_per_process --spawn <world> <id file>     starts the <world> ranks and waits
//
// Each rank uploads only its own shard (here computed from the global index), and gets
// the combined results: the sum of every shard, and its shard of the global scan.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fuseflow/fuseflow.hpp>
#include <fuseflow/runtime/sharded.hpp>

namespace ff = fuseflow;

namespace {

float value_at(std::size_t i) { return static_cast<float>(i % 1000) * 0.001f; }

int run_rank(int rank, int world, const std::string& id_file) {
  ff::disable_nvlink_multicast();
  if (rank == 0) ff::write_nccl_id(ff::nccl_unique_id(), id_file);
  const ff::NcclId id = ff::read_nccl_id(id_file);
  ff::ShardedRuntime srt = ff::ShardedRuntime::nccl_rank(id, rank, world, rank % ff::gpu_count());

  const std::size_t n = 10'000'019;
  const ff::ShardLayout layout = ff::ShardLayout::even(n, world);
  std::vector<float> mine(layout.size(rank));
  for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = value_at(layout.offset(rank) + k);
  // This rank's shard, on its GPU: any device memory will do (device_span over the
  // caller's own works too); the layout is agreed over the world.
  ff::DeviceArray<float> shard = srt.runtime(0).upload(mine);
  ff::ShardedArray<float> xs = srt.adopt(std::vector<ff::device_span<float>>{shard});

  auto x = ff::input<float>("x");
  auto [sum, prefix] = srt.run(ff::outputs(ff::reduce(x, ff::plus), ff::scan(x, ff::plus)), {{x, xs}});
  double want = 0, want_end = 0;
  for (std::size_t i = 0; i < n; ++i) {
    want += value_at(i);
    if (i < layout.offset(rank + 1)) want_end = want;
  }
  std::vector<float> my_scan = prefix.download<float>();  // this rank's shard of the scan
  const bool ok = std::fabs(sum.as<float>() - want) <= 1e-4 * want &&
                  (my_scan.empty() || std::fabs(my_scan.back() - want_end) <= 1e-4 * want_end + 1e-3);
  std::printf("rank %d of %d: shard [%zu, %zu), sum %.3f (f64 %.3f), scan at the shard's end %.3f (f64 %.3f): %s\n",
              rank, world, layout.offset(rank), layout.offset(rank + 1), sum.as<float>(), want,
              my_scan.empty() ? 0.0f : my_scan.back(), want_end, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <rank> <world> <id file> | --spawn <world> <id file>\n", argv[0]);
    return 2;
  }
  if (std::string(argv[1]) == "--spawn") {
    const int world = std::atoi(argv[2]);
    std::remove(argv[3]);  // a stale id from an earlier run must not be read
    std::vector<pid_t> children;
    for (int r = 0; r < world; ++r) {
      const pid_t pid = fork();
      if (pid == 0) {
        const std::string rank = std::to_string(r);
        execl(argv[0], argv[0], rank.c_str(), argv[2], argv[3], static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    std::printf("%d of %d ranks ok\n", world - failed, world);
    return failed ? 1 : 0;
  }
  try {
    return run_rank(std::atoi(argv[1]), std::atoi(argv[2]), argv[3]);
  } catch (const ff::Error& e) {
    std::fprintf(stderr, "rank %s: %s\n", argv[1], e.what());
    return 1;
  }
}
