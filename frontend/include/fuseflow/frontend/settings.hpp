#pragma once
// Settings of the frontend, made by the caller (the runtime's configuration reads
// FUSEFLOW_* variables once and calls these); the frontend reads no environment.
#include <optional>

namespace fuseflow {

// Whether an op checks the laws of a custom monoid when it first meets its elements
// (identity, associativity, commutativity when declared; see monoid_laws.hpp): true or false
// decides; std::nullopt, the default, means on in debug builds of fuseflow (NDEBUG not
// defined) and off otherwise. Safe to call from any thread; ops made afterwards see it.
void set_monoid_checks(std::optional<bool> enabled);
std::optional<bool> monoid_checks();  // what was set; std::nullopt when nothing was

}  // namespace fuseflow
