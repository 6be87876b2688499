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
//   counting_sort     stable by key in [0, bins) (a key outside is an error); output 1
//                     carries the values along when the op has them
//
// Element-wise expressions are evaluated in parallel (they have no order); every
// combine runs sequentially in element order, so results do not depend on the thread count.
// Expressions are evaluated on Values; built-in monoids over scalars take a typed loop.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <span>
#include <thread>

#include "fuseflow/frontend/reference.hpp"

namespace fuseflow {

namespace detail {
// Defined in scalar_ops.cpp: apply_math without a vector for the arguments.
Value apply_math_span(MathFn fn, std::span<const Value> args, const Type& result);
}  // namespace detail

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

// ---- expressions with resolved leaves -------------------------------------------------

namespace {

[[noreturn]] void raw_cuda_error(const ExprNode& n) {
  throw GraphError("the CPU reference evaluator cannot run a raw CUDA expression: cuda_expr<" + n.type.name() +
                   ">(\"" + n.name + "\"); check such a program against values you work out by hand");
}

// An expression whose leaves point at the data they read, so evaluating an element
// looks nothing up.
struct Node {
  const ExprNode* e = nullptr;
  std::vector<Node> args;
  const HostArray* array = nullptr;  // Input, array Result
  const Value* value = nullptr;      // Param, scalar Result
};

// Resolves a leaf (Input, Param, Result, Index, Operand) or throws when the context
// cannot have it.
using LeafResolver = std::function<void(const Expr& leaf, Node& out)>;

Node resolve(const Expr& e, const LeafResolver& leaf) {
  Node n;
  n.e = e.get();
  switch (e.kind()) {
    case ExprKind::Input:
    case ExprKind::Param:
    case ExprKind::Result:
    case ExprKind::Index:
    case ExprKind::Operand:
      leaf(e, n);
      return n;
    case ExprKind::RawCuda:
      raw_cuda_error(e.node());
    default:
      break;
  }
  n.args.reserve(e.args().size());
  for (const Expr& a : e.args()) n.args.push_back(resolve(a, leaf));
  return n;
}

// The value of `n` at element i; `operands` are a and b inside a combine function.
Value eval(const Node& n, std::size_t i, const Value* operands) {
  const ExprNode& e = *n.e;
  switch (e.kind) {
    case ExprKind::Input: return n.array->at(i);
    case ExprKind::Index: return Value::from_int(ScalarType::I64, static_cast<std::int64_t>(i));
    case ExprKind::Constant: return e.constant;
    case ExprKind::Param: return *n.value;
    case ExprKind::Result: return n.array ? n.array->at(i) : *n.value;
    case ExprKind::Operand: return operands[e.index];
    case ExprKind::Unary: return apply_unary(e.unary, eval(n.args[0], i, operands), e.type);
    case ExprKind::Binary:
      if (e.binary == BinaryOp::And || e.binary == BinaryOp::Or) {
        // Short-circuit, as C++ and CUDA do: in `x != 0 && 10 / x > 1` the right side
        // is not evaluated where the left decides.
        bool left = eval(n.args[0], i, operands).as_bool();
        if (left == (e.binary == BinaryOp::Or)) return Value(left);
        return Value(eval(n.args[1], i, operands).as_bool());
      }
      return apply_binary(e.binary, eval(n.args[0], i, operands), eval(n.args[1], i, operands), e.type);
    case ExprKind::Select: {
      // Only the chosen branch is evaluated, as with C++'s ?:.
      bool c = eval(n.args[0], i, operands).as_bool();
      Value v = eval(n.args[c ? 1 : 2], i, operands);
      return v.type() == e.type ? v : v.cast(e.type.scalar());
    }
    case ExprKind::Call: {
      std::array<Value, 3> args;
      if (n.args.size() > args.size())
        throw GraphError(std::string(math_name(e.fn)) + " with " + std::to_string(n.args.size()) + " arguments");
      for (std::size_t k = 0; k < n.args.size(); ++k) args[k] = eval(n.args[k], i, operands);
      return detail::apply_math_span(e.fn, std::span<const Value>(args.data(), n.args.size()), e.type);
    }
    case ExprKind::Cast: return eval(n.args[0], i, operands).cast(e.type.scalar());
    case ExprKind::MakeTuple: {
      std::vector<Value> fields;
      fields.reserve(n.args.size());
      for (const Node& a : n.args) fields.push_back(eval(a, i, operands));
      return Value::tuple(std::move(fields));
    }
    case ExprKind::Get: {
      // A field straight from where the tuple lives, without building the whole tuple.
      const Node& t = n.args[0];
      auto field = static_cast<std::size_t>(e.index);
      if (t.e->kind == ExprKind::Operand) return operands[t.e->index][field];
      if (t.array) {
        const Type& tt = t.array->type();
        return Value::from_bytes(e.type, t.array->data() + i * tt.size() + tt.field_offset(field));
      }
      if (t.value) return (*t.value)[field];
      Value whole = eval(t, i, operands);
      return whole[field];
    }
    case ExprKind::RawCuda: raw_cuda_error(e);
  }
  throw GraphError("unknown expression kind");
}

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

// Elements [base, base + count) of `n` (of type t), packed into out.
void evaluate_into(const Node& n, const Type& t, std::size_t base, std::size_t count, std::byte* out) {
  std::size_t size = t.size();
  Split s = split(count);
  parallel_for(s, [&](std::size_t c) {
    for (std::size_t i = s.begin(c); i < s.end(c); ++i) eval(n, base + i, nullptr).to_bytes(out + i * size);
  });
}

// The packed elements of an element-wise expression: the data itself when the expression
// is a lone array leaf, else evaluated into a new array.
struct Elements {
  const HostArray* leaf = nullptr;
  HostArray owned;
  const std::byte* data() const { return leaf ? leaf->data() : owned.data(); }
};

Elements elements(const Node& n, const Type& t, std::size_t count) {
  Elements out;
  if (n.array) {
    out.leaf = n.array;
    return out;
  }
  out.owned = HostArray(t, count);
  evaluate_into(n, t, 0, count, out.owned.data());
  return out;
}

// Hands the elements of `n` to consume(elements, count) in order, a block at a time, so a
// reduction over billions of elements needs no array of them.
template <class F>
void stream(const Node& n, const Type& t, std::size_t count, F&& consume) {
  if (n.array) {
    consume(n.array->data(), count);
    return;
  }
  constexpr std::size_t block = std::size_t{1} << 20;
  HostArray buffer(t, std::min(count, block));
  for (std::size_t base = 0; base < count; base += block) {
    std::size_t k = std::min(block, count - base);
    evaluate_into(n, t, base, k, buffer.data());
    consume(buffer.data(), k);
  }
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
    if constexpr (K == MonoidKind::Min) return std::fmin(a, b);
    if constexpr (K == MonoidKind::Max) return std::fmax(a, b);
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

Node resolve_combine(const Monoid& m) {
  if (!m.is_typed())
    throw GraphError("monoid " + m.name() + " is generic; an op instantiates it for an element type");
  return resolve(m.combine(), [](const Expr& leaf, Node&) {
    if (leaf.kind() != ExprKind::Operand) not_a_combine_leaf(leaf);
  });
}

// A typed monoid applied to packed elements, left to right.
class Combiner {
 public:
  explicit Combiner(const Monoid& m)
      : type_(m.type()), identity_(type_.size()), combine_(resolve_combine(m)), builtin_(builtin_run_for(m)) {
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
    std::size_t size = type_.size();
    std::array<Value, 2> ab{Value::from_bytes(type_, acc), Value()};
    for (std::size_t j = 0; j < count; ++j) {
      ab[1] = Value::from_bytes(type_, xs + j * size);
      Value next = eval(combine_, 0, ab.data());
      if (out) (inclusive ? next : ab[0]).to_bytes(out + j * size);
      ab[0] = std::move(next);
    }
    ab[0].to_bytes(acc);
  }

  Type type_;
  std::vector<std::byte> identity_;
  Node combine_;
  RunFn builtin_;
};

// ---- keys, bins and offsets -----------------------------------------------------------

// An integral scalar stored at p, as a signed value when it fits (unsigned values above
// INT64_MAX read as INT64_MAX: beyond every bin and offset anyway).
std::int64_t read_integer(ScalarType t, const std::byte* p) {
  Value v = Value::from_bytes(t, p);
  if (Type(t).is_signed_integer()) return v.as_int();
  std::uint64_t u = v.as_uint();
  return u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(u);
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
    evaluate_into(bind(o), o.type(), 0, n, r.array.data());
    return r;
  }

  const OpResults& results_of(const OpNode& op) const {
    auto it = done_.find(&op);
    if (it == done_.end()) throw GraphError(std::string("internal: ") + op_name(op.kind) + " used before it ran");
    return it->second;
  }

  // An element-wise expression with its leaves pointing at bound data and op results.
  Node bind(const Expr& e) const {
    return resolve(e, [this](const Expr& leaf, Node& out) {
      const ExprNode& n = leaf.node();
      switch (n.kind) {
        case ExprKind::Input:
          out.array = bindings_.array(leaf);
          if (!out.array) throw GraphError("input '" + n.name + "' is not bound");
          break;
        case ExprKind::Param:
          out.value = bindings_.param(leaf);
          if (!out.value) throw GraphError("parameter '" + n.name + "' is not bound");
          break;
        case ExprKind::Result: {
          const OpResults& done = results_of(*n.op);
          if (n.op->scalar_output) out.value = &done.scalar;
          else out.array = &done.arrays[static_cast<std::size_t>(n.index)];
          break;
        }
        case ExprKind::Index: break;
        default: throw GraphError("an element-wise expression uses operand " + fuseflow::to_string(leaf) +
                                  " of a combine function");
      }
    });
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
    stream(bind(op.values), op.values.type(), n,
           [&](const std::byte* xs, std::size_t k) { c.fold(acc.data(), xs, k); });
    return Value::from_bytes(c.type(), acc.data());
  }

  HostArray scan(const OpNode& op) const {
    std::size_t n = length({&op.values}, "scan");
    Combiner c(op.monoid);
    HostArray out(c.type(), n);
    std::vector<std::byte> acc = c.identity();
    std::size_t at = 0;
    stream(bind(op.values), op.values.type(), n, [&](const std::byte* xs, std::size_t k) {
      c.scan(acc.data(), xs, k, out.data() + at * c.size(), op.scan_kind);
      at += k;
    });
    return out;
  }

  // Each chunk keeps its survivors in order; the chunks are then joined in order.
  HostArray filter(const OpNode& op) const {
    std::size_t n = length({&op.values, &op.predicate}, "filter");
    Node values = bind(op.values), predicate = bind(op.predicate);
    const Type& t = op.values.type();
    std::size_t size = t.size();
    Split s = split(n);
    std::vector<std::vector<std::byte>> kept(s.chunks);
    parallel_for(s, [&](std::size_t c) {
      for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
        if (!eval(predicate, i, nullptr).as_bool()) continue;
        kept[c].resize(kept[c].size() + size);
        eval(values, i, nullptr).to_bytes(kept[c].data() + kept[c].size() - size);
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

  // Segment bounds from the offsets: at least one offset, each in [0, n), non-decreasing.
  std::vector<std::size_t> segment_bounds(const OpNode& op, std::size_t n) const {
    const std::string name = op_name(op.kind);
    std::size_t m = length({&op.offsets}, name);
    if (m == 0) throw GraphError(name + ": the offsets are empty; s segments need s + 1 offsets");
    Elements off = elements(bind(op.offsets), op.offsets.type(), m);
    ScalarType t = op.offsets.type().scalar();
    std::vector<std::size_t> bounds(m);
    for (std::size_t s = 0; s < m; ++s) {
      std::int64_t v = read_integer(t, off.data() + s * scalar_size(t));
      std::string which = "offset " + std::to_string(s) + " is " + std::to_string(v);
      if (v < 0) throw GraphError(name + ": " + which + "; offsets must be >= 0");
      if (static_cast<std::uint64_t>(v) > n)
        throw GraphError(name + ": " + which + ", beyond the end of the " + std::to_string(n) + " values");
      if (s > 0 && static_cast<std::size_t>(v) < bounds[s - 1])
        throw GraphError(name + ": " + which + ", less than offset " + std::to_string(s - 1) + " (" +
                         std::to_string(bounds[s - 1]) + "); offsets must be non-decreasing");
      bounds[s] = static_cast<std::size_t>(v);
    }
    return bounds;
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
    Elements xs = elements(bind(op.values), op.values.type(), n);
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
    Elements keys = elements(bind(op.keys), op.keys.type(), n);
    Elements xs = elements(bind(op.values), op.values.type(), n);
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
    Elements bins = elements(bind(op.keys), op.keys.type(), n);
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
    Elements keys = elements(bind(op.keys), op.keys.type(), n);
    ScalarType t = op.keys.type().scalar();
    std::size_t key_size = scalar_size(t);
    std::vector<std::size_t> bin(n);
    std::vector<std::size_t> start(static_cast<std::size_t>(op.bins) + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t k = read_integer(t, keys.data() + i * key_size);
      if (k < 0 || k >= op.bins)
        throw GraphError("counting_sort: key " + Value::from_bytes(t, keys.data() + i * key_size).to_string() +
                         " at index " + std::to_string(i) + " is outside the bins [0, " + std::to_string(op.bins) + ")");
      bin[i] = static_cast<std::size_t>(k);
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
      Elements xs = elements(bind(op.values), op.values.type(), n);
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

}  // namespace

std::vector<HostResult> evaluate(const Program& p, const HostBindings& b) { return Evaluator(p, b).run(); }

Value evaluate_constant(const Expr& e) {
  if (!e.valid()) throw GraphError("evaluate_constant: an empty ff::Expr");
  Node n = resolve(e, [&e](const Expr& leaf, Node&) {
    throw GraphError("the expression " + fuseflow::to_string(e) + " is not a constant: it uses " +
                     fuseflow::to_string(leaf));
  });
  return eval(n, 0, nullptr);
}

Value evaluate_combine(const Monoid& m, const Value& a, const Value& b) {
  Node combine = resolve_combine(m);
  for (const Value* v : {&a, &b})
    if (v->type() != m.type())
      throw GraphError("monoid " + m.name() + " is over " + m.type().name() + ", operand " + v->to_string() +
                       " is " + v->type().name());
  std::array<Value, 2> ab{a, b};
  return eval(combine, 0, ab.data());
}

}  // namespace fuseflow
