// The textual form read back (printer.cpp writes it). A lexer turns the text into tokens
// that know their line and column; a recursive-descent parser reads one statement per
// line and rebuilds the program through the DSL's own checked constructors, so a parsed
// program is checked exactly like one built in C++, and the DSL's errors come back with
// the place in the text they were written.
//
//   input NAME: TYPE[LENGTH]?           param NAME: TYPE
//   monoid NAME: TYPE, commutative|non-commutative
//     combine(a, b) = EXPR
//     identity = CONSTANT
//   %K = OP(ARGUMENTS)                  output EXPR
#include "fuseflow/frontend/parser.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "textual_form.hpp"

namespace fuseflow {

namespace {

enum class Tok : std::uint8_t { Name, Number, String, Result, Param, Symbol, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;      // Name, Symbol: as written; Number: its digits; String, Param: the text, unquoted
  std::string suffix;    // Number: the type suffix (f, L, u, uL)
  std::string spelling;  // as written, for messages
  int line = 1;
  int column = 1;
  int op = 0;       // Result: %op ...
  int output = -1;  // ... or %op.output
};

[[noreturn]] void fail(const Token& at, const std::string& what) {
  throw GraphError("parse: line " + std::to_string(at.line) + ", column " + std::to_string(at.column) + ": " + what);
}

// What was found, for "expected X, found Y".
std::string found(const Token& t) {
  if (t.kind == Tok::Newline) return "the end of the line";
  if (t.kind == Tok::End) return "the end of the text";
  return "'" + t.spelling + "'";
}

// ---- lexer --------------------------------------------------------------------------

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> tokens() {
    std::vector<Token> out;
    int depth = 0;  // open ( and [: a line goes on inside them
    for (;;) {
      skip_blanks();
      Token t;
      t.line = line_;
      t.column = static_cast<int>(at_ - line_start_) + 1;
      std::size_t start = at_;
      if (at_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      char c = s_[at_];
      if (c == '\n') {
        ++at_;
        ++line_;
        line_start_ = at_;
        if (depth > 0) continue;
        t.kind = Tok::Newline;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        number(t);
      } else if (is_name_start(c)) {
        t.kind = Tok::Name;
        t.text = name();
      } else if (c == '"') {
        t.kind = Tok::String;
        t.text = string(t);
      } else if (c == '$') {
        ++at_;
        t.kind = Tok::Param;
        if (at_ < s_.size() && s_[at_] == '"') t.text = string(t);
        else if (at_ < s_.size() && is_name_start(s_[at_])) t.text = name();
        else fail(t, "expected a parameter name after '$'");
      } else if (c == '%' && at_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_ + 1]))) {
        ++at_;
        t.kind = Tok::Result;
        t.op = small_number(t);
        if (at_ + 1 < s_.size() && s_[at_] == '.' && std::isdigit(static_cast<unsigned char>(s_[at_ + 1]))) {
          ++at_;
          t.output = small_number(t);
        }
      } else {
        symbol(t);
        if (t.text == "(" || t.text == "[") ++depth;
        if ((t.text == ")" || t.text == "]") && depth > 0) --depth;
      }
      t.spelling = std::string(s_.substr(start, at_ - start));
      out.push_back(std::move(t));
    }
  }

 private:
  static bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  bool more(std::size_t ahead = 0) const { return at_ + ahead < s_.size(); }
  bool digit_at(std::size_t i) const { return i < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i])); }

  // Spaces, tabs, carriage returns and comments from // to the end of the line.
  void skip_blanks() {
    while (more()) {
      char c = s_[at_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++at_;
      } else if (c == '/' && more(1) && s_[at_ + 1] == '/') {
        while (more() && s_[at_] != '\n') ++at_;
      } else {
        return;
      }
    }
  }

  // An identifier, with the #k the printer adds to tell two monoids of one name apart.
  std::string name() {
    std::size_t start = at_;
    while (more() && (std::isalnum(static_cast<unsigned char>(s_[at_])) || s_[at_] == '_')) ++at_;
    if (more(1) && s_[at_] == '#' && digit_at(at_ + 1)) {
      ++at_;
      while (digit_at(at_)) ++at_;
    }
    return std::string(s_.substr(start, at_ - start));
  }

  // Digits, an optional fraction and exponent, then a type suffix: 2, 2.5f, 1e+09, 3uL.
  void number(Token& t) {
    t.kind = Tok::Number;
    std::size_t start = at_;
    while (digit_at(at_)) ++at_;
    if (more() && s_[at_] == '.') {
      ++at_;
      while (digit_at(at_)) ++at_;
    }
    if (more() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      std::size_t digits = at_ + 1 + (more(1) && (s_[at_ + 1] == '+' || s_[at_ + 1] == '-') ? 1 : 0);
      if (digit_at(digits)) {
        at_ = digits;
        while (digit_at(at_)) ++at_;
      }
    }
    t.text = std::string(s_.substr(start, at_ - start));
    std::size_t suffix = at_;
    while (more() && std::isalnum(static_cast<unsigned char>(s_[at_]))) ++at_;
    t.suffix = std::string(s_.substr(suffix, at_ - suffix));
  }

  int small_number(const Token& t) {
    std::size_t start = at_;
    while (digit_at(at_)) ++at_;
    int v = 0;
    auto [end, error] = std::from_chars(s_.data() + start, s_.data() + at_, v);
    if (error != std::errc()) fail(t, "the op number " + std::string(s_.substr(start, at_ - start)) + " is too large");
    return v;
  }

  // "text" with the escapes textual_form::quote writes.
  std::string string(const Token& t) {
    ++at_;  // "
    std::string out;
    for (;;) {
      if (!more() || s_[at_] == '\n') fail(t, "the string is not closed (a '\"' is missing) before the end of the line");
      char c = s_[at_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = more() ? s_[at_++] : '\0';
      switch (e) {
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x':
          if (more(1) && std::isxdigit(static_cast<unsigned char>(s_[at_])) &&
              std::isxdigit(static_cast<unsigned char>(s_[at_ + 1]))) {
            out += static_cast<char>(std::stoi(std::string(s_.substr(at_, 2)), nullptr, 16));
            at_ += 2;
            break;
          }
          [[fallthrough]];
        default:
          fail(t, "unknown escape in a string (the escapes are \\\\, \\\", \\n, \\t, \\r and \\xHH)");
      }
    }
  }

  void symbol(Token& t) {
    t.kind = Tok::Symbol;
    for (std::string_view two : {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||"}) {
      if (s_.substr(at_, 2) == two) {
        t.text = std::string(two);
        at_ += 2;
        return;
      }
    }
    char c = s_[at_];
    if (std::string_view("()[],:=+-*/%&|^<>!~").find(c) == std::string_view::npos) {
      if (std::isprint(static_cast<unsigned char>(c))) fail(t, std::string("unexpected character '") + c + "'");
      const char* hex = "0123456789abcdef";
      auto byte = static_cast<unsigned char>(c);
      fail(t, std::string("unexpected byte 0x") + hex[byte >> 4] + hex[byte & 0xf]);
    }
    t.text = std::string(1, c);
    ++at_;
  }

  std::string_view s_;
  std::size_t at_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
};

// ---- names of things --------------------------------------------------------------

template <class E>
std::optional<E> lookup(const std::string& word, int count, const char* (*name)(E)) {
  for (int k = 0; k < count; ++k)
    if (word == name(static_cast<E>(k))) return static_cast<E>(k);
  return std::nullopt;
}

template <class E>
std::string names(int count, const char* (*name)(E), int first = 0) {
  std::string s;
  for (int k = first; k < count; ++k) s += (k > first ? (k + 1 == count ? " or " : ", ") : "") + std::string(name(static_cast<E>(k)));
  return s;
}

constexpr int kOpKinds = static_cast<int>(OpKind::CountingSort) + 1;
constexpr int kStrategies = static_cast<int>(Strategy::ReduceThenScan) + 1;
constexpr int kBinaryOps = static_cast<int>(BinaryOp::Or) + 1;
constexpr int kMathFns = static_cast<int>(MathFn::Erf) + 1;
constexpr int kScalarTypes = static_cast<int>(ScalarType::F64) + 1;
constexpr int kBuiltinMonoids = static_cast<int>(MonoidKind::Custom);

const char* scalar_type_name(ScalarType s) {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (int k = 0; k < kScalarTypes; ++k) out.push_back(scalar_name(static_cast<ScalarType>(k)));
    return out;
  }();
  return all[static_cast<std::size_t>(s)].c_str();
}

