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

bool Type::is_integral() const { return is_scalar() && scalar_info(scalar_).is_integral(); }
bool Type::is_floating() const { return is_scalar() && scalar_info(scalar_).is_floating(); }
bool Type::is_signed_integer() const { return is_scalar() && scalar_info(scalar_).is_signed_integer(); }
bool Type::is_unsigned_integer() const { return is_scalar() && scalar_info(scalar_).is_unsigned_integer(); }

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

std::string scalar_name(ScalarType s) { return scalar_info(s).name; }

std::size_t scalar_size(ScalarType s) { return scalar_info(s).size; }

int integer_rank(ScalarType s) {
  if (scalar_info(s).kind == ScalarKind::Logical) return 0;
  int rank = 1;
  for (std::size_t size = 1; size < scalar_size(s); size *= 2) ++rank;  // 1, 2, 4, 8 bytes -> 1 .. 4
  return rank;
}

ScalarType integer_promotion(ScalarType a) {
  return integer_rank(a) < 3 ? ScalarType::I32 : a;
}

namespace {
bool is_unsigned(ScalarType s) { return scalar_info(s).is_unsigned_integer(); }
}  // namespace

ScalarType usual_arithmetic_conversion(ScalarType a, ScalarType b) {
  const bool a_float = scalar_info(a).is_floating(), b_float = scalar_info(b).is_floating();
  if (a_float || b_float) {  // the wider floating type
    if (!b_float) return a;
    if (!a_float) return b;
    return scalar_size(a) >= scalar_size(b) ? a : b;
  }
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
