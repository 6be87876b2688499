// counting_sort: a stable sort by a small integer key, built as the course builds it:
// every tile of the input counts its keys per bin, one exclusive scan of those counts
// gives each (bin, tile) its first output position, and every tile writes its elements
// there in order. Equal keys keep their input order, which sort_by_key makes visible: the
// values travel with their keys.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  // The course's example: ten keys over the bins 0..8.
  auto k = ff::input<int>("k");
  ff::Program course = ff::counting_sort(k, 9);

  // Values sorted by u32 keys in [0, 256): both results of one sort, in one program.
  auto key = ff::input<unsigned>("key");
  auto value = ff::input<unsigned>("value");
  ff::KeyedResult sorted = ff::sort_by_key(key, value, 256);
  auto by_key = ff::outputs(sorted.keys, sorted.values);

  if (!ff::gpu_available()) {
    example::show(course);
    example::show(by_key);
    std::printf("no GPU found: the programs were not run\n");
    return 0;
  }

  ff::Runtime rt;
  const std::vector<int> ten = {8, 5, 1, 3, 7, 8, 6, 5, 3, 8};
  std::vector<int> out = rt.run(course, {{k, rt.upload(ten)}})[0].download<int>();
  bool ok = out == std::vector<int>{1, 3, 3, 5, 5, 6, 7, 8, 8, 8};
  std::printf("counting sort of [8 5 1 3 7 8 6 5 3 8] over bins 0..8:");
  for (int v : out) std::printf(" %d", v);
  std::printf(": %s\n", ok ? "ok" : "WRONG");

  // Each value is its element's index, so stability shows: equal keys, increasing values.
  const std::size_t n = std::size_t{1} << 20;
  std::vector<unsigned> keys(n), values(n);
  std::mt19937 gen(7);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = gen() % 256;
    values[i] = static_cast<unsigned>(i);
  }
  auto [sorted_keys, sorted_values] = rt.run(by_key, {{key, rt.upload(keys)}, {value, rt.upload(values)}});
  std::vector<unsigned> got_keys = sorted_keys.download<unsigned>();
  std::vector<unsigned> got_values = sorted_values.download<unsigned>();
  std::vector<unsigned> want = values;  // indices, stably sorted by key on the host
  std::stable_sort(want.begin(), want.end(), [&](unsigned a, unsigned b) { return keys[a] < keys[b]; });
  bool stable = got_values == want;
  for (std::size_t i = 0; i < n && stable; ++i) stable = got_keys[i] == keys[want[i]];
  std::printf("sort_by_key of %zu u32 keys over 256 bins, values carried stably: %s\n", n, stable ? "ok" : "WRONG");
  return ok && stable ? 0 : 1;
}
