// The CPU reference evaluator. It defines what every op means, sequentially:
//
//   reduce            acc = identity; acc = combine(acc, x) for each x, left to right
//   scan              inclusive out[i] = x0 . x1 ... xi; exclusive out[0] = identity,
//                     out[i] = x0 ... x(i-1)
//   filter            the elements whose predicate is true, in order
//   segmented_reduce  one reduction per segment [offsets[s], offsets[s+1]); an empty
//                     segment gives the identity
//   segmented_scan    a scan restarting at each segment; elements before offsets[0] or at
//                     or after offsets.back() belong to no segment and are the identity
//   reduce_by_key     runs of equal consecutive keys (C++ ==): output 0 the key of each
//                     run (its first element), output 1 the run's reduction
//   scan_by_key       a scan restarting at each run of equal keys
//   histogram         counts of the bin values in [0, bins), others dropped; counts wrap
//                     in the count type, as the device's atomics do
//   counting_sort     stable by key in [0, bins); a key outside (negative, or >= bins)
//                     sorts after every key inside, in input order (one more bin, as if
//                     it were `bins`), so the output is always a permutation of the input;
//                     output 1 carries the values along when the op has them
//
// Element-wise expressions are evaluated in parallel (they have no order); every
// combine runs sequentially in element order, so results do not depend on the thread count.
// Expressions are compiled to instructions over 64-bit slots (see Code); built-in monoids
// over scalars take a typed loop.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <thread>

#include "fuseflow/frontend/reference.hpp"
#include "scalar_kernels.hpp"

namespace fuseflow {


// ---- HostArray, HostBindings ----------------------------------------------------------

namespace {
void require_element_type(const Type& array_type, const Value& v, const std::string& what) {
  if (v.type() != array_type)
    throw GraphError(what + ": the array holds " + array_type.name() + ", the value " + v.to_string() +
                     " is " + v.type().name());
}
}  // namespace

HostArray HostArray::from_values(const Type& t, const std::vector<Value>& values) {
  HostArray a(t, values.size());
  for (std::size_t i = 0; i < values.size(); ++i) a.set(i, values[i]);
  return a;
}

void HostArray::set(std::size_t i, const Value& v) {
  if (i >= size_)
    throw GraphError("HostArray::set: index " + std::to_string(i) + " is out of range for an array of " +
                     std::to_string(size_) + " elements");
  require_element_type(type_, v, "HostArray::set");
  v.to_bytes(bytes_.data() + i * type_.size());
}

void HostArray::push_back(const Value& v) {
  require_element_type(type_, v, "HostArray::push_back");
  bytes_.resize(bytes_.size() + type_.size());
  ++size_;
  v.to_bytes(bytes_.data() + (size_ - 1) * type_.size());
}

HostBindings& HostBindings::bind(const Expr& input, HostArray data) {
  if (!input.valid() || input.kind() != ExprKind::Input)
    throw GraphError("bind: an array binds to an ff::input, not to " +
                     (input.valid() ? fuseflow::to_string(input) : std::string("an empty ff::Expr")));
  const ExprNode& n = input.node();
  if (data.type() != n.type)
    throw GraphError("bind: input '" + n.name + "' holds " + n.type.name() + " but the array holds " +
                     data.type().name());
  if (n.length >= 0 && data.size() != static_cast<std::size_t>(n.length))
    throw GraphError("bind: input '" + n.name + "' was declared with " + std::to_string(n.length) +
                     " elements, the array has " + std::to_string(data.size()));
  arrays_.insert_or_assign(input.get(), std::move(data));
  return *this;
}

HostBindings& HostBindings::bind(const Expr& param, const Value& v) {
  if (!param.valid() || param.kind() != ExprKind::Param)
    throw GraphError("bind: a value binds to an ff::param, not to " +
                     (param.valid() ? fuseflow::to_string(param) : std::string("an empty ff::Expr")));
  const ExprNode& n = param.node();
  if (v.type() != n.type)
    throw GraphError("bind: parameter '" + n.name + "' is " + n.type.name() + " but the value " + v.to_string() +
                     " is " + v.type().name() + " (convert it first)");
  params_.insert_or_assign(param.get(), v);
  return *this;
}

const HostArray* HostBindings::array(const Expr& input) const {
  auto it = arrays_.find(input.get());
  return it == arrays_.end() ? nullptr : &it->second;
}

const Value* HostBindings::param(const Expr& param) const {
  auto it = params_.find(param.get());
  return it == params_.end() ? nullptr : &it->second;
}

namespace {

// ---- compiled expressions -------------------------------------------------------------
//
// An expression is compiled once per evaluation into a short list of instructions over
// 64-bit slots, each slot holding one scalar's bytes in its low bytes (tuples take one slot
// per scalar field, depth first). Leaves are resolved at compile time, types are static,
// so running an element dispatches only on the instruction: no Values, no allocation.

using Slot = std::uint64_t;

// Where each scalar of a type lives in its C-struct layout, depth first.
struct Leaf {
  ScalarType type;
  std::size_t offset;
  std::size_t size;
};

void collect_leaves(const Type& t, std::size_t base, std::vector<Leaf>& out) {
  if (t.is_scalar()) {
    out.push_back({t.scalar(), base, t.size()});
    return;
  }
  for (std::size_t f = 0; f < t.arity(); ++f) collect_leaves(t.fields()[f], base + t.field_offset(f), out);
}

std::vector<Leaf> leaves_of(const Type& t) {
  std::vector<Leaf> out;
  collect_leaves(t, 0, out);
  return out;
}

std::uint32_t width_of(const Type& t) { return static_cast<std::uint32_t>(leaves_of(t).size()); }

// Slots [base, base + width).
struct Range {
  std::uint32_t base = 0;
  std::uint32_t width = 0;
};

struct Instr {
  enum class Op : std::uint8_t { Load, Index, Copy, Convert, Unary, Binary, Math, JumpIfFalse, JumpIfTrue, Jump };
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
};

// What a leaf reads: an array (inputs, array results) or a value (parameters, scalar results).
struct LeafData {
  const HostArray* array = nullptr;
  const Value* value = nullptr;
};
// Resolves an Input, Param or Result leaf, or throws when the context cannot have it.
using LeafResolver = std::function<LeafData(const Expr& leaf)>;

[[noreturn]] void raw_cuda_error(const ExprNode& n) {
  throw GraphError("the CPU reference evaluator cannot run a raw CUDA expression: cuda_expr<" + n.type.name() +
                   ">(\"" + n.name + "\"); check such a program against values you work out by hand");
}

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
      }
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
      case ExprKind::Result: {
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
    }
    throw GraphError("unknown expression kind");
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
    if (n.args.size() != detail::math_arity(n.fn))
      throw GraphError(std::string(math_name(n.fn)) + " takes " + std::to_string(detail::math_arity(n.fn)) +
                       " argument(s), got " + std::to_string(n.args.size()));
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

