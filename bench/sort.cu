// sort_by_key beside CUB's DeviceRadixSort::SortPairs.
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "harness.hpp"

namespace ffbench {

// --- sort_by_key: u32 values by u32 keys in [0, 256) ------------------------------------
// fuseflow: the catalog's sort_by_key_256 (a stable counting sort over 256 bins: tile
// counts, their scan, the scatter); CUB: DeviceRadixSort::SortPairs over the keys' low 8
// bits (begin_bit 0, end_bit 8: one digit pass), also stable, into preallocated outputs.
// Sorted keys and values are compared exactly. Bytes: keys and values read once and
// written once (16 per element); the ceiling reads the keys and the values.
void bench_sort(const Context& c, std::size_t n) {
  const std::size_t nbuf = copies_for(2 * n * sizeof(unsigned), c.l2_bytes);
  DeviceBuffer keys(nbuf * n * sizeof(unsigned)), values(nbuf * n * sizeof(unsigned));
  DeviceBuffer cub_keys(n * sizeof(unsigned)), cub_values(n * sizeof(unsigned));
  fill_byte_values(c, keys.as<int>(), nbuf * n, 51);
  fill(c, values.as<int>(), nbuf * n, 52);
  CK(cudaStreamSynchronize(c.stream));

  ff::Program program = ff::catalog::find("sort_by_key_256").build();
  ff::Expr k, v;
  for (const auto& in : program.inputs()) (in.node().name == "k" ? k : v) = in;
  ff::Runtime& rt = *c.rt;
  auto bindings = [&](std::size_t b) {
    return ff::Bindings{{k, span_of<unsigned>(keys, b, n)}, {v, span_of<unsigned>(values, b, n)}};
  };
  CubTemp temp;
  std::size_t tb = 0;
  CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, keys.as<unsigned>(), cub_keys.as<unsigned>(), values.as<unsigned>(),
                                     cub_values.as<unsigned>(), (int)n, 0, 8, c.stream));
  temp.reserve(tb);
  auto cub_call = [&](std::size_t b) {
    std::size_t bytes = temp.bytes;
    CK(cub::DeviceRadixSort::SortPairs(temp.ptr, bytes, keys.as<unsigned>() + b * n, cub_keys.as<unsigned>(),
                                       values.as<unsigned>() + b * n, cub_values.as<unsigned>(), (int)n, 0, 8,
                                       c.stream));
    if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
  };
  std::string check = "ok (keys and values = CUB)";
  {
    std::vector<ff::Result> got = rt.run(program, bindings(0));
    cub_call(0);
    CK(cudaStreamSynchronize(c.stream));
    std::vector<unsigned> want_keys(n), want_values(n);
    CK(cudaMemcpy(want_keys.data(), cub_keys.ptr, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want_values.data(), cub_values.ptr, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    const std::vector<unsigned> mine_keys = got.at(0).download<unsigned>(), mine_values = got.at(1).download<unsigned>();
    std::size_t bad = 0, first_bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      if ((mine_keys[i] != want_keys[i] || mine_values[i] != want_values[i]) && bad++ == 0) first_bad = i;
    if (mine_keys.size() != n || bad) {
      check = "MISMATCH";
      report_mismatch("sort_by_key 256 n=" + std::to_string(n) + ": " + std::to_string(bad) +
                      " elements differ from CUB, the first at " + std::to_string(first_bad));
    }
  }
  std::vector<std::function<void(std::size_t)>> variants = {
      [&](std::size_t b) {
        std::vector<ff::Result> r = ff_call(rt, program, bindings(b));
        if (!g_device_mode) CK(cudaStreamSynchronize(c.stream));
        for (auto& x : r) g_keep_alive.push_back(std::move(x));
      },
      cub_call,
      [&](std::size_t b) {
        launch_ceiling(c, reinterpret_cast<const float*>(keys.as<unsigned>() + b * n),
                       reinterpret_cast<const float*>(values.as<unsigned>() + b * n), n);
      },
  };
  const std::vector<double> t = time_interleaved(c.stream, c.warmup, c.reps, nbuf, variants);
  g_keep_alive.clear();
  Row r;
  r.op = "sort_by_key 256";
  r.n = n;
  r.bytes = (double)n * 4 * sizeof(unsigned);
  r.ff_us = t[0];
  r.cub_us = t[1];
  r.ceil_us = t[2];
  r.cub_variant = "DeviceRadixSort::SortPairs bits [0, 8)";
  r.check = check;
  r.nbuf = nbuf;
  r.reps = c.reps;
  add_row(r);
}

}  // namespace ffbench
