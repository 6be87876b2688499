#include "expr_emitter.hpp"

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::codegen {

namespace {

// Signed overflow is undefined in CUDA C++ (the compiler may widen or fold through it),
// while fuseflow defines it to wrap, as the CPU reference does: + - * and negation on
// signed integers go through the unsigned type, e.g. (int)((unsigned int)a * (unsigned int)b).
std::string wrapping(const Type& t, const std::string& a, const char* op, const std::string& b) {
  std::string u = t.scalar() == ScalarType::I64 ? "unsigned long long" : "unsigned int";
  std::string s = t.scalar() == ScalarType::I64 ? "long long" : "int";
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
  switch (fn) {
    // Floats propagate NaN (fminf / fmaxf would drop it), as the CPU reference does: the
    // second operand wins when it is smaller (larger) or NaN, the first stays otherwise.
    case MathFn::Min:
      if (t.is_floating()) return "(" + p[1] + " < " + p[0] + " || " + p[1] + " != " + p[1] + " ? " + p[1] + " : " + p[0] + ")";
      return "(" + p[0] + " < " + p[1] + " ? " + p[0] + " : " + p[1] + ")";
    case MathFn::Max:
      if (t.is_floating()) return "(" + p[0] + " < " + p[1] + " || " + p[1] + " != " + p[1] + " ? " + p[1] + " : " + p[0] + ")";
      return "(" + p[0] + " > " + p[1] + " ? " + p[0] + " : " + p[1] + ")";
    case MathFn::Abs:
      if (t.is_floating()) return fcall("fabs");
      if (t.is_signed_integer()) return "(" + p[0] + " < 0 ? " + wrapping(t, "0", "-", p[0]) + " : " + p[0] + ")";
      return p[0];
    case MathFn::Sqrt: return fcall("sqrt");
    case MathFn::Rsqrt: return fcall("rsqrt");
    case MathFn::Exp: return fcall("exp");
    case MathFn::Exp2: return fcall("exp2");
    case MathFn::Log: return fcall("log");
    case MathFn::Log2: return fcall("log2");
    case MathFn::Log10: return fcall("log10");
    case MathFn::Sin: return fcall("sin");
    case MathFn::Cos: return fcall("cos");
    case MathFn::Tan: return fcall("tan");
    case MathFn::Tanh: return fcall("tanh");
    case MathFn::Pow: return fcall("pow");
    case MathFn::Floor: return fcall("floor");
    case MathFn::Ceil: return fcall("ceil");
    case MathFn::Round: return fcall("round");
    case MathFn::Fma: return fcall("fma");
    case MathFn::Erf: return fcall("erf");
  }
  return "?";
}

}  // namespace

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
      std::string a = n.unary == UnaryOp::Not ? emit(n.args[0]) : conv(n.args[0], n.type);
      if (n.unary == UnaryOp::Neg && n.type.is_signed_integer())
        return fresh(n.type, wrapping(n.type, "0", "-", a));
      // A negative literal operand keeps its own sign apart: -(-3.875), not --3.875.
      if (!a.empty() && a[0] == '-') a = "(" + a + ")";
      return fresh(n.type, unary_symbol(n.unary) + a);
    }
    case ExprKind::Binary: {
      // Operands are converted explicitly to the operation's type, exactly as C++'s usual
      // arithmetic conversions would, so the text shows what is computed.
      Type op_type = n.type;
      BinaryOp b = n.binary;
      bool compare = b == BinaryOp::Lt || b == BinaryOp::Le || b == BinaryOp::Gt || b == BinaryOp::Ge ||
                     b == BinaryOp::Eq || b == BinaryOp::Ne;
      bool logical = b == BinaryOp::And || b == BinaryOp::Or;
      if (compare) op_type = usual_arithmetic_conversion(n.args[0].type().scalar(), n.args[1].type().scalar());
      std::string lhs, rhs;
      if (logical) {
        lhs = emit(n.args[0]);
        rhs = emit(n.args[1]);
      } else if (b == BinaryOp::Shl || b == BinaryOp::Shr) {
        lhs = conv(n.args[0], n.type);
        rhs = emit(n.args[1]);
      } else {
        lhs = conv(n.args[0], op_type);
        rhs = conv(n.args[1], op_type);
      }
      if ((b == BinaryOp::Add || b == BinaryOp::Sub || b == BinaryOp::Mul) && op_type.is_signed_integer())
        return fresh(n.type, wrapping(op_type, lhs, binary_symbol(b), rhs));
      return fresh(n.type, lhs + " " + binary_symbol(b) + " " + rhs);
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
  }
  throw GraphError("codegen: unknown expression kind");
}

}  // namespace fuseflow::codegen