  LeafResolver resolve_;
  Code code_;
  bool has_operands_ = false;
  std::vector<std::map<const ExprNode*, Range>> scopes_;
};

// ---- parallel evaluation --------------------------------------------------------------

// [0, n) split into contiguous chunks, one per worker thread (small ranges stay whole).
struct Split {
  std::size_t n = 0;
  std::size_t chunks = 1;
  std::size_t begin(std::size_t c) const { return n * c / chunks; }
  std::size_t end(std::size_t c) const { return n * (c + 1) / chunks; }
};

Split split(std::size_t n) {
  constexpr std::size_t min_chunk = std::size_t{1} << 14;
  std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  return Split{n, std::clamp<std::size_t>((n + min_chunk - 1) / min_chunk, 1, workers)};
}

// Runs body(chunk) for every chunk of `s` on its own thread. Each chunk stops at its first
// failing element, and the exception of the lowest failing chunk is rethrown: the error
// is always the one of the lowest failing element, whatever the number of threads.
void parallel_for(const Split& s, const std::function<void(std::size_t chunk)>& body) {
  if (s.chunks == 1) {
    body(0);
    return;
  }
  std::vector<std::exception_ptr> errors(s.chunks);
  auto guarded = [&](std::size_t c) {
    try {
      body(c);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(s.chunks - 1);
  for (std::size_t c = 1; c < s.chunks; ++c) threads.emplace_back(guarded, c);
  guarded(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Elements [base, base + count) of a compiled expression, packed into out.
void evaluate_into(const Code& code, std::size_t base, std::size_t count, std::byte* out) {
  std::size_t size = code.type().size();
  Split s = split(count);
  parallel_for(s, [&](std::size_t c) {
    std::vector<Slot> slots = code.initial();
    for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
      code.run(slots.data(), base + i);
      code.store(slots.data(), code.result(), out + i * size);
    }
  });
}

// ---- combining ------------------------------------------------------------------------

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// A built-in monoid's combine on C++ type T, with the result its DSL combine expression
// gives: cast<T>(a op b) after promotion, so small integers wrap, signed ones included.
template <class T, MonoidKind K>
T builtin_combine(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return K == MonoidKind::LogicalAnd ? (a && b) : (a || b);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (K == MonoidKind::Plus) return a + b;
    if constexpr (K == MonoidKind::Times) return a * b;
    if constexpr (K == MonoidKind::Min) return detail::min_propagating_nan(a, b);
    if constexpr (K == MonoidKind::Max) return detail::max_propagating_nan(a, b);
  } else {
    using W = std::conditional_t<(sizeof(T) < 8), std::uint32_t, std::uint64_t>;  // no signed overflow
    if constexpr (K == MonoidKind::Plus) return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    if constexpr (K == MonoidKind::Times) return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    if constexpr (K == MonoidKind::Min) return b < a ? b : a;
    if constexpr (K == MonoidKind::Max) return a < b ? b : a;
    if constexpr (K == MonoidKind::BitAnd) return static_cast<T>(a & b);
    if constexpr (K == MonoidKind::BitOr) return static_cast<T>(a | b);
    if constexpr (K == MonoidKind::BitXor) return static_cast<T>(a ^ b);
  }
}

// acc = acc . xs[0] ... xs[count-1]; with `out`, also writes each prefix (inclusive: after
// the element, exclusive: before it).
using RunFn = void (*)(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive);

template <class T, MonoidKind K>
void builtin_run(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive) {
  T a = load<T>(acc);
  if (!out) {
    for (std::size_t j = 0; j < count; ++j) a = builtin_combine<T, K>(a, load<T>(xs + j * sizeof(T)));
  } else {
    for (std::size_t j = 0; j < count; ++j) {
      T next = builtin_combine<T, K>(a, load<T>(xs + j * sizeof(T)));
      store(out + j * sizeof(T), inclusive ? next : a);
      a = next;
    }
  }
  store(acc, a);
}

template <class T>
RunFn builtin_run_for(MonoidKind k) {
  if constexpr (std::is_same_v<T, bool>) {
    if (k == MonoidKind::LogicalAnd) return builtin_run<T, MonoidKind::LogicalAnd>;
    if (k == MonoidKind::LogicalOr) return builtin_run<T, MonoidKind::LogicalOr>;
    return nullptr;
  } else {
    switch (k) {
      case MonoidKind::Plus: return builtin_run<T, MonoidKind::Plus>;
      case MonoidKind::Times: return builtin_run<T, MonoidKind::Times>;
      case MonoidKind::Min: return builtin_run<T, MonoidKind::Min>;
      case MonoidKind::Max: return builtin_run<T, MonoidKind::Max>;
      default: break;
    }
    if constexpr (std::is_integral_v<T>) {
      switch (k) {
        case MonoidKind::BitAnd: return builtin_run<T, MonoidKind::BitAnd>;
        case MonoidKind::BitOr: return builtin_run<T, MonoidKind::BitOr>;
        case MonoidKind::BitXor: return builtin_run<T, MonoidKind::BitXor>;
        default: break;
      }
    }
    return nullptr;
  }
}

// The typed loop for a built-in monoid over a scalar, or nullptr (custom monoids, tuples).
RunFn builtin_run_for(const Monoid& m) {
  if (!m.is_builtin() || !m.type().is_scalar()) return nullptr;
  MonoidKind k = m.kind();
  switch (m.type().scalar()) {
    case ScalarType::Bool: return builtin_run_for<bool>(k);
    case ScalarType::I8: return builtin_run_for<std::int8_t>(k);
    case ScalarType::I16: return builtin_run_for<std::int16_t>(k);
    case ScalarType::I32: return builtin_run_for<std::int32_t>(k);
    case ScalarType::I64: return builtin_run_for<std::int64_t>(k);
    case ScalarType::U8: return builtin_run_for<std::uint8_t>(k);
    case ScalarType::U16: return builtin_run_for<std::uint16_t>(k);
    case ScalarType::U32: return builtin_run_for<std::uint32_t>(k);
    case ScalarType::U64: return builtin_run_for<std::uint64_t>(k);
    case ScalarType::F32: return builtin_run_for<float>(k);
    case ScalarType::F64: return builtin_run_for<double>(k);
  }
  return nullptr;
}

[[noreturn]] void not_a_combine_leaf(const Expr& leaf) {
  throw GraphError("a combine function may use only its operands a, b and constants, got " +
                   fuseflow::to_string(leaf));
}

Code compile_combine(const Monoid& m) {
  if (!m.is_typed())
    throw GraphError("monoid " + m.name() + " is generic; an op instantiates it for an element type");
  Compiler c([](const Expr& leaf) -> LeafData { not_a_combine_leaf(leaf); });
  return c.compile(m.combine(), &m.type());
}

// A typed monoid applied to packed elements, left to right.
class Combiner {
 public:
  explicit Combiner(const Monoid& m)
      : type_(m.type()), identity_(type_.size()), combine_(compile_combine(m)), builtin_(builtin_run_for(m)) {
    m.identity().to_bytes(identity_.data());
  }

  std::size_t size() const { return type_.size(); }
  const Type& type() const { return type_; }
  std::vector<std::byte> identity() const { return identity_; }

  // acc = acc . xs[0] . ... . xs[count-1]
  void fold(std::byte* acc, const std::byte* xs, std::size_t count) const { run(acc, xs, count, nullptr, true); }
  // As fold, writing each prefix to out: inclusive (acc after the element) or exclusive (before).
  void scan(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, ScanKind kind) const {
    run(acc, xs, count, out, kind == ScanKind::Inclusive);
  }

 private:
  void run(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive) const {
    if (builtin_) {
      builtin_(acc, xs, count, out, inclusive);
      return;
    }
    // Reused across calls: segmented ops call this once per (often tiny) segment.
    thread_local std::vector<Slot> slots;
    slots = combine_.initial();
    Range a = combine_.operand(0), b = combine_.operand(1), r = combine_.result();
    std::size_t size = type_.size();
    combine_.load(slots.data(), a, acc);
    for (std::size_t j = 0; j < count; ++j) {
      combine_.load(slots.data(), b, xs + j * size);
      if (out && !inclusive) combine_.store(slots.data(), a, out + j * size);
      combine_.run(slots.data(), 0);
      if (r.base != a.base) std::copy_n(slots.begin() + r.base, r.width, slots.begin() + a.base);
      if (out && inclusive) combine_.store(slots.data(), a, out + j * size);
    }
    combine_.store(slots.data(), a, acc);
  }

  Type type_;
  std::vector<std::byte> identity_;
  Code combine_;
  RunFn builtin_;
};

// ---- keys, bins and offsets -----------------------------------------------------------

// An integral scalar stored at p, as a signed value when it fits (unsigned values above
// INT64_MAX read as INT64_MAX: beyond every bin and offset anyway).
std::int64_t read_integer(ScalarType t, const std::byte* p) {
  auto as = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t) {
    case ScalarType::I8: return as(std::int8_t{});
    case ScalarType::I16: return as(std::int16_t{});
    case ScalarType::I32: return as(std::int32_t{});
    case ScalarType::I64: return as(std::int64_t{});
    case ScalarType::U8: return as(std::uint8_t{});
    case ScalarType::U16: return as(std::uint16_t{});
    case ScalarType::U32: return as(std::uint32_t{});
    case ScalarType::U64: {
      std::uint64_t u = as(std::uint64_t{});
      return u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
    }
    default: throw GraphError("keys, bins and offsets must be integers, got " + scalar_name(t));
  }
}

// Key equality as the device tests it, with C++ ==: floats by value (NaN differs from
// itself, -0 equals +0), tuples field by field.
bool keys_equal(const Value& a, const Value& b) {
  if (a.is_tuple()) {
    for (std::size_t f = 0; f < a.fields().size(); ++f)
      if (!keys_equal(a[f], b[f])) return false;
    return true;
  }
  if (a.type().is_floating()) return a.as_double() == b.as_double();
  return a.as_uint() == b.as_uint();
}

// Start of each run of equal consecutive keys, then n.
std::vector<std::size_t> key_runs(const Type& t, const std::byte* keys, std::size_t n) {
  std::vector<std::size_t> starts;
  std::size_t size = t.size();
  bool bytewise = t.is_integral() && !t.is_bool();
  Value previous;
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* k = keys + i * size;
    if (bytewise) {
      if (i == 0 || std::memcmp(k - size, k, size) != 0) starts.push_back(i);
      continue;
    }
    Value key = Value::from_bytes(t, k);
    if (i == 0 || !keys_equal(previous, key)) starts.push_back(i);
    previous = std::move(key);
  }
  starts.push_back(n);
  return starts;
}

