// XXH64 (Yann Collet's xxHash, 64-bit variant), written out so fuseflow has no
// dependency for it. Four independent lanes keep the multiplier pipelines busy.
#include "fuseflow/runtime/hash.hpp"

#include <cstring>

namespace fuseflow {
namespace {

constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t p2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t p3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t p4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t p5 = 0x27D4EB2F165667C5ULL;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only, like CUDA itself
}

std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
  acc += input * p2;
  acc = rotl(acc, 31);
  return acc * p1;
}

std::uint64_t merge_round(std::uint64_t acc, std::uint64_t value) {
  acc ^= round(0, value);
  return acc * p1 + p4;
}

}  // namespace

std::uint64_t hash64(std::string_view data, std::uint64_t seed) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const unsigned char* const end = p + data.size();
  std::uint64_t h;
  if (data.size() >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = round(v1, read64(p));
      v2 = round(v2, read64(p + 8));
      v3 = round(v3, read64(p + 16));
      v4 = round(v4, read64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge_round(h, v1);
    h = merge_round(h, v2);
    h = merge_round(h, v3);
    h = merge_round(h, v4);
  } else {
    h = seed + p5;
  }
  h += data.size();
  for (; p + 8 <= end; p += 8) {
    h ^= round(0, read64(p));
    h = rotl(h, 27) * p1 + p4;
  }
  if (p + 4 <= end) {
    h ^= static_cast<std::uint64_t>(read32(p)) * p1;
    h = rotl(h, 23) * p2 + p3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= (*p) * p5;
    h = rotl(h, 11) * p1;
  }
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}

std::string hex64(std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = digits[value & 15];
  return out;
}

}  // namespace fuseflow
