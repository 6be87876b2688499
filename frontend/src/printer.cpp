// The textual form of programs, expressions and monoids. It is stable (golden tests and
// error messages depend on it) and reads like the DSL:
//
//   input x: f32
//   input y: f32
//   %0 = reduce(plus: f32, x * y)
//   output %0
//
// parser.cpp reads it back: names that would read back as something else (an input
// called "index", a name with a space) are quoted, raw CUDA text is escaped, and a
// one-field tuple is written (x,) so that it is not read as (x) in parentheses.
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "fuseflow/frontend/program.hpp"
#include "textual_form.hpp"

namespace fuseflow {

namespace textual_form {

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool is_expression_word(std::string_view s) {
  for (std::string_view w : {"index", "true", "false", "inf", "inff", "nan", "nanf", "cast", "cuda"})
    if (s == w) return true;
  return false;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const char* hex = "0123456789abcdef";
          out += std::string("\\x") + hex[(c >> 4) & 0xf] + hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string input_name(const std::string& name) {
  return is_identifier(name) && !is_expression_word(name) ? name : quote(name);
}

std::string param_name(const std::string& name) { return is_identifier(name) ? name : quote(name); }

std::string monoid_name(const std::string& name) {
  // A printed name may end in #k: the printer's way of telling apart two monoids of one name.
  std::size_t hash = name.find('#');
  bool plain = hash == std::string::npos
                   ? is_identifier(name)
                   : is_identifier(name.substr(0, hash)) && hash + 1 < name.size() &&
                         name.find_first_not_of("0123456789", hash + 1) == std::string::npos;
  return plain ? name : quote(name);
}

}  // namespace textual_form

namespace {

// A constant as the parser reads it back: Value::to_string, with one-field tuples as (v,).
std::string constant_text(const Value& v) {
  if (!v.is_tuple()) return v.to_string();
  std::string s = "(";
  for (std::size_t i = 0; i < v.fields().size(); ++i) s += (i ? ", " : "") + constant_text(v.fields()[i]);
  return s + (v.fields().size() == 1 ? ",)" : ")");
}

class Printer {
 public:
  // Names results of ops already printed; nullptr when printing a lone expression.
  explicit Printer(const std::map<const OpNode*, int>* op_ids) : op_ids_(op_ids) {}

  std::string expr(const Expr& e, int parent_precedence = 0) const {
    const ExprNode& n = e.node();
    switch (n.kind) {
      case ExprKind::Input: return textual_form::input_name(n.name);
      case ExprKind::Index: return "index";
      case ExprKind::Constant: return constant_text(n.constant);
      case ExprKind::Param: return "$" + textual_form::param_name(n.name);
      case ExprKind::Operand: return n.index == 0 ? "a" : "b";
      case ExprKind::Result: return result(n);
      case ExprKind::Unary: {
        std::string operand = expr(n.args[0], 11);
        // -(-x) printed as --x would read as a decrement.
        if (n.unary == UnaryOp::Neg && operand[0] == '-') operand = "(" + operand + ")";
        return unary_symbol(n.unary) + operand;
      }
      case ExprKind::Binary: {
        int p = binary_precedence(n.binary);
        std::string s = expr(n.args[0], p) + " " + binary_symbol(n.binary) + " " + expr(n.args[1], p + 1);
        return p < parent_precedence ? "(" + s + ")" : s;
      }
      case ExprKind::Select: return "select(" + list(n.args) + ")";
      case ExprKind::Call: return std::string(math_name(n.fn)) + "(" + list(n.args) + ")";
      case ExprKind::Cast: return "cast<" + n.type.name() + ">(" + expr(n.args[0]) + ")";
      case ExprKind::MakeTuple: return "(" + list(n.args) + (n.args.size() == 1 ? ",)" : ")");
      case ExprKind::Get: return expr(n.args[0], 12) + "[" + std::to_string(n.index) + "]";
      case ExprKind::RawCuda: {
        std::string s = "cuda<" + n.type.name() + ">(" + textual_form::quote(n.name);
        if (!n.args.empty()) s += ", " + list(n.args);
        return s + ")";
      }
      case ExprKind::Gather: return (n.index ? "gather_unchecked(" : "gather(") + list(n.args) + ")";
      case ExprKind::Shift:
        return "shift(" + expr(n.args[0]) + ", " + std::to_string(n.index) + ", " + expr(n.args[1]) + ")";
      case ExprKind::Broadcast: return (n.index ? "broadcast_by_key(" : "broadcast(") + list(n.args) + ")";
      case ExprKind::Rows: return "rows(" + expr(n.args[0]) + ", " + std::to_string(n.length) + ")";
      case ExprKind::Fill:  // fill(10, v) has its own length, fill(x, v) x's
        return "fill(" + (n.args.size() == 1 ? std::to_string(n.length) : expr(n.args[1])) + ", " + expr(n.args[0]) + ")";
    }
    return "?";
  }

  std::string list(const std::vector<Expr>& es) const {
    std::string s;
    for (std::size_t i = 0; i < es.size(); ++i) s += (i ? ", " : "") + expr(es[i]);
    return s;
  }

