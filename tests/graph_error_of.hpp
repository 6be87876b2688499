#pragma once
// Tests compare error messages exactly: graph_error_of(f) is the message of the
// GraphError f throws, or "(no GraphError thrown)" (so a missing error fails the check
// with something readable).
#include <string>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::test {

template <class F>
std::string graph_error_of(F&& f) {
  try {
    f();
  } catch (const GraphError& e) {
    return e.what();
  }
  return "(no GraphError thrown)";
}

}  // namespace fuseflow::test