// ---- the evaluator --------------------------------------------------------------------

class Evaluator {
 public:
  Evaluator(const Program& p, const HostBindings& b) : program_(p), bindings_(b) {}

  std::vector<HostResult> run() {
    for (const Expr& in : program_.inputs())
      if (!bindings_.array(in)) throw GraphError("input '" + in.node().name + "' is not bound");
    for (const Expr& prm : program_.params())
      if (!bindings_.param(prm)) throw GraphError("parameter '" + prm.node().name + "' is not bound");
    for (const auto& op : program_.ops()) run_op(*op);
    std::vector<HostResult> results;
    for (std::size_t k = 0; k < program_.outputs().size(); ++k) results.push_back(output(k));
    return results;
  }

 private:
  struct OpResults {
    std::vector<HostArray> arrays;
    Value scalar;
  };

  HostResult output(std::size_t k) const {
    const Expr& o = program_.outputs()[k];
    HostResult r;
    if (o.kind() == ExprKind::Result) {
      const OpResults& done = results_of(*o.node().op);
      if (o.node().op->scalar_output) {
        r.is_scalar = true;
        r.scalar = done.scalar;
      } else {
        r.array = done.arrays[static_cast<std::size_t>(o.node().index)];
      }
      return r;
    }
    std::size_t n = length({&o}, "output " + std::to_string(k));
    r.array = HostArray(o.type(), n);
    evaluate_into(compile(o), 0, n, r.array.data());
    return r;
  }

