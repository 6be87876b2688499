// A Case as an ff::Program (as it is, or with every f32 widened to f64) and its input data,
// deterministic from the seed (program_generator.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <type_traits>

#include "catalog/catalog.hpp"
#include "fuzz/fuzz_detail.hpp"

namespace fuseflow::fuzz {

using namespace detail;

namespace {

// ---- building -------------------------------------------------------------------------

class Builder {
 public:
  Builder(const Case& c, Mode m) : c_(c), mode_(m) {}

  Built run() {
    std::vector<Expr> values, predicates, keys;
    for (const auto& in : c_.inputs) inputs_.push_back(ff_input(in));
    for (const auto& p : c_.params) params_.push_back(Expr::param(p.name, widen(p.value.type(), mode_)));
    for (const auto& op : c_.ops) {
      keys.push_back(is_by_key(op.kind) ? node(op.keys) : Expr());
      if (is_array_op(op.kind)) {
        array_op(op, values, predicates);
        continue;
      }
      Expr v = node(op.values);
      Expr pred = op.predicate ? node(op.predicate) : Expr();
      values.push_back(v);
      predicates.push_back(pred);
      Expr xs = pack(op.monoid, v);
      if (op.kind == OpKind::Reduce) {
        if (pred.valid()) xs = filter(xs, pred);
        results_.push_back(reduce(xs, monoid(op.monoid), op.strategy));
      } else {
        if (pred.valid()) xs = filter(xs, pred);  // the survivors' scan
        results_.push_back(scan(xs, monoid(op.monoid), op.scan_kind, op.strategy));
      }
    }
    std::vector<Expr> outs;
    for (const auto& o : c_.outputs)
      outs.push_back(o.map ? node(o.map) : o.field == 1 ? sorted_values_.at(o.op) : results_[static_cast<std::size_t>(o.op)]);
    return Built{Program(std::move(outs)), inputs_, params_, std::move(values), std::move(predicates), std::move(keys)};
  }

 private:
  Expr ff_input(const InputSpec& in) { return Expr::input(in.name, widen(in.type, mode_)); }

  // Histogram, filter, segmented reduce / scan, scan / reduce by key, counting sort / sort_by_key.
  void array_op(const OpDesc& op, std::vector<Expr>& values, std::vector<Expr>& predicates) {
    Expr v = op.values ? node(op.values) : Expr();
    values.push_back(v);
    predicates.push_back(op.kind == OpKind::Filter ? node(op.predicate) : Expr());
    // A by-key op, a sort or a segmented op with a predicate (shape "filtered_keyed"): of a
    // filter's result, its keys and values filtered by it.
    const Expr kept = op.kind != OpKind::Filter && op.predicate ? node(op.predicate) : Expr();
    auto survivors = [&](const Expr& e) { return kept.valid() && e.valid() ? filter(e, kept) : e; };
    switch (op.kind) {
      case OpKind::Histogram: {
        Expr bin = node(op.keys);
        if (op.predicate) {  // filter(bin, p) + index() % 3, index() the position among the survivors
          const Expr p = node(op.predicate);
          bin = filter(bin, p);
          bin = bin + Expr::cast(bin.type(), index() % Expr(3LL));
          if (v.valid()) v = filter(v, p);
        }
        results_.push_back(v.valid() ? histogram(bin, v, op.bins) : histogram(bin, op.bins, op.count_type));
        return;
      }
      case OpKind::Filter: results_.push_back(filter(v, predicates.back())); return;
      case OpKind::SegmentedReduce:
      case OpKind::SegmentedScan: {
        Expr offsets = op.rows > 0 ? rows(inputs_[0], op.rows) : inputs_[static_cast<std::size_t>(op.offsets_input)];
        if (op.offsets_scan) offsets = scan(offsets, monoid(MonoidChoice::Plus), ScanKind::Exclusive);
        offsets_[static_cast<int>(results_.size())] = offsets;
        if (op.offsets_cast) offsets = Expr::cast(ScalarType::I64, offsets);
        results_.push_back(op.kind == OpKind::SegmentedReduce
                               ? segmented_reduce(pack(op.monoid, survivors(v)), offsets, monoid(op.monoid))
                               : segmented_scan(pack(op.monoid, survivors(v)), offsets, monoid(op.monoid), op.scan_kind));
        return;
      }
      case OpKind::ScanByKey:
        results_.push_back(scan_by_key(survivors(node(op.keys)), pack(op.monoid, survivors(v)), monoid(op.monoid), op.scan_kind));
        return;
      case OpKind::ReduceByKey: {
        KeyedResult r = reduce_by_key(survivors(node(op.keys)), pack(op.monoid, survivors(v)), monoid(op.monoid));
        sorted_values_[static_cast<int>(results_.size())] = r.values;
        results_.push_back(r.keys);
        return;
      }
      default:
        // A radix sort's f32 keys stay f32 in the widened program (f64 keys are not
        // sorted): integer-valued, they round to the same f32 either way.
        const KeyBits bits{op.begin_bit, op.end_bit};
        Expr keys = node(op.keys);
        if (op.bins == 0 && keys.type() != op.keys->type) keys = cast(op.keys->type, keys);
        if (kept.valid() && v.valid() && !is_array(v)) {  // index() alone: zipped before filtering
          const Expr both = filter(Expr::make_tuple({keys, v}), kept);
          keys = Expr::get(both, 0);
          v = Expr::get(both, 1);
        } else {
          keys = survivors(keys);
          v = survivors(v);
        }
        if (!v.valid()) {
          results_.push_back(op.bins == 0 ? sort(keys, bits) : counting_sort(keys, op.bins));
          return;
        }
        KeyedResult r = op.bins == 0 ? sort_by_key(keys, v, bits) : sort_by_key(keys, v, op.bins);
        sorted_values_[static_cast<int>(results_.size())] = r.values;
        results_.push_back(r.keys);
    }
  }

