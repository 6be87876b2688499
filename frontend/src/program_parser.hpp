#pragma once
// The recursive-descent parser of the textual form (parser.cpp has the grammar). Its
// pieces and expressions are in parse_expressions.cpp, its statements in parser.cpp.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fuseflow/frontend/program.hpp"
#include "parse_lexer.hpp"

namespace fuseflow::textual_form {

// ---- names of things ----------------------------------------------------------------

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

constexpr int kOpKindCount = static_cast<int>(OpKind::CountingSort) + 1;
constexpr int kStrategyCount = static_cast<int>(Strategy::ReduceThenScan) + 1;
constexpr int kBinaryOpCount = static_cast<int>(all_binary_ops().size());
constexpr int kMathFnCount = static_cast<int>(all_math_fns().size());
constexpr int kScalarTypeCount = static_cast<int>(all_scalar_types().size());
constexpr int kBuiltinMonoidCount = static_cast<int>(all_builtin_monoids().size());

// Names from the tables, as lookup() and names() take them.
inline const char* scalar_type_name(ScalarType s) { return scalar_info(s).name; }
inline const char* builtin_monoid_name(MonoidKind k) { return builtin_monoid_info(k).name; }
// The scalar type of a number written with `suffix` (2L: i64; 2.5f, 2f: f32; 2.5: f64), or
// nullptr when no type has that literal.
const ScalarInfo* literal_type(const std::string& suffix, bool fractional);
// How numbers are written, for a message: "2 (i32), 2L (i64), ... 2.5 (f64) or i8(2)".
std::string literal_forms();
const char* ordinal(std::size_t i);  // "first", "second", "third", "next"

// The value of a constant expression: a constant, or a tuple built of constants.
std::optional<Value> constant_value(const Expr& e);

// ---- parser -------------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(lex(text)) {
    for (const BuiltinMonoidInfo& builtin : all_builtin_monoids()) monoid_names_.insert(builtin.name);
  }

  Program program();

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
  std::string leaf_name(const std::string& where);
  Type type(const std::string& where);
  std::int64_t whole_number(const std::string& what);
  Value number(const Token& t, bool negative);
  Value integer(const Token& t, ScalarType s, bool negative);
  bool is_negatable_literal(const Token& t) const;

  // ---- expressions ----
  Expr expr() { return binary(1); }

  Expr intern(const Expr& e);
  Expr binary(int min_precedence);

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

  Expr unary();
  Expr postfix();
  Expr primary(bool& tuple_literal);
  Expr named();
  std::vector<Expr> arguments(const Token& fn, int count);
  Expr typed_integer(ScalarType s);
  Expr cast(const Token& at);
  Expr raw_cuda(const Token& at);
  Expr shift(const Token& at);  // shift(x, k, fill)
  Expr rows(const Token& at);   // rows(x, c)
  Expr fill(const Token& at);   // fill(n, v), fill(x, v)
  Expr parenthesized(bool& tuple_literal);
  void require_program_scope(const Token& t);
  Expr leaf(const Token& t, ExprKind kind);
  Expr result(const Token& t);

  // ---- statements ----
  void leaf_line(Leaf kind);
  void monoid_lines();
  Expr expression_in(Scope scope, const Type& operands);
  std::string given_name(const std::string& printed) const;
  MonoidRef monoid_ref(const std::string& op);
  Expr values_for(const MonoidRef& m);
  ScanKind scan_kind(const std::string& op);
  void keyword(const char* word, const std::string& op);
  Strategy strategy();
  std::vector<Expr> op_arguments(OpKind kind, const Token& at);
  void op_line();
  void output_line();
  void require_all_used(const Program& p) const;

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

}  // namespace fuseflow::textual_form
