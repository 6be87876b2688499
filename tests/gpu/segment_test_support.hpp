#pragma once
// Shared by the per-segment broadcast tests (rows_gpu_test, broadcast_gpu_test): every
// output of a GPU run against the CPU reference's over the same inputs widened (f64 for
// floats, by relative error; integers exactly).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <fuseflow/fuseflow.hpp>

namespace fuseflow::test {

// The type the CPU reference computes in: f64 for floats, T for integers.
template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// Every element of every output within `tolerance` relative error (0: exactly), relative
// to |want| or `floor`, whichever is larger; `what` names the case in the failure.
template <class T>
void check_outputs(const std::vector<Result>& got, const std::vector<HostResult>& want, double tolerance,
                   double floor, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t o = 0; o < got.size(); ++o) {
    const std::vector<T> g = got[o].download<T>();
    const std::vector<Wide<T>> r = want[o].array.to_vector<Wide<T>>();
    REQUIRE(g.size() == r.size());
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const bool ok = tolerance == 0 ? static_cast<Wide<T>>(g[i]) == r[i]
                                     : std::fabs(static_cast<double>(g[i]) - static_cast<double>(r[i])) <=
                                           tolerance * std::max(floor, std::fabs(static_cast<double>(r[i])));
      if (!ok && wrong++ == 0) first = i;
    }
    INFO(what << ", output " << o << ": " << wrong << " wrong; first at " << first << ": got "
              << (wrong ? static_cast<double>(g[first]) : 0.0) << ", want " << (wrong ? static_cast<double>(r[first]) : 0.0));
    CHECK(wrong == 0);
  }
}

}  // namespace fuseflow::test