  static Expr pack(MonoidChoice m, const Expr& v) {
    if (m == MonoidChoice::ArgMin || m == MonoidChoice::ArgMax) return zip(v, index());
    if (m == MonoidChoice::Mssp) return catalog::mssp_parts(v);
    return v;
  }

  static Monoid monoid(MonoidChoice m) {
    switch (m) {
      case MonoidChoice::Plus: return plus;
      case MonoidChoice::Times: return times;
      case MonoidChoice::Min: return fuseflow::min;
      case MonoidChoice::Max: return fuseflow::max;
      case MonoidChoice::LogicalOr: return logical_or;
      case MonoidChoice::ArgMin: return argmin;
      case MonoidChoice::ArgMax: return argmax;
      case MonoidChoice::Mssp: return catalog::mssp();
      case MonoidChoice::Matmul: return catalog::matmul2x2(ScalarType::I32);
    }
    return plus;
  }

  Expr node(const NodeRef& n) {
    auto it = memo_.find(n.get());
    if (it != memo_.end()) return it->second;
    Expr e = compute(*n);
    if (e.type() != widen(n->type, mode_))
      throw GraphError("fuzz: built " + e.type().name() + " for a node of type " + n->type.name());
    memo_[n.get()] = e;
    return e;
  }

  Expr compute(const Node& n) {
    std::vector<Expr> a;
    for (const auto& x : n.args) a.push_back(node(x));
    switch (n.kind) {
      case NodeKind::Input: return inputs_[static_cast<std::size_t>(n.index)];
      case NodeKind::Index: return index();
      case NodeKind::Constant: return Expr::constant(widen(n.constant, mode_));
      case NodeKind::Param: return params_[static_cast<std::size_t>(n.index)];
      case NodeKind::Scalar:
      case NodeKind::ScanElement: return results_[static_cast<std::size_t>(n.index)];
      case NodeKind::Unary: return Expr::unary(n.unary, a[0]);
      case NodeKind::Binary: return Expr::binary(n.binary, a[0], a[1]);
      case NodeKind::Select: return Expr::select(a[0], a[1], a[2]);
      case NodeKind::Call: return Expr::call(n.fn, a);
      case NodeKind::Cast: return Expr::cast(widen(n.type, mode_), a[0]);
      case NodeKind::Tuple: return Expr::make_tuple(a);
      case NodeKind::Get: return Expr::get(a[0], n.index);
      case NodeKind::Shift: return Expr::shift(a[0], n.index, a[1]);
      case NodeKind::Gather: return Expr::gather(a[0], a[1]);
      case NodeKind::Fill: return fuseflow::fill(a[0], a[1]);
      case NodeKind::Broadcast:
        if (c_.ops[static_cast<std::size_t>(n.index)].kind == OpKind::Histogram)  // its bins at args[0]
          return gather(results_[static_cast<std::size_t>(n.index)], a[0]);
        if (c_.ops[static_cast<std::size_t>(n.index)].kind == OpKind::ReduceByKey)  // its run's key
          return broadcast_by_key(results_[static_cast<std::size_t>(n.index)], node(c_.ops[static_cast<std::size_t>(n.index)].keys));
        return broadcast(results_[static_cast<std::size_t>(n.index)], offsets_.at(n.index));
    }
    throw GraphError("fuzz: unknown node kind");
  }

