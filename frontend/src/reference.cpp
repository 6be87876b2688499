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
//                     in the count type, as the device's atomics do; with weights, their
//                     sums per bin (integers wrap; floats summed in f64, rounded once)
//   counting_sort     stable by key in [0, bins); a key outside (negative, or >= bins)
//                     sorts after every key inside, in input order (one more bin, as if
//                     it were `bins`), so the output is always a permutation of the input;
//                     output 1 carries the values along when the op has them
//
// Element-wise expressions are evaluated in parallel (they have no order); every
// combine runs sequentially in element order, so results do not depend on the thread count.
// Expressions are compiled to instructions over 64-bit slots (see Code); built-in monoids
// over scalars take a typed loop.
//
// The pieces: host_array.cpp (HostArray, HostBindings), reference_code (expressions
// compiled to slot instructions), reference_parallel (element-wise work on every core),
// reference_combiner (monoids over packed elements), reference_keys (keys, bins, offsets).
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "fuseflow/frontend/filter_lift.hpp"
#include "fuseflow/frontend/reference.hpp"
#include "reference_code.hpp"
#include "reference_combiner.hpp"
#include "reference_keys.hpp"
#include "reference_parallel.hpp"

namespace fuseflow {

namespace {

using namespace cpu_reference;

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
    if (is_scalar_epilogue(o)) {  // an expression of reductions' results: one value
      HostArray one(o.type(), 1);
      evaluate_into(compile(o), 0, 1, one.data());
      r.is_scalar = true;
      r.scalar = one.at(0);
      return r;
    }
    std::size_t n = length({&o}, "output " + std::to_string(k));
    r.array = HostArray(o.type(), n);
    evaluate_into(compile(o), 0, n, r.array.data());
    return r;
  }

