#include "expr_emitter.hpp"

#include "fuseflow/frontend/error.hpp"
#include "kernel_context.hpp"

namespace fuseflow::codegen {

namespace {

// Signed overflow is undefined in CUDA C++ (the compiler may widen or fold through it),
// while fuseflow defines it to wrap, as the CPU reference does: + - * and negation on
// signed integers go through the unsigned type, e.g. (int)((unsigned int)a * (unsigned int)b).
std::string wrapping(const Type& t, const std::string& a, const char* op, const std::string& b) {
  const std::string s = scalar_info(t.scalar()).cuda_name, u = scalar_info(unsigned_of(t.scalar())).cuda_name;
  return "(" + s + ")((" + u + ")" + a + " " + op + " (" + u + ")" + b + ")";
}

// CUDA's spelling of a math function for a result type: sqrtf for f32, sqrt for f64.
std::string math_call(MathFn fn, const Type& t, const std::vector<std::string>& a) {
  const bool f32 = t.is_scalar() && t.scalar() == ScalarType::F32;
  auto fcall = [&](const char* base) {
    std::string s = std::string(base) + (f32 ? "f" : "") + "(";
    for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
    return s + ")";
  };
  // Integer branches name their operands twice: parenthesise negative literals.
  std::vector<std::string> p;
  for (const auto& x : a) p.push_back(!x.empty() && x[0] == '-' ? "(" + x + ")" : x);
  const MathFnInfo& info = math_info(fn);
  switch (info.fn_class) {
    // Floats propagate NaN (fminf / fmaxf would drop it), as the CPU reference does: the
    // second operand wins when it is smaller (larger) or NaN, the first stays otherwise.
    case MathClass::MinMax: {
      const bool is_min = fn == MathFn::Min;
      if (t.is_floating())
        return "(" + (is_min ? p[1] + " < " + p[0] : p[0] + " < " + p[1]) + " || " + p[1] + " != " + p[1] + " ? " +
               p[1] + " : " + p[0] + ")";
      return "(" + p[0] + (is_min ? " < " : " > ") + p[1] + " ? " + p[0] + " : " + p[1] + ")";
    }
    case MathClass::Abs:
      if (t.is_floating()) return fcall(info.cuda_name);
      if (t.is_signed_integer()) return "(" + p[0] + " < 0 ? " + wrapping(t, "0", "-", p[0]) + " : " + p[0] + ")";
      return p[0];
    case MathClass::Float: return fcall(info.cuda_name);
  }
  return "?";
}

}  // namespace

std::string table_name(const Expr& input) { return "tab_" + sanitize(input.node().name); }

// A checked gather loads only inside the table, flags any other index for the run to
// report (the CPU reference then names the first bad position), and goes on with a zero
// element; an unchecked one loads wherever the index points.
std::string ExprEmitter::gather(const ExprNode& n) {
  const std::string table = table_name(n.args[0]);
  const std::string at = fresh(ScalarType::I64, "(long long)" + emit(n.args[1]));
  if (n.index) return fresh(n.type, table + "[" + at + "]");
  const std::string inside = fresh(ScalarType::Bool, at + " >= 0 && " + at + " < " + table + "_n");
  out_.line("if (!" + inside + ") *gather_invalid = 1u;");
  const std::string zero = n.type.is_scalar() ? "(" + types_.name(n.type) + ")0" : types_.name(n.type) + "{}";
  return fresh(n.type, inside + " ? " + table + "[" + at + "] : " + zero);
}

// x[i + k] inside [0, n), the fill outside: read through the cache from the input itself
// (its neighbours' lines are in L1 already), not from a second array.
std::string ExprEmitter::shift(const ExprNode& n) {
  const std::string table = table_name(n.args[0]);
  const std::string fill = emit(n.args[1]);
  if (shift_) return fresh(n.type, shift_(n, fill));
  const std::string step = n.index < 0 ? " - " + std::to_string(-static_cast<long long>(n.index)) : " + " + std::to_string(n.index);
  const std::string at = fresh(ScalarType::I64, leaf_(Expr::index()) + step);
  return fresh(n.type, "(" + at + " >= 0 && " + at + " < " + table + "_n) ? " + table + "[" + at + "] : " + fill);
}

// A broadcast whose per-segment results an earlier stage left in an input (passes/stages.cpp):
// the element's segment, the last offset <= i, by a binary search over the offsets (segment 0
// without segments, as ff::rows::segment_of), then its value.
std::string ExprEmitter::segment_value(const ExprNode& n) {
  const std::string values = table_name(n.args[0]), off = table_name(n.args[1]);
  const std::string i = leaf_(Expr::index());
  const std::string lo = prefix_ + std::to_string(counter_++), hi = prefix_ + std::to_string(counter_++);
  out_.line("long long " + lo + " = 0, " + hi + " = " + off + "_n - 1;  // the segment of element " + i +
            " in " + off + ": a binary search");
  out_.open("while (" + hi + " - " + lo + " > 1)");
  out_.line("const long long " + lo + "_mid = " + lo + " + (" + hi + " - " + lo + ") / 2;");
  out_.line("if ((long long)" + off + "[" + lo + "_mid] <= " + i + ") " + lo + " = " + lo + "_mid; else " + hi +
            " = " + lo + "_mid;");
  out_.close();
  return fresh(n.type, values + "[" + lo + "]");
}

std::string ExprEmitter::fresh(const Type& t, const std::string& value) {
  std::string name = prefix_ + std::to_string(counter_++);
  out_.line("const " + types_.name(t) + " " + name + " = " + value + ";");
  return name;
}

std::string ExprEmitter::emit(const Expr& e) {
  auto it = done_.find(e.get());
  if (it != done_.end()) return it->second;
  std::string s = compute(e);
  done_[e.get()] = s;
  return s;
}

std::string ExprEmitter::compute(const Expr& e) {
  const ExprNode& n = e.node();
  auto conv = [&](const Expr& a, const Type& to) {
    std::string v = emit(a);
    return a.type() == to ? v : "(" + types_.name(to) + ")" + v;
  };
  switch (n.kind) {
    case ExprKind::Constant: return types_.literal(n.constant);
    case ExprKind::Input:
    case ExprKind::Index:
    case ExprKind::Param:
    case ExprKind::Result:
    case ExprKind::Operand: return leaf_(e);
    case ExprKind::Unary: {
      const UnaryOpInfo& u = unary_info(n.unary);
      std::string a = u.op_class == UnaryClass::Logical ? emit(n.args[0]) : conv(n.args[0], n.type);
      if (n.unary == UnaryOp::Neg && (n.type.is_signed_integer() || n.type.is_unsigned_integer()))
        return fresh(n.type, types_.negate(n.type.scalar(), a));
      if (u.wraps && n.type.is_signed_integer()) return fresh(n.type, wrapping(n.type, "0", u.symbol, a));
      // A negative literal operand keeps its own sign apart: -(-3.875), not --3.875.
      if (!a.empty() && a[0] == '-') a = "(" + a + ")";
      return fresh(n.type, u.symbol + a);
    }
    case ExprKind::Binary: {
      // Operands are converted explicitly to the operation's type, exactly as C++'s usual
      // arithmetic conversions would, so the text shows what is computed.
      Type op_type = n.type;
      const BinaryOpInfo& b = binary_info(n.binary);
      if (b.op_class == BinaryClass::Comparison)
        op_type = usual_arithmetic_conversion(n.args[0].type().scalar(), n.args[1].type().scalar());
      std::string lhs, rhs;
      if (b.op_class == BinaryClass::Logical) {
        lhs = emit(n.args[0]);
        rhs = emit(n.args[1]);
      } else if (b.op_class == BinaryClass::Shift) {
        lhs = conv(n.args[0], n.type);
        rhs = emit(n.args[1]);
      } else {
        lhs = conv(n.args[0], op_type);
        rhs = conv(n.args[1], op_type);
      }
      if (b.wraps && op_type.is_signed_integer()) return fresh(n.type, wrapping(op_type, lhs, b.symbol, rhs));
      return fresh(n.type, lhs + " " + b.symbol + " " + rhs);
    }
    case ExprKind::Select: {
      std::string c = emit(n.args[0]);
      return fresh(n.type, c + " ? " + conv(n.args[1], n.type) + " : " + conv(n.args[2], n.type));
    }
    case ExprKind::Call: {
      std::vector<std::string> args;
      for (const auto& a : n.args) args.push_back(conv(a, n.type));
      return fresh(n.type, math_call(n.fn, n.type, args));
    }
    case ExprKind::Cast: return fresh(n.type, "(" + types_.name(n.type) + ")" + emit(n.args[0]));
    case ExprKind::MakeTuple: {
      std::string s = types_.name(n.type) + "{";
      for (std::size_t i = 0; i < n.args.size(); ++i) s += (i ? ", " : "") + emit(n.args[i]);
      return fresh(n.type, s + "}");
    }
    case ExprKind::Get: return fresh(n.type, emit(n.args[0]) + ".f" + std::to_string(n.index));
    case ExprKind::RawCuda: {
      // Replace $k, highest k first so $1 does not eat the start of $10.
      std::string text = n.name;
      for (std::size_t k = n.args.size(); k-- > 0;) {
        std::string arg = "(" + emit(n.args[k]) + ")";
        std::string key = "$" + std::to_string(k);
        for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + arg.size()))
          text.replace(at, key.size(), arg);
      }
      return fresh(n.type, "(" + text + ")");
    }
    case ExprKind::Gather: return gather(n);
    case ExprKind::Shift: return shift(n);
    // A segment's value (a per-row kernel's row result) and row offsets: spelled by the
    // context that has them (rows.cpp), an error in the others.
    case ExprKind::Broadcast:
      if (n.args[0].kind() == ExprKind::Input) return segment_value(n);
      return leaf_(e);
    case ExprKind::Rows: return leaf_(e);
    case ExprKind::Fill: return emit(n.args[0]);  // the value at every element (its array gives only a length)
  }
  throw GraphError("codegen: unknown expression kind");
}

}  // namespace fuseflow::codegen