  const Case& c_;
  Mode mode_;
  std::vector<Expr> inputs_, params_, results_;
  std::map<int, Expr> sorted_values_;  // per sort_by_key / reduce_by_key op: its values (results_ has its keys)
  std::map<const Node*, Expr> memo_;
  std::map<int, Expr> offsets_;  // per segmented op: its offsets (a broadcast reads them)
};

// ---- data -----------------------------------------------------------------------------

template <class T>
HostArray fill(std::size_t n, const InputSpec& s, std::uint64_t seed) {
  std::vector<T> v(n);
  Rng r(seed);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      double d = s.lo + r.uniform() * (s.hi - s.lo);
      if (s.integral_values) d = std::round(d);
      x = static_cast<T>(d);
    } else {
      auto lo = static_cast<std::int64_t>(s.lo), hi = static_cast<std::int64_t>(s.hi);
      x = static_cast<T>(r.range(lo, hi));
    }
  }
  return HostArray::from(v);
}

// The keys of a by-key op: a random walk from a start in [lo, hi] that stays put with
// probability s.stay, else steps by -2..2 (0 included).
template <class T>
HostArray fill_walk(std::size_t n, const InputSpec& s, std::uint64_t seed) {
  std::vector<T> v(n);
  Rng r(seed);
  std::int64_t at = r.range(static_cast<std::int64_t>(s.lo), static_cast<std::int64_t>(s.hi));
  for (auto& x : v) {
    if (!r.chance(s.stay)) at += r.range(-2, 2);
    x = static_cast<T>(at);
  }
  return HostArray::from(v);
}

// The offsets of a segmented op over n elements, drawn with the input's pattern: n_segments
// + 1 non-decreasing values in [0, n].
template <class T>
HostArray fill_offsets(std::int64_t n, const InputSpec& s, std::uint64_t seed) {
  Rng r(seed);
  std::int64_t lo = 0, hi = n;
  if (s.partial && n > 0) {
    lo = r.range(0, n / 4);
    hi = n - r.range(0, (n - lo) / 4);
  }
  const std::int64_t span = hi - lo;
  std::vector<std::int64_t> off = {lo};
  auto add = [&](std::int64_t length) { off.push_back(std::min(off.back() + length, hi)); };
  switch (s.pattern) {
    case SegmentPattern::None: break;
    case SegmentPattern::Random: {
      const std::int64_t cuts = r.range(0, std::min<std::int64_t>(2 * span + 3, 1 << 20));
      std::vector<std::int64_t> points;
      for (std::int64_t i = 0; i < cuts; ++i) points.push_back(r.range(lo, hi));
      std::sort(points.begin(), points.end());
      off.insert(off.end(), points.begin(), points.end());
      break;
    }
    case SegmentPattern::Tiny:
      while (off.back() < hi) add(std::vector<std::int64_t>{0, 0, 1, 1, 1, 2, 3}[r.below(7)]);
      break;
    case SegmentPattern::Between:
      while (off.back() < hi) add(r.range(10, 50));
      break;
    case SegmentPattern::Threes:
      while (off.back() < hi) add(3);
      break;
    case SegmentPattern::Huge: {
      const std::int64_t parts = r.range(1, 3);
      if (parts >= 2) add(r.range(0, std::min<std::int64_t>(span, 5)));
      if (parts == 3) off.push_back(std::max(off.back(), hi - r.range(0, std::min<std::int64_t>(span, 5))));
      break;
    }
    case SegmentPattern::Skewed:
      while (off.back() < hi) add(r.chance(0.02) ? r.range(span / 8, span / 4 + 1) : r.range(0, 2));
      break;
  }
  if (s.pattern != SegmentPattern::None) {
    if (off.back() < hi || off.size() == 1) off.push_back(hi);
    for (std::int64_t extra = r.range(-2, 2); extra > 0; --extra) off.push_back(hi);  // empty segments at the end
  }
  std::vector<T> out(off.size());
  for (std::size_t i = 0; i < off.size(); ++i) out[i] = static_cast<T>(off[i]);
  if (s.lengths)  // each segment's length, then 0: their exclusive scan is the offsets
    for (std::size_t i = 0; i < off.size(); ++i) out[i] = static_cast<T>(i + 1 < off.size() ? off[i + 1] - off[i] : 0);
  return HostArray::from(out);
}

}  // namespace

