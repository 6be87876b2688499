// Graph ops (checked when made) and programs (their outputs, with inputs, parameters and
// ops collected in a fixed order).
#include "fuseflow/frontend/program.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_set>

#include "monoid_laws.hpp"

namespace fuseflow {

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Reduce: return "reduce";
    case OpKind::Scan: return "scan";
    case OpKind::Filter: return "filter";
    case OpKind::SegmentedReduce: return "segmented_reduce";
    case OpKind::SegmentedScan: return "segmented_scan";
    case OpKind::ReduceByKey: return "reduce_by_key";
    case OpKind::ScanByKey: return "scan_by_key";
    case OpKind::Histogram: return "histogram";
    case OpKind::CountingSort: return "counting_sort";
  }
  return "?";
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Automatic: return "automatic";
    case Strategy::Tree: return "tree";
    case Strategy::Atomic: return "atomic";
    case Strategy::Chunked: return "chunked";
    case Strategy::Staged: return "staged";
    case Strategy::Lookback: return "lookback";
    case Strategy::ReduceThenScan: return "reduce_then_scan";
  }
  return "?";
}

namespace {

// Node addresses a walk has met: a scan of a small array while there are few (most
// graphs, built and walked every time a program is), a hash set past that. Allocates
// nothing for a small graph.
class Seen {
 public:
  bool insert(const void* node) {
    if (set_.empty()) {
      if (std::find(few_.begin(), few_.begin() + count_, node) != few_.begin() + count_) return false;
      if (count_ < few_.size()) {
        few_[count_++] = node;
        return true;
      }
      set_.insert(few_.begin(), few_.end());
    }
    return set_.insert(node).second;
  }

 private:
  std::array<const void*, 32> few_{};
  std::size_t count_ = 0;
  std::unordered_set<const void*> set_;
};

void collect_leaves(const Expr& e, std::vector<Expr>& out, Seen& seen) {
  if (!seen.insert(e.get())) return;
  if (e.kind() == ExprKind::Input) {
    out.push_back(e);
  } else if (e.kind() == ExprKind::Result) {
    if (!e.node().op->scalar_output) out.push_back(e);
  } else if (e.kind() == ExprKind::Gather) {
    collect_leaves(e.args()[1], out, seen);  // the table has a length of its own
  } else if (e.kind() == ExprKind::Broadcast && e.args()[0].kind() != ExprKind::Result) {
    out.push_back(e);  // the planner's stage 2: per-segment results read from an input, as long as the segments
  } else if (e.kind() == ExprKind::Broadcast) {
    collect_leaves(e.args()[0].node().op->values, out, seen);  // as long as the reduction's elements
  } else if (e.kind() == ExprKind::Rows) {
    out.push_back(e);  // offsets: an array of their own length
  } else if (fill_has_own_length(e)) {
    out.push_back(e);  // ff::fill(n, v), n a size or a parameter: an array of its own length
  } else {
    for (const auto& a : e.args()) collect_leaves(a, out, seen);
  }
}

// The element count of an array leaf when it is known before binding: a declared input
// length, or a histogram's bin count.
std::int64_t static_length(const Expr& leaf) {
  if (leaf.kind() == ExprKind::Input || leaf.kind() == ExprKind::Fill) return leaf.node().length;
  if (leaf.kind() == ExprKind::Rows) {  // ceil(n / columns) + 1 offsets when x's length is known
    for (const auto& l : array_leaves(leaf.args()[0]))
      if (std::int64_t n = static_length(l); n >= 0) return (n + leaf.node().length - 1) / leaf.node().length + 1;
    return -1;
  }
  if (leaf.kind() == ExprKind::Broadcast) return -1;  // as long as its segments: known when the offsets are
  if (leaf.node().op->kind == OpKind::Histogram) return leaf.node().op->bins;
  return -1;
}

std::string leaf_name(const Expr& leaf) {
  if (leaf.kind() == ExprKind::Input) return "input '" + leaf.node().name + "'";
  if (leaf.kind() == ExprKind::Rows) return "the offsets " + to_string(leaf);
  if (leaf.kind() == ExprKind::Fill || leaf.kind() == ExprKind::Broadcast) return to_string(leaf);
  return std::string("the result of ") + op_name(leaf.node().op->kind);
}

// `e` must be an element-wise array (it has at least one array leaf, and leaves whose
// lengths are known agree).
void require_array(const Expr& e, const std::string& op, const std::string& role) {
  if (!e.valid()) throw GraphError(op + ": " + role + " is an empty ff::Expr");
  auto leaves = array_leaves(e);
  if (leaves.empty())
    throw GraphError(op + ": " + role + " is not an array (it uses no input or array result): " + to_string(e));
  std::int64_t n = -1;
  const Expr* first = nullptr;
  for (const auto& l : leaves) {
    std::int64_t m = static_length(l);
    if (m < 0) continue;
    if (n >= 0 && m != n)
      throw GraphError(op + ": map over arrays of different lengths: " + leaf_name(*first) + " has " +
                       std::to_string(n) + " elements, " + leaf_name(l) + " has " + std::to_string(m));
    n = m;
    first = &l;
  }
}

void require_same_length(const Expr& a, const Expr& b, const std::string& op) {
  require_array(Expr::make_tuple({a, b}), op, "its operands");
}

Expr result_of(std::shared_ptr<OpNode> n, int output = 0) {
  Type t = n->output_types[static_cast<std::size_t>(output)];
  return Expr::result(std::shared_ptr<const OpNode>(std::move(n)), output, std::move(t));
}

void require_integral_array(const Expr& e, const std::string& op, const std::string& role) {
  require_array(e, op, role);
  if (!e.type().is_integral() || e.type().is_bool())
    throw GraphError(op + ": " + role + " must be integral, got " + e.type().name());
}

void require_bins(std::int64_t bins, const std::string& op) {
  if (bins <= 0) throw GraphError(op + ": the bin count must be positive, got " + std::to_string(bins));
}

}  // namespace

