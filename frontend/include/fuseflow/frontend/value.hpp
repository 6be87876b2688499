#pragma once
// Value: a host value of any fuseflow type, known at run time. Constants in expressions,
// monoid identities, scalar parameters, the CPU reference evaluator and scalar results
// coming back from the device all use it. Conversion to a C++ type checks the type.
#include <cstdint>
#include <iosfwd>
#include <utility>
#include <string>
#include <vector>

#include "fuseflow/frontend/error.hpp"
#include "fuseflow/frontend/tuple.hpp"
#include "fuseflow/frontend/type.hpp"

namespace fuseflow {

class Value {
 public:
  Value() : Value(std::int32_t{0}) {}
  Value(bool v) : type_(ScalarType::Bool) { bits_.u = v ? 1 : 0; }  // NOLINT: implicit
  Value(std::int8_t v) : type_(ScalarType::I8) { bits_.i = v; }
  Value(std::int16_t v) : type_(ScalarType::I16) { bits_.i = v; }
  Value(std::int32_t v) : type_(ScalarType::I32) { bits_.i = v; }
  Value(long v) : type_(ScalarType::I64) { bits_.i = v; }
  Value(long long v) : type_(ScalarType::I64) { bits_.i = v; }
  Value(std::uint8_t v) : type_(ScalarType::U8) { bits_.u = v; }
  Value(std::uint16_t v) : type_(ScalarType::U16) { bits_.u = v; }
  Value(std::uint32_t v) : type_(ScalarType::U32) { bits_.u = v; }
  Value(unsigned long v) : type_(ScalarType::U64) { bits_.u = v; }
  Value(unsigned long long v) : type_(ScalarType::U64) { bits_.u = v; }
  Value(float v) : type_(ScalarType::F32) { bits_.f = v; }
  Value(double v) : type_(ScalarType::F64) { bits_.d = v; }
  Value(char v) : Value(static_cast<std::int8_t>(v)) {}
  template <class... Ts>
  Value(const Tuple<Ts...>& t) : Value(from_tuple(t, std::index_sequence_for<Ts...>{})) {}  // NOLINT

  static Value tuple(std::vector<Value> fields);
  // A scalar of type `t` converted from a number the way static_cast would.
  static Value from_int(ScalarType t, std::int64_t v);
  static Value from_uint(ScalarType t, std::uint64_t v);
  static Value from_double(ScalarType t, double v);
  // The bytes of a value laid out as `t` (as stored in device memory).
  static Value from_bytes(const Type& t, const void* bytes);
  void to_bytes(void* out) const;  // type().size() bytes

  const Type& type() const { return type_; }
  bool is_tuple() const { return type_.is_tuple(); }
  const std::vector<Value>& fields() const { return fields_; }
  const Value& operator[](std::size_t i) const;

  // Scalar access, converting as static_cast would.
  std::int64_t as_int() const;
  std::uint64_t as_uint() const;
  double as_double() const;
  float as_float() const;
  bool as_bool() const;
  // This scalar converted to another scalar type, as static_cast would.
  Value cast(ScalarType to) const;

  // Checked conversion to a C++ type: float f = value; throws GraphError when the
  // fuseflow type differs from T's.
  template <class T>
  T as() const;
  template <class T>
  operator T() const {  // NOLINT: results read naturally as `float s = rt.run(...)`
    return as<T>();
  }

  // Exact equality; floats compare by bits except that +0 == -0 and NaN == NaN.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

  std::string to_string() const;  // "3", "2.5f", "(1, 2)"

 private:
  template <class... Ts, std::size_t... I>
  static Value from_tuple(const Tuple<Ts...>& t, std::index_sequence<I...>) {
    return tuple({Value(t.template get<I>())...});
  }
  template <class T>
  T scalar_as() const;
  // The scalar as stored, T being its own C++ type (scalar_types.hpp): no conversion.
  template <class T>
  T stored() const;
  void require_type(const Type& t, const char* what) const;

  Type type_;
  union {
    std::int64_t i;
    std::uint64_t u;
    float f;
    double d;
  } bits_{};
  std::vector<Value> fields_;
};

template <class T>
T Value::scalar_as() const {
  if constexpr (std::is_same_v<T, bool>) {
    return as_bool();
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(as_double());
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(as_int());
  } else {
    return static_cast<T>(as_uint());
  }
}

namespace detail {
template <class T>
struct IsTuple : std::false_type {};
template <class... Ts>
struct IsTuple<Tuple<Ts...>> : std::true_type {};
}  // namespace detail

template <class T>
T Value::as() const {
  require_type(type_of<T>(), "convert a result");
  if constexpr (detail::IsTuple<T>::value) {
    T out;
    to_bytes(out.bytes);
    return out;
  } else {
    return scalar_as<T>();
  }
}

std::ostream& operator<<(std::ostream& os, const Value& v);

}  // namespace fuseflow
