#pragma once
// What the CPU reference evaluator's tests share: running a program to its one result,
// the message of a GraphError, and the maximum segment sum as a non-commutative monoid.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fuseflow/frontend/reference.hpp"

namespace ff = fuseflow;

namespace reference_test {

template <class T>
ff::HostArray array(std::vector<T> values) {
  return ff::HostArray::from(values);
}

// The single result of a one-output program.
inline ff::HostResult run1(const ff::Program& p, const ff::HostBindings& b) {
  auto results = ff::evaluate(p, b);
  REQUIRE(results.size() == 1);
  return results[0];
}

template <class T>
std::vector<T> run_array(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  REQUIRE_FALSE(r.is_scalar);
  return r.array.to_vector<T>();
}

// A bool array as 0/1 ints (std::vector<bool> has no contiguous storage to copy into).
inline std::vector<int> bool_array(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  std::vector<int> out;
  for (std::size_t i = 0; i < r.array.size(); ++i) out.push_back(r.array.at(i).as_bool() ? 1 : 0);
  return out;
}

inline ff::Value run_scalar(const ff::Expr& e, const ff::HostBindings& b) {
  ff::HostResult r = run1(ff::Program(e), b);
  REQUIRE(r.is_scalar);
  return r.scalar;
}

// The message of the GraphError f throws, or a note that it threw none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ff::GraphError& e) {
    return e.what();
  }
  return "(no GraphError thrown)";
}

using I4 = ff::Tuple<int, int, int, int>;

// Maximum segment sum as (best, best prefix, best suffix, total); not commutative.
inline ff::Monoid mssp_monoid() {
  return ff::monoid<I4>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]), ff::max(a[1], a[3] + b[1]),
                         ff::max(b[2], a[2] + b[3]), a[3] + b[3]);
      },
      ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");
}

inline ff::Expr mssp_parts(const ff::Expr& x) {
  return ff::map(x, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
}

}  // namespace reference_test
