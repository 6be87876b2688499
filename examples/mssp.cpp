// mssp: the maximum segment sum (the largest sum of a contiguous run of elements, or 0)
// as one reduction with a custom, non-commutative monoid on a 4-tuple of ints.
//
// Each element x becomes (best, best prefix, best suffix, total) = (p, p, p, x) with
// p = max(x, 0); combining two neighbouring pieces a (left) and b (right) gives the
// tuple of the joined piece. The operator is associative but not commutative, and the
// example says so: fuseflow then keeps the elements in order (the "staged" strategy).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto mssp = ff::monoid<ff::Tuple<int, int, int, int>>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]),  // best: in a, in b, or across
                         ff::max(a[1], a[3] + b[1]),                 // best prefix
                         ff::max(b[2], a[2] + b[3]),                 // best suffix
                         a[3] + b[3]);                               // total
      },
      /*identity*/ ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");

  auto x = ff::input<int>("x");
  auto parts = ff::map(x, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
  auto program = ff::reduce(parts, mssp);
  if (example::no_gpu(program)) return 0;

  // Small values of both signs, so the best run is somewhere in the middle.
  const std::size_t n = 1 << 24;
  std::vector<int> host(n);
  unsigned state = 12345;
  for (auto& v : host) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<int>(state >> 24) % 21 - 10;
  }

  ff::Runtime rt;
  auto xs = rt.upload(host);
  auto [best, prefix, suffix, total] = rt.run(program, {{x, xs}}).as<ff::Tuple<int, int, int, int>>();

  // Kadane's algorithm on the host.
  long long want = 0, ending_here = 0;
  for (int v : host) {
    ending_here = std::max<long long>(ending_here + v, 0);
    want = std::max(want, ending_here);
  }
  std::printf("maximum segment sum of %zu ints: %d (Kadane on the host: %lld); prefix %d, suffix %d, total %d: %s\n", n,
              best, want, prefix, suffix, total, best == want ? "ok" : "WRONG");
  return best == want ? 0 : 1;
}