Built build(const Case& c, Mode mode) { return Builder(c, mode).run(); }

std::vector<HostArray> make_inputs(const Case& c) {
  std::vector<HostArray> out;
  const auto n = static_cast<std::size_t>(c.n);
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const InputSpec& s = c.inputs[k];
    std::uint64_t seed = mix(c.seed ^ (0x51ed2705ULL * (k + 1)));
    if (s.offsets) {
      const std::int64_t over = (c.n + s.every - 1) / s.every;  // the elements (or survivors) they index
      switch (s.type) {
        case ScalarType::I32: out.push_back(fill_offsets<std::int32_t>(over, s, seed)); break;
        case ScalarType::I64: out.push_back(fill_offsets<long long>(over, s, seed)); break;
        case ScalarType::U32: out.push_back(fill_offsets<std::uint32_t>(over, s, seed)); break;
        default: throw GraphError("fuzz: unexpected offsets type " + scalar_name(s.type));
      }
      continue;
    }
    if (s.walk) {
      switch (s.type) {
        case ScalarType::I32: out.push_back(fill_walk<std::int32_t>(n, s, seed)); break;
        case ScalarType::I64: out.push_back(fill_walk<long long>(n, s, seed)); break;
        case ScalarType::U32: out.push_back(fill_walk<std::uint32_t>(n, s, seed)); break;
        default: throw GraphError("fuzz: unexpected key type " + scalar_name(s.type));
      }
      continue;
    }
    switch (s.type) {
      case ScalarType::I32: out.push_back(fill<std::int32_t>(n, s, seed)); break;
      case ScalarType::I64: out.push_back(fill<long long>(n, s, seed)); break;
      case ScalarType::U32: out.push_back(fill<std::uint32_t>(n, s, seed)); break;
      case ScalarType::F32: out.push_back(fill<float>(n, s, seed)); break;
      case ScalarType::F64: out.push_back(fill<double>(n, s, seed)); break;
      default: throw GraphError("fuzz: unexpected input type " + scalar_name(s.type));
    }
  }
  return out;
}

std::vector<HostArray> widen_inputs(const Case& c, const std::vector<HostArray>& narrow) {
  std::vector<HostArray> out;
  for (std::size_t k = 0; k < narrow.size(); ++k) {
    if (c.inputs[k].type != ScalarType::F32) {
      out.push_back(narrow[k]);
      continue;
    }
    std::vector<double> wide(narrow[k].size());
    const auto* f = reinterpret_cast<const float*>(narrow[k].data());
    for (std::size_t i = 0; i < wide.size(); ++i) {
      float x;
      std::memcpy(&x, f + i, sizeof x);
      wide[i] = x;
    }
    out.push_back(HostArray::from(wide));
  }
  return out;
}

HostBindings bind_data(const Case& c, const Built& b, const std::vector<HostArray>& data, Mode mode) {
  HostBindings hb;
  for (std::size_t k = 0; k < b.inputs.size(); ++k)
    if (uses(b.program, b.inputs[k])) hb.bind(b.inputs[k], data[k]);
  for (std::size_t k = 0; k < b.params.size(); ++k)
    if (uses(b.program, b.params[k])) hb.bind(b.params[k], widen(c.params[k].value, mode));
  return hb;
}

bool uses(const Program& p, const Expr& leaf) {
  for (const auto* list : {&p.inputs(), &p.params()})
    for (const auto& e : *list)
      if (same_node(e, leaf)) return true;
  return false;
}

}  // namespace fuseflow::fuzz
