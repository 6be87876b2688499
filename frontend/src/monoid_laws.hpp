#pragma once
// The debug check of a custom monoid's laws, run where the monoid meets its elements.
#include <string>

#include "fuseflow/frontend/monoid.hpp"

namespace fuseflow::detail {

// Whether ops check custom monoids: as set_monoid_checks (settings.hpp) says; unset, on in
// debug builds of fuseflow (NDEBUG not defined).
bool monoid_checks_enabled();

// When enabled: evaluates `values` (the elements `op` combines) on a few small random
// inputs with the CPU reference, and checks on those elements and their combinations that
// `typed` (a custom monoid, instantiated for the values' type) has a two-sided identity,
// is associative and, when it says so, commutative. Floats compare with a small relative
// tolerance. Throws GraphError naming the law that failed and the values it failed on.
// Elements the CPU reference cannot produce (raw CUDA, invalid offsets) skip the check.
void check_monoid_laws(const Monoid& typed, const Expr& values, const std::string& op);

}  // namespace fuseflow::detail
