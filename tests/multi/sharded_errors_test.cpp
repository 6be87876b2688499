// Bad input to a sharded run gets a GraphError naming what is wrong, before anything runs;
// NCCL missing gets an Error saying how to get it. Also: the NCCL id file, layouts and
// adopted shards, the scan carry's fusion, and the in-process communicator's collectives.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "multi_test_support.hpp"

namespace ff = fuseflow;
using namespace fuseflow::multi_test;

TEST_CASE("sharded run: mismatched lengths, a scalar for an array, unbound and foreign bindings") {
  auto& srt = world(2);
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  auto a = srt.scatter(std::vector<float>(10, 1.0f));
  auto b = srt.scatter(std::vector<float>(11, 1.0f));
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x + y, ff::plus), {{x, a}, {y, b}}),
                       doctest::Contains("input 'y' (11 elements) is not sharded like input 'x' (10 elements)"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x, ff::plus), {{x, 2.0f}}),
                       doctest::Contains("input 'x' is bound to the scalar"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x + y, ff::plus), {{x, a}}), doctest::Contains("input 'y' is not bound"),
                       ff::GraphError);
  auto k = ff::input<int>("k");
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(k, ff::plus), {{k, a}}),
                       doctest::Contains("holds i32 but was bound to a sharded array of f32"), ff::GraphError);
  // An array sharded over another world.
  auto& other = world(3);
  auto c = other.scatter(std::vector<float>(10, 1.0f));
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(x, ff::plus), {{x, c}}),
                       doctest::Contains("is sharded over 3 ranks, but this runtime's world has 2"), ff::GraphError);
}

TEST_CASE("sharded run: what cannot be sharded says so") {
  auto& srt = world(2);
  auto x = ff::input<float>("x");
  auto a = srt.scatter(std::vector<float>(10, 1.0f));
  // A histogram's result read inside another op (a reduction's is run in stages:
  // sharded_epilogues_test).
  auto bins = ff::input<int>("bins");
  auto bd = srt.scatter(std::vector<int>(10, 1));
  CHECK_THROWS_WITH_AS(srt.run(ff::reduce(ff::histogram(bins, 4), ff::plus), {{bins, bd}}),
                       doctest::Contains("uses the result of a histogram, which is only known once the shards are combined"),
                       ff::GraphError);
  auto offsets = ff::input<int>("offsets");
  auto o = srt.scatter(std::vector<int>{0, 5, 10});
  CHECK_THROWS_WITH_AS(srt.run(ff::segmented_reduce(x, offsets, ff::plus), {{x, a}, {offsets, o}}),
                       doctest::Contains("input 'offsets' holds the offsets of a segmented op: bind it to a host array"),
                       ff::GraphError);
  auto keys = ff::input<int>("keys");
  auto kd = srt.scatter(std::vector<int>(10, 1));
  CHECK_THROWS_WITH_AS(srt.run(ff::counting_sort(keys, 4), {{keys, kd}}),
                       doctest::Contains("counting_sort is not supported over shards yet"), ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::scan(ff::scan(x, ff::plus), ff::plus), {{x, a}}),
                       doctest::Contains("a scan of a scan's result is not supported"), ff::GraphError);
  // A filter's result mixed with another array (y at the survivors' positions) or index().
  auto y = ff::input<float>("y");
  auto b = srt.scatter(std::vector<float>(10, 2.0f));
  CHECK_THROWS_WITH_AS(srt.run(ff::filter(x, x > 0.0f) + y, {{x, a}, {y, b}}),
                       doctest::Contains("mixes a filter's result with other arrays or index()"),
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(srt.run(ff::filter(x, x > 0.0f) * ff::cast<float>(ff::index()), {{x, a}}),
                       doctest::Contains("mixes a filter's result with other arrays or index()"), ff::GraphError);
}

TEST_CASE("NCCL missing: a clear Error naming what to install") {
  // This test runs with FUSEFLOW_NCCL_LIBRARY naming a library that does not exist.
  CHECK_FALSE(ff::nccl_available());
  CHECK_THROWS_WITH_AS(ff::ShardedRuntime::nccl_all({0}), doctest::Contains("NCCL"), ff::Error);
  CHECK_THROWS_WITH_AS(ff::nccl_unique_id(), doctest::Contains("NCCL"), ff::Error);
  ff::Runtime rt;
  CHECK_THROWS_WITH_AS(ff::nccl_communicator(ff::NcclId{}, 0, 1, rt), doctest::Contains("NCCL"), ff::Error);
}

TEST_CASE("the NCCL id goes through a file; a missing file times out with the path named") {
  const std::string path = "/tmp/fuseflow_nccl_id_test_" + std::to_string(::getpid());
  ff::NcclId id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = static_cast<char>(i * 7 + 1);
  ff::write_nccl_id(id, path);
  CHECK(ff::read_nccl_id(path).bytes == id.bytes);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(ff::read_nccl_id(path, std::chrono::milliseconds(50)), doctest::Contains(path.c_str()), ff::Error);
}

TEST_CASE("ShardLayout: even shards, and adopted shards of any sizes agreed over the world") {
  auto l = ff::ShardLayout::even(10, 4);
  CHECK(l.offsets == std::vector<std::size_t>{0, 3, 6, 8, 10});
  CHECK(ff::ShardLayout::even(2, 4).offsets == std::vector<std::size_t>{0, 1, 2, 2, 2});
  auto& srt = world(3);
  std::vector<ff::DeviceArray<int>> mine;
  std::vector<ff::device_span<int>> spans;
  for (std::size_t i = 0; i < srt.local_count(); ++i) {
    const int r = srt.local_rank(i);
    mine.push_back(srt.runtime(i).upload(std::vector<int>(static_cast<std::size_t>(r) * 2 + 1, r + 1)));
    spans.emplace_back(mine.back());
  }
  auto adopted = srt.adopt(spans);
  CHECK(adopted.layout().offsets == std::vector<std::size_t>{0, 1, 4, 9});
  auto k = ff::input<int>("k");
  int sum = srt.run(ff::reduce(k, ff::plus), {{k, adopted}});
  CHECK(sum == 1 * 1 + 3 * 2 + 5 * 3);
}