  const OpResults& results_of(const OpNode& op) const {
    auto it = done_.find(&op);
    if (it == done_.end()) throw GraphError(std::string("internal: ") + op_name(op.kind) + " used before it ran");
    return it->second;
  }

  // What a leaf of an element-wise expression reads: bound data or an op's result.
  LeafData leaf_data(const Expr& leaf) const {
    const ExprNode& n = leaf.node();
    LeafData d;
    switch (n.kind) {
      case ExprKind::Input:
        d.array = bindings_.array(leaf);
        if (!d.array) throw GraphError("input '" + n.name + "' is not bound");
        break;
      case ExprKind::Param:
        d.value = bindings_.param(leaf);
        if (!d.value) throw GraphError("parameter '" + n.name + "' is not bound");
        break;
      case ExprKind::Result: {
        const OpResults& done = results_of(*n.op);
        if (n.op->scalar_output) d.value = &done.scalar;
        else d.array = &done.arrays[static_cast<std::size_t>(n.index)];
        break;
      }
      case ExprKind::Index: break;
      default:
        throw GraphError("an element-wise expression uses operand " + fuseflow::to_string(leaf) +
                         " of a combine function");
    }
    return d;
  }

  Code compile(const Expr& e) const {
    return Compiler([this](const Expr& leaf) { return leaf_data(leaf); }).compile(e);
  }

