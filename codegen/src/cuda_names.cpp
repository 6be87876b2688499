#include "cuda_names.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

namespace fuseflow::codegen {

std::string scalar_cuda_name(ScalarType s) {
  switch (s) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "signed char";
    case ScalarType::I16: return "short";
    case ScalarType::I32: return "int";
    case ScalarType::I64: return "long long";
    case ScalarType::U8: return "unsigned char";
    case ScalarType::U16: return "unsigned short";
    case ScalarType::U32: return "unsigned int";
    case ScalarType::U64: return "unsigned long long";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return "?";
}

std::string short_type_name(const Type& t) {
  if (t.is_scalar()) return scalar_name(t.scalar());
  bool same = true;
  for (const auto& f : t.fields()) same = same && f == t.fields()[0];
  if (same) return short_type_name(t.fields()[0]) + "x" + std::to_string(t.arity());
  std::string s;
  for (const auto& f : t.fields()) s += (s.empty() ? "" : "_") + short_type_name(f);
  return s;
}

std::string CudaTypes::name(const Type& t) {
  if (t.is_scalar()) return scalar_cuda_name(t.scalar());
  for (const auto& [type, n] : tuples_)
    if (type == t) return n;
  std::vector<std::string> fields;
  for (const auto& f : t.fields()) fields.push_back(name(f));  // nested structs first
  std::string n = "ff_tuple" + std::to_string(tuples_.size());
  std::ostringstream def;
  def << "struct " << n << " {  // " << t.name() << "\n";
  for (std::size_t i = 0; i < fields.size(); ++i) def << "  " << fields[i] << " f" << i << ";\n";
  def << "};\n";
  tuples_.emplace_back(t, n);
  defs_.push_back(def.str());
  return n;
}

std::string CudaTypes::definitions() const {
  std::string s;
  for (const auto& d : defs_) s += d;
  return s;
}

namespace {
std::string float_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "__int_as_float(0x7fffffff)" : "__longlong_as_double(0x7fffffffffffffffLL)";
  if (std::isinf(v)) {
    if (single) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double(0xfff0000000000000LL)";
  }
  std::ostringstream os;
  os.precision(single ? 9 : 17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return single ? s + "f" : s;
}
}  // namespace

std::string CudaTypes::literal(const Value& v) {
  const Type& t = v.type();
  if (t.is_tuple()) {
    std::string s = name(t) + "{";
    for (std::size_t i = 0; i < v.fields().size(); ++i) s += (i ? ", " : "") + literal(v.fields()[i]);
    return s + "}";
  }
  switch (t.scalar()) {
    case ScalarType::Bool: return v.as_bool() ? "true" : "false";
    case ScalarType::F32: return float_literal(v.as_float(), true);
    case ScalarType::F64: return float_literal(v.as_double(), false);
    case ScalarType::I64: {
      std::int64_t x = v.as_int();
      if (x == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return std::to_string(x) + "LL";
    }
    case ScalarType::U64: return std::to_string(v.as_uint()) + "ULL";
    case ScalarType::U32: return std::to_string(v.as_uint()) + "u";
    case ScalarType::I32: {
      std::int64_t x = v.as_int();
      if (x == INT32_MIN) return "(-2147483647 - 1)";
      return std::to_string(x);
    }
    default:
      return "(" + scalar_cuda_name(t.scalar()) + ")" +
             (t.is_signed_integer() ? std::to_string(v.as_int()) : std::to_string(v.as_uint()));
  }
}

}  // namespace fuseflow::codegen
