// The Generator (generator.hpp): the array ops, whose results have lengths of their own
// (bins, segments, n), so they are program outputs as they are; their element expressions
// may read an earlier reduction.
#include <cmath>

#include "fuzz/generator.hpp"

namespace fuseflow::fuzz::detail {

// ---- histogram, segmented reduce, counting sort ---------------------------------------

// Bin counts: 1, small, around 256, up to the largest whose private counts fit in the
// 48 KB of shared memory (12288 x 4 bytes) and just above it, and the global-atomics
// path well above.
std::int64_t Generator::histogram_bins() {
  switch (rng_.weighted({2, 4, 3, 2, 2, 2})) {
    case 0: return 1;
    case 1: return rng_.range(2, 17);
    case 2: return rng_.pick(std::vector<std::int64_t>{255, 256, 257});
    case 3: return rng_.range(300, 5000);
    case 4: return rng_.pick(std::vector<std::int64_t>{12288, 12289});
    default: return rng_.range(12290, 1 << 17);
  }
}

// Sort bins: up to the 8192 counting_sort takes; staged scatter below about 2000, direct
// above.
std::int64_t Generator::sort_bins() {
  switch (rng_.weighted({2, 5, 3, 2, 2})) {
    case 0: return 1;
    case 1: return rng_.range(2, 17);
    case 2: return rng_.pick(std::vector<std::int64_t>{255, 256, 257});
    case 3: return rng_.range(300, 8191);
    default: return 8192;
  }
}

// cast<int>(x * 2^k) of an input (x >> k of an integer one): floats cast to int. The
// product by a power of two does not round, so it is exact (the same bits everywhere).
NodeRef Generator::scaled_to_int() {
  NodeRef x = input_leaf();
  ScalarType to = rng_.pick(kIntTypes);
  if (!is_float(st(x)))
    return make_cast(to, make_binary(BinaryOp::Shr, x, make_const(ScalarType::I32, static_cast<double>(rng_.range(0, 4)))));
  auto scaled = make_binary(BinaryOp::Mul, x, make_const(st(x), std::ldexp(1.0, static_cast<int>(rng_.range(-2, 4)))));
  scaled->exact = x->exact;
  set_err(*scaled, 0, 0);
  return to_int(scaled, to);
}

// An integral bin (or key) expression over the inputs that falls in [0, bins) for a
// share of the elements and outside it (negative, or bins and above) for others.
NodeRef Generator::bin_expression(std::int64_t bins) {
  NodeRef b;
  switch (rng_.weighted({4, 4, 2})) {
    case 0: b = ensure_input(integer(depth())); break;  // any exact integer map
    case 1: b = scaled_to_int(); break;
    default: {  // index / stride: long runs of one bin (+ (x & 0), which reads an input)
      NodeRef stride = make_const(ScalarType::I64, static_cast<double>(rng_.range(1, 64)));
      NodeRef zero = make_binary(BinaryOp::BitAnd, coerce(input_leaf(), ScalarType::I64), make_const(ScalarType::I64, 0));
      b = make_binary(BinaryOp::Add, make_binary(BinaryOp::Div, index_, stride), zero);
      break;
    }
  }
  switch (rng_.weighted({2, 5, 2})) {
    case 0: return b;  // as it is: often out of range
    case 1: {          // b % m, m at or a little above bins: a signed b gives negative bins too
      std::int64_t m = bins + rng_.pick(std::vector<std::int64_t>{0, 0, 1, 3, bins / 3});
      return make_binary(BinaryOp::Mod, b, make_const(st(b), static_cast<double>(m)));
    }
    default:  // b - c
      return make_binary(BinaryOp::Sub, b, make_const(st(b), static_cast<double>(rng_.range(0, bins / 4 + 2))));
  }
}

OpDesc Generator::histogram_op() {
  OpDesc op;
  op.kind = OpKind::Histogram;
  op.bins = histogram_bins();
  op.keys = bin_expression(op.bins);
  op.count_type = rng_.chance(0.5) ? ScalarType::U32 : ScalarType::U64;
  // Weighted: integer weights, so that the sums compare exactly (they wrap alike). Up to
  // 6000 bins the sums fit in shared memory; more (up to 2^17 here) are sorted by coarse
  // bucket and a bucket's sums kept in shared memory (histogram_bucketed.cpp).
  if (op.bins <= 6000 ? rng_.chance(0.3) : rng_.chance(0.2)) {
    op.values = ensure_input(integer(depth()));
    if (st(op.values) == ScalarType::Bool) op.values = coerce(op.values, ScalarType::I32);
  }
  // A filter feeding it, index() (the position among the survivors) beside: the bin is
  // filter(bin, p) + index() % 3 (build.cpp; histogram_positions.cpp plans it).
  if (rng_.chance(0.15)) op.predicate = ensure_input(boolean(depth()));
  return op;
}

// Values for sort_by_key: the element index (alone or beside an exact value), so that
// comparing the permuted values exactly checks that the sort is stable.
NodeRef Generator::sort_values() {
  switch (rng_.weighted({3, 4, 2})) {
    case 0: return index_;
    case 1: return make_tuple({ensure_input(number(depth(), true)), index_});
    default: return ensure_input(number(depth(), true));
  }
}

OpDesc Generator::sort_op(bool with_values) {
  OpDesc op;
  op.kind = OpKind::CountingSort;
  if (with_values) op.values = sort_values();
  if (rng_.chance(0.35)) {
    // A radix sort of u32, i32 or f32 keys (ff::sort): all 32 bits, one 8-bit digit, or
    // a random range. Keys from an integer map; f32 ones cast from it, so negatives,
    // zeros and ties come up; the cast rounds alike on both sides.
    switch (rng_.weighted({3, 2, 3})) {
      case 0: op.begin_bit = 0, op.end_bit = 32; break;
      case 1: op.begin_bit = 0, op.end_bit = 8; break;
      default:
        op.begin_bit = static_cast<int>(rng_.range(0, 30));
        op.end_bit = static_cast<int>(rng_.range(op.begin_bit + 1, 32));
    }
    NodeRef k = bin_expression(rng_.pick(std::vector<std::int64_t>{16, 256, 100000}));
    switch (rng_.weighted({2, 2, 2})) {
      case 0: op.keys = coerce(k, ScalarType::U32); break;
      case 1: op.keys = coerce(k, ScalarType::I32); break;
      default: op.keys = make_cast(ScalarType::F32, k);
    }
    return op;
  }
  op.bins = sort_bins();
  op.keys = bin_expression(op.bins);
  return op;
}

// The offsets input of a segmented op: its own length, never read as elements.
int Generator::offsets_input() {
  InputSpec s;
  s.name = "o";
  s.type = rng_.pick(kIntTypes);
  s.offsets = true;
  s.pattern = static_cast<SegmentPattern>(rng_.weighted({4, 3, 3, 2, 3, 3, 1}));
  s.partial = rng_.chance(0.25);
  c_.inputs.push_back(s);
  return static_cast<int>(c_.inputs.size()) - 1;
}

OpDesc Generator::segmented_op(int offsets) {
  OpDesc op;
  op.kind = OpKind::SegmentedReduce;
  op.monoid = pick_monoid(false);
  op.values = values_for(op.monoid);
  op.offsets_input = offsets;
  op.offsets_cast = c_.inputs[static_cast<std::size_t>(offsets)].type != ScalarType::I64 && rng_.chance(0.25);
  return op;
}

// A per-row program: max or min (exact values), or an integer plus, of each row of c
// elements (ff::rows over input 0), and an output reading each element's row result
// (ff::broadcast) beside an input: x - rowmax style, one kernel when a row fits a block.
void Generator::rows_broadcast() {
  OpDesc op;
  op.rows = rng_.pick(std::vector<std::int64_t>{1, 3, 32, 100, 1000, 1024, 3000});
  c_.outputs.push_back({-1, beside_broadcast(push_exact_segmented(op)), 0});
}

// `op` (its rows or offsets set) as a segmented reduce of an input by an exact monoid,
// pushed: its number.
int Generator::push_exact_segmented(OpDesc op) {
  op.kind = OpKind::SegmentedReduce;
  op.values = input_leaf();
  op.monoid = exact_monoid(!is_float(st(op.values)));
  c_.ops.push_back(op);
  return static_cast<int>(c_.ops.size()) - 1;
}

// Max or min (exact for any values), or for integers now and then plus.
MonoidChoice Generator::exact_monoid(bool integral) {
  return integral && rng_.chance(0.4) ? MonoidChoice::Plus : rng_.chance(0.5) ? MonoidChoice::Max : MonoidChoice::Min;
}

// The broadcast of op k (a segmented reduce of an input: max, min or integer plus, exact)
// beside another input: x - b, b + x ...
NodeRef Generator::beside_broadcast(int k) {
  const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
  const NodeRef& v = op.values;
  auto b = fresh(NodeKind::Broadcast, v->type);
  b->index = k;
  b->bound = op.monoid == MonoidChoice::Plus ? type_max(st(v)) : v->bound;
  b->exact = true;  // integers, or the max / min of exact values
  b->reads_input = true;
  const BinaryOp bop = rng_.pick(std::vector<BinaryOp>{BinaryOp::Add, BinaryOp::Sub});
  NodeRef other = coerce(input_leaf(), st(v));
  return tame(rng_.chance(0.5) ? make_binary(bop, other, b) : make_binary(bop, b, other));
}

// ---- compaction, segmented scans, by-key ops ---------------------------------------

// A filter as an output: the survivors of a scalar, or of a (value, index) tuple (the
// index tells which elements survived, in order); the values are exact when they are a
// tuple, so it compares exactly.
OpDesc Generator::filter_op() {
  OpDesc op;
  op.kind = OpKind::Filter;
  if (rng_.chance(0.3)) op.values = make_tuple({ensure_input(number(depth(), true)), index_});
  else op.values = ensure_input(number(depth(), rng_.chance(0.5)));
  op.predicate = ensure_input(boolean(depth()));
  return op;
}

// The filter's output: its survivors as they are, or a map over them: constants and the
// parameter, index() (the position among the survivors) and other arrays (read at the
// survivors' positions). The map's condition compares exact survivors only.
NodeRef Generator::filter_output(int k, bool mix) {
  const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
  auto e = fresh(NodeKind::ScanElement, op.values->type);
  e->index = k;
  e->exact = op.values->exact;
  if (op.values->type.is_scalar()) {
    e->bound = op.values->bound;
    set_err(*e, op.values->abs_err, op.values->rel_err);
  }
  if (!mix && rng_.chance(0.45)) return e;
  NodeRef s = e;
  if (e->type.is_tuple()) {
    auto g = make_get(e, rng_.chance(0.5) ? 0 : 1);
    const NodeRef& field = op.values->args[static_cast<std::size_t>(g->index)];
    g->bound = field->bound;
    g->exact = field->exact;
    s = g;
    if (!mix && rng_.chance(0.3)) return s;
  }
  const ScalarType t = st(s);
  switch (mix ? 4 + rng_.weighted({3, 2}) : rng_.weighted({4, s->exact ? 3 : 0, 2, 2, 3, 2})) {
    case 4: {  // s op an expression of the inputs at the survivors' positions
      BinaryOp bop = rng_.pick(std::vector<BinaryOp>{BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul});
      return tame(make_binary(bop, s, coerce(tame(ensure_input(number(depth() - 1, s->exact))), t)));
    }
    case 5:  // s + the position among the survivors
      return tame(make_binary(BinaryOp::Add, s, coerce(index_, t)));
    case 0: {  // s op constant (or the parameter)
      BinaryOp bop = rng_.pick(std::vector<BinaryOp>{BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul});
      NodeRef other = !params_.empty() && rng_.chance(0.3) ? rng_.pick(params_)
                                                            : make_const(t, static_cast<double>(rng_.range(is_unsigned(t) ? 0 : -3, 3)));
      return tame(make_binary(bop, s, other));
    }
    case 1: return make_select(make_binary(BinaryOp::Gt, s, similar_constant(s)), s, make_const(t, 7));
    case 2:
      if (is_float(t)) return make_cast(ScalarType::F64, s);
      return make_cast(rng_.pick(kIntTypes), s);
    default:
      if (is_float(t)) return rng_.chance(0.5) ? NodeRef(make_call(MathFn::Sqrt, {make_call(MathFn::Abs, {s})}))
                                               : NodeRef(make_call(MathFn::Abs, {s}));
      return make_call(MathFn::Abs, {s});
  }
}

// Values of a segmented scan or a by-key op: values_for, and for plus, min, max, argmin
// and argmax often cast to a float (and scaled by 0.1, which rounds), so that the
// per-segment float checks meet more cases than the inputs' types alone give.
void Generator::more_floats(OpDesc& op) {
  const bool numeric = op.monoid == MonoidChoice::Plus || op.monoid == MonoidChoice::Min ||
                       op.monoid == MonoidChoice::Max || op.monoid == MonoidChoice::ArgMin ||
                       op.monoid == MonoidChoice::ArgMax;
  if (!numeric || is_float(st(op.values)) || !rng_.chance(0.6)) return;
  NodeRef f = to_float(op.values);
  // times 0.1 (rounded): inexact values, so min / max / argmin / argmax compare within a bound too
  if (rng_.chance(0.5)) f = make_binary(BinaryOp::Mul, f, make_const(st(f), 0.1));
  op.values = tame(f);
}

OpDesc Generator::segmented_scan_op(int offsets) {
  OpDesc op = segmented_op(offsets);
  op.kind = OpKind::SegmentedScan;
  op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
  more_floats(op);
  return op;
}

// The key input of a by-key op: a random walk (InputSpec::walk) that stays put with a
// probability from "always moves" to "long runs".
NodeRef Generator::walk_input() {
  InputSpec s;
  s.name = "k";
  s.type = rng_.pick(kIntTypes);
  s.walk = true;
  s.stay = rng_.pick(std::vector<double>{0, 0.5, 0.9, 0.99, 0.999});
  s.lo = is_unsigned(s.type) ? 0 : -50;
  s.hi = 50;
  c_.inputs.push_back(s);
  auto n = make_input(static_cast<int>(c_.inputs.size()) - 1, s);
  n->bound = 50 + 2 * static_cast<double>(c_.n);
  return n;
}

// An integral key with runs of equal consecutive values.
NodeRef Generator::scalar_key(const NodeRef& walk) {
  switch (rng_.weighted({5, 2, 2})) {
    case 0: {  // the walk, as it is or coarsened: k / 2, k % 5, k >> 1
      switch (rng_.weighted({3, 1, 1, 1})) {
        case 0: return walk;
        case 1: return make_binary(BinaryOp::Div, walk, make_const(st(walk), 2));
        case 2: return make_binary(BinaryOp::Mod, walk, make_const(st(walk), 5));
        default: return make_binary(BinaryOp::Shr, walk, make_const(ScalarType::I32, 1));
      }
    }
    case 1: {  // index / stride (+ (x & 0), which reads an input): runs of `stride`
      NodeRef stride = make_const(ScalarType::I64, static_cast<double>(rng_.range(1, 64)));
      NodeRef zero = make_binary(BinaryOp::BitAnd, coerce(input_leaf(), ScalarType::I64), make_const(ScalarType::I64, 0));
      return make_binary(BinaryOp::Add, make_binary(BinaryOp::Div, index_, stride), zero);
    }
    default: {  // an exact integer map of the inputs, in a small range: v % 2 or v % 3
      NodeRef v = ensure_input(integer(static_cast<int>(rng_.range(0, 2))));
      return make_binary(BinaryOp::Mod, v, make_const(st(v), static_cast<double>(rng_.range(2, 3))));
    }
  }
}

// The key of a by-key op: a scalar, or now and then a (key, i64 key) tuple.
NodeRef Generator::by_key_keys() {
  NodeRef walk = walk_input();
  NodeRef a = scalar_key(walk);
  if (!rng_.chance(0.15)) return a;
  if (!is_int(st(a)) || st(a) == ScalarType::U64) a = make_cast(ScalarType::I64, a);
  return make_tuple({a, make_cast(ScalarType::I64, scalar_key(walk))});
}

OpDesc Generator::by_key_op(OpKind kind) {
  OpDesc op;
  op.kind = kind;
  op.monoid = pick_monoid(kind == OpKind::ScanByKey);
  op.values = values_for(op.monoid);
  more_floats(op);
  op.keys = by_key_keys();
  op.scan_kind = rng_.chance(0.5) ? ScanKind::Inclusive : ScanKind::Exclusive;
  return op;
}

// scan_by_key, reduce_by_key or a sort of a filter's result (the staging pass compacts the
// survivors, then runs the op over them): an exact predicate; the by-key ops over integer
// values and exact monoids, so every output compares exactly.
OpDesc Generator::filtered_keyed_op() {
  const std::size_t which = rng_.weighted({1, 1, 1, 1});
  OpDesc op = which < 2 ? by_key_op(which == 0 ? OpKind::ScanByKey : OpKind::ReduceByKey) : sort_op(which == 3);
  if (which < 2) {
    op.monoid = rng_.pick(std::vector<MonoidChoice>{MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max});
    op.values = ensure_input(integer(depth()));
  }
  op.predicate = ensure_input(boolean(depth()));
  return op;
}

// The outputs of op k (sort_by_key: its keys, its values, or both; reduce_by_key: the
// same; a filter: its survivors, perhaps mapped).
void Generator::array_op_outputs(int k) {
  const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
  if (op.kind == OpKind::Filter) {
    c_.outputs.push_back({-1, filter_output(k, false), 0});
    // A second output over the same survivors, reading other inputs or index(): both are
    // written by one compaction (lift_filters).
    if (rng_.chance(0.6)) c_.outputs.push_back({-1, filter_output(k, true), 0});
    return;
  }
  const bool keyed = (op.kind == OpKind::CountingSort && op.values) || op.kind == OpKind::ReduceByKey;
  // A map of a sort's or reduce_by_key's keys in the same program (the staging pass: the op
  // writes them into an intermediate, a later kernel reads it; reduce_by_key's runs masked
  // by their device count): integer keys of a small bound, doubled exactly.
  if ((op.kind == OpKind::CountingSort || op.kind == OpKind::ReduceByKey) && op.keys->type.is_scalar() &&
      is_int(st(op.keys)) && op.keys->bound < 1e9 && rng_.chance(0.3)) {
    auto e = fresh(NodeKind::ScanElement, op.keys->type);
    e->index = k;
    e->bound = op.keys->bound;
    e->exact = true;
    c_.outputs.push_back({-1, make_binary(BinaryOp::Add, e, e), 0});
  }
  if (!keyed) {
    c_.outputs.push_back({k, nullptr, 0});
    return;
  }
  switch (rng_.weighted({3, 2, 1})) {
    case 0:
      c_.outputs.push_back({k, nullptr, 0});
      c_.outputs.push_back({k, nullptr, 1});
      break;
    case 1: c_.outputs.push_back({k, nullptr, 1}); break;
    default: c_.outputs.push_back({k, nullptr, 0}); break;
  }
}

bool Generator::op_reads_op(const OpDesc& d, int op) {
  return reads_op(d.values, op) || reads_op(d.predicate, op) || reads_op(d.keys, op);
}

void Generator::make_array_op_shape() {
  std::size_t k = draw_shape(kArrayWeights);
  c_.shape = kArrayShapes[k];
  switch (k) {
    case 0:
      c_.ops.push_back(histogram_op());
      if (!c_.ops.back().values && rng_.chance(0.3)) return gathered_bins(0);
      break;
    case 1:
      if (rng_.chance(0.35)) return rows_broadcast();
      if (rng_.chance(0.3)) return offsets_broadcast();
      if (rng_.chance(0.2)) return rows_beside();
      if (rng_.chance(0.2)) return offsets_and_key_broadcasts();
      if (rng_.chance(0.25)) return offsets_broadcast(true);
      c_.ops.push_back(rng_.chance(0.3) ? scanned_offsets_op(false) : segmented_op(offsets_input()));
      break;
    case 2: c_.ops.push_back(sort_op(false)); break;
    case 3: c_.ops.push_back(sort_op(true)); break;
    case 5: c_.ops.push_back(filter_op()); break;
    case 6: c_.ops.push_back(rng_.chance(0.3) ? scanned_offsets_op(true) : segmented_scan_op(offsets_input())); break;
    case 7: c_.ops.push_back(by_key_op(OpKind::ScanByKey)); break;
    case 8:
      c_.ops.push_back(by_key_op(OpKind::ReduceByKey));
      if (rng_.chance(0.6)) by_key_broadcast(static_cast<int>(c_.ops.size()) - 1);
      break;
    case 9:  // now and then a segmented op by offsets of a filter's result instead
      c_.ops.push_back(rng_.chance(0.35) ? filtered_segmented_op() : filtered_keyed_op());
      break;
    default: {
      // An array op whose element expression reads a reduction's result (a few tries;
      // else the last one drawn), sometimes with the reduction as an output too.
      scalar_reduce();
      const std::size_t which = rng_.weighted({1, 1, 1});
      const int offsets = which == 1 ? offsets_input() : -1;
      auto make = [&] {
        return which == 0 ? histogram_op() : which == 1 ? segmented_op(offsets) : sort_op(rng_.chance(0.6));
      };
      OpDesc d = make();
      for (int tries = 0; tries < 20 && !op_reads_op(d, 0); ++tries) d = make();
      c_.ops.push_back(d);
      if (rng_.chance(0.5)) c_.outputs.push_back({0, nullptr, 0});
      array_op_outputs(1);
      return;
    }
  }
  array_op_outputs(0);
}

// A broadcast over an offsets input (covering every element) read by another op beside it
// (issue 25: staged, the segmented reduction first): a reduction (max or min, exact; plus of
// integers) of an element-wise map of the broadcast and an input, the map an output too.
// `scanned`: over the exclusive scan of segment lengths (issue 25: offsets that are an
// expression, staged into an intermediate of their own length before the broadcast's stages).
void Generator::offsets_broadcast(bool scanned) {
  const int o = offsets_input();
  InputSpec& offsets = c_.inputs[static_cast<std::size_t>(o)];
  offsets.partial = false;  // a broadcast needs every element in a segment
  offsets.lengths = scanned;
  if (offsets.pattern == SegmentPattern::None) offsets.pattern = SegmentPattern::Between;
  OpDesc op;
  op.offsets_input = o;
  op.offsets_scan = scanned;
  const int k = push_exact_segmented(op);
  const NodeRef m = beside_broadcast(k);
  OpDesc beside;
  beside.kind = OpKind::Reduce;
  beside.monoid = exact_monoid(!is_float(st(c_.ops[static_cast<std::size_t>(k)].values)));
  beside.values = m;
  c_.ops.push_back(beside);
  c_.outputs.push_back({k + 1, nullptr, 0});
  if (rng_.chance(0.5)) c_.outputs.push_back({-1, m, 0});
}

// The counts of histogram k gathered at index() % bins beside an input (issue 25: stage 1
// writes the bins into an intermediate of their own length, which the gather checks its
// index against), the counts an output too now and then.
void Generator::gathered_bins(int k) {
  const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
  auto g = fresh(NodeKind::Broadcast, op.count_type);
  g->index = k;
  g->args = {make_binary(BinaryOp::Mod, index_, make_const(ScalarType::I64, static_cast<double>(op.bins)))};
  g->bound = type_max(op.count_type);
  g->exact = true;
  g->reads_input = true;
  if (rng_.chance(0.5)) c_.outputs.push_back({k, nullptr, 0});
  c_.outputs.push_back({-1, tame(make_binary(BinaryOp::Add, g, coerce(input_leaf(), op.count_type))), 0});
}

// An output reading each element's run's key (broadcast_by_key of reduce_by_key's keys,
// issue 25: staged, the runs numbered by a scan) beside an input: exact, and wrong wherever
// an element is given another run. Scalar keys only (tuple keys are refused).
namespace {

// Whether a key expression reads only what broadcast_by_key can shift by one element to find
// each run's head: inputs, parameters, constants, reductions and index() (no gather, shift,
// fill or array result; the code generator refuses those, fuzz seed 1224).
bool keys_shiftable(const NodeRef& n) {
  switch (n->kind) {
    case NodeKind::Shift: case NodeKind::Gather: case NodeKind::Fill: case NodeKind::ScanElement:
    case NodeKind::Broadcast:
      return false;
    default:
      break;
  }
  for (const NodeRef& a : n->args)
    if (!keys_shiftable(a)) return false;
  return true;
}

}  // namespace

void Generator::by_key_broadcast(int k) {
  const OpDesc& op = c_.ops[static_cast<std::size_t>(k)];
  if (!op.keys->type.is_scalar() || !keys_shiftable(op.keys)) return;
  auto b = fresh(NodeKind::Broadcast, op.keys->type);
  b->index = k;
  b->bound = op.keys->bound;
  b->exact = true;
  b->reads_input = true;
  c_.outputs.push_back({-1, tame(make_binary(BinaryOp::Add, b, coerce(input_leaf(), st(op.keys)))), 0});
}

// A segmented reduce or scan by offsets of a filter's result (issue 21: the staging pass
// compacts the survivors, and the offsets index them, as in the CPU reference): the
// predicate index() % every == 0 keeps ceil(n / every) survivors, the length the offsets
// input is drawn for (InputSpec::every); integer values and exact monoids, so every output
// compares exactly.
OpDesc Generator::filtered_segmented_op() {
  const int o = offsets_input();
  const std::int64_t every = rng_.range(1, 3);
  c_.inputs[static_cast<std::size_t>(o)].every = every;
  OpDesc op = rng_.chance(0.5) ? segmented_op(o) : segmented_scan_op(o);
  op.monoid = rng_.pick(std::vector<MonoidChoice>{MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max});
  op.values = ensure_input(integer(depth()));
  op.predicate = make_binary(BinaryOp::Eq, make_binary(BinaryOp::Mod, index_, make_const(ScalarType::I64, static_cast<double>(every))),
                             make_const(ScalarType::I64, 0));
  return op;
}

// A reduction beside a broadcast over ff::rows (issue 25: staged, the per-row kernel writing
// the broadcast first), the draws of offsets_broadcast's reduction.
void Generator::rows_beside() {
  OpDesc op;
  op.rows = rng_.pick(std::vector<std::int64_t>{1, 3, 100, 1024});
  const int k = push_exact_segmented(op);
  const NodeRef m = beside_broadcast(k);
  OpDesc beside;
  beside.kind = OpKind::Reduce;
  beside.monoid = exact_monoid(!is_float(st(c_.ops[static_cast<std::size_t>(k)].values)));
  beside.values = m;
  c_.ops.push_back(beside);
  c_.outputs.push_back({k + 1, nullptr, 0});
  if (rng_.chance(0.5)) c_.outputs.push_back({-1, m, 0});
}

// A broadcast over offsets beside a reduction, and reduce_by_key in the same program with a
// broadcast_by_key of its keys where they can be broadcast (else its runs as an output).
void Generator::offsets_and_key_broadcasts() {
  offsets_broadcast();
  c_.ops.push_back(by_key_op(OpKind::ReduceByKey));
  const int k = static_cast<int>(c_.ops.size()) - 1;
  const std::size_t before = c_.outputs.size();
  by_key_broadcast(k);
  if (c_.outputs.size() == before) c_.outputs.push_back({k, nullptr, 1});
}

// A segmented reduce or scan by offsets computed in the program (issue 21): the exclusive
// scan of segment lengths (CSR from row lengths), staged over the lengths' own length before
// the segmented op. Integer values and exact monoids, so every output compares exactly.
OpDesc Generator::scanned_offsets_op(bool scan) {
  const int o = offsets_input();
  InputSpec& lengths = c_.inputs[static_cast<std::size_t>(o)];
  lengths.partial = false;  // the scan starts at 0
  lengths.lengths = true;
  if (lengths.pattern == SegmentPattern::None) lengths.pattern = SegmentPattern::Tiny;
  OpDesc op = scan ? segmented_scan_op(o) : segmented_op(o);
  op.offsets_scan = true;
  op.monoid = rng_.pick(std::vector<MonoidChoice>{MonoidChoice::Plus, MonoidChoice::Min, MonoidChoice::Max});
  op.values = ensure_input(integer(depth()));
  return op;
}

}  // namespace fuseflow::fuzz::detail