const char* builtin_monoid_name(MonoidKind k) {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (int i = 0; i < kBuiltinMonoids; ++i) out.push_back(Monoid::builtin(static_cast<MonoidKind>(i)).name());
    return out;
  }();
  return all[static_cast<std::size_t>(k)].c_str();
}

int math_arity(MathFn fn) {
  switch (fn) {
    case MathFn::Min: case MathFn::Max: case MathFn::Pow: return 2;
    case MathFn::Fma: return 3;
    default: return 1;
  }
}

const char* ordinal(std::size_t i) {
  static const char* const words[] = {"first", "second", "third"};
  return i < 3 ? words[i] : "next";
}

// The value of a constant expression: a constant, or a tuple built of constants.
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

// ---- parser -------------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(Lexer(text).tokens()) {
    for (int k = 0; k < kBuiltinMonoids; ++k) monoid_names_.insert(builtin_monoid_name(static_cast<MonoidKind>(k)));
  }

  Program program() {
    for (;;) {
      const Token& t = peek();
      if (t.kind == Tok::End) break;
      if (t.kind == Tok::Newline) next();
      else if (t.kind == Tok::Result) op_line();
      else if (is_word("input")) leaf_line(Leaf::Input);
      else if (is_word("param")) leaf_line(Leaf::Param);
      else if (is_word("monoid")) monoid_lines();
      else if (is_word("output")) output_line();
      else fail(t, "expected a line that starts with input, param, monoid, %N = or output, found " + found(t));
    }
    if (outputs_.empty()) fail(peek(), "expected an 'output' line: the program has no outputs");
    Program p = checked(*first_output_, [&] { return Program(outputs_); });
    require_all_used(p);
    return p;
  }

 private:
  enum class Leaf : std::uint8_t { Input, Param };
  // Where an expression is: a program's (inputs, parameters, results, index), a combine
  // function's (the operands a and b, constants) or an identity (constants).
  enum class Scope : std::uint8_t { Program, Combine, Identity };

  struct Declared {
    std::string name;
    Expr leaf;
    const Token* at;
  };
  struct OpRecord {
    std::vector<Expr> results;
    const Token* at;
  };
  struct MonoidRecord {
    std::string printed;
    Monoid monoid;
    const Token* at;
  };
  struct MonoidRef {
    Monoid monoid;
    Type declared;
    const Token* type_at;
  };

  // ---- tokens ----
  const Token& peek() const { return tokens_[at_]; }
  const Token& next() {
    const Token& t = tokens_[at_];
    if (at_ + 1 < tokens_.size()) ++at_;
    return t;
  }
  bool is_symbol(std::string_view s) const { return peek().kind == Tok::Symbol && peek().text == s; }
  bool is_word(std::string_view w) const { return peek().kind == Tok::Name && peek().text == w; }
  bool accept(std::string_view symbol) {
    if (!is_symbol(symbol)) return false;
    next();
    return true;
  }
  const Token& expect(std::string_view symbol, const std::string& where) {
    if (!is_symbol(symbol)) fail(peek(), "expected '" + std::string(symbol) + "' " + where + ", found " + found(peek()));
    return next();
  }
  const Token& expect_word(std::string_view word, const std::string& where) {
    if (!is_word(word)) fail(peek(), "expected '" + std::string(word) + "' " + where + ", found " + found(peek()));
    return next();
  }
  void end_of_line(const std::string& where) {
    if (peek().kind == Tok::End) return;
    if (peek().kind != Tok::Newline) fail(peek(), "expected the end of the line " + where + ", found " + found(peek()));
    next();
  }
  void skip_newlines() {
    while (peek().kind == Tok::Newline) next();
  }

  // Runs a DSL constructor; its GraphError comes back with the place `at`.
  template <class F>
  auto checked(const Token& at, F&& build) -> decltype(build()) {
    try {
      return build();
    } catch (const GraphError& e) {
      std::string what = e.what();
      const std::string prefix = "fuseflow: ";
      fail(at, what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what);
    }
  }

  // ---- pieces ----
  std::string leaf_name(const std::string& where) {
    const Token& t = peek();
    if (t.kind == Tok::String) return next().text;
    if (t.kind != Tok::Name) fail(t, "expected a name " + where + ", found " + found(t));
    if (!textual_form::is_identifier(t.text) || textual_form::is_expression_word(t.text))
      fail(t, "'" + t.text + "' cannot be a bare name here; write it quoted: " + textual_form::quote(t.text));
    return next().text;
  }

  Type type(const std::string& where) {
    const Token& t = peek();
    Nesting nesting(*this, t);
    if (accept("(")) {
      std::vector<Type> fields{type("in a tuple type")};
      while (accept(",")) fields.push_back(type("in a tuple type"));
      expect(")", "after the fields of a tuple type");
      return Type::tuple(std::move(fields));
    }
    if (t.kind == Tok::Name)
      if (auto s = lookup<ScalarType>(t.text, kScalarTypes, scalar_type_name)) {
        next();
        return *s;
      }
    fail(t, "expected a type " + where + " (" + names<ScalarType>(kScalarTypes, scalar_type_name) +
                ", or a tuple such as (f32, i64)), found " + found(t));
  }

  std::int64_t whole_number(const std::string& what) {
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
  Value number(const Token& t, bool negative) {
    if (t.kind == Tok::Name) {
      bool single = t.text.back() == 'f' && t.text.size() == 4;
      bool infinite = t.text.compare(0, 3, "inf") == 0;
      double v = infinite ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      v = std::copysign(v, negative ? -1.0 : 1.0);
      return single ? Value(static_cast<float>(v)) : Value(v);
    }
    const std::string& digits = t.text;
    const char* first = digits.data();
    const char* last = first + digits.size();
    bool fractional = digits.find_first_of(".eE") != std::string::npos;
    if (t.suffix == "f" || (t.suffix.empty() && fractional)) {
      bool single = t.suffix == "f";
      float f = 0;
      double d = 0;
      auto result = single ? std::from_chars(first, last, f) : std::from_chars(first, last, d);
      if (result.ec != std::errc() || result.ptr != last)
        fail(t, found(t) + " is out of range for " + (single ? "f32" : "f64"));
      return single ? Value(negative ? -f : f) : Value(negative ? -d : d);
    }
    const std::map<std::string, ScalarType> integers = {
        {"", ScalarType::I32}, {"L", ScalarType::I64}, {"u", ScalarType::U32}, {"uL", ScalarType::U64}};
    auto type = integers.find(t.suffix);
    if (fractional || type == integers.end())
      fail(t, "cannot read the number " + found(t) +
                  ": numbers are written 2 (i32), 2L (i64), 2u (u32), 2uL (u64), 2.5f (f32), 2.5 (f64) or i8(2)");
    return integer(t, type->second, negative);
  }

  // The integer `t` (digits, no suffix needed) as a scalar of type s, range-checked.
  Value integer(const Token& t, ScalarType s, bool negative) {
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

  bool is_negatable_literal(const Token& t) const {
    if (t.kind == Tok::Number) return t.suffix != "u" && t.suffix != "uL";
    return t.kind == Tok::Name && (t.text == "inf" || t.text == "inff" || t.text == "nan" || t.text == "nanf");
  }

  // ---- expressions ----
  Expr expr() { return binary(1); }

  // One node per distinct expression, as when a C++ program names a value and uses it
  // twice (p = max(x, 0); tuple(p, p, p, x)): the code generator computes a node once.
  // Children are interned first, so a node is known by its payload and its children.
  // Tuple fields are not: a C++ combine function reads a[0] afresh at each use, and the
  // kernel a parsed program gives is the kernel the C++ program gives.
  Expr intern(const Expr& e) {
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
  Expr binary(int min_precedence) {
    Expr lhs = unary();
    for (;;) {
      const Token& t = peek();
      std::optional<BinaryOp> op;
      if (t.kind == Tok::Symbol) op = lookup<BinaryOp>(t.text, kBinaryOps, binary_symbol);
      if (!op || binary_precedence(*op) < min_precedence) return lhs;
      next();
      Expr rhs = binary(binary_precedence(*op) + 1);
      lhs = intern(checked(t, [&] { return Expr::binary(*op, lhs, rhs); }));
    }
  }

  // Nesting (parentheses, unary operators, tuple types) is bounded so that no text can
  // exhaust the stack: deeper text is an error, not a crash.
  struct Nesting {
    Nesting(Parser& p, const Token& at) : parser(p) {
      if (++parser.depth_ > kMaxNesting)
        fail(at, "the text nests deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Nesting() { --parser.depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    Parser& parser;
  };
  static constexpr int kMaxNesting = 500;

  Expr unary() {
    const Token& t = peek();
    Nesting nesting(*this, t);
    if (t.kind != Tok::Symbol || (t.text != "-" && t.text != "!" && t.text != "~")) return postfix();
    next();
    if (t.text == "-" && is_negatable_literal(peek())) return intern(Expr::constant(number(next(), true)));
    Expr operand = unary();
    UnaryOp op = t.text == "-" ? UnaryOp::Neg : t.text == "!" ? UnaryOp::Not : UnaryOp::BitNot;
    return intern(checked(t, [&] { return Expr::unary(op, operand); }));
  }

  Expr postfix() {
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

  Expr primary(bool& tuple_literal) {
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

  Expr named() {
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
    if (call)
      if (auto fn = lookup<MathFn>(w, kMathFns, math_name)) {
        std::vector<Expr> args = arguments(t, math_arity(*fn));
        return checked(t, [&] { return Expr::call(*fn, args); });
      }
    if (call)
      if (auto s = lookup<ScalarType>(w, kScalarTypes, scalar_type_name); s && Type(*s).is_integral() && *s != ScalarType::Bool)
        return typed_integer(*s);
    if (scope_ == Scope::Combine && (w == "a" || w == "b")) return Expr::operand(w == "a" ? 0 : 1, operand_type_);
    return leaf(t, ExprKind::Input);
  }

  // Exactly `count` arguments in parentheses after `fn`.
  std::vector<Expr> arguments(const Token& fn, int count) {
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
  Expr typed_integer(ScalarType s) {
    expect("(", "");
    bool negative = accept("-");
    const Token& t = peek();
    if (t.kind != Tok::Number || !t.suffix.empty() || t.text.find_first_of(".eE") != std::string::npos)
      fail(t, "expected a whole number in " + scalar_name(s) + "(...), found " + found(t));
    Value v = integer(next(), s, negative);
    expect(")", "after the value of " + scalar_name(s) + "(...)");
    return Expr::constant(v);
  }

  Expr cast(const Token& at) {
    expect("<", "after cast");
    Type to = type("in cast<...>");
    expect(">", "after the type of cast<...>");
    expect("(", "after cast<" + to.name() + ">");
    Expr value = expr();
    expect(")", "after the argument of cast<" + to.name() + ">");
    return checked(at, [&] { return Expr::cast(to, value); });
  }

  Expr raw_cuda(const Token& at) {
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

  // (e) is e; (e,) and (e, f ...) are tuples.
  Expr parenthesized(bool& tuple_literal) {
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

  void require_program_scope(const Token& t) {
    if (scope_ == Scope::Combine) fail(t, "a combine function may use only a, b and constants, found " + found(t));
    if (scope_ == Scope::Identity) fail(t, "an identity is a constant such as 0 or (0, 1.0f), found " + found(t));
  }

  // The declared input (or parameter) `t` names; the same node at every use.
  Expr leaf(const Token& t, ExprKind kind) {
    require_program_scope(t);
    auto it = leaves_.find(t.text);
    if (it != leaves_.end() && declared_[it->second].leaf.kind() == kind) return declared_[it->second].leaf;
    bool is_input = kind == ExprKind::Input;
    fail(t, std::string("unknown ") + (is_input ? "input " : "parameter ") + found(t) + " (declare it first: " +
                (is_input ? "input " + textual_form::input_name(t.text) : "param " + textual_form::param_name(t.text)) +
                ": TYPE)");
  }

  Expr result(const Token& t) {
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

  // ---- statements ----
  void leaf_line(Leaf kind) {
    const char* what = kind == Leaf::Input ? "input" : "parameter";
    next();
    const Token& at = peek();
    std::string name = leaf_name(std::string("after '") + (kind == Leaf::Input ? "input" : "param") + "'");
    if (auto it = leaves_.find(name); it != leaves_.end())
      fail(at, "'" + name + "' is already declared on line " + std::to_string(declared_[it->second].at->line));
    expect(":", std::string("after the ") + what + "'s name");
    Type t = type(std::string("after the ") + what + "'s name");
    std::int64_t length = -1;
    if (kind == Leaf::Input && accept("[")) {
      length = whole_number("the input's length");
      expect("]", "after the input's length");
    }
    end_of_line(std::string("after the ") + what + "'s type");
    Expr node = checked(at, [&] { return kind == Leaf::Input ? Expr::input(name, t, length) : Expr::param(name, t); });
    leaves_[name] = declared_.size();
    declared_.push_back({name, node, &at});
  }

  void monoid_lines() {
    next();
    const Token& at = peek();
    if (at.kind != Tok::String && at.kind != Tok::Name) fail(at, "expected the monoid's name after 'monoid', found " + found(at));
    std::string printed = next().text;
    if (monoid_names_.count(printed)) {
      auto it = monoids_.find(printed);
      if (it == monoids_.end()) fail(at, "'" + printed + "' is a built-in monoid; give yours another name");
      fail(at, "monoid '" + printed + "' is already defined on line " + std::to_string(it->second.at->line));
    }
    expect(":", "after the monoid's name");
    Type t = type("after the monoid's name");
    expect(",", "after the monoid's type");
    bool commutative = is_word("commutative");
    if (commutative) {
      next();
    } else if (is_word("non")) {
      next();
      expect("-", "in non-commutative");
      expect_word("commutative", "in non-commutative");
    } else {
      fail(peek(), "expected commutative or non-commutative after the monoid's type, found " + found(peek()));
    }
    skip_newlines();
    expect_word("combine", "on the line after the monoid's name");
    expect("(", "after combine");
    expect_word("a", "as combine's first operand");
    expect(",", "after combine(a");
    expect_word("b", "as combine's second operand");
    expect(")", "after combine(a, b");
    expect("=", "after combine(a, b)");
    const Token& combine_at = peek();
    Expr combine = expression_in(Scope::Combine, t);
    if (combine.type() != t)
      fail(combine_at, "the combine function returns " + combine.type().name() + " but the monoid is over " + t.name() +
                           " (use cast<...> for narrowing)");
    skip_newlines();
    expect_word("identity", "on the line after the combine function");
    expect("=", "after identity");
    const Token& identity_at = peek();
    std::optional<Value> identity = constant_value(expression_in(Scope::Identity, t));
    if (!identity) fail(identity_at, "an identity is a constant such as 0 or (0, 1.0f)");
    if (identity->type() != t)
      fail(identity_at, "the identity has type " + identity->type().name() + " but the monoid is over " + t.name());
    end_of_line("after the identity");
    monoid_names_.insert(printed);
    monoids_[printed] = {printed, Monoid::custom(given_name(printed), t, combine, *identity, commutative), &at};
    monoid_order_.push_back(printed);
  }

  Expr expression_in(Scope scope, const Type& operands) {
    scope_ = scope;
    operand_type_ = operands;
    Expr e = expr();
    scope_ = Scope::Program;
    return e;
  }

  // The printer writes a second monoid called m as m#2 (a third as m#3 ...), and a custom
  // monoid called like a built-in, plus, as plus#2. Its own name is m when m, m#2 ...
  // m#(k-1) are already taken: then printing it again gives m#k once more.
  std::string given_name(const std::string& printed) const {
    std::size_t hash = printed.rfind('#');
    if (hash == std::string::npos) return printed;
    std::string base = printed.substr(0, hash);
    int k = 0;
    auto [end, error] = std::from_chars(printed.data() + hash + 1, printed.data() + printed.size(), k);
    if (error != std::errc() || k < 2 || printed != base + "#" + std::to_string(k) || !monoid_names_.count(base))
      return printed;
    for (int j = 2; j < k; ++j)
      if (!monoid_names_.count(base + "#" + std::to_string(j))) return printed;
    return base;
  }

  MonoidRef monoid_ref(const std::string& op) {
    const Token& at = peek();
    if (at.kind != Tok::Name && at.kind != Tok::String)
      fail(at, "expected a monoid (" + names<MonoidKind>(kBuiltinMonoids, builtin_monoid_name) + ", or one defined above) after " +
                   op + "(, found " + found(at));
    next();
    MonoidRef ref;
    if (auto it = monoids_.find(at.text); it != monoids_.end()) ref.monoid = it->second.monoid;
    else if (auto k = lookup<MonoidKind>(at.text, kBuiltinMonoids, builtin_monoid_name); k && at.kind == Tok::Name)
      ref.monoid = Monoid::builtin(*k);
    else
      fail(at, "unknown monoid " + found(at) + " (the built-in monoids are " + names<MonoidKind>(kBuiltinMonoids, builtin_monoid_name) +
                   "; define your own with a 'monoid' line before its use)");
    expect(":", "after the monoid's name");
    ref.type_at = &peek();
    ref.declared = type("after the monoid's name");
    if (ref.monoid.is_typed() && ref.monoid.type() != ref.declared)
      fail(*ref.type_at, "monoid " + found(at) + " is over " + ref.monoid.type().name() + ", not " + ref.declared.name());
    return ref;
  }

  // The values an op combines with `m`: their type is the one written after the monoid.
  Expr values_for(const MonoidRef& m) {
    const Token& at = peek();
    Expr values = expr();
    if (values.type() != m.declared)
      fail(at, "the values are " + values.type().name() + " but the monoid is written over " + m.declared.name());
    return values;
  }

  ScanKind scan_kind(const std::string& op) {
    expect(",", "after the monoid of " + op);
    if (is_word("inclusive") || is_word("exclusive")) return next().text == "inclusive" ? ScanKind::Inclusive : ScanKind::Exclusive;
    fail(peek(), "expected inclusive or exclusive after the monoid of " + op + ", found " + found(peek()));
  }

  // , word=
  void keyword(const char* word, const std::string& op) {
    expect(",", "before " + std::string(word) + "= in " + op);
    expect_word(word, "in " + op);
    expect("=", "after " + std::string(word));
  }

  // An optional ", strategy=NAME" (reduce and scan).
  Strategy strategy() {
    if (!accept(",")) return Strategy::Automatic;
    expect_word("strategy", "after the values");
    expect("=", "after strategy");
    const Token& t = peek();
    std::optional<Strategy> s;
    if (t.kind == Tok::Name) s = lookup<Strategy>(t.text, kStrategies, strategy_name);
    if (!s) fail(t, "expected a strategy (" + names<Strategy>(kStrategies, strategy_name, 1) + ") after strategy=, found " + found(t));
    next();
    return *s;
  }

  // The arguments of an op after its '(' and the op built from them: its results.
  std::vector<Expr> op_arguments(OpKind kind, const Token& at) {
    const std::string op = op_name(kind);
    auto build = [&](auto&& make) { return checked(at, make); };
    switch (kind) {
      case OpKind::Reduce: {
        MonoidRef m = monoid_ref(op);
        expect(",", "after the monoid of reduce");
        Expr values = values_for(m);
        Strategy s = strategy();
        return build([&] { return std::vector<Expr>{reduce(values, m.monoid, s)}; });
      }
      case OpKind::Scan: {
        MonoidRef m = monoid_ref(op);
        ScanKind k = scan_kind(op);
        expect(",", "after " + std::string(k == ScanKind::Inclusive ? "inclusive" : "exclusive"));
        Expr values = values_for(m);
        Strategy s = strategy();
        return build([&] { return std::vector<Expr>{scan(values, m.monoid, k, s)}; });
      }
      case OpKind::Filter: {
        Expr values = expr();
        keyword("where", op);
        Expr predicate = expr();
        return build([&] { return std::vector<Expr>{filter(values, predicate)}; });
      }
      case OpKind::SegmentedReduce:
      case OpKind::SegmentedScan:
      case OpKind::ReduceByKey:
      case OpKind::ScanByKey: {
        MonoidRef m = monoid_ref(op);
        bool is_scan = kind == OpKind::SegmentedScan || kind == OpKind::ScanByKey;
        ScanKind k = is_scan ? scan_kind(op) : ScanKind::Inclusive;
        expect(",", is_scan ? "after " + std::string(k == ScanKind::Inclusive ? "inclusive" : "exclusive")
                            : "after the monoid of " + op);
        Expr values = values_for(m);
        bool by_offsets = kind == OpKind::SegmentedReduce || kind == OpKind::SegmentedScan;
        keyword(by_offsets ? "offsets" : "keys", op);
        Expr segments = expr();
        return build([&] {
          switch (kind) {
            case OpKind::SegmentedReduce: return std::vector<Expr>{segmented_reduce(values, segments, m.monoid)};
            case OpKind::SegmentedScan: return std::vector<Expr>{segmented_scan(values, segments, m.monoid, k)};
            case OpKind::ReduceByKey: {
              KeyedResult r = reduce_by_key(segments, values, m.monoid);
              return std::vector<Expr>{r.keys, r.values};
            }
            default: return std::vector<Expr>{scan_by_key(segments, values, m.monoid, k)};
          }
        });
      }
      case OpKind::Histogram: {
        Expr bin = expr();
        keyword("bins", op);
        std::int64_t bins = whole_number("the bin count after bins=");
        keyword("counts", op);
        Type counts = type("after counts=");
        return build([&] { return std::vector<Expr>{histogram(bin, bins, counts)}; });
      }
      case OpKind::CountingSort: {
        Expr keys = expr();
        keyword("bins", op);
        std::int64_t bins = whole_number("the bin count after bins=");
        if (!accept(",")) return build([&] { return std::vector<Expr>{counting_sort(keys, bins)}; });
        expect_word("values", "after the bin count of counting_sort");
        expect("=", "after values");
        Expr values = expr();
        return build([&] {
          KeyedResult r = sort_by_key(keys, values, bins);
          return std::vector<Expr>{r.keys, r.values};
        });
      }
    }
    fail(at, "unknown op");
  }

  void op_line() {
    const Token& id = next();
    if (id.output >= 0 || static_cast<std::size_t>(id.op) != ops_.size())
      fail(id, "expected %" + std::to_string(ops_.size()) + " (ops are numbered %0, %1 ... in order), found " + found(id));
    expect("=", "after " + id.spelling);
    const Token& at = peek();
    std::optional<OpKind> kind;
    if (at.kind == Tok::Name) kind = lookup<OpKind>(at.text, kOpKinds, op_name);
    if (!kind) fail(at, "expected an op (" + names<OpKind>(kOpKinds, op_name) + ") after '=', found " + found(at));
    next();
    expect("(", "after " + at.text);
    std::vector<Expr> results = op_arguments(*kind, at);
    expect(")", "after the arguments of " + at.text);
    end_of_line("after " + at.text + "(...)");
    ops_.push_back({std::move(results), &id});
  }

  void output_line() {
    next();
    const Token& at = peek();
    Expr e = expr();
    end_of_line("after the output");
    bool scalar_result = e.kind() == ExprKind::Result && e.node().op->scalar_output;
    if (!scalar_result && !is_array(e))
      fail(at, "an output is an array or a reduction's result; " + to_string(e) + " is neither");
    checked(at, [&] { return Program(e); });  // arrays of different lengths
    if (!first_output_) first_output_ = &at;
    outputs_.push_back(e);
  }

  // Text the program would drop silently is more likely a mistake: every declaration is used.
  void require_all_used(const Program& p) const {
    std::set<const void*> used;
    for (const auto& op : p.ops()) {
      used.insert(op.get());
      if (op->monoid.valid()) used.insert(&op->monoid.node());
    }
    for (const auto& leaf : p.inputs()) used.insert(leaf.get());
    for (const auto& leaf : p.params()) used.insert(leaf.get());
    for (std::size_t k = 0; k < ops_.size(); ++k)
      if (!used.count(ops_[k].results[0].node().op.get()))
        fail(*ops_[k].at, "%" + std::to_string(k) + " is computed but no output uses it");
    for (const auto& name : monoid_order_) {
      const MonoidRecord& m = monoids_.at(name);
      if (!used.count(&m.monoid.node())) fail(*m.at, "monoid '" + m.printed + "' is defined but no op uses it");
    }
    for (const auto& d : declared_)
      if (!used.count(d.leaf.get()))
        fail(*d.at, std::string(d.leaf.kind() == ExprKind::Input ? "input" : "parameter") + " '" + d.name +
                        "' is declared but no output uses it");
  }

  std::vector<Token> tokens_;
  std::size_t at_ = 0;
  std::map<std::string, Expr> nodes_;  // intern()
  int depth_ = 0;                       // Nesting
  Scope scope_ = Scope::Program;
  Type operand_type_;
  std::map<std::string, std::size_t> leaves_;  // input and parameter names -> declared_
  std::vector<Declared> declared_;
  std::vector<OpRecord> ops_;
  std::map<std::string, MonoidRecord> monoids_;  // by printed name
  std::vector<std::string> monoid_order_;
  std::set<std::string> monoid_names_;  // printed names taken: the built-ins' and those defined so far
  std::vector<Expr> outputs_;
  const Token* first_output_ = nullptr;
};

}  // namespace

Program parse_program(std::string_view text) { return Parser(text).program(); }

}  // namespace fuseflow
