#pragma once
// The scalar kernels scalar_ops.cpp defines and the reference evaluator (reference.cpp)
// runs: each operates on values held in 64-bit slots, for one operation type.
#include <cstddef>
#include <cstdint>

#include "fuseflow/frontend/expr.hpp"

namespace fuseflow::detail {

using ConvertKernel = std::uint64_t (*)(std::uint64_t);
using UnaryKernel = std::uint64_t (*)(std::uint64_t);
using BinaryKernel = std::uint64_t (*)(std::uint64_t, std::uint64_t);
using MathKernel = std::uint64_t (*)(const std::uint64_t*);
struct BinarySignature {
  ScalarType left, right, result;  // operands are converted to left and right first
};
ConvertKernel convert_kernel(ScalarType from, ScalarType to);
BinarySignature binary_signature(BinaryOp op, ScalarType a, ScalarType b);
BinaryKernel binary_kernel(BinaryOp op, ScalarType operation);
ScalarType unary_operand_type(UnaryOp op, ScalarType a);  // also the result type
UnaryKernel unary_kernel(UnaryOp op, ScalarType operation);
std::size_t math_arity(MathFn fn);
MathKernel math_kernel(MathFn fn, ScalarType operation);  // every argument converted to it

// min and max on floats propagate NaN: a NaN operand gives NaN (std::fmin and CUDA's fminf
// return the other operand instead). With NaN absorbing, the min and max monoids keep their
// laws (+-inf stay identities, NaN or not), so the order a reduction combines in cannot
// change its answer. The generated CUDA spells the same rule (codegen/src/expr_emitter.cpp).
template <class F>
F min_propagating_nan(F a, F b) {
  return (b < a || b != b) ? b : a;
}
template <class F>
F max_propagating_nan(F a, F b) {
  return (a < b || b != b) ? b : a;
}

}  // namespace fuseflow::detail