  // The array a lone array leaf reads, or nullptr for any other expression.
  const HostArray* lone_leaf(const Expr& e) const {
    if (e.kind() == ExprKind::Input || (e.kind() == ExprKind::Result && !e.node().op->scalar_output))
      return leaf_data(e).array;
    return nullptr;
  }

  // The packed elements of an element-wise expression: the data itself when the expression
  // is a lone array leaf, else evaluated into a new array.
  struct Elements {
    const HostArray* leaf = nullptr;
    HostArray owned;
    const std::byte* data() const { return leaf ? leaf->data() : owned.data(); }
  };

  Elements elements(const Expr& e, std::size_t count) const {
    Elements out;
    out.leaf = lone_leaf(e);
    if (out.leaf) return out;
    out.owned = HostArray(e.type(), count);
    evaluate_into(compile(e), 0, count, out.owned.data());
    return out;
  }

  // Hands the elements of `e` to consume(elements, count) in order, a block at a time, so
  // a reduction over billions of elements needs no array of them.
  template <class F>
  void stream(const Expr& e, std::size_t count, F&& consume) const {
    if (const HostArray* leaf = lone_leaf(e)) {
      consume(leaf->data(), count);
      return;
    }
    Code code = compile(e);
    constexpr std::size_t block = std::size_t{1} << 20;
    HostArray buffer(e.type(), std::min(count, block));
    for (std::size_t base = 0; base < count; base += block) {
      std::size_t k = std::min(block, count - base);
      evaluate_into(code, base, k, buffer.data());
      consume(buffer.data(), k);
    }
  }

