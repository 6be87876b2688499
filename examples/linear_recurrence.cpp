// linear_recurrence: x[i] = a[i] * x[i-1] + b[i] (x[-1] = 0) for ten million steps, as
// one scan. Each step is the affine map x -> a * x + b, written as the pair (a, b), and
// composing two maps, the earlier on the left, is again an affine map:
//
//   (a1, b1) then (a2, b2)  =  (a1 * a2, a2 * b1 + b2)
//
// Composition is associative but not commutative, and the monoid says so: fuseflow keeps
// the steps in order. An inclusive scan of the pairs composes every prefix of the steps,
// and field 1 of prefix i applied to x[-1] = 0 is x[i]. Only that field is written.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto affine = ff::monoid<ff::Tuple<float, float>>(
      [](auto l, auto r) { return ff::tuple(l[0] * r[0], r[0] * l[1] + r[1]); },  // l first, then r
      /*identity: x -> x*/ ff::tuple(1.0f, 0.0f), ff::non_commutative, "affine");

  auto a = ff::input<float>("a");
  auto b = ff::input<float>("b");
  auto program = ff::get<1>(ff::scan(ff::zip(a, b), affine));  // x[i], f32
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 10'000'000;
  std::vector<float> ha(n), hb(n);
  for (std::size_t i = 0; i < n; ++i) {
    ha[i] = 0.5f + 0.49f * std::sin(0.001f * static_cast<float>(i));  // in (0, 1): x stays bounded
    hb[i] = std::cos(0.37f * static_cast<float>(i));
  }

  ff::Runtime rt;
  auto da = rt.upload(ha);
  auto db = rt.upload(hb);
  std::vector<float> x = rt.run(program, {{a, da}, {b, db}}).download<float>();

  // The recurrence step by step on the host in f64. `bound` bounds |x[i]| and so the size
  // of the rounding errors the f32 scan may make, whatever order it combined in.
  double want = 0, bound = 0, worst = 0;
  bool ok = x.size() == n;
  for (std::size_t i = 0; ok && i < n; ++i) {
    want = ha[i] * want + hb[i];
    bound = ha[i] * bound + std::fabs(hb[i]);
    double error = std::fabs(x[i] - want);
    worst = std::fmax(worst, error / bound);
    ok = error <= 1e-4 * bound;
  }
  std::printf("linear recurrence over %zu steps: x[n-1] = %.6f (f64 on the host %.6f), largest error %.2g of the "
              "bound: %s\n",
              n, x.empty() ? 0.0f : x.back(), want, worst, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