namespace detail {
void require_array(const Expr& e, const std::string& op, const std::string& role) {
  fuseflow::require_array(e, op, role);
}
}  // namespace detail

std::vector<Expr> array_leaves(const Expr& e) {
  std::vector<Expr> out;
  Seen seen;
  collect_leaves(e, out, seen);
  return out;
}

bool is_array(const Expr& e) { return e.valid() && !array_leaves(e).empty(); }

namespace {
// What a scalar expression (no array leaf) reads: reductions' results, index().
struct ScalarReads {
  bool reduction = false;
  bool index = false;
  bool operand = false;
};
void scalar_reads(const Expr& e, ScalarReads& r, Seen& seen) {
  if (!seen.insert(e.get())) return;
  if (e.kind() == ExprKind::Result) r.reduction = r.reduction || e.node().op->scalar_output;
  if (e.kind() == ExprKind::Index) r.index = true;
  if (e.kind() == ExprKind::Operand) r.operand = true;
  for (const auto& a : e.args()) scalar_reads(a, r, seen);
}
ScalarReads scalar_reads(const Expr& e) {
  ScalarReads r;
  Seen seen;
  scalar_reads(e, r, seen);
  return r;
}
}  // namespace

bool is_reduction_result(const Expr& e) {
  return e.valid() && e.kind() == ExprKind::Result && e.node().op->scalar_output;
}

bool is_scalar_epilogue(const Expr& e) {
  if (!e.valid() || is_reduction_result(e) || is_array(e)) return false;
  ScalarReads r = scalar_reads(e);
  return r.reduction && !r.index && !r.operand;
}

