#pragma once
// Compiled expressions of the CPU reference evaluator.
//
// An expression is compiled once per evaluation into a short list of instructions over
// 64-bit slots, each slot holding one scalar's bytes in its low bytes (tuples take one slot
// per scalar field, depth first). Leaves are resolved at compile time, types are static,
// so running an element dispatches only on the instruction: no Values, no allocation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <vector>

#include "fuseflow/frontend/reference.hpp"
#include "scalar_kernels.hpp"

namespace fuseflow::cpu_reference {

using Slot = std::uint64_t;

// Where each scalar of a type lives in its C-struct layout, depth first.
struct Leaf {
  ScalarType type;
  std::size_t offset;
  std::size_t size;
};

std::vector<Leaf> leaves_of(const Type& t);
std::uint32_t width_of(const Type& t);  // slots a value of type t takes

// Slots [base, base + width).
struct Range {
  std::uint32_t base = 0;
  std::uint32_t width = 0;
};

struct Instr {
  enum class Op : std::uint8_t { Load, Index, Copy, Convert, Unary, Binary, Math, JumpIfFalse, JumpIfTrue, Jump, LoadAt, LoadShifted };
  Op op;
  std::uint32_t dst = 0;  // Jump*: the target instruction
  std::uint32_t a = 0;    // source slot; Jump*: the condition; Math: the first of its arguments
  std::uint32_t b = 0;
  std::uint32_t count = 0;  // Copy: slots
  const std::byte* data = nullptr;  // Load: the array's elements
  std::size_t stride = 0;           // Load: bytes per element
  const std::vector<Leaf>* leaves = nullptr;  // Load: the element's scalars
  detail::ConvertKernel convert = nullptr;
  detail::UnaryKernel unary = nullptr;
  detail::BinaryKernel binary = nullptr;
  detail::MathKernel math = nullptr;
  std::size_t length = 0;             // LoadAt, LoadShifted: the array's elements
  std::int64_t offset = 0;            // LoadShifted: k (element i reads i + k)
  const ExprNode* node = nullptr;     // LoadAt: the gather, for its error
};

// LoadAt's error: the gather's index `value` at element `position` is outside its table.
[[noreturn]] void throw_gather_out_of_range(const ExprNode& gather, std::size_t position, std::int64_t value,
                                            std::size_t length);

// What a leaf reads: an array (inputs, array results) or a value (parameters, scalar results).
struct LeafData {
  const HostArray* array = nullptr;
  const Value* value = nullptr;
};
// Resolves an Input, Param or Result leaf, or throws when the context cannot have it.
using LeafResolver = std::function<LeafData(const Expr& leaf)>;

class Compiler;

class Code {
 public:
  Code() = default;
  Code(Code&&) = default;  // Loads point into layouts_, which a move keeps in place
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;

  // Evaluates element i; `slots` starts as a copy of initial() and may be reused.
  void run(Slot* slots, std::size_t i) const {
    const Instr* code = instrs_.data();
    const std::size_t n = instrs_.size();
    for (std::size_t pc = 0; pc < n;) {
      const Instr& in = code[pc++];
      switch (in.op) {
        case Instr::Op::Load: {
          const std::byte* p = in.data + i * in.stride;
          Slot* out = slots + in.dst;
          for (const Leaf& l : *in.leaves) {
            Slot v = 0;
            std::memcpy(&v, p + l.offset, l.size);
            *out++ = v;
          }
          break;
        }
        case Instr::Op::Index: slots[in.dst] = static_cast<Slot>(i); break;
        case Instr::Op::Copy:
          for (std::uint32_t k = 0; k < in.count; ++k) slots[in.dst + k] = slots[in.a + k];
          break;
        case Instr::Op::Convert: slots[in.dst] = in.convert(slots[in.a]); break;
        case Instr::Op::Unary: slots[in.dst] = in.unary(slots[in.a]); break;
        case Instr::Op::Binary: slots[in.dst] = in.binary(slots[in.a], slots[in.b]); break;
        case Instr::Op::Math: slots[in.dst] = in.math(slots + in.a); break;
        case Instr::Op::JumpIfFalse:
          if ((slots[in.a] & 0xFF) == 0) pc = in.dst;
          break;
        case Instr::Op::JumpIfTrue:
          if ((slots[in.a] & 0xFF) != 0) pc = in.dst;
          break;
        case Instr::Op::Jump: pc = in.dst; break;
        case Instr::Op::LoadAt: {  // gather: slot a holds the index as i64
          const auto at = static_cast<std::int64_t>(slots[in.a]);
          if (at < 0 || static_cast<std::uint64_t>(at) >= in.length) throw_gather_out_of_range(*in.node, i, at, in.length);
          load_element(slots + in.dst, in, static_cast<std::size_t>(at));
          break;
        }
        case Instr::Op::LoadShifted: {  // shift: slots [dst, ...) hold the fill already
          const std::int64_t at = static_cast<std::int64_t>(i) + in.offset;
          if (at >= 0 && static_cast<std::uint64_t>(at) < in.length) load_element(slots + in.dst, in, static_cast<std::size_t>(at));
          break;
        }
      }
    }
  }

  static void load_element(Slot* out, const Instr& in, std::size_t at) {
    const std::byte* p = in.data + at * in.stride;
    for (const Leaf& l : *in.leaves) {
      Slot v = 0;
      std::memcpy(&v, p + l.offset, l.size);
      *out++ = v;
    }
  }

  const std::vector<Slot>& initial() const { return initial_; }
  const Type& type() const { return type_; }

  // Slots of `r` (holding a value of the result's type) from / to packed bytes.
  void load(Slot* slots, Range r, const std::byte* in) const {
    for (std::size_t j = 0; j < result_leaves_.size(); ++j) {
      Slot v = 0;
      std::memcpy(&v, in + result_leaves_[j].offset, result_leaves_[j].size);
      slots[r.base + j] = v;
    }
  }
  void store(const Slot* slots, Range r, std::byte* out) const {
    for (std::size_t j = 0; j < result_leaves_.size(); ++j)
      std::memcpy(out + result_leaves_[j].offset, &slots[r.base + j], result_leaves_[j].size);
  }
  Range result() const { return result_; }
  Range operand(int k) const { return operands_[k]; }

 private:
  friend class Compiler;
  std::vector<Instr> instrs_;
  std::vector<Slot> initial_;
  std::deque<std::vector<Leaf>> layouts_;  // what Loads point at (stable addresses)
  Type type_;
  std::vector<Leaf> result_leaves_;
  Range result_;
  Range operands_[2];
};

// Compiles an element-wise expression; `operand_type`, for a combine function, is the
// type of a and b, which then occupy the first slots.
Code compile(const Expr& e, LeafResolver resolve, const Type* operand_type = nullptr);

// Runs a compiled expression once, at element 0, with operands a and b when given.
Value run_once(const Code& code, const Value* a = nullptr, const Value* b = nullptr);

}  // namespace fuseflow::cpu_reference
