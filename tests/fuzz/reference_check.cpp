// The CPU reference of a case and how each output is compared with it: exactly, or (float
// results) against the f64 reference within the bound of the static analysis
// (program_generator.hpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "fuzz/fuzz_detail.hpp"

namespace fuseflow::fuzz {

namespace detail {

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace detail

using namespace detail;

namespace {

// ---- comparing ------------------------------------------------------------------------

enum class CheckKind : std::uint8_t {
  Exact,          // the narrow reference, exactly
  SumScalar,      // float plus: within n * E + 2e-5 * sum |v| of the f64 reference
  ExtremeScalar,  // float min / max of inexact values: within E
  ArgScalar,      // float argmin / argmax of inexact values
  SumScan,        // per element, as SumScalar over the prefix
  ExtremeScan,
  ArgScan,
  MapArray,       // per element within the map's static error bound
  SegmentSum,     // segmented reduce: per segment, as SumScalar over its elements
  SegmentExtreme,
  SegmentArg,
  SegmentScanSum,      // segmented scan / scan_by_key: per element, as SumScan over its segment's prefix
  SegmentScanExtreme,
  SegmentScanArg,
};

struct Plan {
  CheckKind kind = CheckKind::Exact;
  double error = 0;  // the element (or map) error bound
  double rel = kSumRelTol;  // sums: tolerance relative to the sum of |terms|
  int op = -1;
};

bool float_monoid_values(const OpDesc& op) {
  if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort || op.kind == OpKind::Filter)
    return false;  // integers, or moved as they are (a filter's output is a map over its element)
  return op.values->type.is_scalar() && is_float(op.values->type.scalar());
}

Plan plan_check(const Case& c, std::size_t i) {
  const OutputDesc& o = c.outputs[i];
  Plan p;
  if (o.map) {
    p.kind = o.map->exact ? CheckKind::Exact : CheckKind::MapArray;
    p.error = o.map->error;
    return p;
  }
  const OpDesc& op = c.ops[static_cast<std::size_t>(o.op)];
  p.op = o.op;
  if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort) return p;  // counts, keys, moved values
  if (op.kind == OpKind::ReduceByKey && o.field == 0) return p;  // the unique keys: integers
  p.error = op.values->error;
  // Per-element atomics add in any order, one rounding after another: a sequential sum,
  // whose error grows like sqrt(n) ulps of the sum of |terms| (positive terms).
  if (op.strategy == Strategy::Atomic) p.rel += 8 * ulp(ScalarType::F32) * std::sqrt(static_cast<double>(c.n));
  if (!float_monoid_values(op)) return p;
  bool scan = op.kind == OpKind::Scan;
  const bool segment_scan = op.kind == OpKind::SegmentedScan || op.kind == OpKind::ScanByKey;
  if (segment_scan || op.kind == OpKind::SegmentedReduce || op.kind == OpKind::ReduceByKey) {
    // Per segment: every scanned element of it (scans) or its one result (reductions).
    switch (op.monoid) {
      case MonoidChoice::Plus: p.kind = segment_scan ? CheckKind::SegmentScanSum : CheckKind::SegmentSum; break;
      case MonoidChoice::Min:
      case MonoidChoice::Max:
        if (!op.values->exact) p.kind = segment_scan ? CheckKind::SegmentScanExtreme : CheckKind::SegmentExtreme;
        break;
      case MonoidChoice::ArgMin:
      case MonoidChoice::ArgMax:
        if (!op.values->exact) p.kind = segment_scan ? CheckKind::SegmentScanArg : CheckKind::SegmentArg;
        break;
      default: break;
    }
    return p;
  }
  switch (op.monoid) {
    case MonoidChoice::Plus: p.kind = scan ? CheckKind::SumScan : CheckKind::SumScalar; break;
    case MonoidChoice::Min:
    case MonoidChoice::Max:
      if (!op.values->exact) p.kind = scan ? CheckKind::ExtremeScan : CheckKind::ExtremeScalar;
      break;
    case MonoidChoice::ArgMin:
    case MonoidChoice::ArgMax:
      if (!op.values->exact) p.kind = scan ? CheckKind::ArgScan : CheckKind::ArgScalar;
      break;
    default: break;
  }
  return p;
}

bool close(double got, double want, double tol) {
  if (got == want) return true;  // infinities included
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  return std::fabs(got - want) <= tol;
}


bool same_element(const HostArray& a, const HostArray& b, std::size_t i) {
  const std::size_t size = a.type().size();
  if (std::memcmp(a.data() + i * size, b.data() + i * size, size) == 0) return true;
  return a.at(i) == b.at(i);  // +0 == -0, NaN == NaN, tuple padding ignored
}

struct Mismatches {
  std::size_t count = 0;
  std::string first;
  void add(std::size_t i, const std::string& what) {
    if (count++ == 0) first = "element " + std::to_string(i) + ": " + what;
  }
};

// Values of an argmin / argmax tuple as (double value, index).
std::pair<double, std::int64_t> arg_pair(const Value& v) { return {v[0].as_double(), v[1].as_int()}; }

// Checks an argmin/argmax answer (value, index) against the wide values over [begin, end)
// (survivors only when `pred` is given); want is the wide reference answer.
std::string check_arg(const Value& got, const Value& want, const HostArray& values, const HostArray* pred,
                      std::size_t end, double e, bool is_max, std::size_t begin = 0) {
  auto [gv, gi] = arg_pair(got);
  auto [wv, wi] = arg_pair(want);
  if (wi == std::numeric_limits<std::int64_t>::max()) {  // nothing to choose from: the identity
    if (gi == wi && close(gv, wv, 0)) return "";
    return "got " + got.to_string() + ", want the identity " + want.to_string();
  }
  if (gi < 0 || static_cast<std::size_t>(gi) < begin || static_cast<std::size_t>(gi) >= end) return "got " + got.to_string() + ": index out of range, want " + want.to_string();
  auto at = static_cast<std::size_t>(gi);
  if (pred && !pred->at(at).as_bool()) return "got " + got.to_string() + ": that element is filtered out";
  double v = values.at(at).as_double();
  if (!close(gv, v, 2 * e + 1e-300)) return "got " + got.to_string() + ": its value differs from element " + std::to_string(gi) + " = " + num(v) + " (f64) by more than " + num(2 * e);
  bool ok = is_max ? v >= wv - 2 * e : v <= wv + 2 * e;
  if (!ok) return "got " + got.to_string() + ", want " + want.to_string() + " (f64), tolerance " + num(2 * e);
  return "";
}

// A float segmented reduce: each segment as a float reduce of its elements (an empty one
// is the monoid's identity, which the wide reference gives too).
std::string compare_segments(const Plan& p, const std::vector<std::size_t>& bounds, const HostArray& values,
                             const HostResult& want, const HostResult& got, bool is_max, const std::string& head) {
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " segments, want " + std::to_string(want.array.size());
  const double e = p.error;
  Mismatches m;
  for (std::size_t k = 0; k + 1 < bounds.size() && k < want.array.size(); ++k) {
    const std::size_t begin = bounds[k], end = bounds[k + 1];
    if (p.kind == CheckKind::SegmentArg) {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, end, e, is_max, begin);
      if (!why.empty()) m.add(k, why + " (segment [" + std::to_string(begin) + ", " + std::to_string(end) + "))");
      continue;
    }
    double g = got.array.at(k).as_double(), w = want.array.at(k).as_double(), tol = 2 * e;
    if (p.kind == CheckKind::SegmentSum) {
      double magnitude = 0;
      for (std::size_t j = begin; j < end; ++j) magnitude += std::fabs(values.at(j).as_double());
      tol = 2 * static_cast<double>(end - begin) * e + p.rel * magnitude;
    }
    if (!close(g, w, tol + 1e-300))
      m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol) + " (segment [" +
                   std::to_string(begin) + ", " + std::to_string(end) + "))");
  }
  return m.count ? head + std::to_string(m.count) + " segments out of tolerance, the first is " + m.first : "";
}