 private:
  std::string result(const ExprNode& n) const {
    const OpNode* op = n.op.get();
    if (op_ids_ && op_ids_->count(op)) {
      std::string s = "%" + std::to_string(op_ids_->at(op));
      if (op->output_types.size() > 1) s += "." + std::to_string(n.index);
      return s;
    }
    return std::string(op_name(op->kind)) + "(...)";
  }
  const std::map<const OpNode*, int>* op_ids_;
};

// `monoid_ref` names the op's monoid and its type: "plus: f32".
std::string op_line(const OpNode& op, const Printer& p, const std::string& monoid_ref) {
  std::string s = op_name(op.kind);
  s += "(";
  switch (op.kind) {
    case OpKind::Reduce:
      s += monoid_ref + ", " + p.expr(op.values);
      break;
    case OpKind::Scan:
      s += monoid_ref + ", " + (op.scan_kind == ScanKind::Inclusive ? "inclusive" : "exclusive") +
           ", " + p.expr(op.values);
      break;
    case OpKind::Filter:
      s += p.expr(op.values) + ", where=" + p.expr(op.predicate);
      break;
    case OpKind::SegmentedReduce:
      s += monoid_ref + ", " + p.expr(op.values) + ", offsets=" + p.expr(op.offsets);
      break;
    case OpKind::SegmentedScan:
      s += monoid_ref + ", " + (op.scan_kind == ScanKind::Inclusive ? "inclusive" : "exclusive") +
           ", " + p.expr(op.values) + ", offsets=" + p.expr(op.offsets);
      break;
    case OpKind::ReduceByKey:
      s += monoid_ref + ", " + p.expr(op.values) + ", keys=" + p.expr(op.keys);
      break;
    case OpKind::ScanByKey:
      s += monoid_ref + ", " + (op.scan_kind == ScanKind::Inclusive ? "inclusive" : "exclusive") +
           ", " + p.expr(op.values) + ", keys=" + p.expr(op.keys);
      break;
    case OpKind::Histogram:
      s += p.expr(op.keys) + ", bins=" + std::to_string(op.bins) +
           (op.values.valid() ? ", weights=" + p.expr(op.values) : ", counts=" + op.output_types[0].name());
      break;
    case OpKind::CountingSort:
      s += p.expr(op.keys) + (op.bins > 0 ? ", bins=" + std::to_string(op.bins)
                                          : ", begin_bit=" + std::to_string(op.begin_bit) +
                                                ", end_bit=" + std::to_string(op.end_bit));
      if (op.values.valid()) s += ", values=" + p.expr(op.values);
      break;
  }
  if (op.strategy != Strategy::Automatic) s += std::string(", strategy=") + strategy_name(op.strategy);
  return s + ")";
}

std::string monoid_definition(const Monoid& m, const std::string& name) {
  Printer p(nullptr);
  return "monoid " + textual_form::monoid_name(name) + ": " + m.type().name() + ", " +
         (m.is_commutative() ? "commutative" : "non-commutative") + "\n  combine(a, b) = " +
         p.expr(m.combine()) + "\n  identity = " + constant_text(m.identity());
}

}  // namespace

std::string to_string(const Program& prog) {
  std::ostringstream os;
  for (const auto& in : prog.inputs()) {
    os << "input " << textual_form::input_name(in.node().name) << ": " << in.type().name();
    if (in.node().length >= 0) os << "[" << in.node().length << "]";
    os << "\n";
  }
  for (const auto& pa : prog.params())
    os << "param " << textual_form::param_name(pa.node().name) << ": " << pa.type().name() << "\n";
  std::map<const OpNode*, int> ids;
  // Custom monoids by node; two different ones may share a name ("custom" when unnamed),
  // so a later one is printed as "custom#2". A built-in's name is taken from the start.
  std::map<const MonoidNode*, std::string> monoids;
  std::set<std::string> monoid_names;
  for (const BuiltinMonoidInfo& builtin : all_builtin_monoids()) monoid_names.insert(builtin.name);
  Printer p(&ids);
  for (const auto& op : prog.ops()) {
    std::string monoid_ref;
    if (op->monoid.valid()) {
      std::string name = op->monoid.name();
      if (!op->monoid.is_builtin()) {
        auto [it, fresh] = monoids.emplace(&op->monoid.node(), name);
        if (fresh) {
          for (int k = 2; !monoid_names.insert(it->second).second; ++k)
            it->second = name + "#" + std::to_string(k);
          os << monoid_definition(op->monoid, it->second) << "\n";
        }
        name = it->second;
      }
      monoid_ref = textual_form::monoid_name(name) + ": " + op->monoid.type().name();
    }
    int id = static_cast<int>(ids.size());
    os << "%" << id << " = " << op_line(*op, p, monoid_ref) << "\n";
    ids[op.get()] = id;
  }
  for (const auto& out : prog.outputs()) os << "output " << p.expr(out) << "\n";
  return os.str();
}

std::string to_string(const Expr& e) { return Printer(nullptr).expr(e); }

std::string to_string(const Monoid& m) {
  if (!m.is_typed()) return m.name();
  return monoid_definition(m, m.name());
}

std::string to_string(const Type& t) { return t.name(); }

}  // namespace fuseflow
