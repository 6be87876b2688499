#pragma once
// Reading a program from its textual form, the inverse of to_string(Program):
//
//   input x: f32
//   param threshold: f32
//   %0 = reduce(plus: f32, select(x > $threshold, x, 0.0f))
//   output %0
//
// Everything the printer prints reads back (custom monoids with their combine function,
// identity and commutativity; every op, strategy and expression kind), so
// to_string(parse_program(to_string(p))) == to_string(p). Blank lines and comments from
// `//` to the end of a line are skipped, and a line may continue inside parentheses.
#include <string_view>

#include "fuseflow/frontend/program.hpp"

namespace fuseflow {

// The program `text` describes. A malformed text throws GraphError naming the place and
// what was expected there: "parse: line 3, column 14: expected ')' after the arguments
// of select, found ','". Errors the DSL finds while the program is rebuilt (a type error,
// a strategy an op does not take) come with the place they were written.
Program parse_program(std::string_view text);

}  // namespace fuseflow