// A float segmented scan or scan_by_key: each segment as a float scan of its elements;
// an element outside every segment (partial offsets) is the identity, exactly.
std::string compare_segment_scan(const Plan& p, const std::vector<std::size_t>& bounds, const HostArray& values,
                                 const HostResult& want, const HostResult& got, bool is_max, bool exclusive,
                                 const std::string& head) {
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
  const double e = p.error;
  const std::size_t n = want.array.size();
  Mismatches m;
  auto check = [&](std::size_t k, std::size_t begin, std::size_t count, double prefix, const std::string& where) {
    if (p.kind == CheckKind::SegmentScanArg) {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, begin + count, e, is_max, begin);
      if (!why.empty()) m.add(k, why + where);
      return;
    }
    double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
    double tol = count == 0 ? 0 : 2 * e;
    if (p.kind == CheckKind::SegmentScanSum) tol = 2 * static_cast<double>(count) * e + p.rel * prefix;
    if (!close(g, w, tol + (count == 0 ? 0 : 1e-300)))
      m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol) + where);
  };
  if (bounds.empty() || bounds.back() > n) return head + "no segment bounds";
  for (std::size_t k = 0; k < bounds.front(); ++k) check(k, k, 0, 0, " (before every segment)");
  for (std::size_t k = bounds.back(); k < n; ++k) check(k, k, 0, 0, " (after every segment)");
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
    const std::size_t begin = bounds[r], end = bounds[r + 1];
    const std::string where = " (segment [" + std::to_string(begin) + ", " + std::to_string(end) + "))";
    double prefix = 0;
    for (std::size_t k = begin; k < end; ++k) {
      if (!exclusive) prefix += std::fabs(values.at(k).as_double());
      check(k, begin, exclusive ? k - begin : k - begin + 1, prefix, where);
      if (exclusive) prefix += std::fabs(values.at(k).as_double());
    }
  }
  return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
}

