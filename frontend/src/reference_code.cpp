// The compiler from expressions to slot instructions (reference_code.hpp).
#include "reference_code.hpp"

#include <map>

namespace fuseflow::cpu_reference {

namespace {

void collect_leaves(const Type& t, std::size_t base, std::vector<Leaf>& out) {
  if (t.is_scalar()) {
    out.push_back({t.scalar(), base, t.size()});
    return;
  }
  for (std::size_t f = 0; f < t.arity(); ++f) collect_leaves(t.fields()[f], base + t.field_offset(f), out);
}

[[noreturn]] void raw_cuda_error(const ExprNode& n) {
  throw GraphError("the CPU reference evaluator cannot run a raw CUDA expression: cuda_expr<" + n.type.name() +
                   ">(\"" + n.name + "\"); check such a program against values you work out by hand");
}

}  // namespace

std::vector<Leaf> leaves_of(const Type& t) {
  std::vector<Leaf> out;
  collect_leaves(t, 0, out);
  return out;
}

std::uint32_t width_of(const Type& t) { return static_cast<std::uint32_t>(leaves_of(t).size()); }

class Compiler {
 public:
  explicit Compiler(LeafResolver resolve) : resolve_(std::move(resolve)) {}

  // An element-wise expression; `operand_type`, for a combine function, is the type of a
  // and b, which then occupy the first slots.
  Code compile(const Expr& e, const Type* operand_type = nullptr) {
    if (operand_type) {
      code_.operands_[0] = alloc(width_of(*operand_type));
      code_.operands_[1] = alloc(width_of(*operand_type));
      has_operands_ = true;
    }
    scopes_.emplace_back();
    code_.result_ = node(e);
    code_.type_ = e.type();
    code_.result_leaves_ = leaves_of(e.type());
    return std::move(code_);
  }

 private:
  Range alloc(std::uint32_t width) {
    Range r{static_cast<std::uint32_t>(code_.initial_.size()), width};
    code_.initial_.resize(code_.initial_.size() + width, 0);
    return r;
  }

  void emit(Instr in) { code_.instrs_.push_back(in); }
  std::uint32_t here() const { return static_cast<std::uint32_t>(code_.instrs_.size()); }

  void copy(Range to, Range from) {
    Instr in{Instr::Op::Copy};
    in.dst = to.base;
    in.a = from.base;
    in.count = from.width;
    emit(in);
  }

  // A value fixed for the whole evaluation, placed in the initial slots.
  Range constant(const Value& v) {
    std::vector<Leaf> leaves = leaves_of(v.type());
    std::vector<std::byte> bytes(v.type().size());
    v.to_bytes(bytes.data());
    Range r = alloc(static_cast<std::uint32_t>(leaves.size()));
    for (std::size_t j = 0; j < leaves.size(); ++j)
      std::memcpy(&code_.initial_[r.base + j], bytes.data() + leaves[j].offset, leaves[j].size);
    return r;
  }

  Range convert(Range from, ScalarType from_type, ScalarType to_type) {
    if (from_type == to_type) return from;
    Range r = alloc(1);
    Instr in{Instr::Op::Convert};
    in.dst = r.base;
    in.a = from.base;
    in.convert = detail::convert_kernel(from_type, to_type);
    emit(in);
    return r;
  }

  // A scalar expression converted to t.
  Range scalar_in(const Expr& e, ScalarType t) { return convert(node(e), e.type().scalar(), t); }

  // An expression as type t (a select's branch: the same type, or scalars converted).
  Range value_as(const Expr& e, const Type& t) {
    if (e.type() == t) return node(e);
    return scalar_in(e, t.scalar());
  }

