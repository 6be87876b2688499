#pragma once
// Expressions. An Expr is an immutable node: an element-wise array expression (its leaves
// are inputs, the element index, constants, parameters, and the results of earlier ops)
// or, inside a monoid's combine function, an expression over the two operands a and b.
// Every node is type-checked when it is made (Expr::make), so later passes trust it.
// Lambdas given to the DSL are traced: called once with symbolic Exprs.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "fuseflow/frontend/operators.hpp"
#include "fuseflow/frontend/type.hpp"
#include "fuseflow/frontend/value.hpp"

namespace fuseflow {

struct OpNode;  // a materialising graph op (reduce, scan, filter ...): program.hpp

enum class ExprKind : std::uint8_t {
  Input,     // element of a named input array
  Index,     // the element index (i64)
  Constant,  // a literal
  Param,     // a named scalar parameter bound at run time
  Result,    // element (or the scalar) of an earlier op's result
  Operand,   // operand a (0) or b (1) of a monoid's combine function
  Unary,
  Binary,
  Select,
  Call,      // math function
  Cast,
  MakeTuple,
  Get,       // tuple field
  RawCuda,   // raw CUDA expression text with $0, $1 ... for its arguments
  Gather,    // table[index]: args {table (an input), index}; `index` 1 when unchecked
  Shift,     // x[i + k] inside [0, n), else fill: args {x (an input), fill}; `index` k
  Broadcast, // a segmented reduction's value at each element's segment: args {its result,
             // offsets or keys}; `index` 1 when by key (reduce_by_key)
  Rows,      // offsets of rows of `length` elements over x (the last may be shorter): args {x}
  Fill,      // an array of `value` at every element, args {value}: `length` elements (ff::fill,
             // ff::iota); args {value, like}: like's elements (a map whose body reads no array);
             // or args {value, p}, p an integral Param: as many elements as p holds at run time
};

// UnaryOp, BinaryOp and MathFn, with their spellings and classes: operators.hpp.
inline const char* unary_symbol(UnaryOp op) { return unary_info(op).symbol; }
inline const char* binary_symbol(BinaryOp op) { return binary_info(op).symbol; }
inline const char* math_name(MathFn fn) { return math_info(fn).name; }
inline int binary_precedence(BinaryOp op) { return binary_info(op).precedence; }  // higher binds tighter

class Expr;

struct ExprNode {
  ExprKind kind;
  Type type;
  std::vector<Expr> args;
  // Payload, by kind: Input/Param name, RawCuda text; Constant value; Operand id, Get field,
  // Result output index; operator; the op that produced a Result.
  std::string name;
  Value constant;
  int index = 0;
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  MathFn fn = MathFn::Min;
  std::shared_ptr<const OpNode> op;
  std::int64_t length = -1;  // Input: declared element count, -1 when unknown
};

class Expr {
 public:
  Expr() = default;
  // Literals become typed constants: int -> i32, 2.5f -> f32, 2.5 -> f64.
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Expr(T literal) : Expr(constant(Value(literal))) {}  // NOLINT: implicit on purpose
  Expr(const Value& v) : Expr(constant(v)) {}  // NOLINT

