#include "reference_combiner.hpp"

namespace fuseflow::cpu_reference {

namespace {

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// A built-in monoid's combine on C++ type T, with the result its DSL combine expression
// gives: cast<T>(a op b) after promotion, so small integers wrap, signed ones included.
template <class T, MonoidKind K>
T builtin_combine(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return K == MonoidKind::LogicalAnd ? (a && b) : (a || b);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (K == MonoidKind::Plus) return a + b;
    if constexpr (K == MonoidKind::Times) return a * b;
    if constexpr (K == MonoidKind::Min) return detail::min_propagating_nan(a, b);
    if constexpr (K == MonoidKind::Max) return detail::max_propagating_nan(a, b);
  } else {
    using W = std::conditional_t<(sizeof(T) < 8), std::uint32_t, std::uint64_t>;  // no signed overflow
    if constexpr (K == MonoidKind::Plus) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    if constexpr (K == MonoidKind::Times) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    if constexpr (K == MonoidKind::Min) return b < a ? b : a;
    if constexpr (K == MonoidKind::Max) return a < b ? b : a;
    if constexpr (K == MonoidKind::BitAnd) return static_cast<T>(a & b);
    if constexpr (K == MonoidKind::BitOr) return static_cast<T>(a | b);
    if constexpr (K == MonoidKind::BitXor) return static_cast<T>(a ^ b);
  }
}


template <class T, MonoidKind K>
void builtin_run(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive) {
  T a = load<T>(acc);
  if (!out) {
    for (std::size_t j = 0; j < count; ++j) a = builtin_combine<T, K>(a, load<T>(xs + j * sizeof(T)));
  } else {
    for (std::size_t j = 0; j < count; ++j) {
      T next = builtin_combine<T, K>(a, load<T>(xs + j * sizeof(T)));
      store(out + j * sizeof(T), inclusive ? next : a);
      a = next;
    }
  }
  store(acc, a);
}

template <class T>
RunFn builtin_run_for(MonoidKind k) {
  if constexpr (std::is_same_v<T, bool>) {
    if (k == MonoidKind::LogicalAnd) return builtin_run<T, MonoidKind::LogicalAnd>;
    if (k == MonoidKind::LogicalOr) return builtin_run<T, MonoidKind::LogicalOr>;
    return nullptr;
  } else {
    switch (k) {
      case MonoidKind::Plus: return builtin_run<T, MonoidKind::Plus>;
      case MonoidKind::Times: return builtin_run<T, MonoidKind::Times>;
      case MonoidKind::Min: return builtin_run<T, MonoidKind::Min>;
      case MonoidKind::Max: return builtin_run<T, MonoidKind::Max>;
      default: break;
    }
    if constexpr (std::is_integral_v<T>) {
      switch (k) {
        case MonoidKind::BitAnd: return builtin_run<T, MonoidKind::BitAnd>;
        case MonoidKind::BitOr: return builtin_run<T, MonoidKind::BitOr>;
        case MonoidKind::BitXor: return builtin_run<T, MonoidKind::BitXor>;
        default: break;
      }
    }
    return nullptr;
  }
}


}  // namespace

// The typed loop for a built-in monoid over a scalar, or nullptr (custom monoids, tuples).
RunFn builtin_run_for(const Monoid& m) {
  if (!m.is_builtin() || !m.type().is_scalar()) return nullptr;
  MonoidKind k = m.kind();
  switch (m.type().scalar()) {
    case ScalarType::Bool: return builtin_run_for<bool>(k);
    case ScalarType::I8: return builtin_run_for<std::int8_t>(k);
    case ScalarType::I16: return builtin_run_for<std::int16_t>(k);
    case ScalarType::I32: return builtin_run_for<std::int32_t>(k);
    case ScalarType::I64: return builtin_run_for<std::int64_t>(k);
    case ScalarType::U8: return builtin_run_for<std::uint8_t>(k);
    case ScalarType::U16: return builtin_run_for<std::uint16_t>(k);
    case ScalarType::U32: return builtin_run_for<std::uint32_t>(k);
    case ScalarType::U64: return builtin_run_for<std::uint64_t>(k);
    case ScalarType::F32: return builtin_run_for<float>(k);
    case ScalarType::F64: return builtin_run_for<double>(k);
  }
  return nullptr;
}

[[noreturn]] void not_a_combine_leaf(const Expr& leaf) {
  throw GraphError("a combine function may use only its operands a, b and constants, got " +
                   fuseflow::to_string(leaf));
}

Code compile_combine(const Monoid& m) {
  if (!m.is_typed())
    throw GraphError("monoid " + m.name() + " is generic; an op instantiates it for an element type");
  return compile(m.combine(), [](const Expr& leaf) -> LeafData { not_a_combine_leaf(leaf); }, &m.type());
}

}  // namespace fuseflow::cpu_reference
