#pragma once
// The error types every layer throws. Each carries a message a user can act on:
// what failed, with which op / types / kernel, and what to do.
#include <stdexcept>
#include <string>

namespace fuseflow {

// Base of every fuseflow exception.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Misuse found while building or binding a program: a type error, an unbound input,
// lengths that disagree, a non-scalar where a scalar is needed ...
class GraphError : public Error {
 public:
  explicit GraphError(const std::string& message) : Error("fuseflow: " + message) {}
};

// An option or environment value is wrong: FUSEFLOW_SCAN_TILE=abc, a cache limit of 0 ...
// The message names the option, the value given and what was expected.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error("fuseflow: " + message) {}
};

// A broken invariant inside fuseflow itself, never the user's doing: the message says
// what broke and asks for a report.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message)
      : Error("fuseflow: internal error: " + message +
              " (this is a bug in fuseflow; please report it with the program, e.g. its FUSEFLOW_DUMP output)") {}
};

}  // namespace fuseflow
