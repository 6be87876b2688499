#pragma once
// The scalar types, one row each. Everything that differs from one scalar type to another
// is a column here: the enum, the name in the textual form, the host C++ type (size,
// alignment and the CPU reference's arithmetic follow from it), the CUDA spelling, the
// kind (logical, signed, unsigned, floating) and how a literal is written, in the textual
// form and in CUDA. A new scalar type is a new row; visit_scalar dispatches on it.
#include <cstddef>
#include <cstdint>
#include <span>

namespace fuseflow {

// X(enum, name, C++ type, CUDA type, kind, textual suffix, CUDA suffix). A literal is the
// number followed by its suffix (2L, 2uL, 2.5f; 2LL, 2ULL in CUDA); a null suffix means
// the type has no literal of its own and is written as a conversion: i8(2), (signed char)2.
#define FUSEFLOW_SCALAR_TYPES(X)                                             \
  X(Bool, "bool", bool, "bool", Logical, "", "")                             \
  X(I8, "i8", std::int8_t, "signed char", Signed, nullptr, nullptr)          \
  X(I16, "i16", std::int16_t, "short", Signed, nullptr, nullptr)             \
  X(I32, "i32", std::int32_t, "int", Signed, "", "")                         \
  X(I64, "i64", std::int64_t, "long long", Signed, "L", "LL")                \
  X(U8, "u8", std::uint8_t, "unsigned char", Unsigned, nullptr, nullptr)     \
  X(U16, "u16", std::uint16_t, "unsigned short", Unsigned, nullptr, nullptr) \
  X(U32, "u32", std::uint32_t, "unsigned int", Unsigned, "u", "u")           \
  X(U64, "u64", std::uint64_t, "unsigned long long", Unsigned, "uL", "ULL")  \
  X(F32, "f32", float, "float", Floating, "f", "f")                          \
  X(F64, "f64", double, "double", Floating, "", "")

enum class ScalarType : std::uint8_t {
#define FUSEFLOW_SCALAR_ENUM(e, ...) e,
  FUSEFLOW_SCALAR_TYPES(FUSEFLOW_SCALAR_ENUM)
#undef FUSEFLOW_SCALAR_ENUM
};

enum class ScalarKind : std::uint8_t { Logical, Signed, Unsigned, Floating };

struct ScalarInfo {
  ScalarType type;
  const char* name;       // "i32": the textual form's and the kernels' names
  const char* cuda_name;  // "int"
  std::size_t size;       // bytes; a scalar's alignment is its size, on host and device
  ScalarKind kind;
  const char* literal_suffix;       // textual form; nullptr: written i8(2)
  const char* cuda_literal_suffix;  // CUDA; nullptr: written (signed char)2

  constexpr bool is_integral() const { return kind != ScalarKind::Floating; }  // bool included, as in C++
  constexpr bool is_signed_integer() const { return kind == ScalarKind::Signed; }
  constexpr bool is_unsigned_integer() const { return kind == ScalarKind::Unsigned; }
  constexpr bool is_floating() const { return kind == ScalarKind::Floating; }
};

inline constexpr ScalarInfo kScalarTypes[] = {
#define FUSEFLOW_SCALAR_ROW(e, name, cpp, cuda, kind, suffix, cuda_suffix) \
  {ScalarType::e, name, cuda, sizeof(cpp), ScalarKind::kind, suffix, cuda_suffix},
    FUSEFLOW_SCALAR_TYPES(FUSEFLOW_SCALAR_ROW)
#undef FUSEFLOW_SCALAR_ROW
};

constexpr const ScalarInfo& scalar_info(ScalarType s) { return kScalarTypes[static_cast<std::size_t>(s)]; }
constexpr std::span<const ScalarInfo> all_scalar_types() { return kScalarTypes; }

// The unsigned type as wide as s: u32 for i32, u64 for i64.
constexpr ScalarType unsigned_of(ScalarType s) {
  for (const ScalarInfo& u : kScalarTypes)
    if (u.is_unsigned_integer() && u.size == scalar_info(s).size) return u.type;
  return s;
}

// Calls f(T{}) with T the host C++ type of s, and returns what it returns.
template <class F>
decltype(auto) visit_scalar(ScalarType s, F&& f) {
  switch (s) {
#define FUSEFLOW_SCALAR_CASE(e, name, cpp, ...) \
  case ScalarType::e: return f(cpp{});
    FUSEFLOW_SCALAR_TYPES(FUSEFLOW_SCALAR_CASE)
#undef FUSEFLOW_SCALAR_CASE
  }
  return f(bool{});  // not reached: every enumerator is a row
}

}  // namespace fuseflow
