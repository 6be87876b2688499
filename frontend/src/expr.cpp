// Expression nodes and their type rules. Each checked constructor computes the result
// type with C++'s rules (usual arithmetic conversions, integer promotion) and throws a
// GraphError naming the operator and the operand types when they do not apply.
#include "fuseflow/frontend/expr.hpp"

#include "fuseflow/frontend/program.hpp"

namespace fuseflow {

const ExprNode& Expr::node() const {
  if (!node_) throw GraphError("use of an empty ff::Expr (default-constructed, never assigned)");
  return *node_;
}

Expr Expr::with_args(std::vector<Expr> new_args) const {
  const ExprNode& n = node();
  if (new_args.size() != n.args.size()) throw GraphError("with_args: wrong number of arguments");
  for (std::size_t i = 0; i < new_args.size(); ++i)
    if (!new_args[i].valid() || new_args[i].type() != n.args[i].type())
      throw GraphError("with_args: argument " + std::to_string(i) + " changes type");
  ExprNode copy = n;
  copy.args = std::move(new_args);
  return make(std::move(copy));
}

Expr Expr::make(ExprNode n) { return Expr(std::make_shared<const ExprNode>(std::move(n))); }

namespace {
ExprNode leaf(ExprKind k, Type t) {
  ExprNode n{};
  n.kind = k;
  n.type = std::move(t);
  return n;
}

void require_valid(const Expr& e, const std::string& what) {
  if (!e.valid()) throw GraphError(what + ": an operand is an empty ff::Expr");
}

void require_scalar(const Expr& e, const std::string& what) {
  if (!e.type().is_scalar())
    throw GraphError(what + " needs scalar operands, got a " + e.type().name() + " tuple");
}
}  // namespace

Expr Expr::input(std::string name, Type t, std::int64_t length) {
  if (name.empty()) throw GraphError("input: an input needs a name");
  ExprNode n = leaf(ExprKind::Input, std::move(t));
  n.name = std::move(name);
  n.length = length;
  return make(std::move(n));
}

Expr Expr::index() { return make(leaf(ExprKind::Index, ScalarType::I64)); }

Expr Expr::constant(const Value& v) {
  auto n = std::make_shared<ExprNode>();  // filled in place: no ExprNode moved and destroyed
  n->kind = ExprKind::Constant;
  n->type = v.type();
  n->constant = v;
  return Expr(std::move(n));
}

Expr Expr::param(std::string name, Type t) {
  if (name.empty()) throw GraphError("param: a parameter needs a name");
  if (!t.is_scalar()) throw GraphError("param '" + name + "': parameters are scalars, got " + t.name());
  ExprNode n = leaf(ExprKind::Param, std::move(t));
  n.name = std::move(name);
  return make(std::move(n));
}

Expr Expr::result(std::shared_ptr<const OpNode> op, int output, Type t) {
  ExprNode n = leaf(ExprKind::Result, std::move(t));
  n.op = std::move(op);
  n.index = output;
  return make(std::move(n));
}

Expr Expr::operand(int which, Type t) {
  ExprNode n = leaf(ExprKind::Operand, std::move(t));
  n.index = which;
  return make(std::move(n));
}

Expr Expr::unary(UnaryOp op, const Expr& a) {
  std::string what = std::string("operator ") + unary_symbol(op);
  require_valid(a, what);
  require_scalar(a, what);
  ExprNode n{};
  n.kind = ExprKind::Unary;
  n.unary = op;
  n.args = {a};
  ScalarType s = a.type().scalar();
  switch (unary_info(op).op_class) {
    case UnaryClass::Logical: n.type = ScalarType::Bool; break;
    case UnaryClass::Arithmetic: n.type = a.type().is_floating() ? s : integer_promotion(s); break;
    case UnaryClass::Integral:
      if (!a.type().is_integral()) throw GraphError(what + " needs an integral operand, got " + a.type().name());
      n.type = integer_promotion(s);
      break;
  }
  return make(std::move(n));
}

Expr Expr::binary(BinaryOp op, const Expr& a, const Expr& b) {
  std::string what = std::string("operator ") + binary_symbol(op);
  require_valid(a, what);
  require_valid(b, what);
  if (!a.type().is_scalar() || !b.type().is_scalar())
    throw GraphError(what + " needs scalar operands, got " + a.type().name() + " and " + b.type().name());
  ScalarType common = usual_arithmetic_conversion(a.type().scalar(), b.type().scalar());
  const BinaryClass c = binary_info(op).op_class;
  if ((c == BinaryClass::Integral || c == BinaryClass::Shift) && (!a.type().is_integral() || !b.type().is_integral()))
    throw GraphError(what + " needs integral operands, got " + a.type().name() + " and " + b.type().name());
  auto n = std::make_shared<ExprNode>();  // filled in place: no ExprNode moved and destroyed
  n->kind = ExprKind::Binary;
  n->binary = op;
  n->args = {a, b};
  switch (c) {
    case BinaryClass::Arithmetic:
    case BinaryClass::Integral: n->type = common; break;
    case BinaryClass::Shift: n->type = integer_promotion(a.type().scalar()); break;
    case BinaryClass::Comparison:
    case BinaryClass::Logical: n->type = ScalarType::Bool; break;
  }
  return Expr(std::move(n));
}

Expr Expr::select(const Expr& cond, const Expr& a, const Expr& b) {
  require_valid(cond, "select");
  require_valid(a, "select");
  require_valid(b, "select");
  if (!cond.type().is_bool())
    throw GraphError("select: the condition must be bool, got " + cond.type().name());
  ExprNode n{};
  n.kind = ExprKind::Select;
  if (a.type().is_scalar() && b.type().is_scalar()) {
    n.type = usual_arithmetic_conversion(a.type().scalar(), b.type().scalar());
    if (a.type() == b.type()) n.type = a.type();  // bool ? u8 : u8 stays u8
  } else if (a.type() == b.type()) {
    n.type = a.type();
  } else {
    throw GraphError("select: both branches must have the same type, got " + a.type().name() +
                     " and " + b.type().name());
  }
  n.args = {cond, a, b};
  return make(std::move(n));
}

Expr Expr::call(MathFn fn, std::vector<Expr> args) {
  std::string what = math_name(fn);
  if (args.size() != math_info(fn).arity)
    throw GraphError(what + " takes " + std::to_string(math_info(fn).arity) + " argument(s), got " +
                     std::to_string(args.size()));
  for (const auto& a : args) {
    require_valid(a, what);
    require_scalar(a, what);
  }
  auto n = std::make_shared<ExprNode>();  // filled in place: no ExprNode moved and destroyed
  n->kind = ExprKind::Call;
  n->fn = fn;
  ScalarType common = args[0].type().scalar();
  for (const auto& a : args) common = usual_arithmetic_conversion(common, a.type().scalar());
  switch (math_info(fn).fn_class) {
    case MathClass::MinMax:
      n->type = common;
      break;
    case MathClass::Abs:
      n->type = args[0].type().is_floating() ? args[0].type().scalar() : integer_promotion(args[0].type().scalar());
      break;
    case MathClass::Float:
      // f32 stays f32 (sqrtf), f64 and integers compute in f64 as std::sqrt(int) does.
      n->type = common == ScalarType::F32 ? ScalarType::F32 : ScalarType::F64;
      break;
  }
  n->args = std::move(args);
  return Expr(std::move(n));
}

Expr Expr::cast(Type to, const Expr& a) {
  require_valid(a, "cast");
  if (!to.is_scalar() || !a.type().is_scalar()) {
    if (to == a.type()) return a;
    throw GraphError("cast<" + to.name() + ">: only scalars can be cast, got " + a.type().name());
  }
  if (to == a.type()) return a;
  ExprNode n{};
  n.kind = ExprKind::Cast;
  n.type = std::move(to);
  n.args = {a};
  return make(std::move(n));
}

Expr Expr::make_tuple(std::vector<Expr> fields) {
  if (fields.empty()) throw GraphError("tuple: a tuple needs at least one field");
  std::vector<Type> types;
  types.reserve(fields.size());
  for (const auto& f : fields) {
    require_valid(f, "tuple");
    types.push_back(f.type());
  }
  auto n = std::make_shared<ExprNode>();  // filled in place: no ExprNode moved and destroyed
  n->kind = ExprKind::MakeTuple;
  n->type = Type::tuple(std::move(types));
  n->args = std::move(fields);
  return Expr(std::move(n));
}

Expr Expr::get(const Expr& tuple, int field) {
  require_valid(tuple, "get");
  const Type& t = tuple.type();
  if (!t.is_tuple())
    throw GraphError("get<" + std::to_string(field) + ">: " + t.name() + " is not a tuple");
  if (field < 0 || static_cast<std::size_t>(field) >= t.arity())
    throw GraphError("get<" + std::to_string(field) + ">: index out of range for " + t.name());
  // Reading a field of a tuple built in place is the field itself.
  if (tuple.kind() == ExprKind::MakeTuple) return tuple.args()[static_cast<std::size_t>(field)];
  auto n = std::make_shared<ExprNode>();  // filled in place: no ExprNode moved and destroyed
  n->kind = ExprKind::Get;
  n->type = t.fields()[static_cast<std::size_t>(field)];
  n->index = field;
  n->args = {tuple};
  return Expr(std::move(n));
}

Expr Expr::raw_cuda(std::string text, Type t, std::vector<Expr> args) {
  if (text.empty()) throw GraphError("cuda_expr: the CUDA text is empty");
  for (std::size_t i = 0; i < args.size(); ++i) {
    require_valid(args[i], "cuda_expr");
    if (text.find("$" + std::to_string(i)) == std::string::npos)
      throw GraphError("cuda_expr \"" + text + "\": argument $" + std::to_string(i) + " is never used");
  }
  ExprNode n{};
  n.kind = ExprKind::RawCuda;
  n.type = std::move(t);
  n.name = std::move(text);
  n.args = std::move(args);
  return make(std::move(n));
}

// The table (gather) and the shifted array: any array (an input, a map, an op's array result),
// read at computed positions. The code generator passes inputs to kernels whole; a computed
// one it fuses (a map of inputs gathered: the map applied to the gathered elements) or
// computes into an intermediate first (codegen/src/passes/computed_tables.cpp).
namespace {
void require_input_array(const Expr& e, const std::string& what, const std::string& role) {
  require_valid(e, what);
  if (!is_array(e))
    throw GraphError(what + ": " + role + " must be an array (an input, a map of arrays or an op's array result), "
                     "got " + to_string(e) + ", which uses no input or array result");
}
}  // namespace

Expr Expr::gather(const Expr& table, const Expr& index, bool checked) {
  const std::string what = checked ? "gather" : "gather_unchecked";
  require_input_array(table, what, "the table");
  require_valid(index, what);
  if (!index.type().is_scalar() || !index.type().is_integral() || index.type().is_bool())
    throw GraphError(what + ": the index must be an integer, got " + index.type().name() + " (" + to_string(index) +
                     "); cast it with ff::cast<long long>");
  ExprNode n{};
  n.kind = ExprKind::Gather;
  n.type = table.type();
  n.index = checked ? 0 : 1;
  n.args = {table, index};
  return make(std::move(n));
}

Expr Expr::shift(const Expr& x, int k, const Expr& fill) {
  require_input_array(x, "shift", "the shifted array");
  require_valid(fill, "shift");
  Expr f = fill;
  if (f.type() != x.type()) {
    if (!f.type().is_scalar() || !x.type().is_scalar())
      throw GraphError("shift: the fill must have the array's type " + x.type().name() + ", got " + f.type().name());
    f = cast(x.type(), f);
  }
  if (k == 0) return x;
  ExprNode n{};
  n.kind = ExprKind::Shift;
  n.type = x.type();
  n.index = k;
  n.args = {x, f};
  return make(std::move(n));
}

// ---- per-segment broadcast ------------------------------------------------------------

namespace {
// Whether two expressions are the same computation: the same node, or nodes of one kind and
// payload over the same arguments (offsets built twice, ff::rows(x, c) called twice).
bool same_structure(const Expr& a, const Expr& b) {
  if (same_node(a, b)) return true;
  const ExprNode &m = a.node(), &n = b.node();
  if (m.kind != n.kind || m.type != n.type || m.name != n.name || m.index != n.index || m.length != n.length ||
      m.unary != n.unary || m.binary != n.binary || m.fn != n.fn || m.op != n.op || m.args.size() != n.args.size())
    return false;
  if (m.kind == ExprKind::Constant && !(m.constant == n.constant)) return false;
  for (std::size_t i = 0; i < m.args.size(); ++i)
    if (!same_structure(m.args[i], n.args[i])) return false;
  return true;
}
}  // namespace

Expr Expr::broadcast(const Expr& r, const Expr& segments, bool by_key) {
  const std::string what = by_key ? "broadcast_by_key" : "broadcast";
  require_valid(r, what);
  require_valid(segments, what);
  const bool segmented = r.kind() == ExprKind::Result && !r.node().op->scalar_output &&
                         (r.node().op->kind == OpKind::SegmentedReduce || r.node().op->kind == OpKind::ReduceByKey);
  if (!segmented)
    throw GraphError(what + ": " + to_string(r) +
                     " is not the result of a segmented reduction (segmented_reduce, or reduce_by_key's keys or "
                     "values); only a per-segment result has a value for each element's segment");
  const OpNode& op = *r.node().op;
  if (by_key && op.kind != OpKind::ReduceByKey)
    throw GraphError("broadcast_by_key: the result of segmented_reduce has segments by offsets; use "
                     "ff::broadcast(result, offsets)");
  if (!by_key && op.kind != OpKind::SegmentedReduce)
    throw GraphError("broadcast: the result of reduce_by_key has segments by runs of keys; use "
                     "ff::broadcast_by_key(result, keys)");
  const Expr& own = by_key ? op.keys : op.offsets;
  if (!same_structure(own, segments))
    throw GraphError(what + ": the " + (by_key ? "keys " : "offsets ") + to_string(segments) + " are not those " +
                     op_name(op.kind) + " reduced over (" + to_string(own) + "); a broadcast gives each element " +
                     "the segment the reduction gave it");
  ExprNode n{};
  n.kind = ExprKind::Broadcast;
  n.type = r.type();
  n.index = by_key ? 1 : 0;
  n.args = {r, own};
  return make(std::move(n));
}

Expr Expr::rows(const Expr& x, std::int64_t columns) {
  require_valid(x, "rows");
  if (columns <= 0) throw GraphError("rows: the row length must be positive, got " + std::to_string(columns));
  if (!is_array(x)) throw GraphError("rows: " + to_string(x) + " is not an array (it uses no input or array result)");
  ExprNode n{};
  n.kind = ExprKind::Rows;
  n.type = ScalarType::I64;
  n.length = columns;
  n.args = {x};
  return make(std::move(n));
}

}  // namespace fuseflow

