#include "cuda_names.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace fuseflow::codegen {

std::string scalar_cuda_name(ScalarType s) { return scalar_info(s).cuda_name; }

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

std::string CudaTypes::negate(ScalarType s, const std::string& a) {
  const ScalarInfo& info = scalar_info(s);
  const bool wide = info.size == 8;
  const std::string name = std::string("ff_negate_") + scalar_name(s);
  if (std::find(negations_.begin(), negations_.end(), s) == negations_.end()) {
    negations_.push_back(s);
    const std::string t = info.cuda_name, u = wide ? "unsigned long long" : "unsigned int";
    const std::string bits = wide ? "b64" : "b32", reg = wide ? "l" : "r";
    std::ostringstream def;
    def << "// -x as ~x + 1, the not in inline PTX: ptxas 13.0 (sm_90) folds a plain negation of a sum\n"
        << "// into a three-way min (VIMNMX3) and can drop it; it does not see through the not.\n"
        << "__device__ __forceinline__ " << t << " " << name << "(const " << t << " x) {\n"
        << "#ifdef __CUDA_ARCH__\n"
        << "  " << u << " r;\n"
        << "  asm(\"not." << bits << " %0, %1;\" : \"=" << reg << "\"(r) : \"" << reg << "\"((" << u << ")x));\n"
        << "  return (" << t << ")(r + 1);\n"
        << "#else\n"
        << "  return (" << t << ")((" << u << ")0 - (" << u << ")x);\n"
        << "#endif\n"
        << "}\n";
    defs_.push_back(def.str());
  }
  return name + "(" + a + ")";
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
  const ScalarInfo& info = scalar_info(t.scalar());
  if (info.kind == ScalarKind::Logical) return v.as_bool() ? "true" : "false";
  if (info.is_floating()) return float_literal(v.as_double(), info.size == 4);
  const std::string digits = info.is_signed_integer() ? std::to_string(v.as_int()) : std::to_string(v.as_uint());
  if (!info.cuda_literal_suffix) return "(" + std::string(info.cuda_name) + ")" + digits;
  // The lowest value of a signed type has no literal (its magnitude does not fit): one
  // more, minus 1.
  const auto lowest = static_cast<std::int64_t>(~std::uint64_t{0} << (info.size * 8 - 1));
  if (info.is_signed_integer() && v.as_int() == lowest)
    return "(" + std::to_string(lowest + 1) + info.cuda_literal_suffix + " - 1)";
  return digits + info.cuda_literal_suffix;
}

}  // namespace fuseflow::codegen
