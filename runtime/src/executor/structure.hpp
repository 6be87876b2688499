#pragma once
// A program's structure as a compact, exact signature: what decides whether two programs
// built apart can share one prepared plan and its kernels. Computed by one walk of the
// graph (no text is printed), so a program rebuilt in a loop finds its plan for the cost
// of that walk and one comparison.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fuseflow/frontend/program.hpp"

namespace fuseflow::detail {

// Every field of every node reached from the outputs (expressions, ops, monoids), in walk
// order; a node reached again is written as a back reference to its first visit, so the
// signature follows the graph's sharing and stays linear in its size (a monoid's combine
// graph is numbered on its own: its signature is walked once per MonoidNode and thread,
// and kept, structure.cpp). Strings (names, raw
// CUDA text) go into `text`, lengths into `tokens`, so the pair decodes unambiguously:
// equal signatures mean equal programs up to node identity and parameter values. It is at
// least as strict as to_string(program) (two programs printed alike but shared differently
// get two plans, each correct); what is never in it: node addresses, bound values.
struct ProgramKey {
  std::uint64_t hash = 0;
  std::vector<std::uint64_t> tokens;
  std::string text;

  friend bool operator==(const ProgramKey& a, const ProgramKey& b) {
    return a.hash == b.hash && a.tokens == b.tokens && a.text == b.text;
  }
  std::size_t bytes() const { return sizeof *this + tokens.size() * sizeof(std::uint64_t) + text.size(); }
};

// The program cache holds each key once, shared with its PreparedProgram and the
// identity table (prepared.hpp); it hashes and compares keys by value and finds one by a
// plain ProgramKey (a walk's) without copying it. A key compared with itself (a program
// found by the identity of its outputs) is equal at once, its tokens not compared.
using SharedProgramKey = std::shared_ptr<const ProgramKey>;
struct ProgramKeyHash {
  using is_transparent = void;
  std::size_t operator()(const ProgramKey& k) const noexcept { return static_cast<std::size_t>(k.hash); }
  std::size_t operator()(const SharedProgramKey& k) const noexcept { return static_cast<std::size_t>(k->hash); }
};
struct ProgramKeyEqual {
  using is_transparent = void;
  bool operator()(const SharedProgramKey& a, const SharedProgramKey& b) const noexcept { return a == b || *a == *b; }
  bool operator()(const SharedProgramKey& a, const ProgramKey& b) const noexcept { return a.get() == &b || *a == b; }
  bool operator()(const ProgramKey& a, const SharedProgramKey& b) const noexcept { return (*this)(b, a); }
};

// Writes the signature of `program` into `key` (its buffers are reused: no allocation once
// they are large enough).
void structural_key(const Program& program, ProgramKey& key);

}  // namespace fuseflow::detail
