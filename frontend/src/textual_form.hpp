#pragma once
// What the printer (printer.cpp) and the parser (parser.cpp) agree on about names and
// quoted text, so that every program's text reads back as the same program.
#include <string>
#include <string_view>

namespace fuseflow::textual_form {

// [A-Za-z_][A-Za-z0-9_]*
bool is_identifier(std::string_view s);
// Words with a meaning of their own inside an expression (index, true, false, inf, nan,
// inff, nanf, cast, cuda): an input of that name is quoted.
bool is_expression_word(std::string_view s);
// "text" with \\, \", \n, \t, \r and \xHH (other control characters) escaped.
std::string quote(std::string_view s);

// How a name is printed: bare when it reads back unambiguously, else quoted.
std::string input_name(const std::string& name);   // x, "my x", "index"
std::string param_name(const std::string& name);   // t, "my t" (after $ in an expression)
std::string monoid_name(const std::string& name);  // mssp, custom#2, "my monoid"

}  // namespace fuseflow::textual_form
