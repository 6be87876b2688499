#include "fuseflow/frontend/value.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <sstream>

namespace fuseflow {

Value Value::tuple(std::vector<Value> fields) {
  std::vector<Type> types;
  types.reserve(fields.size());
  for (const auto& f : fields) types.push_back(f.type());
  Value v;
  v.type_ = Type::tuple(std::move(types));
  v.fields_ = std::move(fields);
  return v;
}

template <class T>
T Value::stored() const {
  if constexpr (std::is_same_v<T, bool>) return bits_.u != 0;
  else if constexpr (std::is_same_v<T, float>) return bits_.f;
  else if constexpr (std::is_same_v<T, double>) return bits_.d;
  else if constexpr (std::is_signed_v<T>) return static_cast<T>(bits_.i);
  else return static_cast<T>(bits_.u);
}

// Integers convert modulo 2^width, as static_cast does in C++20.
Value Value::from_uint(ScalarType t, std::uint64_t v) {
  return visit_scalar(t, [v](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) return Value(v != 0);
    else return Value(static_cast<T>(v));
  });
}

Value Value::from_int(ScalarType t, std::int64_t v) {
  return visit_scalar(t, [t, v](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) return Value(static_cast<T>(v));
    else return from_uint(t, static_cast<std::uint64_t>(v));
  });
}

Value Value::from_double(ScalarType t, double v) {
  const ScalarInfo& info = scalar_info(t);
  if (info.is_floating())
    return visit_scalar(t, [v](auto zero) { return Value(static_cast<decltype(zero)>(v)); });
  if (info.kind == ScalarKind::Logical) return Value(v != 0.0);
  // Out-of-range float -> integer is undefined in C++; saturate like CUDA's cvt.rzi.
  if (std::isnan(v)) return from_int(t, 0);
  if (info.is_signed_integer()) {
    double lo = -std::ldexp(1.0, static_cast<int>(info.size) * 8 - 1);
    double hi = -lo - 1.0;
    return from_int(t, static_cast<std::int64_t>(std::fmin(std::fmax(v, lo), hi)));
  }
  double hi = std::ldexp(1.0, static_cast<int>(info.size) * 8);
  if (v <= 0) return from_uint(t, 0);
  if (v >= hi) return from_uint(t, ~std::uint64_t{0});
  return from_uint(t, static_cast<std::uint64_t>(v));
}

Value Value::from_bytes(const Type& t, const void* bytes) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (t.is_tuple()) {
    std::vector<Value> fields;
    fields.reserve(t.arity());
    for (std::size_t i = 0; i < t.arity(); ++i) fields.push_back(from_bytes(t.fields()[i], p + t.field_offset(i)));
    return tuple(std::move(fields));
  }
  return visit_scalar(t.scalar(), [p](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return Value(*p != 0);
    } else {
      T x;
      std::memcpy(&x, p, sizeof x);
      return Value(x);
    }
  });
}

void Value::to_bytes(void* out) const {
  auto* p = static_cast<unsigned char*>(out);
  if (is_tuple()) {
    std::memset(p, 0, type_.size());
    for (std::size_t i = 0; i < fields_.size(); ++i) fields_[i].to_bytes(p + type_.field_offset(i));
    return;
  }
  visit_scalar(type_.scalar(), [this, p](auto zero) {
    const auto x = stored<decltype(zero)>();
    std::memcpy(p, &x, sizeof x);
  });
}

const Value& Value::operator[](std::size_t i) const {
  if (!is_tuple() || i >= fields_.size())
    throw GraphError("field " + std::to_string(i) + " of a " + type_.name() + " value: out of range");
  return fields_[i];
}

std::int64_t Value::as_int() const {
  if (type_.is_floating()) return static_cast<std::int64_t>(as_double());
  if (type_.is_signed_integer()) return bits_.i;
  return static_cast<std::int64_t>(as_uint());
}

std::uint64_t Value::as_uint() const {
  if (type_.is_floating()) return static_cast<std::uint64_t>(as_double());
  if (type_.is_signed_integer()) return static_cast<std::uint64_t>(bits_.i);
  if (is_tuple()) throw GraphError("a " + type_.name() + " tuple is not a number");
  return bits_.u;
}

double Value::as_double() const {
  if (is_tuple()) throw GraphError("a " + type_.name() + " tuple is not a number");
  return visit_scalar(type_.scalar(), [this](auto zero) { return static_cast<double>(stored<decltype(zero)>()); });
}

float Value::as_float() const {
  return type_.is_scalar() && type_.scalar() == ScalarType::F32 ? bits_.f : static_cast<float>(as_double());
}

bool Value::as_bool() const {
  if (type_.is_floating()) return as_double() != 0.0;
  return as_uint() != 0;
}

Value Value::cast(ScalarType to) const {
  if (type_.is_floating()) {
    if (to == ScalarType::F32) return Value(as_float());
    return from_double(to, as_double());
  }
  if (type_.is_signed_integer()) return from_int(to, bits_.i);
  return from_uint(to, as_uint());
}

void Value::require_type(const Type& t, const char* what) const {
  if (t != type_) throw GraphError(std::string("cannot ") + what + " of type " + type_.name() + " to " + t.name());
}

bool operator==(const Value& a, const Value& b) {
  if (a.type_ != b.type_) return false;
  if (a.is_tuple()) return a.fields_ == b.fields_;
  if (a.type_.is_floating()) {
    double x = a.as_double(), y = b.as_double();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  return a.as_uint() == b.as_uint();
}

std::string Value::to_string() const {
  if (is_tuple()) {
    std::string s = "(";
    for (std::size_t i = 0; i < fields_.size(); ++i) s += (i ? ", " : "") + fields_[i].to_string();
    return s + ")";
  }
  const ScalarInfo& info = scalar_info(type_.scalar());
  return visit_scalar(info.type, [this, &info](auto zero) -> std::string {
    using T = decltype(zero);
    const T x = stored<T>();
    if constexpr (std::is_same_v<T, bool>) {
      return x ? "true" : "false";
    } else if constexpr (std::is_floating_point_v<T>) {
      // Enough digits to read back the same value; a whole number keeps a ".0".
      std::ostringstream os;
      os.precision(std::numeric_limits<T>::max_digits10);
      os << x;
      if (std::isfinite(x) && os.str().find_first_of(".e") == std::string::npos) os << ".0";
      return os.str() + info.literal_suffix;
    } else {
      std::string digits = std::to_string(x);
      return info.literal_suffix ? digits + info.literal_suffix : std::string(info.name) + "(" + digits + ")";
    }
  });
}

std::ostream& operator<<(std::ostream& os, const Value& v) { return os << v.to_string(); }

}  // namespace fuseflow