std::string compare_output(const Case& c, const Reference& ref, std::size_t i, const HostResult& got) {
  const Plan p = plan_check(c, i);
  const std::string head = "output " + std::to_string(i) + " (" + check_kind(c, i) + "): ";
  if (p.kind == CheckKind::Exact) {
    const HostResult& want = ref.narrow[i];
    if (want.is_scalar != got.is_scalar) return head + "scalar / array mismatch";
    if (want.is_scalar) return got.scalar == want.scalar ? "" : head + "got " + got.scalar.to_string() + ", want " + want.scalar.to_string();
    if (got.array.type() != want.array.type()) return head + "type " + got.array.type().name() + ", want " + want.array.type().name();
    if (got.array.size() != want.array.size())
      return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
    Mismatches m;
    for (std::size_t k = 0; k < want.array.size(); ++k)
      if (!same_element(got.array, want.array, k))
        m.add(k, "got " + got.array.at(k).to_string() + ", want " + want.array.at(k).to_string());
    return m.count ? head + std::to_string(m.count) + " elements differ, the first at " + m.first : "";
  }
  const HostResult& want = ref.wide[i];
  if (p.kind == CheckKind::MapArray) {
    if (want.is_scalar != got.is_scalar) return head + "scalar / array mismatch";
    if (want.is_scalar) {  // a scalar epilogue
      const double g = got.scalar.as_double(), w = want.scalar.as_double(), tol = 2 * p.error + 1e-300;
      return close(g, w, tol) ? "" : head + "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol);
    }
    if (got.array.size() != want.array.size())
      return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
    const double tol = 2 * p.error + 1e-300;
    Mismatches m;
    for (std::size_t k = 0; k < want.array.size(); ++k) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      if (!close(g, w, tol)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol));
    }
    return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
  }
  const OpDesc& op = c.ops[static_cast<std::size_t>(p.op)];
  const HostArray& values = ref.wide_values[static_cast<std::size_t>(p.op)];
  const HostArray* pred = op.predicate ? &ref.wide_predicates[static_cast<std::size_t>(p.op)] : nullptr;
  const bool is_max = op.monoid == MonoidChoice::Max || op.monoid == MonoidChoice::ArgMax;
  const double e = p.error;
  switch (p.kind) {
    case CheckKind::SumScalar: {
      double magnitude = 0, terms = 0;  // over the survivors of the filter
      for (std::size_t k = 0; k < values.size(); ++k)
        if (!pred || pred->at(k).as_bool()) {
          magnitude += std::fabs(values.at(k).as_double());
          terms += 1;
        }
      double g = got.scalar.as_double(), w = want.scalar.as_double();
      double tol = 2 * terms * e + p.rel * magnitude + 1e-300;
      return close(g, w, tol) ? "" : head + "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol);
    }
    case CheckKind::ExtremeScalar: {
      double g = got.scalar.as_double(), w = want.scalar.as_double();
      return close(g, w, 2 * e + 1e-300) ? "" : head + "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(2 * e);
    }
    case CheckKind::ArgScalar: {
      std::string why = check_arg(got.scalar, want.scalar, values, pred, values.size(), e, is_max);
      return why.empty() ? "" : head + why;
    }
    case CheckKind::SegmentSum:
    case CheckKind::SegmentExtreme:
    case CheckKind::SegmentArg: return compare_segments(p, ref.segments[static_cast<std::size_t>(p.op)], values, want, got, is_max, head);
    case CheckKind::SegmentScanSum:
    case CheckKind::SegmentScanExtreme:
    case CheckKind::SegmentScanArg:
      return compare_segment_scan(p, ref.segments[static_cast<std::size_t>(p.op)], values, want, got, is_max,
                                  op.scan_kind == ScanKind::Exclusive, head);
    default: break;
  }
  // Scans.
  if (got.array.size() != want.array.size())
    return head + std::to_string(got.array.size()) + " elements, want " + std::to_string(want.array.size());
  const bool exclusive = op.scan_kind == ScanKind::Exclusive;
  Mismatches m;
  double prefix = 0;
  for (std::size_t k = 0; k < want.array.size(); ++k) {
    if (!exclusive) prefix += std::fabs(values.at(k).as_double());
    const std::size_t count = exclusive ? k : k + 1;  // elements combined into output k
    if (p.kind == CheckKind::SumScan) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      double tol = 2 * static_cast<double>(count) * e + p.rel * prefix + 1e-300;
      if (!close(g, w, tol)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(tol));
    } else if (p.kind == CheckKind::ExtremeScan) {
      double g = got.array.at(k).as_double(), w = want.array.at(k).as_double();
      if (!close(g, w, 2 * e + 1e-300)) m.add(k, "got " + num(g) + ", want " + num(w) + " (f64), tolerance " + num(2 * e));
    } else {
      std::string why = check_arg(got.array.at(k), want.array.at(k), values, nullptr, count, e, is_max);
      if (!why.empty()) m.add(k, why);
    }
    if (exclusive) prefix += std::fabs(values.at(k).as_double());
  }
  return m.count ? head + std::to_string(m.count) + " elements out of tolerance, the first at " + m.first : "";
}

}  // namespace

