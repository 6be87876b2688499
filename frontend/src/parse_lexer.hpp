#pragma once
// The tokens of the textual form, each knowing its line and column, and the lexer that
// makes them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fuseflow::textual_form {

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

// A GraphError "parse: line L, column C: what".
[[noreturn]] void fail(const Token& at, const std::string& what);

// What was found, for "expected X, found Y".
std::string found(const Token& t);

// The tokens of `text`, the last one End. A newline inside ( or [ does not end a line.
std::vector<Token> lex(std::string_view text);

}  // namespace fuseflow::textual_form