Expr reduce(const Expr& xs, const Monoid& m, Strategy s) {
  require_array(xs, "reduce", "its argument");
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::Reduce;
  n->values = xs;
  n->monoid = m.instantiate(xs.type(), "reduce");
  detail::check_monoid_laws(n->monoid, xs, "reduce");
  if (s == Strategy::Lookback || s == Strategy::ReduceThenScan)
    throw GraphError(std::string("reduce: strategy ") + strategy_name(s) + " is a scan strategy");
  if (s == Strategy::Chunked && !n->monoid.is_commutative())
    throw GraphError("reduce: strategy chunked needs a commutative monoid; " + n->monoid.name() +
                     " is non-commutative (use staged or automatic)");
  n->strategy = s;
  n->output_types = {n->monoid.type()};
  n->scalar_output = true;
  return result_of(std::move(n));
}

Expr scan(const Expr& xs, const Monoid& m, ScanKind kind, Strategy s) {
  require_array(xs, "scan", "its argument");
  if (s != Strategy::Automatic && s != Strategy::Lookback && s != Strategy::ReduceThenScan)
    throw GraphError(std::string("scan: strategy ") + strategy_name(s) +
                     " is a reduce strategy (scan takes lookback or reduce_then_scan)");
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::Scan;
  n->values = xs;
  n->monoid = m.instantiate(xs.type(), "scan");
  detail::check_monoid_laws(n->monoid, xs, "scan");
  n->scan_kind = kind;
  n->strategy = s;
  n->output_types = {n->monoid.type()};
  return result_of(std::move(n));
}

Expr filter(const Expr& xs, const Expr& predicate) {
  require_array(xs, "filter", "its argument");
  if (!predicate.valid()) throw GraphError("filter: the predicate is an empty ff::Expr");
  if (!predicate.type().is_bool())
    throw GraphError("filter: the predicate must be bool, got " + predicate.type().name());
  require_same_length(xs, predicate, "filter");
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::Filter;
  n->values = xs;
  n->predicate = predicate;
  n->output_types = {xs.type()};
  return result_of(std::move(n));
}

namespace {
std::shared_ptr<OpNode> segmented(OpKind kind, const Expr& xs, const Expr& segments, const Monoid& m) {
  const std::string op = op_name(kind);
  require_array(xs, op, "its values");
  auto n = std::make_shared<OpNode>();
  n->kind = kind;
  n->values = xs;
  n->monoid = m.instantiate(xs.type(), op);
  detail::check_monoid_laws(n->monoid, xs, op);
  n->output_types = {n->monoid.type()};
  if (kind == OpKind::SegmentedReduce || kind == OpKind::SegmentedScan) {
    require_integral_array(segments, op, "the offsets");
    n->offsets = segments;
  } else {
    require_array(segments, op, "the keys");
    require_same_length(segments, xs, op);
    n->keys = segments;
  }
  return n;
}
}  // namespace

Expr segmented_reduce(const Expr& xs, const Expr& offsets, const Monoid& m) {
  return result_of(segmented(OpKind::SegmentedReduce, xs, offsets, m));
}

Expr segmented_scan(const Expr& xs, const Expr& offsets, const Monoid& m, ScanKind kind) {
  auto n = segmented(OpKind::SegmentedScan, xs, offsets, m);
  n->scan_kind = kind;
  return result_of(std::move(n));
}

KeyedResult reduce_by_key(const Expr& keys, const Expr& xs, const Monoid& m) {
  auto n = segmented(OpKind::ReduceByKey, xs, keys, m);
  n->output_types = {keys.type(), n->monoid.type()};
  std::shared_ptr<const OpNode> shared = std::move(n);
  return {Expr::result(shared, 0, shared->output_types[0]), Expr::result(shared, 1, shared->output_types[1])};
}

Expr scan_by_key(const Expr& keys, const Expr& xs, const Monoid& m, ScanKind kind) {
  auto n = segmented(OpKind::ScanByKey, xs, keys, m);
  n->scan_kind = kind;
  return result_of(std::move(n));
}

Expr histogram(const Expr& bin, std::int64_t nbins, const Type& count_type) {
  require_integral_array(bin, "histogram", "the bin expression");
  require_bins(nbins, "histogram");
  if (!count_type.is_scalar() ||
      (count_type.scalar() != ScalarType::U32 && count_type.scalar() != ScalarType::U64))
    throw GraphError("histogram: counts are u32 or u64, got " + count_type.name());
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::Histogram;
  n->keys = bin;
  n->bins = nbins;
  n->output_types = {count_type};
  return result_of(std::move(n));
}