Reference compute_reference(const Case& c, const std::vector<HostArray>& narrow_inputs) {
  Reference ref;
  bool need_narrow = false, need_wide = false;
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (plan_check(c, i).kind == CheckKind::Exact) need_narrow = true;
    else need_wide = true;
  }
  if (need_narrow) {
    Built b = build(c, Mode::Narrow);
    ref.narrow = evaluate(b.program, bind_data(c, b, narrow_inputs, Mode::Narrow));
  }
  if (need_wide) {
    Built b = build(c, Mode::Wide);
    std::vector<HostArray> wide = widen_inputs(c, narrow_inputs);
    ref.wide = evaluate(b.program, bind_data(c, b, wide, Mode::Wide));
    HostBindings hb;  // every input: an op's values may read one the program's outputs do not
    for (std::size_t k = 0; k < b.inputs.size(); ++k) hb.bind(b.inputs[k], wide[k]);
    for (std::size_t k = 0; k < b.params.size(); ++k) hb.bind(b.params[k], widen(c.params[k].value, Mode::Wide));
    ref.wide_values.resize(c.ops.size());
    ref.wide_predicates.resize(c.ops.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      if (!float_monoid_values(c.ops[k])) continue;
      std::vector<Expr> outs = {b.values[k]};
      if (b.predicates[k].valid()) outs.push_back(b.predicates[k]);
      std::vector<HostResult> r = evaluate(Program(outs), hb);
      ref.wide_values[k] = std::move(r[0].array);
      if (r.size() > 1) ref.wide_predicates[k] = std::move(r[1].array);
    }
    ref.segments.resize(c.ops.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      const OpDesc& op = c.ops[k];
      if (!float_monoid_values(op)) continue;
      if (is_segmented(op.kind) && op.rows > 0) continue;  // read through broadcasts only
      if (is_segmented(op.kind)) {
        const auto o = static_cast<std::size_t>(op.offsets_input);
        if (op.offsets_scan) {  // segment lengths: the offsets are their exclusive scan
          std::vector<long long> off;
          long long at = 0;
          for (std::size_t j = 0; j < narrow_inputs[o].size(); ++j) {
            off.push_back(at);
            at += narrow_inputs[o].at(j).as_int();
          }
          ref.segments[k] = segment_bounds(op_name(op.kind), ScalarType::I64, reinterpret_cast<const std::byte*>(off.data()),
                                           off.size(), static_cast<std::size_t>(c.n));
        } else {
          ref.segments[k] = segment_bounds(op_name(op.kind), c.inputs[o].type, narrow_inputs[o].data(),
                                           narrow_inputs[o].size(), static_cast<std::size_t>(c.n));
        }
      } else if (is_by_key(op.kind)) {
        // The runs of equal consecutive keys (integers: the same in both programs).
        const HostArray keys = std::move(evaluate(Program(b.keys[k]), hb)[0].array);
        for (std::size_t j = 0; j < keys.size(); ++j)
          if (j == 0 || !(keys.at(j) == keys.at(j - 1))) ref.segments[k].push_back(j);
        ref.segments[k].push_back(keys.size());
      }
    }
  }
  return ref;
}