  // Each node is compiled once per scope. A select's branches and the right side of && and
  // || run conditionally, so what they compute is visible only inside them.
  Range node(const Expr& e) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(e.get());
      if (found != it->end()) return found->second;
    }
    Range r = build(e);
    scopes_.back()[e.get()] = r;
    return r;
  }

  template <class F>
  Range in_scope(F&& f) {
    scopes_.emplace_back();
    Range r = f();
    scopes_.pop_back();
    return r;
  }

  Range build(const Expr& e) {
    const ExprNode& n = e.node();
    switch (n.kind) {
      case ExprKind::Constant: return constant(n.constant);
      case ExprKind::Operand:
        if (!has_operands_) resolve_(e);  // the context's own message first
        if (!has_operands_) throw GraphError("operand " + fuseflow::to_string(e) + " outside a combine function");
        return code_.operands_[n.index == 0 ? 0 : 1];
      case ExprKind::Index: {
        resolve_(e);  // may the context use the index?
        Range r = alloc(1);
        Instr in{Instr::Op::Index};
        in.dst = r.base;
        emit(in);
        return r;
      }
      case ExprKind::Input:
      case ExprKind::Param:
      case ExprKind::Result:
      case ExprKind::Broadcast:  // the evaluator expands it to an array of the elements' length
      case ExprKind::Rows: {     // the evaluator's array of offsets
        LeafData d = resolve_(e);
        if (d.value) return constant(*d.value);
        const std::vector<Leaf>& layout = code_.layouts_.emplace_back(leaves_of(n.type));
        Range r = alloc(static_cast<std::uint32_t>(layout.size()));
        Instr in{Instr::Op::Load};
        in.dst = r.base;
        in.data = d.array->data();
        in.stride = d.array->type().size();
        in.leaves = &layout;
        emit(in);
        return r;
      }
      case ExprKind::Get: {
        Range t = node(n.args[0]);
        const Type& tt = n.args[0].type();
        std::uint32_t offset = 0;
        for (int f = 0; f < n.index; ++f) offset += width_of(tt.fields()[static_cast<std::size_t>(f)]);
        return {t.base + offset, width_of(n.type)};
      }
      case ExprKind::MakeTuple: {
        Range r = alloc(width_of(n.type));
        std::uint32_t offset = 0;
        for (const Expr& field : n.args) {
          Range f = node(field);
          copy({r.base + offset, f.width}, f);
          offset += f.width;
        }
        return r;
      }
      case ExprKind::Cast: return scalar_in(n.args[0], n.type.scalar());
      case ExprKind::Unary: {
        ScalarType t = detail::unary_operand_type(n.unary, n.args[0].type().scalar());
        Range a = scalar_in(n.args[0], t);
        Range r = alloc(1);
        Instr in{Instr::Op::Unary};
        in.dst = r.base;
        in.a = a.base;
        in.unary = detail::unary_kernel(n.unary, t);
        emit(in);
        return convert(r, t, n.type.scalar());
      }
      case ExprKind::Binary:
        if (n.binary == BinaryOp::And || n.binary == BinaryOp::Or) return short_circuit(n);
        return binary(n);
      case ExprKind::Select: return select(n);
      case ExprKind::Call: return call(n);
      case ExprKind::RawCuda: raw_cuda_error(n);
      case ExprKind::Gather: return gather(n);
      case ExprKind::Shift: return shift(n);
      case ExprKind::Fill: return node(n.args[0]);  // the value at every element
    }
    throw InternalError("the CPU reference has no rule for expression kind " +
                        std::to_string(static_cast<int>(n.kind)));
  }

  Range binary(const ExprNode& n) {
    detail::BinarySignature s =
        detail::binary_signature(n.binary, n.args[0].type().scalar(), n.args[1].type().scalar());
    Range a = scalar_in(n.args[0], s.left);
    Range b = scalar_in(n.args[1], s.right);
    Range r = alloc(1);
    Instr in{Instr::Op::Binary};
    in.dst = r.base;
    in.a = a.base;
    in.b = b.base;
    in.binary = detail::binary_kernel(n.binary, s.left);
    emit(in);
    return convert(r, s.result, n.type.scalar());
  }

  // As C++ and CUDA do, the right side runs only where the left does not decide:
  // `x != 0 && 10 / x > 1` never divides by zero.
  Range short_circuit(const ExprNode& n) {
    Range r = alloc(1);
    copy(r, scalar_in(n.args[0], ScalarType::Bool));
    std::uint32_t jump = here();
    Instr j{n.binary == BinaryOp::And ? Instr::Op::JumpIfFalse : Instr::Op::JumpIfTrue};
    j.a = r.base;
    emit(j);
    in_scope([&] {
      copy(r, scalar_in(n.args[1], ScalarType::Bool));
      return r;
    });
    code_.instrs_[jump].dst = here();
    return convert(r, ScalarType::Bool, n.type.scalar());
  }

  // Only the chosen branch runs, as with C++'s ?:.
  Range select(const ExprNode& n) {
    Range cond = scalar_in(n.args[0], ScalarType::Bool);
    Range r = alloc(width_of(n.type));
    std::uint32_t to_else = here();
    Instr j{Instr::Op::JumpIfFalse};
    j.a = cond.base;
    emit(j);
    in_scope([&] {
      copy(r, value_as(n.args[1], n.type));
      return r;
    });
    std::uint32_t to_end = here();
    emit(Instr{Instr::Op::Jump});
    code_.instrs_[to_else].dst = here();
    in_scope([&] {
      copy(r, value_as(n.args[2], n.type));
      return r;
    });
    code_.instrs_[to_end].dst = here();
    return r;
  }

  // Every argument converted to the node's type (see apply_math), side by side.
  Range call(const ExprNode& n) {
    if (n.args.size() != math_info(n.fn).arity)  // Expr::call checked it
      throw InternalError(std::string("a call of ") + math_name(n.fn) + " has " + std::to_string(n.args.size()) +
                          " arguments");
    ScalarType t = n.type.scalar();
    Range args = alloc(static_cast<std::uint32_t>(n.args.size()));
    for (std::uint32_t k = 0; k < n.args.size(); ++k) copy({args.base + k, 1}, scalar_in(n.args[k], t));
    Range r = alloc(1);
    Instr in{Instr::Op::Math};
    in.dst = r.base;
    in.a = args.base;
    in.math = detail::math_kernel(n.fn, t);
    emit(in);
    return r;
  }

  // A load of the whole array `leaf` at a computed position: a LoadAt or LoadShifted
  // into `r`, its data and layout filled in.
  Instr load_at(Instr::Op op, const Expr& leaf, Range r) {
    LeafData d = resolve_(leaf);
    if (!d.array) throw InternalError("the CPU reference: " + fuseflow::to_string(leaf) + " is not an array");
    Instr in{op};
    in.dst = r.base;
    in.data = d.array->data();
    in.stride = d.array->type().size();
    in.length = d.array->size();
    in.leaves = &code_.layouts_.emplace_back(leaves_of(leaf.type()));
    return in;
  }

  Range gather(const ExprNode& n) {
    Range index = scalar_in(n.args[1], ScalarType::I64);
    Range r = alloc(width_of(n.type));
    Instr in = load_at(Instr::Op::LoadAt, n.args[0], r);
    in.a = index.base;
    in.node = &n;
    emit(in);
    return r;
  }

  // The fill first, then the element over it where i + k is inside the array.
  Range shift(const ExprNode& n) {
    Range r = alloc(width_of(n.type));
    copy(r, node(n.args[1]));
    Instr in = load_at(Instr::Op::LoadShifted, n.args[0], r);
    in.offset = n.index;
    emit(in);
    return r;
  }

  LeafResolver resolve_;
  Code code_;
  bool has_operands_ = false;
  std::vector<std::map<const ExprNode*, Range>> scopes_;
};

