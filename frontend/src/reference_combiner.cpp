#include "reference_combiner.hpp"

#include <type_traits>

#include "scalar_semantics.hpp"

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

// Fn, the host function of the monoid's combine operator, on C++ type T: the result its
// DSL combine expression gives, cast<T>(a op b), so small integers wrap, signed ones too.
template <class T, class Fn>
void builtin_run(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive) {
  T a = load<T>(acc);
  if (!out) {
    for (std::size_t j = 0; j < count; ++j) a = static_cast<T>(Fn{}(a, load<T>(xs + j * sizeof(T))));
  } else {
    for (std::size_t j = 0; j < count; ++j) {
      T next = static_cast<T>(Fn{}(a, load<T>(xs + j * sizeof(T))));
      store(out + j * sizeof(T), inclusive ? next : a);
      a = next;
    }
  }
  store(acc, a);
}

template <class T, auto Combine>
RunFn typed_run() {
  using Fn = typename host::FunctionOf<Combine>::type;
  if constexpr (std::is_void_v<Fn>) return nullptr;
  else if constexpr (Fn::template applies<T>) return builtin_run<T, Fn>;
  else return nullptr;
}

template <class T>
RunFn builtin_run_for(MonoidKind k) {
  switch (k) {
#define FUSEFLOW_MONOID_RUN(e, name, combine, ...) \
  case MonoidKind::e: return typed_run<T, combine>();
    FUSEFLOW_BUILTIN_MONOIDS(FUSEFLOW_MONOID_RUN)
#undef FUSEFLOW_MONOID_RUN
    case MonoidKind::Custom: break;
  }
  return nullptr;
}

}  // namespace

// The typed loop for a built-in monoid over a scalar, or nullptr (custom monoids, tuples).
RunFn builtin_run_for(const Monoid& m) {
  if (!m.is_builtin() || !m.type().is_scalar()) return nullptr;
  return visit_scalar(m.type().scalar(), [&m](auto t) { return builtin_run_for<decltype(t)>(m.kind()); });
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
