#pragma once
// Named example programs: the examples, fuseflow-dump, the golden codegen tests and the
// GPU tests all build their programs here, so each is written once.
#include <functional>
#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

namespace fuseflow::catalog {

// The maximum-segment-sum monoid over (best, best prefix, best suffix, total): the
// non-commutative operator of DESIGN.md. Map each x to (max(x,0), max(x,0), max(x,0), x).
Monoid mssp();
Expr mssp_parts(const Expr& x);
// 2x2 matrix product over (a, b, c, d) = [[a, b], [c, d]] row-major: non-commutative.
Monoid matmul2x2(const Type& element);
// Composition of affine maps x -> a * x + b over (a, b) f32, the earlier map on the left:
// (a1, b1) . (a2, b2) = (a1 * a2, a2 * b1 + b2). Non-commutative. An inclusive scan of
// (a[i], b[i]) has x[i] = a[i] * x[i-1] + b[i] (x[-1] = 0) in field 1.
Monoid linear_recurrence();

struct Entry {
  std::string name;
  std::string description;
  std::function<Program()> build;
};

const std::vector<Entry>& entries();
// The entry called `name`; GraphError listing the known names if there is none.
const Entry& find(const std::string& name);

}  // namespace fuseflow::catalog