TEST_CASE("the scan's carry is a map of the scan's result, which the planner fuses into the scan's store") {
  // What ShardedRuntime runs for a sharded scan: carry . scan(x), the carry a parameter
  // (tuple monoids, FUSEFLOW_SHARDED_FOLD=host) or, for scalar monoids, entry `rank` of
  // the carries the device scanned from the gathered totals (a table read at the rank).
  auto x = ff::input<float>("x");
  auto carry = ff::param<float>("carry");
  auto carries = ff::input<float>("ff_carries0");
  auto rank = ff::param<long long>("ff_shard_rank");
  const std::string plain = ff::explain(ff::Program(ff::scan(x, ff::plus)));
  for (const ff::Expr& c : {carry, ff::gather_unchecked(carries, rank)}) {
    CAPTURE(ff::to_string(c));
    const std::string plan = ff::explain(ff::Program(ff::cast<float>(c + ff::scan(x, ff::plus))));
    CHECK(plan.find("epilogue, applied before the store") != std::string::npos);
    // No kernel more than the plain scan's.
    CHECK(plan.substr(plan.find("target:"), plan.find("1.") - plan.find("target:")) ==
          plain.substr(plain.find("target:"), plain.find("1.") - plain.find("target:")));
  }
}

TEST_CASE("communicator: all_gather, all_reduce (sum, min, max over i32 and f64) and broadcast, every rank") {
  auto& srt = world(3);
  const int w = srt.world_size();
  std::vector<std::vector<int>> gathered(srt.local_count()), summed(srt.local_count()), mins(srt.local_count());
  std::vector<std::vector<double>> maxes(srt.local_count());
  std::vector<std::vector<int>> cast(srt.local_count());
  auto body = [&](std::size_t i) {
    ff::Runtime& rt = srt.runtime(i);
    ff::Communicator& comm = srt.communicator(i);
    const int r = comm.rank();
    std::vector<int> mine = {r * 10 + 1, r * 10 + 2};
    auto send = rt.upload(mine);
    auto recv = rt.alloc<int>(2 * static_cast<std::size_t>(w));
    comm.all_gather(send.data(), recv.data(), 2 * sizeof(int), rt.stream());
    gathered[i] = recv.download();
    auto sum = rt.alloc<int>(2);
    comm.all_reduce(send.data(), sum.data(), 2, ff::ScalarType::I32, ff::CollectiveOp::Sum, rt.stream());
    summed[i] = sum.download();
    comm.all_reduce(send.data(), sum.data(), 2, ff::ScalarType::I32, ff::CollectiveOp::Min, rt.stream());
    mins[i] = sum.download();
    auto d = rt.upload(std::vector<double>{0.5 * r, -1.0 * r});
    comm.all_reduce(d.data(), d.data(), 2, ff::ScalarType::F64, ff::CollectiveOp::Max, rt.stream());
    maxes[i] = d.download();
    auto b = rt.upload(std::vector<int>{r == 1 ? 77 : -1});
    comm.broadcast(b.data(), b.data(), sizeof(int), 1, rt.stream());
    cast[i] = b.download();
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < srt.local_count(); ++i) threads.emplace_back(body, i);
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < srt.local_count(); ++i) {
    CHECK(gathered[i] == std::vector<int>{1, 2, 11, 12, 21, 22});
    CHECK(summed[i] == std::vector<int>{33, 36});
    CHECK(mins[i] == std::vector<int>{1, 2});
    CHECK(maxes[i] == std::vector<double>{1.0, 0.0});
    CHECK(cast[i] == std::vector<int>{77});
  }
}

TEST_CASE("NCCL present: its version, and an id (neither needs a GPU)") {
  // Run without FUSEFLOW_NCCL_LIBRARY overridden (emu_multi_nccl_present_test); where no
  // libnccl is installed there is nothing to check.
  if (!ff::nccl_available()) {
    MESSAGE("NCCL not installed here: " << ff::nccl_load_error());
    return;
  }
  CHECK(ff::nccl_version() >= 20000);
  const ff::NcclId a = ff::nccl_unique_id(), b = ff::nccl_unique_id();
  CHECK(a.bytes != ff::NcclId{}.bytes);
  CHECK(a.bytes != b.bytes);
  CHECK(std::string(std::getenv("NCCL_NVLS_ENABLE")) == "0");  // forced before NCCL started
}

TEST_CASE("FUSEFLOW_SHARDED_FOLD: only 'host' or 'device', else an error naming it") {
  if (!emulated()) return;  // made in process; the same check under NCCL
  ::setenv("FUSEFLOW_SHARDED_FOLD", "gpu", 1);
  CHECK_THROWS_WITH_AS(ff::ShardedRuntime::in_process(2, {0, 0}), doctest::Contains("FUSEFLOW_SHARDED_FOLD"),
                       ff::ConfigError);
  ::setenv("FUSEFLOW_SHARDED_FOLD", "host", 1);
  auto srt = ff::ShardedRuntime::in_process(2, {0, 0});
  auto x = ff::input<int>("x");
  auto dx = srt.scatter(std::vector<int>{1, 2, 3});
  CHECK(srt.run(ff::reduce(x, ff::plus), {{x, dx}}).as<int>() == 6);
  ::unsetenv("FUSEFLOW_SHARDED_FOLD");
}
