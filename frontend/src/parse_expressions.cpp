// The textual form's pieces (names, types, numbers) and expressions (program_parser.hpp).
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "program_parser.hpp"
#include "textual_form.hpp"

namespace fuseflow::textual_form {

const ScalarInfo* literal_type(const std::string& suffix, bool fractional) {
  const ScalarInfo* floating = nullptr;
  for (const ScalarInfo& s : all_scalar_types()) {
    if (!s.literal_suffix || suffix != s.literal_suffix || s.kind == ScalarKind::Logical) continue;
    if (!s.is_floating() && !fractional) return &s;
    if (s.is_floating() && !floating) floating = &s;
  }
  return floating;
}

std::string literal_forms() {
  std::string forms, conversion;
  for (const ScalarInfo& s : all_scalar_types()) {
    if (s.kind == ScalarKind::Logical) continue;
    if (!s.literal_suffix) {
      if (conversion.empty()) conversion = std::string(s.name) + "(2)";
      continue;
    }
    forms += (s.is_floating() ? "2.5" : "2") + std::string(s.literal_suffix) + " (" + s.name + "), ";
  }
  return forms.substr(0, forms.size() - 2) + " or " + conversion;
}

const char* ordinal(std::size_t i) {
  static const char* const words[] = {"first", "second", "third"};
  return i < 3 ? words[i] : "next";
}

std::optional<Value> constant_value(const Expr& e) {
  // (in_place: Value converts to any type, std::optional included)
  if (e.kind() == ExprKind::Constant) return std::optional<Value>(std::in_place, e.node().constant);
  if (e.kind() != ExprKind::MakeTuple) return std::nullopt;
  std::vector<Value> fields;
  for (const auto& a : e.args()) {
    auto v = constant_value(a);
    if (!v) return std::nullopt;
    fields.push_back(*v);
  }
  return std::optional<Value>(std::in_place, Value::tuple(std::move(fields)));
}

std::string Parser::leaf_name(const std::string& where) {
  const Token& t = peek();
  if (t.kind == Tok::String) return next().text;
  if (t.kind != Tok::Name) fail(t, "expected a name " + where + ", found " + found(t));
  if (!textual_form::is_identifier(t.text) || textual_form::is_expression_word(t.text))
    fail(t, "'" + t.text + "' cannot be a bare name here; write it quoted: " + textual_form::quote(t.text));
  return next().text;
}

Type Parser::type(const std::string& where) {
  const Token& t = peek();
  Nesting nesting(*this, t);
  if (accept("(")) {
    std::vector<Type> fields{type("in a tuple type")};
    while (accept(",")) fields.push_back(type("in a tuple type"));
    expect(")", "after the fields of a tuple type");
    return Type::tuple(std::move(fields));
  }
  if (t.kind == Tok::Name)
    if (auto s = lookup<ScalarType>(t.text, kScalarTypeCount, scalar_type_name)) {
      next();
      return *s;
    }
  fail(t, "expected a type " + where + " (" + names<ScalarType>(kScalarTypeCount, scalar_type_name) +
              ", or a tuple such as (f32, i64)), found " + found(t));
}

std::int64_t Parser::whole_number(const std::string& what) {
  const Token& t = peek();
  std::int64_t v = -1;
  bool plain = t.kind == Tok::Number && t.suffix.empty() && t.text.find_first_of(".eE") == std::string::npos;
  if (!plain || std::from_chars(t.text.data(), t.text.data() + t.text.size(), v).ec != std::errc())
    fail(t, "expected " + what + " (a whole number such as 256), found " + found(t));
  next();
  return v;
}

// A number token (or inf, inff, nan, nanf) as a constant, negated when `negative`: the
// printer writes the constant -2 as "-2".
Value Parser::number(const Token& t, bool negative) {
  if (t.kind == Tok::Name) {
    bool single = t.text.back() == 'f' && t.text.size() == 4;
    bool infinite = t.text.compare(0, 3, "inf") == 0;
    double v = infinite ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    v = std::copysign(v, negative ? -1.0 : 1.0);
    return single ? Value(static_cast<float>(v)) : Value(v);
  }
  const bool fractional = t.text.find_first_of(".eE") != std::string::npos;
  const ScalarInfo* type = literal_type(t.suffix, fractional);
  if (!type) fail(t, "cannot read the number " + found(t) + ": numbers are written " + literal_forms());
  if (!type->is_floating()) return integer(t, type->type, negative);
  return visit_scalar(type->type, [&](auto zero) {
    using F = decltype(zero);
    F v = 0;
    if constexpr (std::is_floating_point_v<F>) {
      const char* last = t.text.data() + t.text.size();
      auto result = std::from_chars(t.text.data(), last, v);
      if (result.ec != std::errc() || result.ptr != last) fail(t, found(t) + " is out of range for " + type->name);
    }
    return Value(negative ? static_cast<F>(-v) : v);
  });
}

// The integer `t` (digits, no suffix needed) as a scalar of type s, range-checked.
Value Parser::integer(const Token& t, ScalarType s, bool negative) {
  std::uint64_t magnitude = 0;
  auto result = std::from_chars(t.text.data(), t.text.data() + t.text.size(), magnitude);
  int bits = static_cast<int>(scalar_size(s)) * 8;
  bool is_signed = Type(s).is_signed_integer();
  std::uint64_t largest = is_signed ? (std::uint64_t{1} << (bits - 1)) - (negative ? 0 : 1)
                                    : (negative ? 0 : ~std::uint64_t{0} >> (64 - bits));
  if (result.ec != std::errc() || magnitude > largest)
    fail(t, (negative ? "-" : "") + t.text + " does not fit in " + scalar_name(s));
  return Value::from_uint(s, negative ? 0 - magnitude : magnitude);
}

bool Parser::is_negatable_literal(const Token& t) const {
  if (t.kind == Tok::Number) {
    const ScalarInfo* type = literal_type(t.suffix, false);
    return !type || !type->is_unsigned_integer();
  }
  return t.kind == Tok::Name && (t.text == "inf" || t.text == "inff" || t.text == "nan" || t.text == "nanf");
}

// One node per distinct expression, as when a C++ program names a value and uses it
// twice (p = max(x, 0); tuple(p, p, p, x)): the code generator computes a node once.
// Children are interned first, so a node is known by its payload and its children.
// Tuple fields are not: a C++ combine function reads a[0] afresh at each use, and the
// kernel a parsed program gives is the kernel the C++ program gives.
Expr Parser::intern(const Expr& e) {
  const ExprNode& n = e.node();
  if (n.kind == ExprKind::Get) return e;
  std::ostringstream key;
  key << static_cast<int>(n.kind) << '|' << n.type.name() << '|' << textual_form::quote(n.name) << '|'
      << (n.kind == ExprKind::Constant ? n.constant.to_string() : "") << '|' << n.index << '|'
      << static_cast<int>(n.unary) << static_cast<int>(n.binary) << static_cast<int>(n.fn) << '|' << n.op.get()
      << '|' << n.length;
  for (const auto& a : n.args) key << '|' << a.get();
  return nodes_.emplace(key.str(), e).first->second;
}

// Precedence climbing with C++'s precedences: the printer adds parentheses exactly
// where they are needed, so the tree read back is the tree printed.
Expr Parser::binary(int min_precedence) {
  Expr lhs = unary();
  for (;;) {
    const Token& t = peek();
    std::optional<BinaryOp> op;
    if (t.kind == Tok::Symbol) op = lookup<BinaryOp>(t.text, kBinaryOpCount, binary_symbol);
    if (!op || binary_precedence(*op) < min_precedence) return lhs;
    next();
    Expr rhs = binary(binary_precedence(*op) + 1);
    lhs = intern(checked(t, [&] { return Expr::binary(*op, lhs, rhs); }));
  }
}

Expr Parser::unary() {
  const Token& t = peek();
  Nesting nesting(*this, t);
  if (t.kind != Tok::Symbol || (t.text != "-" && t.text != "!" && t.text != "~")) return postfix();
  next();
  if (t.text == "-" && is_negatable_literal(peek())) return intern(Expr::constant(number(next(), true)));
  Expr operand = unary();
  UnaryOp op = t.text == "-" ? UnaryOp::Neg : t.text == "!" ? UnaryOp::Not : UnaryOp::BitNot;
  return intern(checked(t, [&] { return Expr::unary(op, operand); }));
}

Expr Parser::postfix() {
  bool tuple_literal = false;
  Expr e = intern(primary(tuple_literal));
  while (is_symbol("[")) {
    const Token& open = next();
    auto field = static_cast<int>(whole_number("a field number after '['"));
    expect("]", "after the field number");
    // Only a constant tuple prints as (1, 2)[0]: a field of a built tuple is the field.
    if (tuple_literal)
      if (auto v = constant_value(e)) e = Expr::constant(*v);
    tuple_literal = false;
    e = intern(checked(open, [&] { return Expr::get(e, field); }));
  }
  return e;
}

Expr Parser::primary(bool& tuple_literal) {
  const Token& t = peek();
  switch (t.kind) {
    case Tok::Number: return Expr::constant(number(next(), false));
    case Tok::Name: return named();
    case Tok::String: return leaf(next(), ExprKind::Input);
    case Tok::Param: return leaf(next(), ExprKind::Param);
    case Tok::Result: return result(next());
    default: break;
  }
  if (is_symbol("(")) return parenthesized(tuple_literal);
  fail(t, "expected an expression, found " + found(t));
}

Expr Parser::named() {
  const Token& t = next();
  const std::string& w = t.text;
  bool call = is_symbol("(");
  if (w == "true" || w == "false") return Expr::constant(Value(w == "true"));
  if (is_negatable_literal(t)) return Expr::constant(number(t, false));
  if (w == "index") {
    require_program_scope(t);
    return Expr::index();
  }
  if (w == "cast") return cast(t);
  if (w == "cuda") return raw_cuda(t);
  if (w == "select" && call) {
    std::vector<Expr> args = arguments(t, 3);
    return checked(t, [&] { return Expr::select(args[0], args[1], args[2]); });
  }
  if ((w == "gather" || w == "gather_unchecked") && call) {
    std::vector<Expr> args = arguments(t, 2);
    return checked(t, [&] { return Expr::gather(args[0], args[1], w == "gather"); });
  }
  if (w == "shift" && call) return shift(t);
  if ((w == "broadcast" || w == "broadcast_by_key") && call) {
    std::vector<Expr> args = arguments(t, 2);
    return checked(t, [&] { return Expr::broadcast(args[0], args[1], w == "broadcast_by_key"); });
  }
  if (w == "rows" && call) return rows(t);
  if (w == "fill" && call) return fill(t);
  if (call)
    if (auto fn = lookup<MathFn>(w, kMathFnCount, math_name)) {
      std::vector<Expr> args = arguments(t, static_cast<int>(math_info(*fn).arity));
      return checked(t, [&] { return Expr::call(*fn, args); });
    }
  if (call)
    if (auto s = lookup<ScalarType>(w, kScalarTypeCount, scalar_type_name); s && Type(*s).is_integral() && *s != ScalarType::Bool)
      return typed_integer(*s);
  if (scope_ == Scope::Combine && (w == "a" || w == "b")) return Expr::operand(w == "a" ? 0 : 1, operand_type_);
  return leaf(t, ExprKind::Input);
}

// Exactly `count` arguments in parentheses after `fn`.
std::vector<Expr> Parser::arguments(const Token& fn, int count) {
  expect("(", "after " + fn.text);
  std::vector<Expr> args;
  for (int i = 0; i < count; ++i) {
    if (i > 0) expect(",", "after the " + std::string(ordinal(static_cast<std::size_t>(i - 1))) + " argument of " + fn.text);
    args.push_back(expr());
  }
  expect(")", "after the arguments of " + fn.text + " (it takes " + std::to_string(count) + ")");
  return args;
}

// i8(-3), u16(7): the printer's constants of the small integer types.
Expr Parser::typed_integer(ScalarType s) {
  expect("(", "");
  bool negative = accept("-");
  const Token& t = peek();
  if (t.kind != Tok::Number || !t.suffix.empty() || t.text.find_first_of(".eE") != std::string::npos)
    fail(t, "expected a whole number in " + scalar_name(s) + "(...), found " + found(t));
  Value v = integer(next(), s, negative);
  expect(")", "after the value of " + scalar_name(s) + "(...)");
  return Expr::constant(v);
}

Expr Parser::cast(const Token& at) {
  expect("<", "after cast");
  Type to = type("in cast<...>");
  expect(">", "after the type of cast<...>");
  expect("(", "after cast<" + to.name() + ">");
  Expr value = expr();
  expect(")", "after the argument of cast<" + to.name() + ">");
  return checked(at, [&] { return Expr::cast(to, value); });
}

Expr Parser::raw_cuda(const Token& at) {
  expect("<", "after cuda");
  Type t = type("in cuda<...>");
  expect(">", "after the type of cuda<...>");
  expect("(", "after cuda<" + t.name() + ">");
  if (peek().kind != Tok::String) fail(peek(), "expected the CUDA text as a string after cuda<" + t.name() + ">(, found " + found(peek()));
  std::string text = next().text;
  std::vector<Expr> args;
  while (accept(",")) args.push_back(expr());
  expect(")", "after the arguments of cuda<" + t.name() + ">");
  return checked(at, [&] { return Expr::raw_cuda(text, t, args); });
}

// shift(x, k, fill): k a whole number, negative or not.
Expr Parser::shift(const Token& at) {
  std::vector<Expr> args = arguments(at, 3);
  Expr k = args[1];
  bool negative = false;
  if (k.kind() == ExprKind::Unary && k.node().unary == UnaryOp::Neg) {
    negative = true;
    k = k.args()[0];
  }
  if (k.kind() != ExprKind::Constant || !k.type().is_integral() || k.type().is_bool())
    fail(at, "shift: the offset (second argument) must be a whole number such as -1 or 2, got " + to_string(args[1]));
  const std::int64_t v = k.node().constant.as_int();
  if (v > std::numeric_limits<int>::max() || v < -std::numeric_limits<int>::max()) fail(at, "shift: the offset " + std::to_string(v) + " is too large");
  const int offset = static_cast<int>(negative ? -v : v);
  return checked(at, [&] { return Expr::shift(args[0], offset, args[2]); });
}

// rows(x, c): c a positive whole number.
Expr Parser::rows(const Token& at) {
  std::vector<Expr> args = arguments(at, 2);
  const Expr& c = args[1];
  if (c.kind() != ExprKind::Constant || !c.type().is_integral() || c.type().is_bool())
    fail(at, "rows: the row length (second argument) must be a whole number such as 1024, got " + to_string(c));
  const std::int64_t columns = c.node().constant.as_int();
  return checked(at, [&] { return Expr::rows(args[0], columns); });
}

// fill(n, v): n whole elements of v; fill(p, v): as many as the integral parameter p holds
// when the program runs; fill(x, v): as many as the array x.
Expr Parser::fill(const Token& at) {
  std::vector<Expr> args = arguments(at, 2);
  const Expr& n = args[0];
  if (n.kind() == ExprKind::Constant) {
    if (!n.type().is_integral() || n.type().is_bool())
      fail(at, "fill: the length (first argument) must be a whole number or an array, got " + to_string(n));
    return checked(at, [&] { return Expr::fill(n.node().constant.as_int(), args[1]); });
  }
  if (n.kind() == ExprKind::Param) return checked(at, [&] { return Expr::fill_param(n, args[1]); });
  return checked(at, [&] { return Expr::fill_like(n, args[1]); });
}

// (e) is e; (e,) and (e, f ...) are tuples.
Expr Parser::parenthesized(bool& tuple_literal) {
  const Token& open = next();
  std::vector<Expr> fields{expr()};
  if (accept(")")) return fields[0];
  std::string where = "in the tuple opened on line " + std::to_string(open.line) + ", column " + std::to_string(open.column);
  if (!is_symbol(",")) fail(peek(), "expected ')' or ',' " + where + ", found " + found(peek()));
  while (accept(",")) {
    if (is_symbol(")")) break;
    fields.push_back(expr());
  }
  expect(")", where);
  tuple_literal = true;
  return checked(open, [&] { return Expr::make_tuple(fields); });
}

void Parser::require_program_scope(const Token& t) {
  if (scope_ == Scope::Combine) fail(t, "a combine function may use only a, b and constants, found " + found(t));
  if (scope_ == Scope::Identity) fail(t, "an identity is a constant such as 0 or (0, 1.0f), found " + found(t));
}

// The declared input (or parameter) `t` names; the same node at every use.
Expr Parser::leaf(const Token& t, ExprKind kind) {
  require_program_scope(t);
  auto it = leaves_.find(t.text);
  if (it != leaves_.end() && declared_[it->second].leaf.kind() == kind) return declared_[it->second].leaf;
  bool is_input = kind == ExprKind::Input;
  fail(t, std::string("unknown ") + (is_input ? "input " : "parameter ") + found(t) + " (declare it first: " +
              (is_input ? "input " + textual_form::input_name(t.text) : "param " + textual_form::param_name(t.text)) +
              ": TYPE)");
}

Expr Parser::result(const Token& t) {
  require_program_scope(t);
  if (static_cast<std::size_t>(t.op) >= ops_.size())
    fail(t, found(t) + " is not defined above (an op is used after its line)");
  const std::vector<Expr>& results = ops_[static_cast<std::size_t>(t.op)].results;
  std::string op = "%" + std::to_string(t.op);
  if (results.size() > 1 && t.output < 0)
    fail(t, op + " has " + std::to_string(results.size()) + " results: write " + op + ".0 or " + op + ".1");
  if (results.size() == 1 && t.output >= 0) fail(t, op + " has one result: write " + op);
  return results[static_cast<std::size_t>(std::max(t.output, 0))];
}

}  // namespace fuseflow::textual_form