  std::string leaf_name(const Expr& leaf) const {
    if (leaf.kind() == ExprKind::Input) return "input '" + leaf.node().name + "'";
    return std::string("the result of ") + op_name(leaf.node().op->kind);
  }

  std::size_t leaf_length(const Expr& leaf) const {
    if (leaf.kind() == ExprKind::Input) {
      const HostArray* a = bindings_.array(leaf);
      if (!a) throw GraphError("input '" + leaf.node().name + "' is not bound");
      return a->size();
    }
    return results_of(*leaf.node().op).arrays[static_cast<std::size_t>(leaf.node().index)].size();
  }

  // The common element count of the array leaves of `exprs` (which one op reads together).
  std::size_t length(std::initializer_list<const Expr*> exprs, const std::string& op) const {
    bool found = false;
    std::size_t n = 0;
    std::string first;
    for (const Expr* e : exprs) {
      for (const Expr& leaf : array_leaves(*e)) {
        std::size_t m = leaf_length(leaf);
        if (!found) {
          found = true;
          n = m;
          first = leaf_name(leaf);
        } else if (m != n) {
          throw GraphError(op + ": map over arrays of different lengths: " + first + " has " + std::to_string(n) +
                           " elements, " + leaf_name(leaf) + " has " + std::to_string(m));
        }
      }
    }
    if (!found) throw GraphError(op + ": " + fuseflow::to_string(**exprs.begin()) + " is not an array");
    return n;
  }

  void run_op(const OpNode& op) {
    OpResults out;
    switch (op.kind) {
      case OpKind::Reduce: out.scalar = reduce(op); break;
      case OpKind::Scan: out.arrays.push_back(scan(op)); break;
      case OpKind::Filter: out.arrays.push_back(filter(op)); break;
      case OpKind::SegmentedReduce:
      case OpKind::SegmentedScan: out.arrays.push_back(segmented(op)); break;
      case OpKind::ReduceByKey:
      case OpKind::ScanByKey: out.arrays = by_key(op); break;
      case OpKind::Histogram: out.arrays.push_back(histogram(op)); break;
      case OpKind::CountingSort: out.arrays = counting_sort(op); break;
    }
    done_.emplace(&op, std::move(out));
  }

  Value reduce(const OpNode& op) const {
    std::size_t n = length({&op.values}, "reduce");
    Combiner c(op.monoid);
    std::vector<std::byte> acc = c.identity();
    stream(op.values, n,
           [&](const std::byte* xs, std::size_t k) { c.fold(acc.data(), xs, k); });
    return Value::from_bytes(c.type(), acc.data());
  }

  HostArray scan(const OpNode& op) const {
    std::size_t n = length({&op.values}, "scan");
    Combiner c(op.monoid);
    HostArray out(c.type(), n);
    std::vector<std::byte> acc = c.identity();
    std::size_t at = 0;
    stream(op.values, n, [&](const std::byte* xs, std::size_t k) {
      c.scan(acc.data(), xs, k, out.data() + at * c.size(), op.scan_kind);
      at += k;
    });
    return out;
  }

