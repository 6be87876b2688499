// prefix_sums: the inclusive and exclusive prefix sums of an array of counts, in one
// program. With counts[i] items in bucket i, the exclusive sum is where bucket i starts
// in a packed array and the inclusive sum where it ends. Each scan is one single-pass
// kernel (decoupled look-back) that reads n and writes n; integers are exact.
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto counts = ff::input<int>("counts");
  auto program = ff::outputs(ff::scan(counts, ff::plus, ff::inclusive),   // ends[i] = counts[0] + ... + counts[i]
                             ff::scan(counts, ff::plus, ff::exclusive));  // starts[i] = ends[i] - counts[i]
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 10'000'000;
  std::vector<int> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<int>((i * 7919) % 13);

  ff::Runtime rt;
  auto cs = rt.upload(host);
  auto [inclusive, exclusive] = rt.run(program, {{counts, cs}});
  std::vector<int> ends = inclusive.download<int>();
  std::vector<int> starts = exclusive.download<int>();

  bool ok = ends.size() == n && starts.size() == n;
  int running = 0;
  for (std::size_t i = 0; ok && i < n; ++i) {
    ok = starts[i] == running;
    running += host[i];
    ok = ok && ends[i] == running;
  }
  std::printf("prefix sums of %zu ints: %d items in all, bucket %zu starts at %d and ends at %d: %s\n", n,
              ends.empty() ? 0 : ends.back(), n / 2, starts[n / 2], ends[n / 2], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
