#pragma once
// Keys, bins and offsets for the CPU reference: reading integral keys, and the runs of
// equal consecutive keys the by-key ops work on.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuseflow/frontend/value.hpp"

namespace fuseflow::cpu_reference {

// An integral scalar stored at p, as a signed value when it fits (unsigned values above
// INT64_MAX read as INT64_MAX: beyond every bin and offset anyway).
std::int64_t read_integer(ScalarType t, const std::byte* p);

// Key equality as the device tests it, with C++ ==: floats by value (NaN differs from
// itself, -0 equals +0), tuples field by field.
bool keys_equal(const Value& a, const Value& b);

// Start of each run of equal consecutive keys, then n.
std::vector<std::size_t> key_runs(const Type& t, const std::byte* keys, std::size_t n);

}  // namespace fuseflow::cpu_reference
