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
MathKernel math_kernel(MathFn fn, ScalarType operation);  // every argument converted to it

}  // namespace fuseflow::detail
