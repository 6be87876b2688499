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

}  // namespace fuseflow
