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

 private:
  std::vector<std::pair<Type, std::string>> tuples_;
  std::vector<std::string> defs_;
};

std::string scalar_cuda_name(ScalarType s);
// Short name for kernel names: f32, i32x4, f32_i64.
std::string short_type_name(const Type& t);

}  // namespace fuseflow::codegen
