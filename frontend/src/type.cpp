#include "fuseflow/frontend/type.hpp"

#include <algorithm>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow {

Type Type::tuple(std::vector<Type> fields) {
  if (fields.empty()) throw GraphError("a tuple type needs at least one field");
  Type t;
  t.fields_ = std::make_shared<const std::vector<Type>>(std::move(fields));
  return t;
}

ScalarType Type::scalar() const {
  if (is_tuple()) throw GraphError("expected a scalar type, got " + name());
  return scalar_;
}

const std::vector<Type>& Type::fields() const {
  static const std::vector<Type> none;
  return fields_ ? *fields_ : none;
}

bool Type::is_integral() const { return is_scalar() && scalar_ != ScalarType::F32 && scalar_ != ScalarType::F64; }
bool Type::is_floating() const { return is_scalar() && !is_integral(); }
bool Type::is_signed_integer() const {
  return is_scalar() && (scalar_ == ScalarType::I8 || scalar_ == ScalarType::I16 ||
                         scalar_ == ScalarType::I32 || scalar_ == ScalarType::I64);
}
bool Type::is_unsigned_integer() const {
  return is_scalar() && (scalar_ == ScalarType::U8 || scalar_ == ScalarType::U16 ||
                         scalar_ == ScalarType::U32 || scalar_ == ScalarType::U64);
}

std::size_t Type::size() const {
  if (is_scalar()) return scalar_size(scalar_);
  const auto& f = fields();
  std::size_t end = field_offset(f.size() - 1) + f.back().size();
  std::size_t a = alignment();
  return (end + a - 1) / a * a;
}

std::size_t Type::alignment() const {
  if (is_scalar()) return scalar_size(scalar_);
  std::size_t a = 1;
  for (const auto& f : fields()) a = std::max(a, f.alignment());
  return a;
}

std::size_t Type::field_offset(std::size_t i) const {
  const auto& f = fields();
  if (i >= f.size()) throw GraphError("field " + std::to_string(i) + " of " + name() + ": out of range");
  std::size_t at = 0;
  for (std::size_t k = 0;; ++k) {
    std::size_t a = f[k].alignment();
    at = (at + a - 1) / a * a;
    if (k == i) return at;
    at += f[k].size();
  }
}

std::string Type::name() const {
  if (is_scalar()) return scalar_name(scalar_);
  std::string s = "(";
  for (std::size_t i = 0; i < fields().size(); ++i) s += (i ? ", " : "") + fields()[i].name();
  return s + ")";
}

bool operator==(const Type& a, const Type& b) {
  if (a.is_scalar() != b.is_scalar()) return false;
  if (a.is_scalar()) return a.scalar_ == b.scalar_;
  return a.fields_ == b.fields_ || *a.fields_ == *b.fields_;
}

std::string scalar_name(ScalarType s) {
  switch (s) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "i8";
    case ScalarType::I16: return "i16";
    case ScalarType::I32: return "i32";
    case ScalarType::I64: return "i64";
    case ScalarType::U8: return "u8";
    case ScalarType::U16: return "u16";
    case ScalarType::U32: return "u32";
    case ScalarType::U64: return "u64";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
  }
  return "?";
}

std::size_t scalar_size(ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
    case ScalarType::I8:
    case ScalarType::U8: return 1;
    case ScalarType::I16:
    case ScalarType::U16: return 2;
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::F32: return 4;
    case ScalarType::I64:
    case ScalarType::U64:
    case ScalarType::F64: return 8;
  }
  return 0;
}

int integer_rank(ScalarType s) {
  switch (scalar_size(s)) {
    case 1: return s == ScalarType::Bool ? 0 : 1;
    case 2: return 2;
    case 4: return 3;
    default: return 4;
  }
}

ScalarType integer_promotion(ScalarType a) {
  return integer_rank(a) < 3 ? ScalarType::I32 : a;
}

namespace {
bool is_unsigned(ScalarType s) {
  return s == ScalarType::U8 || s == ScalarType::U16 || s == ScalarType::U32 || s == ScalarType::U64;
}
ScalarType unsigned_of(ScalarType s) {
  return integer_rank(s) == 3 ? ScalarType::U32 : ScalarType::U64;
}
}  // namespace

ScalarType usual_arithmetic_conversion(ScalarType a, ScalarType b) {
  if (a == ScalarType::F64 || b == ScalarType::F64) return ScalarType::F64;
  if (a == ScalarType::F32 || b == ScalarType::F32) return ScalarType::F32;
  a = integer_promotion(a);
  b = integer_promotion(b);
  if (a == b) return a;
  if (is_unsigned(a) == is_unsigned(b)) return integer_rank(a) >= integer_rank(b) ? a : b;
  ScalarType u = is_unsigned(a) ? a : b;
  ScalarType s = is_unsigned(a) ? b : a;
  if (integer_rank(u) >= integer_rank(s)) return u;
  if (scalar_size(s) > scalar_size(u)) return s;  // the signed type holds every unsigned value
  return unsigned_of(s);
}

}  // namespace fuseflow
