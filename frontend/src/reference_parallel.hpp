#pragma once
// Parallel evaluation for the CPU reference: element-wise expressions have no order, so
// they run on every core; errors still come back as from a sequential run.
#include <cstddef>
#include <functional>

#include "reference_code.hpp"

namespace fuseflow::cpu_reference {

// [0, n) split into contiguous chunks, one per worker thread (small ranges stay whole).
struct Split {
  std::size_t n = 0;
  std::size_t chunks = 1;
  std::size_t begin(std::size_t c) const { return n * c / chunks; }
  std::size_t end(std::size_t c) const { return n * (c + 1) / chunks; }
};

Split split(std::size_t n);

// Runs body(chunk) for every chunk of `s` on its own thread. Each chunk stops at its first
// failing element, and the exception of the lowest failing chunk is rethrown: the error
// is always the one of the lowest failing element, whatever the number of threads.
void parallel_for(const Split& s, const std::function<void(std::size_t chunk)>& body);

// Elements [base, base + count) of a compiled expression, packed into out.
void evaluate_into(const Code& code, std::size_t base, std::size_t count, std::byte* out);

}  // namespace fuseflow::cpu_reference