  const OpResults& results_of(const OpNode& op) const {
    auto it = done_.find(&op);
    // Program::ops() lists every op after the ops it reads.
    if (it == done_.end()) throw InternalError(std::string(op_name(op.kind)) + " used before it ran");
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
      case ExprKind::Broadcast:
      case ExprKind::Rows: d.array = &derived(leaf); break;
      default:
        if (n.kind == ExprKind::Operand || !is_array(leaf))
          throw GraphError("an element-wise expression uses operand " + fuseflow::to_string(leaf) +
                           " of a combine function");
        d.array = &derived(leaf);  // a gather's computed table or a computed shifted array, evaluated once
    }
    return d;
  }

  Code compile(const Expr& e) const {
    return cpu_reference::compile(e, [this](const Expr& leaf) { return leaf_data(leaf); });
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
    if (leaf.kind() == ExprKind::Rows) return "the offsets " + fuseflow::to_string(leaf);
    if (leaf.kind() == ExprKind::Fill) return fuseflow::to_string(leaf);
    return std::string("the result of ") + op_name(leaf.node().op->kind);
  }

  // The length a fill's parameter holds: a whole number of at least 0.
  std::size_t param_length(const Expr& p) const {
    const Value* v = bindings_.param(p);
    if (!v) throw GraphError("parameter '" + p.node().name + "' is not bound");
    const std::int64_t n = v->as_int();
    if (n < 0)
      throw GraphError("fill: parameter '" + p.node().name + "' is the length of a fill or iota and holds " +
                       std::to_string(n) + "; a length must be at least 0");
    return static_cast<std::size_t>(n);
  }

  std::size_t leaf_length(const Expr& leaf) const {
    if (leaf.kind() == ExprKind::Input) {
      const HostArray* a = bindings_.array(leaf);
      if (!a) throw GraphError("input '" + leaf.node().name + "' is not bound");
      return a->size();
    }
    if (leaf.kind() == ExprKind::Rows) return derived(leaf).size();
    if (leaf.kind() == ExprKind::Fill && leaf.args().size() == 2) return param_length(leaf.args()[1]);
    if (leaf.kind() == ExprKind::Fill) return static_cast<std::size_t>(leaf.node().length);
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
    if (op.values.valid()) return weighted_histogram(op);
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

  // Sums of the weights per bin: integers modulo 2^bits (summed in u64, then truncated),
  // floats summed in f64 in element order and rounded once to the weights' type.
  HostArray weighted_histogram(const OpNode& op) const {
    std::size_t n = length({&op.keys, &op.values}, "histogram");
    Elements bins = elements(op.keys, n), weights = elements(op.values, n);
    const ScalarType t = op.keys.type().scalar(), w = op.values.type().scalar();
    const bool integral = Type(w).is_integral();
    auto nbins = static_cast<std::size_t>(op.bins);
    Split s = split(n);
    std::vector<std::vector<std::uint64_t>> isum(s.chunks, std::vector<std::uint64_t>(integral ? nbins : 0, 0));
    std::vector<std::vector<double>> fsum(s.chunks, std::vector<double>(integral ? 0 : nbins, 0.0));
    parallel_for(s, [&](std::size_t c) {
      for (std::size_t i = s.begin(c); i < s.end(c); ++i) {
        std::int64_t b = read_integer(t, bins.data() + i * scalar_size(t));
        if (b < 0 || b >= op.bins) continue;
        const std::byte* at = weights.data() + i * scalar_size(w);
        if (integral) isum[c][static_cast<std::size_t>(b)] += static_cast<std::uint64_t>(read_integer(w, at));
        else fsum[c][static_cast<std::size_t>(b)] += Value::from_bytes(Type(w), at).as_double();
      }
    });
    HostArray out(Type(w), nbins);
    for (std::size_t b = 0; b < nbins; ++b) {
      std::uint64_t itotal = 0;
      double ftotal = 0.0;
      for (std::size_t c = 0; c < s.chunks; ++c) {
        if (integral) itotal += isum[c][b];
        else ftotal += fsum[c][b];
      }
      (integral ? Value::from_uint(w, itotal) : Value::from_double(w, ftotal)).to_bytes(out.data() + b * scalar_size(w));
    }
    return out;
  }

  // The bits of a 32-bit key whose unsigned order is the key's order: u32 as it is, i32
  // with the sign bit flipped, f32 with the sign bit flipped when positive and every bit
  // when negative (so -0.0 < +0.0), every NaN above +inf.
  static std::uint64_t ordered_key_bits(ScalarType t, const std::byte* key) {
    std::uint32_t b = 0;
    std::memcpy(&b, key, 4);
    if (t == ScalarType::I32) return b ^ 0x80000000u;
    if (t != ScalarType::F32) return b;
    if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    return b & 0x80000000u ? ~b : b ^ 0x80000000u;
  }

  std::vector<HostArray> counting_sort(const OpNode& op) const {
    bool with_values = op.values.valid();
    std::size_t n = with_values ? length({&op.keys, &op.values}, "counting_sort") : length({&op.keys}, "counting_sort");
    Elements keys = elements(op.keys, n);
    ScalarType t = op.keys.type().scalar();
    std::size_t key_size = scalar_size(t);
    std::vector<std::size_t> dest(n);
    if (op.bins == 0) {
      // A radix sort (ff::sort): by bits [begin_bit, end_bit) of the key's ordered form.
      const std::uint64_t mask = (std::uint64_t{1} << (op.end_bit - op.begin_bit)) - 1;
      std::vector<std::uint64_t> digit(n);
      for (std::size_t i = 0; i < n; ++i) digit[i] = (ordered_key_bits(t, keys.data() + i * key_size) >> op.begin_bit) & mask;
      std::vector<std::size_t> order(n);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return digit[a] < digit[b]; });
      for (std::size_t j = 0; j < n; ++j) dest[order[j]] = j;
    } else {
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
      for (std::size_t i = 0; i < n; ++i) dest[i] = start[bin[i]]++;
    }
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

  // ---- arrays the evaluator makes for leaves (broadcast, rows) -----------------------

  // The array of a Broadcast or Rows leaf, made at its first use (map nodes keep their
  // addresses, which compiled Loads point at).
  const HostArray& derived(const Expr& leaf) const {
    auto it = derived_.find(leaf.get());
    if (it != derived_.end()) return it->second;
    HostArray a = leaf.kind() == ExprKind::Rows ? rows(leaf) : leaf.kind() == ExprKind::Broadcast ? broadcast(leaf)
                                                                                            : computed(leaf);
    return derived_.emplace(leaf.get(), std::move(a)).first->second;
  }

  // An array expression read at computed positions (a gather's table, a shifted array).
  HostArray computed(const Expr& e) const {
    const std::size_t n = length({&e}, "the table " + fuseflow::to_string(e));
    HostArray out(e.type(), n);
    evaluate_into(compile(e), 0, n, out.data());
    return out;
  }

  // 0, c, 2c ... n: ceil(n / c) + 1 offsets of rows of c elements over x's n.
  HostArray rows(const Expr& leaf) const {
    const std::size_t n = length({&leaf.args()[0]}, "rows");
    const auto c = static_cast<std::size_t>(leaf.node().length);
    const std::size_t count = (n + c - 1) / c;
    HostArray out(ScalarType::I64, count + 1);
    for (std::size_t s = 0; s <= count; ++s) {
      const auto at = static_cast<std::int64_t>(std::min(s * c, n));
      std::memcpy(out.data() + s * sizeof at, &at, sizeof at);
    }
    return out;
  }

  // Each element of the reduction gets its segment's result: the segments by offsets must
  // cover the elements exactly (offsets[0] == 0, the last offset n).
  HostArray broadcast(const Expr& leaf) const {
    const Expr& r = leaf.args()[0];
    const OpNode& op = *r.node().op;
    const bool by_key = op.kind == OpKind::ReduceByKey;
    const std::string what = by_key ? "broadcast_by_key" : "broadcast";
    const std::size_t n = by_key ? length({&op.keys, &op.values}, what) : length({&op.values}, what);
    std::vector<std::size_t> bounds;
    if (by_key) {
      Elements keys = elements(op.keys, n);
      bounds = key_runs(op.keys.type(), keys.data(), n);
    } else {
      bounds = segment_bounds(op, n);
      if (bounds.front() != 0 || bounds.back() != n)
        throw GraphError("broadcast: the offsets " + fuseflow::to_string(op.offsets) + " cover elements [" +
                         std::to_string(bounds.front()) + ", " + std::to_string(bounds.back()) + ") of the " +
                         std::to_string(n) + " the reduction reads; a broadcast needs every element in a segment " +
                         "(first offset 0, last offset " + std::to_string(n) + ")");
    }
    const HostArray& per_segment = results_of(op).arrays[static_cast<std::size_t>(r.node().index)];
    const std::size_t size = r.type().size();
    HostArray out(r.type(), n);
    for (std::size_t s = 0; s + 1 < bounds.size(); ++s)
      for (std::size_t i = bounds[s]; i < bounds[s + 1]; ++i)
        std::memcpy(out.data() + i * size, per_segment.data() + s * size, size);
    return out;
  }

  const Program& program_;
  const HostBindings& bindings_;
  std::map<const OpNode*, OpResults> done_;
  mutable std::map<const ExprNode*, HostArray> derived_;
};

}  // namespace

std::vector<HostResult> evaluate(const Program& p, const HostBindings& b) {
  const Program lifted = lift_filters(p);  // filters' results mixed with other arrays (filter_lift.hpp)
  return Evaluator(lifted, b).run();
}

Value evaluate_constant(const Expr& e) {
  if (!e.valid()) throw GraphError("evaluate_constant: an empty ff::Expr");
  return run_once(compile(e, [&e](const Expr& leaf) -> LeafData {
    throw GraphError("the expression " + fuseflow::to_string(e) + " is not a constant: it uses " +
                     fuseflow::to_string(leaf));
  }));
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