Expr histogram(const Expr& bin, const Expr& weights, std::int64_t nbins) {
  require_integral_array(bin, "histogram", "the bin expression");
  require_bins(nbins, "histogram");
  if (!weights.valid()) throw GraphError("histogram: the weights are an empty ff::Expr");
  if (!weights.type().is_scalar() || weights.type().is_bool())
    throw GraphError("histogram: the weights must be numbers (f32, f64 or an integer type), got " +
                     weights.type().name() + " (" + to_string(weights) + ")");
  require_same_length(bin, weights, "histogram");
  const ScalarType w = weights.type().scalar();
  const Type sum = Type(w).is_integral() ? Type(integer_promotion(w)) : Type(w);
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::Histogram;
  n->keys = bin;
  n->values = weights.type() == sum ? weights : Expr::cast(sum, weights);
  n->bins = nbins;
  n->output_types = {sum};
  return result_of(std::move(n));
}

namespace {
std::shared_ptr<OpNode> sort_node(const Expr& keys, const Expr& values, std::int64_t nbins) {
  require_integral_array(keys, "counting_sort", "the keys");
  require_bins(nbins, "counting_sort");
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::CountingSort;
  n->keys = keys;
  n->bins = nbins;
  n->output_types = {keys.type()};
  if (values.valid()) {
    require_same_length(keys, values, "sort_by_key");
    n->values = values;
    n->output_types.push_back(values.type());
  }
  return n;
}
}  // namespace

Expr counting_sort(const Expr& keys, std::int64_t nbins) { return result_of(sort_node(keys, Expr(), nbins)); }

KeyedResult sort_by_key(const Expr& keys, const Expr& values, std::int64_t nbins) {
  if (!values.valid()) throw GraphError("sort_by_key: the values are an empty ff::Expr");
  std::shared_ptr<const OpNode> n = sort_node(keys, values, nbins);
  return {Expr::result(n, 0, n->output_types[0]), Expr::result(n, 1, n->output_types[1])};
}

namespace {
std::shared_ptr<OpNode> radix_sort_node(const Expr& keys, const Expr& values, KeyBits bits) {
  const char* op = values.valid() ? "sort_by_key" : "sort";
  if (!keys.valid()) throw GraphError(std::string(op) + ": the keys are an empty ff::Expr");
  if (!keys.type().is_scalar() || (keys.type().scalar() != ScalarType::U32 && keys.type().scalar() != ScalarType::I32 &&
                                   keys.type().scalar() != ScalarType::F32))
    throw GraphError(std::string(op) + ": the keys must be u32, i32 or f32, got " + keys.type().name() +
                     " (cast them, or use counting_sort for small integer keys)");
  if (bits.begin < 0 || bits.begin >= bits.end || bits.end > 32)
    throw GraphError(std::string(op) + ": the key bits [" + std::to_string(bits.begin) + ", " + std::to_string(bits.end) +
                     ") must satisfy 0 <= begin < end <= 32");
  auto n = std::make_shared<OpNode>();
  n->kind = OpKind::CountingSort;
  n->keys = keys;
  n->bins = 0;
  n->begin_bit = bits.begin;
  n->end_bit = bits.end;
  n->output_types = {keys.type()};
  if (values.valid()) {
    require_same_length(keys, values, op);
    n->values = values;
    n->output_types.push_back(values.type());
  }
  return n;
}
}  // namespace

Expr sort(const Expr& keys, KeyBits bits) { return result_of(radix_sort_node(keys, Expr(), bits)); }

KeyedResult sort_by_key(const Expr& keys, const Expr& values, KeyBits bits) {
  if (!values.valid()) throw GraphError("sort_by_key: the values are an empty ff::Expr");
  std::shared_ptr<const OpNode> n = radix_sort_node(keys, values, bits);
  return {Expr::result(n, 0, n->output_types[0]), Expr::result(n, 1, n->output_types[1])};
}

