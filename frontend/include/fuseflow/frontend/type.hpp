#pragma once
// Element types of fuseflow arrays: scalars (bool, i8..i64, u8..u64, f32, f64) and tuples
// of them, nested tuples included. A tuple is laid out as a plain C struct (fields in
// order, natural alignment), both in generated CUDA and in ff::Tuple on the host.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuseflow/frontend/scalar_types.hpp"

namespace fuseflow {

class Type {
 public:
  Type() : Type(ScalarType::I32) {}
  Type(ScalarType s) : scalar_(s) {}  // NOLINT: a scalar type is a type
  static Type tuple(std::vector<Type> fields);

  bool is_scalar() const { return fields_ == nullptr; }
  bool is_tuple() const { return fields_ != nullptr; }
  ScalarType scalar() const;  // throws GraphError for a tuple
  const std::vector<Type>& fields() const;  // empty for a scalar
  std::size_t arity() const { return fields().size(); }

  bool is_bool() const { return is_scalar() && scalar_ == ScalarType::Bool; }
  bool is_integral() const;  // bool counts as integral, as in C++
  bool is_signed_integer() const;
  bool is_unsigned_integer() const;
  bool is_floating() const;
  bool is_arithmetic() const { return is_scalar(); }

  std::size_t size() const;       // bytes, as a C struct
  std::size_t alignment() const;  // bytes
  std::size_t field_offset(std::size_t i) const;  // byte offset of field i of a tuple

  std::string name() const;  // "f32", "(i32, i32)"

  friend bool operator==(const Type& a, const Type& b);
  friend bool operator!=(const Type& a, const Type& b) { return !(a == b); }

 private:
  ScalarType scalar_ = ScalarType::I32;
  std::shared_ptr<const std::vector<Type>> fields_;
};

std::string scalar_name(ScalarType s);  // "i32" (scalar_info(s).name)
std::size_t scalar_size(ScalarType s);  // scalar_info(s).size
int integer_rank(ScalarType s);  // C++ conversion rank: bool 0, 8-bit 1 ... 64-bit 4

// C++'s usual arithmetic conversions on two scalar types (integer promotion included):
// i8 + i8 -> i32, u32 + i32 -> u32, i64 + u32 -> i64, f32 + i64 -> f32, f32 + f64 -> f64.
ScalarType usual_arithmetic_conversion(ScalarType a, ScalarType b);
ScalarType integer_promotion(ScalarType a);  // bool/i8/i16/u8/u16 -> i32

template <class... Ts>
struct Tuple;

// The fuseflow type of a C++ type: type_of<float>() == f32; type_of<Tuple<int, float>>().
template <class T>
struct TypeOf;
template <>
struct TypeOf<bool> { static Type get() { return ScalarType::Bool; } };
template <>
struct TypeOf<std::int8_t> { static Type get() { return ScalarType::I8; } };
template <>
struct TypeOf<std::int16_t> { static Type get() { return ScalarType::I16; } };
template <>
struct TypeOf<std::int32_t> { static Type get() { return ScalarType::I32; } };
template <>
struct TypeOf<long> { static Type get() { return ScalarType::I64; } };
template <>
struct TypeOf<long long> { static Type get() { return ScalarType::I64; } };
template <>
struct TypeOf<std::uint8_t> { static Type get() { return ScalarType::U8; } };
template <>
struct TypeOf<std::uint16_t> { static Type get() { return ScalarType::U16; } };
template <>
struct TypeOf<std::uint32_t> { static Type get() { return ScalarType::U32; } };
template <>
struct TypeOf<unsigned long> { static Type get() { return ScalarType::U64; } };
template <>
struct TypeOf<unsigned long long> { static Type get() { return ScalarType::U64; } };
template <>
struct TypeOf<float> { static Type get() { return ScalarType::F32; } };
template <>
struct TypeOf<double> { static Type get() { return ScalarType::F64; } };
template <>
struct TypeOf<char> { static Type get() { return ScalarType::I8; } };
template <class... Ts>
struct TypeOf<Tuple<Ts...>> {
  static Type get() { return Type::tuple({TypeOf<Ts>::get()...}); }
};

template <class T>
Type type_of() {
  return TypeOf<T>::get();
}

}  // namespace fuseflow