  // Checked constructors: every node is made through these.
  static Expr input(std::string name, Type t, std::int64_t length = -1);
  static Expr index();
  static Expr constant(const Value& v);
  static Expr param(std::string name, Type t);
  static Expr result(std::shared_ptr<const OpNode> op, int output, Type t);
  static Expr operand(int which, Type t);
  static Expr unary(UnaryOp op, const Expr& a);
  static Expr binary(BinaryOp op, const Expr& a, const Expr& b);
  static Expr select(const Expr& cond, const Expr& a, const Expr& b);
  static Expr call(MathFn fn, std::vector<Expr> args);
  static Expr cast(Type to, const Expr& a);
  static Expr make_tuple(std::vector<Expr> fields);
  static Expr get(const Expr& tuple, int field);
  static Expr raw_cuda(std::string text, Type t, std::vector<Expr> args);
  // table[index] for every element; `checked`: an index outside the table is reported
  // by the run (GraphError naming the first bad position and its value).
  static Expr gather(const Expr& table, const Expr& index, bool checked = true);
  // x[i + k] where i + k is inside [0, n), `fill` (converted to x's type) elsewhere.
  static Expr shift(const Expr& x, int k, const Expr& fill);
  // Element i of the segmented reduction's elements gets the result of its segment: by
  // offsets (segmented_reduce) or by runs of keys (reduce_by_key; `by_key`). `segments`
  // must be the op's own offsets or keys.
  static Expr broadcast(const Expr& segment_result, const Expr& segments, bool by_key);
  // The offsets 0, c, 2c ... n of x's rows of c = `columns` elements (an i64 array of
  // ceil(n / c) + 1 elements).
  static Expr rows(const Expr& x, std::int64_t columns);
  // An array of n elements, each `value` (constants, parameters and index()).
  static Expr fill(std::int64_t n, const Expr& value);
  // An array of like's length, each `value` (any expression without an array in it).
  static Expr fill_like(const Expr& like, const Expr& value);
  // An array of as many elements as the integral parameter `length` holds when the program
  // runs (args {value, length}), each `value` (constants, parameters and index()).
  static Expr fill_param(const Expr& length, const Expr& value);

  // The same node with other arguments of the same types (for passes that substitute).
  Expr with_args(std::vector<Expr> args) const;

  bool valid() const { return node_ != nullptr; }
  const ExprNode& node() const;
  const ExprNode* get() const { return node_.get(); }
  ExprKind kind() const { return node().kind; }
  const Type& type() const { return node().type; }
  const std::vector<Expr>& args() const { return node().args; }

