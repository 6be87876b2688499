// The lexer of the textual form (parse_lexer.hpp).
#include "parse_lexer.hpp"

#include <cctype>
#include <charconv>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::textual_form {

[[noreturn]] void fail(const Token& at, const std::string& what) {
  throw GraphError("parse: line " + std::to_string(at.line) + ", column " + std::to_string(at.column) + ": " + what);
}

// What was found, for "expected X, found Y".
std::string found(const Token& t) {
  if (t.kind == Tok::Newline) return "the end of the line";
  if (t.kind == Tok::End) return "the end of the text";
  return "'" + t.spelling + "'";
}

namespace {

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

}  // namespace

std::vector<Token> lex(std::string_view text) { return Lexer(text).tokens(); }

}  // namespace fuseflow::textual_form
