#include "fuseflow/frontend/value.hpp"

#include <cmath>
#include <cstring>
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

namespace {
// Truncates an integer to the width and signedness of `t`, as static_cast does.
std::int64_t wrap_signed(ScalarType t, std::uint64_t bits) {
  switch (t) {
    case ScalarType::I8: return static_cast<std::int8_t>(bits);
    case ScalarType::I16: return static_cast<std::int16_t>(bits);
    case ScalarType::I32: return static_cast<std::int32_t>(bits);
    default: return static_cast<std::int64_t>(bits);
  }
}
std::uint64_t wrap_unsigned(ScalarType t, std::uint64_t bits) {
  switch (t) {
    case ScalarType::U8: return static_cast<std::uint8_t>(bits);
    case ScalarType::U16: return static_cast<std::uint16_t>(bits);
    case ScalarType::U32: return static_cast<std::uint32_t>(bits);
    default: return bits;
  }
}
}  // namespace

Value Value::from_uint(ScalarType t, std::uint64_t v) {
  Value out;
  out.type_ = t;
  Type ty(t);
  if (t == ScalarType::Bool) out.bits_.u = v != 0;
  else if (t == ScalarType::F32) out.bits_.f = static_cast<float>(v);
  else if (t == ScalarType::F64) out.bits_.d = static_cast<double>(v);
  else if (ty.is_signed_integer()) out.bits_.i = wrap_signed(t, v);
  else out.bits_.u = wrap_unsigned(t, v);
  return out;
}

Value Value::from_int(ScalarType t, std::int64_t v) {
  if (t == ScalarType::F32) return Value(static_cast<float>(v));
  if (t == ScalarType::F64) return Value(static_cast<double>(v));
  return from_uint(t, static_cast<std::uint64_t>(v));
}

Value Value::from_double(ScalarType t, double v) {
  Type ty(t);
  if (t == ScalarType::F32) return Value(static_cast<float>(v));
  if (t == ScalarType::F64) return Value(v);
  if (t == ScalarType::Bool) return Value(v != 0.0);
  // Out-of-range float -> integer is undefined in C++; saturate like CUDA's cvt.rzi.
  if (std::isnan(v)) return from_int(t, 0);
  if (ty.is_signed_integer()) {
    double lo = -std::ldexp(1.0, static_cast<int>(scalar_size(t)) * 8 - 1);
    double hi = -lo - 1.0;
    return from_int(t, static_cast<std::int64_t>(std::fmin(std::fmax(v, lo), hi)));
  }
  double hi = std::ldexp(1.0, static_cast<int>(scalar_size(t)) * 8);
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
  Value v;
  v.type_ = t;
  switch (t.scalar()) {
    case ScalarType::Bool: v.bits_.u = *p != 0; break;
    case ScalarType::I8: { std::int8_t x; std::memcpy(&x, p, 1); v.bits_.i = x; break; }
    case ScalarType::I16: { std::int16_t x; std::memcpy(&x, p, 2); v.bits_.i = x; break; }
    case ScalarType::I32: { std::int32_t x; std::memcpy(&x, p, 4); v.bits_.i = x; break; }
    case ScalarType::I64: { std::int64_t x; std::memcpy(&x, p, 8); v.bits_.i = x; break; }
    case ScalarType::U8: v.bits_.u = *p; break;
    case ScalarType::U16: { std::uint16_t x; std::memcpy(&x, p, 2); v.bits_.u = x; break; }
    case ScalarType::U32: { std::uint32_t x; std::memcpy(&x, p, 4); v.bits_.u = x; break; }
    case ScalarType::U64: { std::uint64_t x; std::memcpy(&x, p, 8); v.bits_.u = x; break; }
    case ScalarType::F32: std::memcpy(&v.bits_.f, p, 4); break;
    case ScalarType::F64: std::memcpy(&v.bits_.d, p, 8); break;
  }
  return v;
}

void Value::to_bytes(void* out) const {
  auto* p = static_cast<unsigned char*>(out);
  if (is_tuple()) {
    std::memset(p, 0, type_.size());
    for (std::size_t i = 0; i < fields_.size(); ++i) fields_[i].to_bytes(p + type_.field_offset(i));
    return;
  }
  switch (type_.scalar()) {
    case ScalarType::Bool: *p = bits_.u ? 1 : 0; break;
    case ScalarType::I8: case ScalarType::I16: case ScalarType::I32: case ScalarType::I64:
      std::memcpy(p, &bits_.i, type_.size());  // little-endian: the low bytes first
      break;
    case ScalarType::U8: case ScalarType::U16: case ScalarType::U32: case ScalarType::U64:
      std::memcpy(p, &bits_.u, type_.size());
      break;
    case ScalarType::F32: std::memcpy(p, &bits_.f, 4); break;
    case ScalarType::F64: std::memcpy(p, &bits_.d, 8); break;
  }
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
  switch (type_.scalar()) {
    case ScalarType::F32: return bits_.f;
    case ScalarType::F64: return bits_.d;
    default: return type_.is_signed_integer() ? static_cast<double>(bits_.i) : static_cast<double>(bits_.u);
  }
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
  std::ostringstream os;
  switch (type_.scalar()) {
    case ScalarType::Bool: return bits_.u ? "true" : "false";
    case ScalarType::F32:
      os.precision(9);
      os << bits_.f;
      if (std::isfinite(bits_.f) && os.str().find_first_of(".e") == std::string::npos) os << ".0";
      os << "f";
      return os.str();
    case ScalarType::F64:
      os.precision(17);
      os << bits_.d;
      if (std::isfinite(bits_.d) && os.str().find_first_of(".e") == std::string::npos) os << ".0";
      return os.str();
    case ScalarType::I32: return std::to_string(bits_.i);
    case ScalarType::I64: return std::to_string(bits_.i) + "L";
    case ScalarType::U32: return std::to_string(bits_.u) + "u";
    case ScalarType::U64: return std::to_string(bits_.u) + "uL";
    default:
      return scalar_name(type_.scalar()) + "(" +
             (type_.is_signed_integer() ? std::to_string(bits_.i) : std::to_string(bits_.u)) + ")";
  }
}

std::ostream& operator<<(std::ostream& os, const Value& v) { return os << v.to_string(); }

}  // namespace fuseflow
