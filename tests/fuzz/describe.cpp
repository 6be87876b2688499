// Names, the description of a case (everything to reproduce and read a failure), reports,
// and the seeds a run takes from the environment (program_generator.hpp).
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "fuzz/generator.hpp"

namespace fuseflow::fuzz {

using namespace detail;

const char* monoid_name(MonoidChoice m) {
  switch (m) {
    case MonoidChoice::Plus: return "plus";
    case MonoidChoice::Times: return "times";
    case MonoidChoice::Min: return "min";
    case MonoidChoice::Max: return "max";
    case MonoidChoice::LogicalOr: return "logical_or";
    case MonoidChoice::ArgMin: return "argmin";
    case MonoidChoice::ArgMax: return "argmax";
    case MonoidChoice::Mssp: return "mssp";
    case MonoidChoice::Matmul: return "matmul2x2";
  }
  return "?";
}

const char* pattern_name(SegmentPattern p) {
  switch (p) {
    case SegmentPattern::Random: return "random cuts";
    case SegmentPattern::Tiny: return "lengths 0..3";
    case SegmentPattern::Between: return "lengths 10..50";
    case SegmentPattern::Threes: return "all of length 3";
    case SegmentPattern::Huge: return "one huge";
    case SegmentPattern::Skewed: return "skewed";
    case SegmentPattern::None: return "no segments";
  }
  return "?";
}

bool is_commutative(MonoidChoice m) { return m != MonoidChoice::Mssp && m != MonoidChoice::Matmul; }

const std::vector<std::string>& all_shapes() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out = kArrayShapes;
    out.insert(out.end(), kOtherShapes.begin(), kOtherShapes.end());
    return out;
  }();
  return all;
}

std::string describe(const Case& c) {
  std::ostringstream os;
  os << "seed " << c.seed << " (FUSEFLOW_FUZZ_SEED=" << c.seed << "), n = " << c.n << ", shape " << c.shape << "\n";
  for (const auto& in : c.inputs) {
    if (in.offsets) {
      os << "  input " << in.name << ": " << scalar_name(in.type) << " segment offsets, pattern " << pattern_name(in.pattern)
         << (in.partial ? ", segments inside (0, n)" : "")
         << (in.lengths ? ", given as lengths (the offsets their exclusive scan)" : "") << "\n";
      continue;
    }
    if (in.walk) {
      os << "  input " << in.name << ": " << scalar_name(in.type) << " keys, a random walk from [" << num(in.lo) << ", "
         << num(in.hi) << "] staying put with probability " << num(in.stay) << ", else stepping by -2..2\n";
      continue;
    }
    os << "  input " << in.name << ": " << scalar_name(in.type) << " in [" << num(in.lo) << ", " << num(in.hi) << "]"
       << (in.integral_values ? ", integral values" : "") << "\n";
  }
  for (const auto& p : c.params) os << "  param " << p.name << " = " << p.value.to_string() << "\n";
  for (std::size_t k = 0; k < c.ops.size(); ++k) {
    const OpDesc& op = c.ops[k];
    if (op.kind == OpKind::Histogram || op.kind == OpKind::CountingSort) {
      os << "  op " << k << ": " << (op.kind == OpKind::Histogram ? "histogram" : op.values ? "sort_by_key" : "counting_sort")
         << ", " << (op.bins == 0 ? "key bits [" + std::to_string(op.begin_bit) + ", " + std::to_string(op.end_bit) + ")"
                                  : std::to_string(op.bins) + " bins");
      if (op.kind == OpKind::Histogram) os << (op.values ? std::string(", weighted") : std::string(", ") + scalar_name(op.count_type) + " counts");
      if (op.kind == OpKind::Histogram && op.predicate) os << ", of filter(bin, p) + index() % 3";
      os << "\n";
      continue;
    }
    const char* kind = op.scan_kind == ScanKind::Inclusive ? ", inclusive" : ", exclusive";
    if (is_segmented(op.kind) && op.rows > 0) {
      os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << " over rows of " << op.rows
         << " (read through broadcasts)\n";
      continue;
    }
    if (is_segmented(op.kind)) {
      os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", offsets "
         << (op.offsets_scan ? "scan(plus, " + c.inputs[static_cast<std::size_t>(op.offsets_input)].name + ", exclusive)"
                             : c.inputs[static_cast<std::size_t>(op.offsets_input)].name)
         << (op.offsets_cast ? " (cast to i64)" : "")
         << (op.kind == OpKind::SegmentedScan ? kind : "")
         << (op.predicate ? ", of filter(values, index() % " +
                                std::to_string(c.inputs[static_cast<std::size_t>(op.offsets_input)].every) + " == 0)"
                          : "")
         << "\n";
      continue;
    }
    if (is_by_key(op.kind)) {
      os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", keys of type "
         << op.keys->type.name() << (op.kind == OpKind::ScanByKey ? kind : "") << "\n";
      continue;
    }
    if (op.kind == OpKind::Filter) {
      os << "  op " << k << ": filter of " << op.values->type.name() << " (compaction, an output)\n";
      continue;
    }
    os << "  op " << k << ": " << op_name(op.kind) << " " << monoid_name(op.monoid) << ", strategy "
       << strategy_name(op.strategy);
    if (op.kind == OpKind::Scan) os << (op.scan_kind == ScanKind::Inclusive ? ", inclusive" : ", exclusive");
    if (op.predicate) os << ", filtered";
    os << "\n";
  }
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    const OutputDesc& o = c.outputs[i];
    os << "  output " << i << ": ";
    if (o.op >= 0 && c.ops[static_cast<std::size_t>(o.op)].kind == OpKind::ReduceByKey)
      os << (o.field == 0 ? "the unique keys, " : "the values, ");
    if (o.op >= 0 && c.ops[static_cast<std::size_t>(o.op)].kind == OpKind::CountingSort &&
        c.ops[static_cast<std::size_t>(o.op)].values)
      os << (o.field == 0 ? "the sorted keys, " : "the values, ");
    os << "checked " << check_kind(c, i) << "\n";
  }
  try {
    os << "program:\n" << to_string(build(c, Mode::Narrow).program);
  } catch (const std::exception& e) {
    os << "program: cannot be built: " << e.what();
  }
  return os.str();
}

// No known bugs now. Found by these tests and fixed: -(negative literal) emitted as "--c"
// and filter -> reduce with strategy atomic reading an undefined `identity` (3e92d21);
// integer abs/min/max of a negative literal emitted as "--c" (c2caeb6). A new one is
// listed here as a structural test on the Case, returning "<name>: <symptom>", until the
// code generator is fixed.
std::string known_bug(const Case& c) {
  (void)c;
  return "";
}

void write_report(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("FUSEFLOW_FUZZ_REPORT_DIR");
  if (!dir || !*dir) dir = std::getenv("OUT");
  if (!dir || !*dir) return;
  if (std::FILE* f = std::fopen((std::string(dir) + "/" + name + ".txt").c_str(), "w")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

std::vector<std::uint64_t> seeds_from_environment(std::size_t count) {
  if (const char* s = std::getenv("FUSEFLOW_FUZZ_SEED"); s && *s) return {std::strtoull(s, nullptr, 0)};
  std::uint64_t base = 1;
  if (const char* b = std::getenv("FUSEFLOW_FUZZ_BASE"); b && *b) base = std::strtoull(b, nullptr, 0);
  if (const char* n = std::getenv("FUSEFLOW_FUZZ_COUNT"); n && *n) count = std::strtoull(n, nullptr, 0);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(base + i);
  return out;
}

}  // namespace fuseflow::fuzz