  // Tuple field: a[0].
  Expr operator[](int field) const { return get(*this, field); }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  static Expr make(ExprNode n);
  std::shared_ptr<const ExprNode> node_;
};

// Identity of nodes (for maps keyed by node); not the DSL's ==, which builds a comparison.
inline bool same_node(const Expr& a, const Expr& b) { return a.get() == b.get(); }

// ---- leaves -------------------------------------------------------------------------
template <class T>
Expr input(std::string name, std::int64_t length = -1) {
  return Expr::input(std::move(name), type_of<T>(), length);
}
inline Expr input(std::string name, Type t, std::int64_t length = -1) {
  return Expr::input(std::move(name), std::move(t), length);
}
inline Expr index() { return Expr::index(); }
template <class T>
Expr param(std::string name) {
  static_assert(std::is_arithmetic_v<T>, "ff::param needs a scalar type");
  return Expr::param(std::move(name), type_of<T>());
}
template <class T>
Expr constant(T v) {
  return Expr::constant(Value(v));
}

// ---- operators ----------------------------------------------------------------------
#define FUSEFLOW_BINARY_OPERATOR(sym, op)                                   \
  inline Expr operator sym(const Expr& a, const Expr& b) {                  \
    return Expr::binary(BinaryOp::op, a, b);                                \
  }                                                                         \
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>     \
  Expr operator sym(const Expr& a, T b) {                                   \
    return Expr::binary(BinaryOp::op, a, Expr(b));                          \
  }                                                                         \
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>     \
  Expr operator sym(T a, const Expr& b) {                                   \
    return Expr::binary(BinaryOp::op, Expr(a), b);                          \
  }
FUSEFLOW_BINARY_OPERATOR(+, Add)
FUSEFLOW_BINARY_OPERATOR(-, Sub)
FUSEFLOW_BINARY_OPERATOR(*, Mul)
FUSEFLOW_BINARY_OPERATOR(/, Div)
FUSEFLOW_BINARY_OPERATOR(%, Mod)
FUSEFLOW_BINARY_OPERATOR(&, BitAnd)
FUSEFLOW_BINARY_OPERATOR(|, BitOr)
FUSEFLOW_BINARY_OPERATOR(^, BitXor)
FUSEFLOW_BINARY_OPERATOR(<<, Shl)
FUSEFLOW_BINARY_OPERATOR(>>, Shr)
FUSEFLOW_BINARY_OPERATOR(<, Lt)
FUSEFLOW_BINARY_OPERATOR(<=, Le)
FUSEFLOW_BINARY_OPERATOR(>, Gt)
FUSEFLOW_BINARY_OPERATOR(>=, Ge)
FUSEFLOW_BINARY_OPERATOR(==, Eq)
FUSEFLOW_BINARY_OPERATOR(!=, Ne)
FUSEFLOW_BINARY_OPERATOR(&&, And)
FUSEFLOW_BINARY_OPERATOR(||, Or)
#undef FUSEFLOW_BINARY_OPERATOR

inline Expr operator-(const Expr& a) { return Expr::unary(UnaryOp::Neg, a); }
inline Expr operator!(const Expr& a) { return Expr::unary(UnaryOp::Not, a); }
inline Expr operator~(const Expr& a) { return Expr::unary(UnaryOp::BitNot, a); }

// ---- functions ----------------------------------------------------------------------
inline Expr select(const Expr& cond, const Expr& a, const Expr& b) {
  return Expr::select(cond, a, b);
}
// ff::min and ff::max are callables (monoid.hpp): ff::max(a, b), and ff::max as a monoid.
inline Expr abs(const Expr& a) { return Expr::call(MathFn::Abs, {a}); }
inline Expr sqrt(const Expr& a) { return Expr::call(MathFn::Sqrt, {a}); }
inline Expr rsqrt(const Expr& a) { return Expr::call(MathFn::Rsqrt, {a}); }
inline Expr exp(const Expr& a) { return Expr::call(MathFn::Exp, {a}); }
inline Expr exp2(const Expr& a) { return Expr::call(MathFn::Exp2, {a}); }
inline Expr log(const Expr& a) { return Expr::call(MathFn::Log, {a}); }
inline Expr log2(const Expr& a) { return Expr::call(MathFn::Log2, {a}); }
inline Expr log10(const Expr& a) { return Expr::call(MathFn::Log10, {a}); }
inline Expr sin(const Expr& a) { return Expr::call(MathFn::Sin, {a}); }
inline Expr cos(const Expr& a) { return Expr::call(MathFn::Cos, {a}); }
inline Expr tan(const Expr& a) { return Expr::call(MathFn::Tan, {a}); }
inline Expr tanh(const Expr& a) { return Expr::call(MathFn::Tanh, {a}); }
inline Expr pow(const Expr& a, const Expr& b) { return Expr::call(MathFn::Pow, {a, b}); }
inline Expr floor(const Expr& a) { return Expr::call(MathFn::Floor, {a}); }
inline Expr ceil(const Expr& a) { return Expr::call(MathFn::Ceil, {a}); }
inline Expr round(const Expr& a) { return Expr::call(MathFn::Round, {a}); }
inline Expr erf(const Expr& a) { return Expr::call(MathFn::Erf, {a}); }
inline Expr fma(const Expr& a, const Expr& b, const Expr& c) {
  return Expr::call(MathFn::Fma, {a, b, c});
}

template <class T>
Expr cast(const Expr& a) {
  return Expr::cast(type_of<T>(), a);
}
inline Expr cast(const Type& t, const Expr& a) { return Expr::cast(t, a); }

// Tuples: ff::tuple(a, b, 0) builds; ff::get<1>(t) or t[1] reads a field;
// ff::zip(x, y) is the element-wise tuple of arrays.
template <class... Es>
Expr tuple(const Es&... fields) {
  return Expr::make_tuple({Expr(fields)...});
}
template <class... Es>
Expr zip(const Es&... arrays) {
  return Expr::make_tuple({Expr(arrays)...});
}
template <int I>
Expr get(const Expr& t) {
  return Expr::get(t, I);
}
template <std::size_t I>
Value get(const Value& v) {
  return v[I];
}

// Raw CUDA escape hatch: ff::cuda_expr<float>("__fmaf_rn($0, $1, 1.0f)", x, y). The text
// is pasted into the generated kernel with $k replaced by the k-th argument; NVRTC
// reports a mistake as a CompileError showing the kernel's numbered lines. The CPU
// reference evaluator cannot run it.
template <class T, class... Es>
Expr cuda_expr(std::string text, const Es&... args) {
  return Expr::raw_cuda(std::move(text), type_of<T>(), {Expr(args)...});
}

// Random access: ff::gather(table, idx) reads table[idx[i]] for every element (a table
// of any element type, tuples too, and any length); an index outside the table is an
// error the run reports (the first bad position and its value). ff::gather_unchecked
// skips that check for speed: a bad index then reads undefined memory.
inline Expr gather(const Expr& table, const Expr& index) { return Expr::gather(table, index, true); }
inline Expr gather_unchecked(const Expr& table, const Expr& index) { return Expr::gather(table, index, false); }

// Neighbours: ff::shift(x, k, fill) is x[i + k] where i + k is inside [0, n), `fill`
// elsewhere; x - ff::shift(x, -1, 0.0f) is the adjacent difference.
inline Expr shift(const Expr& x, int k, const Expr& fill) { return Expr::shift(x, k, fill); }

// Per-segment broadcast: ff::broadcast(r, offs), with r = ff::segmented_reduce(x, offs, m),
// is r's value of each element's segment, an array as long as x; per-row softmax is
// ff::exp(x - ff::broadcast(rowmax, offs)) / ff::broadcast(rowsum, offs).
// ff::broadcast_by_key(r, keys) does the same for reduce_by_key(keys, x, m)'s values (or
// keys): each element gets its run's result.
inline Expr broadcast(const Expr& segment_result, const Expr& offsets) {
  return Expr::broadcast(segment_result, offsets, false);
}
inline Expr broadcast_by_key(const Expr& segment_result, const Expr& keys) {
  return Expr::broadcast(segment_result, keys, true);
}
// Uniform rows: ff::rows(x, c) are the offsets of x's rows of c elements (the last row
// shorter when c does not divide x's length). Per-row programs over them whose rows fit a
// block run as one kernel that reads each row once.
inline Expr rows(const Expr& x, std::int64_t columns) { return Expr::rows(x, columns); }
// Arrays without an input: ff::fill(n, v) is n elements of v (a constant, a parameter,
// any expression of them and index()); ff::iota(n) is 0, 1, ..., n - 1 (i64) and
// ff::iota(n, start, step) is start + i * step in start's type. n is a host size; a
// program's element-wise arrays all have one length, so an array mixed with a fill must
// have n elements (a GraphError otherwise, at build time for declared lengths, else at run).
inline Expr fill(std::int64_t n, const Expr& value) { return Expr::fill(n, value); }
Expr iota(std::int64_t n);
Expr iota(std::int64_t n, const Expr& start, const Expr& step = Expr(1));
// The same with the length of an array, known when the program runs: ff::fill(x, v) and
// ff::iota(x) have as many elements as x (an input, or any element-wise array), so one
// program serves every length. A constant length is a host size as above. An integral
// parameter (ff::param<long long>("n")) is a length bound at run time: the array has as many
// elements as the parameter's value (a negative value is a GraphError naming it).
Expr fill(const Expr& length_of, const Expr& value);
Expr iota(const Expr& length_of);
Expr iota(const Expr& length_of, const Expr& start, const Expr& step = Expr(1));

// A fill whose length is its own (a host size or a parameter), not another array's.
inline bool fill_has_own_length(const Expr& e) {
  return e.valid() && e.kind() == ExprKind::Fill && (e.args().size() == 1 || e.args()[1].kind() == ExprKind::Param);
}

// ---- tracing ------------------------------------------------------------------------
// map(x, f) == f(x); map(x, y, f) == f(x, y): the lambda is traced with the arrays'
// element expressions and its result is the element-wise array: an array of the arrays'
// length even when the body reads none of them (a constant, parameters, index()).
// The map of the array arguments in `arrays` whose traced body is `body`.
Expr map_result(const std::vector<Expr>& arrays, const Expr& body);
template <class F>
Expr map(const Expr& a, F&& f) {
  return map_result({a}, Expr(f(a)));
}
template <class F>
Expr map(const Expr& a, const Expr& b, F&& f) {
  return map_result({a, b}, Expr(f(a, b)));
}
template <class F>
Expr map(const Expr& a, const Expr& b, const Expr& c, F&& f) {
  return map_result({a, b, c}, Expr(f(a, b, c)));
}
template <class F>
Expr map(const Expr& a, const Expr& b, const Expr& c, const Expr& d, F&& f) {
  return map_result({a, b, c, d}, Expr(f(a, b, c, d)));
}

}  // namespace fuseflow