  // Each chunk keeps its survivors in order; the chunks are then joined in order.
  HostArray filter(const OpNode& op) const {
    std::size_t n = length({&op.values, &op.predicate}, "filter");
    Code values = compile(op.values), predicate = compile(op.predicate);
    const Type& t = op.values.type();
    std::size_t size = t.size();
    Split s = split(n);
    std::vector<std::vector<std::byte>> kept(s.chunks);
    parallel_for(s, [&](std::size_t c) {
      std::vector<Slot> pslots = predicate.initial(), vslots = values.initial();
      for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
        predicate.run(pslots.data(), i);
        if ((pslots[predicate.result().base] & 0xFF) == 0) continue;
        values.run(vslots.data(), i);
        kept[c].resize(kept[c].size() + size);
        values.store(vslots.data(), values.result(), kept[c].data() + kept[c].size() - size);
      }
    });
    std::size_t total = 0;
    for (const auto& k : kept) total += k.size() / size;
    HostArray out(t, total);
    std::byte* at = out.data();
    for (const auto& k : kept) {
      if (!k.empty()) std::memcpy(at, k.data(), k.size());
      at += k.size();
    }
    return out;
  }

  // Segment bounds from the offsets: at least one offset, each in [0, n], non-decreasing.
  std::vector<std::size_t> segment_bounds(const OpNode& op, std::size_t n) const {
    const std::string name = op_name(op.kind);
    std::size_t m = length({&op.offsets}, name);
    if (m == 0) throw GraphError(name + ": the offsets are empty; s segments need s + 1 offsets");
    Elements off = elements(op.offsets, m);
    return fuseflow::segment_bounds(name, op.offsets.type().scalar(), off.data(), m, n);
  }

  // Reduces (or scans) each of the ranges [bounds[s], bounds[s+1]) on its own, in parallel.
  // A reduction writes one element per range into out; a scan writes the range's elements.
  static void per_range(const Combiner& c, const std::vector<std::size_t>& bounds, const std::byte* xs,
                        std::byte* out, bool is_scan, ScanKind kind) {
    std::size_t size = c.size();
    std::size_t ranges = bounds.size() - 1;
    Split s = split(ranges);
    parallel_for(s, [&](std::size_t chunk) {
      for (std::size_t r = s.begin(chunk); r < s.end(chunk); ++r) {
        std::vector<std::byte> acc = c.identity();
        std::size_t begin = bounds[r], count = bounds[r + 1] - begin;
        if (is_scan) {
          c.scan(acc.data(), xs + begin * size, count, out + begin * size, kind);
        } else {
          c.fold(acc.data(), xs + begin * size, count);
          std::memcpy(out + r * size, acc.data(), size);
        }
      }
    });
  }

  HostArray segmented(const OpNode& op) const {
    std::size_t n = length({&op.values}, op_name(op.kind));
    std::vector<std::size_t> bounds = segment_bounds(op, n);
    Elements xs = elements(op.values, n);
    Combiner c(op.monoid);
    if (op.kind == OpKind::SegmentedReduce) {
      HostArray out(c.type(), bounds.size() - 1);
      per_range(c, bounds, xs.data(), out.data(), false, op.scan_kind);
      return out;
    }
    // Elements outside [offsets[0], offsets.back()) belong to no segment: the identity.
    HostArray out(c.type(), n);
    std::vector<std::byte> id = c.identity();
    for (std::size_t i = 0; i < n; ++i)
      if (i < bounds.front() || i >= bounds.back()) std::memcpy(out.data() + i * c.size(), id.data(), c.size());
    per_range(c, bounds, xs.data(), out.data(), true, op.scan_kind);
    return out;
  }

  std::vector<HostArray> by_key(const OpNode& op) const {
    const std::string name = op_name(op.kind);
    std::size_t n = length({&op.keys, &op.values}, name);
    Elements keys = elements(op.keys, n);
    Elements xs = elements(op.values, n);
    std::vector<std::size_t> runs = key_runs(op.keys.type(), keys.data(), n);
    Combiner c(op.monoid);
    if (op.kind == OpKind::ScanByKey) {
      HostArray out(c.type(), n);
      per_range(c, runs, xs.data(), out.data(), true, op.scan_kind);
      return {std::move(out)};
    }
    std::size_t count = runs.size() - 1;
    std::size_t key_size = op.keys.type().size();
    HostArray unique(op.keys.type(), count), reduced(c.type(), count);
    for (std::size_t r = 0; r < count; ++r)
      std::memcpy(unique.data() + r * key_size, keys.data() + runs[r] * key_size, key_size);
    per_range(c, runs, xs.data(), reduced.data(), false, op.scan_kind);
    std::vector<HostArray> out;
    out.push_back(std::move(unique));
    out.push_back(std::move(reduced));
    return out;
  }

  HostArray histogram(const OpNode& op) const {
    std::size_t n = length({&op.keys}, "histogram");
    Elements bins = elements(op.keys, n);
    ScalarType t = op.keys.type().scalar();
    auto nbins = static_cast<std::size_t>(op.bins);
    Split s = split(n);
    std::vector<std::vector<std::uint64_t>> partial(s.chunks, std::vector<std::uint64_t>(nbins, 0));
    parallel_for(s, [&](std::size_t c) {
      for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
        std::int64_t b = read_integer(t, bins.data() + i * scalar_size(t));
        if (b >= 0 && b < op.bins) ++partial[c][static_cast<std::size_t>(b)];
      }
    });
    const Type& count_type = op.output_types[0];
    HostArray out(count_type, nbins);
    for (std::size_t b = 0; b < nbins; ++b) {
      std::uint64_t total = 0;
      for (const auto& p : partial) total += p[b];
      Value::from_uint(count_type.scalar(), total).to_bytes(out.data() + b * count_type.size());
    }
    return out;
  }

  std::vector<HostArray> counting_sort(const OpNode& op) const {
    bool with_values = op.values.valid();
    std::size_t n = with_values ? length({&op.keys, &op.values}, "counting_sort") : length({&op.keys}, "counting_sort");
    Elements keys = elements(op.keys, n);
    ScalarType t = op.keys.type().scalar();
    std::size_t key_size = scalar_size(t);
    // Bins 0 .. bins - 1 for the keys in range, bin `bins` for every other key.
    const auto nbins = static_cast<std::size_t>(op.bins);
    std::vector<std::size_t> bin(n);
    std::vector<std::size_t> start(nbins + 2, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t k = read_integer(t, keys.data() + i * key_size);
      bin[i] = k >= 0 && k < op.bins ? static_cast<std::size_t>(k) : nbins;
      ++start[bin[i] + 1];
    }
    for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    // Stable: elements of one bin keep their input order.
    std::vector<std::size_t> dest(n);
    for (std::size_t i = 0; i < n; ++i) dest[i] = start[bin[i]]++;
    std::vector<HostArray> out;
    out.emplace_back(op.keys.type(), n);
    for (std::size_t i = 0; i < n; ++i)
      std::memcpy(out[0].data() + dest[i] * key_size, keys.data() + i * key_size, key_size);
    if (with_values) {
      Elements xs = elements(op.values, n);
      std::size_t size = op.values.type().size();
      out.emplace_back(op.values.type(), n);
      for (std::size_t i = 0; i < n; ++i) std::memcpy(out[1].data() + dest[i] * size, xs.data() + i * size, size);
    }
    return out;
  }

  const Program& program_;
  const HostBindings& bindings_;
  std::map<const OpNode*, OpResults> done_;
};

