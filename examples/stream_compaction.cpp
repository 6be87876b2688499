// stream_compaction: the elements of x above a threshold, in their input order, with
// their positions. A filter whose result is a program output is compacted in one pass:
// each tile ranks its survivors, finds where they go from the tiles before it (a
// look-back over the survivor counts) and writes them packed together. The maps after
// the filter (here, taking each field of the (value, position) pair) are applied to the
// survivors as they are written: both outputs come from one kernel and one read of x.
//
// How many elements survive is known only on the device: the kernel writes the count
// there, and the host reads it the first time it asks for a result's size (or downloads
// it). The threshold is a parameter: changing it does not recompile.
#include <cmath>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto t = ff::param<float>("threshold");
  ff::Expr above = ff::filter(ff::zip(x, ff::index()), x > t);  // (value, position) of each survivor
  auto program = ff::outputs(ff::get<0>(above), ff::get<1>(above));
  if (example::no_gpu(program)) return 0;

  const std::size_t n = 5'000'000;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = std::sin(0.001f * static_cast<float>(i) * static_cast<float>(i % 7));

  ff::Runtime rt;
  auto xs = rt.upload(host);
  const float threshold = 0.5f;
  auto [values, positions] = rt.run(program, {{x, xs}, {t, threshold}});
  const std::size_t kept = values.size();  // the first host read of the survivor count
  std::vector<float> got_values = values.download<float>();
  ff::DeviceArray<long long> on_device = std::move(positions);  // stays on the device, kept elements long
  std::vector<long long> got_positions = on_device.download();

  std::size_t k = 0, bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(host[i] > threshold)) continue;
    if (k >= kept || got_values[k] != host[i] || got_positions[k] != static_cast<long long>(i)) ++bad;
    ++k;
  }
  const bool ok = k == kept && on_device.size() == kept && bad == 0;
  std::printf("kept %zu of %zu floats above %.1f, in order, with their positions: %s\n", kept, n, threshold,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
