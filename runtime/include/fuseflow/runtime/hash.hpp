#pragma once
// The 64-bit hash behind cache keys and entry checksums: XXH64, because lookups hash the
// whole generated source (plus headers) on every call and FNV-1a's byte-at-a-time loop
// would dominate an in-memory cache hit.
#include <cstdint>
#include <string>
#include <string_view>

namespace fuseflow {

std::uint64_t hash64(std::string_view data, std::uint64_t seed = 0) noexcept;

// 16 lowercase hex digits: the form used in file names and log lines.
std::string hex64(std::uint64_t value);

}  // namespace fuseflow
