#include "reference_keys.hpp"

#include <cstring>
#include <type_traits>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {
namespace cpu_reference {

std::int64_t read_integer(ScalarType t, const std::byte* p) {
  if (!scalar_info(t).is_integral() || scalar_info(t).kind == ScalarKind::Logical)
    throw GraphError("keys, bins and offsets must be integers, got " + scalar_name(t));
  return visit_scalar(t, [p](auto zero) -> std::int64_t {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T v;
      std::memcpy(&v, p, sizeof v);
      if constexpr (std::is_unsigned_v<T>) {
        if (v > static_cast<std::uint64_t>(INT64_MAX)) return INT64_MAX;
      }
      return static_cast<std::int64_t>(v);
    }
    return 0;  // not reached: checked above
  });
}

bool keys_equal(const Value& a, const Value& b) {
  if (a.is_tuple()) {
    for (std::size_t f = 0; f < a.fields().size(); ++f)
      if (!keys_equal(a[f], b[f])) return false;
    return true;
  }
  if (a.type().is_floating()) return a.as_double() == b.as_double();
  return a.as_uint() == b.as_uint();
}

std::vector<std::size_t> key_runs(const Type& t, const std::byte* keys, std::size_t n) {
  std::vector<std::size_t> starts;
  std::size_t size = t.size();
  bool bytewise = t.is_integral() && !t.is_bool();
  Value previous;
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* k = keys + i * size;
    if (bytewise) {
      if (i == 0 || std::memcmp(k - size, k, size) != 0) starts.push_back(i);
      continue;
    }
    Value key = Value::from_bytes(t, k);
    if (i == 0 || !keys_equal(previous, key)) starts.push_back(i);
    previous = std::move(key);
  }
  starts.push_back(n);
  return starts;
}

}  // namespace cpu_reference

std::vector<std::size_t> segment_bounds(const std::string& op, ScalarType t, const std::byte* offsets,
                                        std::size_t m, std::size_t n) {
  if (m == 0) throw GraphError(op + ": the offsets are empty; s segments need s + 1 offsets");
  std::vector<std::size_t> bounds(m);
  for (std::size_t s = 0; s < m; ++s) {
    std::int64_t v = cpu_reference::read_integer(t, offsets + s * scalar_size(t));
    std::string which = "offset " + std::to_string(s) + " is " + std::to_string(v);
    if (v < 0) throw GraphError(op + ": " + which + "; offsets must be >= 0");
    if (static_cast<std::uint64_t>(v) > n)
      throw GraphError(op + ": " + which + ", beyond the end of the " + std::to_string(n) + " values");
    if (s > 0 && static_cast<std::size_t>(v) < bounds[s - 1])
      throw GraphError(op + ": " + which + ", less than offset " + std::to_string(s - 1) + " (" +
                       std::to_string(bounds[s - 1]) + "); offsets must be non-decreasing");
    bounds[s] = static_cast<std::size_t>(v);
  }
  return bounds;
}

}  // namespace fuseflow