std::string compare(const Case& c, const Reference& ref, const std::vector<HostResult>& got) {
  if (got.size() != c.outputs.size())
    return std::to_string(got.size()) + " results, want " + std::to_string(c.outputs.size());
  std::string out;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::string m = compare_output(c, ref, i, got[i]);
    if (!m.empty()) out += (out.empty() ? "" : "\n") + m;
  }
  return out;
}

std::string check_kind(const Case& c, std::size_t output) {
  const Plan p = plan_check(c, output);
  switch (p.kind) {
    case CheckKind::Exact: return "exact";
    case CheckKind::SumScalar: return "float sum, f64 reference, element error " + num(p.error);
    case CheckKind::ExtremeScalar: return "float min/max of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::ArgScalar: return "float argmin/argmax of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SumScan: return "float sum scan, f64 reference, element error " + num(p.error);
    case CheckKind::ExtremeScan: return "float min/max scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::ArgScan: return "float argmin/argmax scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::MapArray: return "float map, f64 reference, static error bound " + num(p.error);
    case CheckKind::SegmentSum: return "float segmented sum, f64 reference, element error " + num(p.error);
    case CheckKind::SegmentExtreme: return "float segmented min/max of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentArg: return "float segmented argmin/argmax of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentScanSum: return "float segmented sum scan, f64 reference, element error " + num(p.error);
    case CheckKind::SegmentScanExtreme: return "float segmented min/max scan of rounded values, f64 reference, error " + num(p.error);
    case CheckKind::SegmentScanArg: return "float segmented argmin/argmax scan of rounded values, f64 reference, error " + num(p.error);
  }
  return "?";
}

}  // namespace fuseflow::fuzz
