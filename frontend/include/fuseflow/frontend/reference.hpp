#pragma once
// The CPU reference evaluator: runs any program on host data with sequential semantics
// (reduce and scan left to right, filter in order, stable sort). It defines what each op
// means and is the oracle every GPU test compares against.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "fuseflow/frontend/program.hpp"

namespace fuseflow {

// A host array of any fuseflow type, stored as the device would store it (packed
// elements, tuples as C structs).
class HostArray {
 public:
  HostArray() = default;
  HostArray(Type t, std::size_t n) : type_(std::move(t)), size_(n), bytes_(n * type_.size()) {}
  template <class T>
  static HostArray from(std::span<const T> values) {
    HostArray a(type_of<T>(), values.size());
    if (!values.empty()) std::memcpy(a.bytes_.data(), values.data(), values.size_bytes());
    return a;
  }
  template <class T>
  static HostArray from(const std::vector<T>& values) {
    return from(std::span<const T>(values));
  }
  static HostArray from_values(const Type& t, const std::vector<Value>& values);

  const Type& type() const { return type_; }
  std::size_t size() const { return size_; }
  const std::byte* data() const { return bytes_.data(); }
  std::byte* data() { return bytes_.data(); }
  Value at(std::size_t i) const { return Value::from_bytes(type_, bytes_.data() + i * type_.size()); }
  void set(std::size_t i, const Value& v);  // v must have this array's type
  void push_back(const Value& v);
  // Typed copy out; T must be the array's type.
  template <class T>
  std::vector<T> to_vector() const {
    if (type_of<T>() != type_) throw GraphError("HostArray::to_vector: array holds " + type_.name() + ", asked for " + type_of<T>().name());
    std::vector<T> out(size_);
    if (size_) std::memcpy(out.data(), bytes_.data(), size_ * sizeof(T));
    return out;
  }

 private:
  Type type_;
  std::size_t size_ = 0;
  std::vector<std::byte> bytes_;
};

// What a program's inputs and parameters are bound to on the host.
class HostBindings {
 public:
  HostBindings& bind(const Expr& input, HostArray data);
  HostBindings& bind(const Expr& param, const Value& v);
  const HostArray* array(const Expr& input) const;
  const Value* param(const Expr& param) const;

 private:
  std::map<const ExprNode*, HostArray> arrays_;
  std::map<const ExprNode*, Value> params_;
};

// One result of a program: a scalar (reduce) or an array.
struct HostResult {
  bool is_scalar = false;
  Value scalar;
  HostArray array;
};

// Runs the program; throws GraphError for an unbound input or parameter, lengths that
// disagree, offsets that are not valid, or a raw CUDA expression (which cannot run here).
std::vector<HostResult> evaluate(const Program& p, const HostBindings& b);

// Element-wise evaluation of a scalar expression whose leaves are constants (and, for a
// combine function, operands a and b): constant folding, monoid checks.
Value evaluate_constant(const Expr& e);
Value evaluate_combine(const Monoid& m, const Value& a, const Value& b);

// The bounds of the segments m offsets of integral type t (packed at `offsets`) make over
// n values. Throws GraphError, as evaluate does for `op`, when they are empty, negative,
// beyond n or decreasing: "segmented_reduce: offset 2 is 3, less than offset 1 (4);
// offsets must be non-decreasing". The runtime explains what its kernels flagged with it.
std::vector<std::size_t> segment_bounds(const std::string& op, ScalarType t, const std::byte* offsets,
                                        std::size_t m, std::size_t n);

// The scalar operations the evaluator applies, with C++ semantics on the host (unsigned
// arithmetic wraps; float ops round in the operand type).
Value apply_unary(UnaryOp op, const Value& a, const Type& result);
Value apply_binary(BinaryOp op, const Value& a, const Value& b, const Type& result);
Value apply_math(MathFn fn, const std::vector<Value>& args, const Type& result);

}  // namespace fuseflow