// Runs a compiled expression once, at element 0, with operands a and b when given.
Value run_once(const Code& code, const Value* a = nullptr, const Value* b = nullptr) {
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

}  // namespace

std::vector<HostResult> evaluate(const Program& p, const HostBindings& b) { return Evaluator(p, b).run(); }

Value evaluate_constant(const Expr& e) {
  if (!e.valid()) throw GraphError("evaluate_constant: an empty ff::Expr");
  Compiler c([&e](const Expr& leaf) -> LeafData {
    throw GraphError("the expression " + fuseflow::to_string(e) + " is not a constant: it uses " +
                     fuseflow::to_string(leaf));
  });
  return run_once(c.compile(e));
}

std::vector<std::size_t> segment_bounds(const std::string& op, ScalarType t, const std::byte* offsets,
                                        std::size_t m, std::size_t n) {
  if (m == 0) throw GraphError(op + ": the offsets are empty; s segments need s + 1 offsets");
  std::vector<std::size_t> bounds(m);
  for (std::size_t s = 0; s < m; ++s) {
    std::int64_t v = read_integer(t, offsets + s * scalar_size(t));
    std::string which = "offset " + std::to_string(s) + " is " + std::to_string(v);
    if (v < 0) throw GraphError(op + ": " + which + "; offsets must be >= 0");
    if (static_cast<std::uint64_t>(v) > n)
      throw GraphError(op + ": " + which + ", beyond the end of the " + std::to_string(n) + " values");
    if (s > 0 && static_cast<std::size_t>(v) < bounds[s - 1])
      throw GraphError(op + ": " + which + ", less than offset " + std::to_string(s - 1) + " (" +
                       std::to_string(bounds[s - 1]) + "); offsets must be non-decreasing");
    bounds[s] = static_cast<std::size_t>(v);
  }
  return bounds;
}

Value evaluate_combine(const Monoid& m, const Value& a, const Value& b) {
  Code combine = compile_combine(m);
  for (const Value* v : {&a, &b})
    if (v->type() != m.type())
      throw GraphError("monoid " + m.name() + " is over " + m.type().name() + ", operand " + v->to_string() +
                       " is " + v->type().name());
  return run_once(combine, &a, &b);
}

}  // namespace fuseflow