// ---- arrays without an input --------------------------------------------------------
namespace fuseflow {
namespace detail {
void require_array(const Expr& e, const std::string& op, const std::string& role);  // program.cpp
}  // namespace detail
namespace {
// What a fill's value may read: `scalar_results` allows reductions' results (a map's body),
// which a fill of a host length may not read (they have a length of their own).
void require_element_value(const Expr& e, const std::string& what, bool scalar_results) {
  switch (e.kind()) {
    case ExprKind::Input:
    case ExprKind::Fill:
      throw GraphError(what + ": the value must not read an array, got " + to_string(e) +
                       " (write the array expression itself)");
    case ExprKind::Result:
      if (!e.node().op->scalar_output || !scalar_results)
        throw GraphError(what + ": the value reads " + to_string(e) +
                         "; it may read constants, parameters and index() only");
      return;
    case ExprKind::Operand:
      throw GraphError(what + ": the value uses an operand of a combine function outside its monoid");
    default:
      for (const auto& a : e.args()) require_element_value(a, what, scalar_results);
  }
}
}  // namespace

Expr Expr::fill(std::int64_t n, const Expr& value) {
  if (n < 0) throw GraphError("fill: the length must be at least 0, got " + std::to_string(n));
  require_valid(value, "fill");
  require_element_value(value, "fill", false);
  ExprNode node{};
  node.kind = ExprKind::Fill;
  node.type = value.type();
  node.length = n;
  node.args = {value};
  return make(std::move(node));
}

Expr Expr::fill_like(const Expr& like, const Expr& value) {
  require_valid(like, "map");
  require_valid(value, "map");
  detail::require_array(like, "map", "its arguments");
  require_element_value(value, "map", true);
  ExprNode node{};
  node.kind = ExprKind::Fill;
  node.type = value.type();
  node.args = {value, like};
  return make(std::move(node));
}

Expr Expr::fill_param(const Expr& length, const Expr& value) {
  require_valid(length, "fill");
  require_valid(value, "fill");
  if (length.kind() != ExprKind::Param || !length.type().is_integral() || length.type().is_bool())
    throw GraphError("fill: a length bound at run time must be an integral parameter (ff::param<long long>(\"n\")), got " +
                     to_string(length) + " (" + length.type().name() + ")");
  require_element_value(value, "fill", false);
  ExprNode node{};
  node.kind = ExprKind::Fill;
  node.type = value.type();
  node.args = {value, length};
  return make(std::move(node));
}

Expr iota(std::int64_t n) { return Expr::fill(n, Expr::index()); }

Expr iota(std::int64_t n, const Expr& start, const Expr& step) {
  if (!start.valid() || !step.valid()) throw GraphError("iota: the start or the step is an empty ff::Expr");
  if (!start.type().is_scalar() || start.type().is_bool())
    throw GraphError("iota: the start must be a number, got " + start.type().name());
  const Type t = start.type();
  return Expr::fill(n, start + Expr::cast(t, Expr::index()) * cast(t, step));
}

Expr fill(const Expr& length_of, const Expr& value) {
  require_valid(length_of, "fill");
  if (length_of.kind() == ExprKind::Constant && length_of.type().is_integral() && !length_of.type().is_bool())
    return Expr::fill(length_of.node().constant.as_int(), value);
  if (length_of.kind() == ExprKind::Param) return Expr::fill_param(length_of, value);
  if (!is_array(length_of))
    throw GraphError("fill: the length must be a host size, an integral parameter or an array whose length the fill "
                     "takes, got " + to_string(length_of) + " (" + length_of.type().name() + ")");
  require_valid(value, "fill");
  require_element_value(value, "fill", true);
  return Expr::fill_like(length_of, value);
}

Expr iota(const Expr& length_of) { return fill(length_of, Expr::index()); }

Expr iota(const Expr& length_of, const Expr& start, const Expr& step) {
  if (!start.valid() || !step.valid()) throw GraphError("iota: the start or the step is an empty ff::Expr");
  if (!start.type().is_scalar() || start.type().is_bool())
    throw GraphError("iota: the start must be a number, got " + start.type().name());
  const Type t = start.type();
  return fill(length_of, start + Expr::cast(t, Expr::index()) * cast(t, step));
}

Expr map_result(const std::vector<Expr>& arrays, const Expr& body) {
  if (!body.valid() || is_array(body)) return body;
  std::vector<Expr> like;
  for (const auto& a : arrays)
    if (a.valid() && is_array(a)) like.push_back(a);
  if (like.empty()) return body;
  return Expr::fill_like(like.size() == 1 ? like[0] : Expr::make_tuple(like), body);
}

}  // namespace fuseflow