// ---- Program ------------------------------------------------------------------------

namespace {
struct Collector {
  std::vector<Expr>& inputs;
  std::vector<Expr>& params;
  std::vector<std::shared_ptr<const OpNode>>& ops;
  Seen seen{};

  void expr(const Expr& e) {
    if (!e.valid() || !seen.insert(e.get())) return;
    switch (e.kind()) {
      case ExprKind::Input: inputs.push_back(e); break;
      case ExprKind::Param: params.push_back(e); break;
      case ExprKind::Result: op(e.node().op); break;
      default: break;
    }
    for (const auto& a : e.args()) expr(a);
  }
  void op(const std::shared_ptr<const OpNode>& n) {
    if (!seen.insert(n.get())) return;
    for (const Expr* child : {&n->values, &n->predicate, &n->offsets, &n->keys}) expr(*child);
    ops.push_back(n);
  }
};
}  // namespace

Program::Program(const Expr& single) : Program(std::vector<Expr>{single}) {}

Program::Program(std::vector<Expr> outputs) : outputs_(std::move(outputs)) {
  if (outputs_.empty()) throw GraphError("program: an empty program (outputs() with no results)");
  scalar_outputs_.assign(outputs_.size(), false);
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const Expr& o = outputs_[i];
    if (!o.valid()) throw GraphError("program: output " + std::to_string(i) + " is an empty ff::Expr");
    if (is_scalar_output(o)) {
      scalar_outputs_[i] = true;
      continue;
    }
    if (!is_array(o)) {
      const std::string what = "program: output " + std::to_string(i) + " (" + fuseflow::to_string(o) + ")";
      ScalarReads r = scalar_reads(o);
      if (r.index)
        throw GraphError(what + " reads index() but maps over no array; an expression of reductions' results has "
                                "no element index");
      if (r.operand) throw GraphError(what + " uses an operand of a combine function outside its monoid");
      throw GraphError(what + " is neither an array nor an expression of reductions' results (it reads only "
                              "constants and parameters)");
    }
    require_array(o, "program", "output " + std::to_string(i));
  }
  Collector c{inputs_, params_, ops_};
  for (const auto& o : outputs_) c.expr(o);
  // Each leaf is met once above, so two of one name are two different leaves: pairs
  // compared while there are few (no map built per program), a map past that.
  const std::size_t leaves = inputs_.size() + params_.size();
  const auto leaf = [&](std::size_t k) -> const Expr& {
    return k < inputs_.size() ? inputs_[k] : params_[k - inputs_.size()];
  };
  if (leaves <= 16) {
    for (std::size_t a = 0; a < leaves; ++a)
      for (std::size_t b = a + 1; b < leaves; ++b)
        if (leaf(a).get() != leaf(b).get() && leaf(a).node().name == leaf(b).node().name)
          throw GraphError("program: two different inputs or parameters are named '" + leaf(a).node().name + "'");
    return;
  }
  std::map<std::string, const ExprNode*> names;
  for (const auto* list : {&inputs_, &params_}) {
    for (const auto& e : *list) {
      auto [it, fresh] = names.emplace(e.node().name, e.get());
      if (!fresh && it->second != e.get())
        throw GraphError("program: two different inputs or parameters are named '" + e.node().name + "'");
    }
  }
}

Program::Program(std::vector<Expr> outputs, const Program& order) : Program(std::move(outputs)) {
  const auto sort_like = [](std::vector<Expr>& leaves, const std::vector<Expr>& like) {
    const auto position = [&](const Expr& e) {
      return std::find_if(like.begin(), like.end(), [&](const Expr& l) { return same_node(l, e); }) - like.begin();
    };
    std::stable_sort(leaves.begin(), leaves.end(),
                     [&](const Expr& a, const Expr& b) { return position(a) < position(b); });
  };
  sort_like(inputs_, order.inputs_);
  sort_like(params_, order.params_);
}

}  // namespace fuseflow
