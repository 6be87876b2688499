#pragma once
// Filters' results mixed with other arrays. A filter's result is an array of its survivors;
// an element-wise expression that reads it is over those survivors, so the other arrays
// it reads are taken at the survivors' positions:
//
//   filter(x, p) + y                 ==  filter(x + y, p)       (y has x's length)
//   filter(x, p) + filter(y, p)      ==  filter(x + y, p)       (the same predicate)
//   filter(x, p) * index() + y       ==  get<0>(f) * index() + get<1>(f),  f = filter(zip(x, y), p)
//
// index() beside a filter's result stays the position among the survivors. Filters whose
// predicates differ keep different elements: mixing them is a GraphError.
// lift_filters rewrites a program into that form (the CPU reference and the code
// generator both run it, so it is the one definition of the meaning); a program with
// nothing to lift comes back unchanged.
#include "fuseflow/frontend/program.hpp"

namespace fuseflow {

Program lift_filters(const Program& program);

// Whether two expressions are the same tree: the same kinds, types, payloads and ops (a
// result is the same only when it is of the same op).
bool same_structure(const Expr& a, const Expr& b);

}  // namespace fuseflow
