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
//
// The lexer is parse_lexer.cpp, names, types, numbers and expressions parse_expressions.cpp;
// the statements are here.
#include "fuseflow/frontend/parser.hpp"

#include <algorithm>
#include <charconv>

#include "program_parser.hpp"
#include "textual_form.hpp"

namespace fuseflow {

namespace textual_form {

Program Parser::program() {
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

void Parser::leaf_line(Leaf kind) {
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

void Parser::monoid_lines() {
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

Expr Parser::expression_in(Scope scope, const Type& operands) {
  scope_ = scope;
  operand_type_ = operands;
  Expr e = expr();
  scope_ = Scope::Program;
  return e;
}

// The printer writes a second monoid called m as m#2 (a third as m#3 ...), and a custom
// monoid called like a built-in, plus, as plus#2. Its own name is m when m, m#2 ...
// m#(k-1) are already taken: then printing it again gives m#k once more.
std::string Parser::given_name(const std::string& printed) const {
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

Parser::MonoidRef Parser::monoid_ref(const std::string& op) {
  const Token& at = peek();
  if (at.kind != Tok::Name && at.kind != Tok::String)
    fail(at, "expected a monoid (" + names<MonoidKind>(kBuiltinMonoidCount, builtin_monoid_name) + ", or one defined above) after " +
                 op + "(, found " + found(at));
  next();
  MonoidRef ref;
  if (auto it = monoids_.find(at.text); it != monoids_.end()) ref.monoid = it->second.monoid;
  else if (auto k = lookup<MonoidKind>(at.text, kBuiltinMonoidCount, builtin_monoid_name); k && at.kind == Tok::Name)
    ref.monoid = Monoid::builtin(*k);
  else
    fail(at, "unknown monoid " + found(at) + " (the built-in monoids are " + names<MonoidKind>(kBuiltinMonoidCount, builtin_monoid_name) +
                 "; define your own with a 'monoid' line before its use)");
  expect(":", "after the monoid's name");
  ref.type_at = &peek();
  ref.declared = type("after the monoid's name");
  if (ref.monoid.is_typed() && ref.monoid.type() != ref.declared)
    fail(*ref.type_at, "monoid " + found(at) + " is over " + ref.monoid.type().name() + ", not " + ref.declared.name());
  return ref;
}

// The values an op combines with `m`: their type is the one written after the monoid.
Expr Parser::values_for(const MonoidRef& m) {
  const Token& at = peek();
  Expr values = expr();
  if (values.type() != m.declared)
    fail(at, "the values are " + values.type().name() + " but the monoid is written over " + m.declared.name());
  return values;
}

ScanKind Parser::scan_kind(const std::string& op) {
  expect(",", "after the monoid of " + op);
  if (is_word("inclusive") || is_word("exclusive")) return next().text == "inclusive" ? ScanKind::Inclusive : ScanKind::Exclusive;
  fail(peek(), "expected inclusive or exclusive after the monoid of " + op + ", found " + found(peek()));
}

// , word=
void Parser::keyword(const char* word, const std::string& op) {
  expect(",", "before " + std::string(word) + "= in " + op);
  expect_word(word, "in " + op);
  expect("=", "after " + std::string(word));
}

// An optional ", strategy=NAME" (reduce and scan).
Strategy Parser::strategy() {
  if (!accept(",")) return Strategy::Automatic;
  expect_word("strategy", "after the values");
  expect("=", "after strategy");
  const Token& t = peek();
  std::optional<Strategy> s;
  if (t.kind == Tok::Name) s = lookup<Strategy>(t.text, kStrategyCount, strategy_name);
  if (!s) fail(t, "expected a strategy (" + names<Strategy>(kStrategyCount, strategy_name, 1) + ") after strategy=, found " + found(t));
  next();
  return *s;
}

// The arguments of an op after its '(' and the op built from them: its results.
std::vector<Expr> Parser::op_arguments(OpKind kind, const Token& at) {
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
      expect(",", "before counts= or weights= in " + op);
      if (is_word("weights")) {  // a weighted histogram: its sums have the weights' type
        expect_word("weights", "in " + op);
        expect("=", "after weights");
        Expr weights = expr();
        return build([&] { return std::vector<Expr>{histogram(bin, weights, bins)}; });
      }
      expect_word("counts", "(or weights) in " + op);
      expect("=", "after counts");
      Type counts = type("after counts=");
      return build([&] { return std::vector<Expr>{histogram(bin, bins, counts)}; });
    }
    case OpKind::CountingSort: {
      // bins=N (a counting sort by a small key) or begin_bit=B, end_bit=E (ff::sort).
      Expr keys = expr();
      expect(",", "after the keys of " + op);
      const bool by_bits = is_word("begin_bit");
      std::int64_t bins = 0, begin = 0, end = 0;
      expect_word(by_bits ? "begin_bit" : "bins", "(or begin_bit) in " + op);
      expect("=", by_bits ? "after begin_bit" : "after bins");
      if (by_bits) {
        begin = whole_number("the first key bit after begin_bit=");
        keyword("end_bit", op);
        end = whole_number("the key bit after the last after end_bit=");
      } else {
        bins = whole_number("the bin count after bins=");
      }
      const KeyBits bits{static_cast<int>(std::min<std::int64_t>(begin, 64)), static_cast<int>(std::min<std::int64_t>(end, 64))};
      Expr values;
      if (accept(",")) {
        expect_word("values", "after the bins or bits of counting_sort");
        expect("=", "after values");
        values = expr();
      }
      return build([&] {
        if (!values.valid()) return std::vector<Expr>{by_bits ? sort(keys, bits) : counting_sort(keys, bins)};
        KeyedResult r = by_bits ? sort_by_key(keys, values, bits) : sort_by_key(keys, values, bins);
        return std::vector<Expr>{r.keys, r.values};
      });
    }
  }
  throw InternalError("parse: no rule for the arguments of " + op);
}

void Parser::op_line() {
  const Token& id = next();
  if (id.output >= 0 || static_cast<std::size_t>(id.op) != ops_.size())
    fail(id, "expected %" + std::to_string(ops_.size()) + " (ops are numbered %0, %1 ... in order), found " + found(id));
  expect("=", "after " + id.spelling);
  const Token& at = peek();
  std::optional<OpKind> kind;
  if (at.kind == Tok::Name) kind = lookup<OpKind>(at.text, kOpKindCount, op_name);
  if (!kind) fail(at, "expected an op (" + names<OpKind>(kOpKindCount, op_name) + ") after '=', found " + found(at));
  next();
  expect("(", "after " + at.text);
  std::vector<Expr> results = op_arguments(*kind, at);
  expect(")", "after the arguments of " + at.text);
  end_of_line("after " + at.text + "(...)");
  ops_.push_back({std::move(results), &id});
}

void Parser::output_line() {
  next();
  const Token& at = peek();
  Expr e = expr();
  end_of_line("after the output");
  if (!is_scalar_output(e) && !is_array(e))
    fail(at, "an output is an array, a reduction's result or an expression of reductions' results; " +
                 to_string(e) + " is none of these");
  checked(at, [&] { return Program(e); });  // arrays of different lengths
  if (!first_output_) first_output_ = &at;
  outputs_.push_back(e);
}

// Text the program would drop silently is more likely a mistake: every declaration is used.
void Parser::require_all_used(const Program& p) const {
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

}  // namespace textual_form

Program parse_program(std::string_view text) { return textual_form::Parser(text).program(); }

}  // namespace fuseflow