void throw_gather_out_of_range(const ExprNode& gather, std::size_t position, std::int64_t value, std::size_t length) {
  const Expr& t = gather.args[0];
  const std::string table = t.kind() == ExprKind::Input ? "'" + t.node().name + "'" : fuseflow::to_string(t);
  throw GraphError("gather: the index at position " + std::to_string(position) + " is " + std::to_string(value) +
                   ", outside the table " + table + " of " + std::to_string(length) + " elements (" +
                   fuseflow::to_string(gather.args[1]) + ")");
}

Code compile(const Expr& e, LeafResolver resolve, const Type* operand_type) {
  return Compiler(std::move(resolve)).compile(e, operand_type);
}

// Runs a compiled expression once, at element 0, with operands a and b when given.
Value run_once(const Code& code, const Value* a, const Value* b) {
  std::vector<Slot> slots = code.initial();
  std::vector<std::byte> bytes(code.type().size());
  for (int k = 0; k < 2; ++k) {
    const Value* v = k == 0 ? a : b;
    if (!v) continue;
    v->to_bytes(bytes.data());
    code.load(slots.data(), code.operand(k), bytes.data());
  }
  code.run(slots.data(), 0);
  code.store(slots.data(), code.result(), bytes.data());
  return Value::from_bytes(code.type(), bytes.data());
}

}  // namespace fuseflow::cpu_reference
