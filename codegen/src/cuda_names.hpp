#pragma once
// How fuseflow values are spelled in CUDA: scalar type names, tuple structs (numbered in
// order of first use, so the text is deterministic), and literals.
#include <map>
#include <string>
#include <vector>

#include "fuseflow/frontend/type.hpp"
#include "fuseflow/frontend/value.hpp"

namespace fuseflow::codegen {

class CudaTypes {
 public:
  // The CUDA spelling of `t`; a tuple gets a struct, defined by definitions().
  std::string name(const Type& t);
  // struct definitions for every tuple named so far, dependencies first.
  std::string definitions() const;
  // A CUDA literal of value v (of v's type).
  std::string literal(const Value& v);
  // The negation of integer expression `a` of scalar type s (wrapping: the bits of 0 - a),
  // through a helper that definitions() defines: ptxas 13.0 on sm_90 can fold a plain
  // negation of a sum into a three-way min (VIMNMX3) and drop it (README, Known problems).
  std::string negate(ScalarType s, const std::string& a);

 private:
  std::vector<std::pair<Type, std::string>> tuples_;
  std::vector<std::string> defs_;
  std::vector<ScalarType> negations_;  // the helpers negate() has defined
};

std::string scalar_cuda_name(ScalarType s);
// Short name for kernel names: f32, i32x4, f32_i64.
std::string short_type_name(const Type& t);

}  // namespace fuseflow::codegen
