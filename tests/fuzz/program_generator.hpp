#pragma once
// Random well-typed fuseflow programs for differential testing (issue 8), over what the
// code generator supports today: element-wise maps of depth up to 4 over 1-3 inputs
// (i32, i64, u32, f32, f64: arithmetic, comparisons + select, min/max/abs, casts, a math
// function on floats, the element index, a scalar parameter), feeding one of
//   reduce (plus, min, max, times on odd integers, argmin, argmax, logical_or of a
//           predicate, and the catalog's non-commutative mssp and matmul2x2 on i32),
//   scan (inclusive / exclusive, the same monoids, sometimes with an epilogue map),
//   filter -> reduce, outputs(reduce, reduce), a map over a reduction's result
//   (x / reduce(x) style), a reduction or scan of a map that reads an earlier reduction,
//   outputs(scan, reduce), scalar epilogues (outputs that are expressions of one or two
//   reductions' results: s + t, s * k, the larger, t / (|s| + 1); and log-sum-exp,
//   m + log(reduce(exp(f - m), plus)) with m = reduce(f, max), which plans as one online
//   reduction),
// a per-row program (max / min / integer plus of each row of ff::rows(x, c), read by an
// output through ff::broadcast beside an input: a variant of the segmented_reduce shape;
// another, a broadcast over an offsets input covering every element read by a reduction
// beside it, staged),
// with leaves that read an input elsewhere: shift, gather at index() / 2, and iota(x) or
// fill(x, constant or parameter) of an input's length,
// and the ops whose result has a length of its own (generate_array_ops.cpp):
//   histogram (a random integral bin expression, casts of floats to int included, with
//             bins out of range that are dropped; 1 to 2^17 bins, so both the shared-memory
//             and the global-atomics paths; u32 or u64 counts),
//   segmented_reduce by offsets (any monoid above; offsets drawn from segment-length
//             patterns: empty, single-element, 10..50, threes, huge, skewed, partial cover),
//   counting_sort / sort_by_key (random bins up to the 8192 the sort takes, keys out of
//             range that sort last; values carry the element index, so comparing them
//             exactly checks stability),
//   filter as an output (stream compaction: the survivors of a scalar or (value, index)
//             tuple in order, sometimes with a map over the survivors, filter(v, p) * 3,
//             reading index() (the position among the survivors) or other inputs (read at
//             the survivors' positions: filter(v, p) + x)),
//   segmented_scan by offsets (inclusive / exclusive, any monoid above, the same offsets
//             patterns, partial cover: the elements outside every segment are the identity),
//   scan_by_key and reduce_by_key (any monoid; keys from a random-walk input that stays
//             put with some probability, index / stride runs, or a small-range integer map,
//             now and then a tuple of two; reduce_by_key outputs its keys, its values or both,
//             and now and then an input plus broadcast_by_key of its keys, each element's run's key),
//   alone, or reading an earlier reduction's result (array_op_of_reduce),
// under a random strategy (automatic, chunked, staged, tree, atomic where it applies;
// lookback / reduce_then_scan for scans) and a random size, edge sizes included.
//
// A Case is a description, not an ff::Program: build() instantiates it either as is
// (Mode::Narrow) or with every f32 widened to f64 (Mode::Wide), which is the f64
// reference float results are compared against. Each node carries a static analysis:
// a bound on |value|, a bound on the rounding error of the narrow computation, and
// whether the value is exact (the same bits on the GPU and in the CPU reference, and the
// same real number in the wide program). Conditions (select, filter, comparisons feeding
// integers) are built from exact operands only, so no element takes a different branch
// on the GPU and in the reference; integers are always exact, so every integer and tuple
// result compares exactly.
//
// Hazards avoided by construction: integer division / modulo only by constants other than
// 0 and -1; shift amounts are constants in [0, 8); float -> int casts only of exact floats
// clamped to +-1e6; float division only by constants or by abs(x) + 1; exp only of
// arguments clamped to [-4, 4], log and rsqrt only of abs(x) + 1, sqrt of abs(x); float
// magnitudes are clamped to 1e4; no float times-reductions. Signed integer overflow is
// allowed: the reference wraps, and the device's add / mul instructions wrap.
//
// Every Case carries its seed; generate(seed) reproduces it (FUSEFLOW_FUZZ_SEED in the
// fuzz tests). The shape is drawn from the seed by a Weyl sequence, so that a run of
// consecutive seeds (even the emulator's 60) meets every shape about as often as its
// weight says; the rest of the case comes from a PRNG seeded with it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fuseflow/frontend.hpp>

namespace fuseflow::fuzz {

enum class Mode : std::uint8_t { Narrow, Wide };

enum class NodeKind : std::uint8_t {
  Input, Index, Constant, Param,
  Scalar,       // the result of ops[index], a reduction (read by a later map)
  ScanElement,  // the element of ops[index], a scan or a filter (read by an output's map)
  Unary, Binary, Select, Call, Cast, Tuple, Get,
  Shift,   // shift(args[0] (an input), index, args[1] (a constant fill))
  Gather,  // gather(args[0] (an input), args[1] (an i64 index inside [0, n)))
  Fill,    // fill(args[0] (an input: its length), args[1] (index(), a constant or the parameter))
  Broadcast,  // broadcast(ops[index] (a segmented reduce over rows or offsets), its offsets): its segment's
              // result; of a reduce_by_key, broadcast_by_key of its keys: the element's run's key;
              // of a histogram (counts), gather(its bins, args[0] (an i64 index inside the bins))
};

struct Node;
using NodeRef = std::shared_ptr<const Node>;

struct Node {
  NodeKind kind = NodeKind::Constant;
  Type type;  // in the narrow program
  std::vector<NodeRef> args;
  int index = 0;   // Input / Param number; Scalar / ScanElement op; Get field
  Value constant;  // Constant (narrow)
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  MathFn fn = MathFn::Min;
  // Static analysis (scalars): |value| <= bound; |narrow value - exact real value| <=
  // abs_err + rel_err * |value| <= error (= abs_err + rel_err * bound). The relative part
  // lets a clamp cut the error of a huge value it saturates.
  double bound = 0;
  double abs_err = 0;
  double rel_err = 0;
  double error = 0;
  bool exact = true;
  bool reads_input = false;  // an input leaf is inside: the expression is an array
};

enum class MonoidChoice : std::uint8_t { Plus, Times, Min, Max, LogicalOr, ArgMin, ArgMax, Mssp, Matmul };
const char* monoid_name(MonoidChoice m);
bool is_commutative(MonoidChoice m);

struct OpDesc {
  OpKind kind = OpKind::Reduce;  // Reduce, Scan, Filter, Histogram, SegmentedReduce, SegmentedScan,
                                 // ScanByKey, ReduceByKey or CountingSort
  NodeRef values;     // element values; argmin/argmax zip them with index(), mssp maps them to parts
                      // (CountingSort: the values of sort_by_key, or none for counting_sort;
                      // Histogram: integer weights, or none for counts)
  NodeRef predicate;  // Reduce / Scan: reduce(filter(values, predicate)) or scan(filter(...)) when set; Filter: its predicate;
                      // Histogram: the bin filter(keys, predicate) + index() % 3 (weights filtered alike) when set
  MonoidChoice monoid = MonoidChoice::Plus;  // Reduce, Scan, SegmentedReduce / Scan, ScanByKey, ReduceByKey
  ScanKind scan_kind = ScanKind::Inclusive;  // Scan, SegmentedScan, ScanByKey
  Strategy strategy = Strategy::Automatic;
  // The array ops:
  NodeRef keys;                              // Histogram: the bin; CountingSort, ScanByKey, ReduceByKey: the key
  std::int64_t bins = 0;                     // Histogram, CountingSort
  ScalarType count_type = ScalarType::U32;   // Histogram
  int offsets_input = -1;                    // SegmentedReduce / Scan: the InputSpec of its offsets
  bool offsets_cast = false;                 // SegmentedReduce / Scan: offsets read as cast<i64>(o)
  bool offsets_scan = false;                 // SegmentedReduce / Scan: offsets scan(o, plus, exclusive) of lengths o
  int begin_bit = 0, end_bit = 0;            // CountingSort with bins == 0: a radix sort (ff::sort) by these key bits
  std::int64_t rows = 0;  // SegmentedReduce: when > 0, over ff::rows(input 0, rows) (offsets_input -1), read
                          // through broadcasts only (a per-row program)
};

struct OutputDesc {
  int op = -1;  // the op's result (a reduction's scalar, a scan's array) ...
  NodeRef map;  // ... or an element-wise map (over Scalar / ScanElement nodes and inputs)
  int field = 0;  // sort_by_key: 0 the sorted keys, 1 the values; reduce_by_key: 0 the unique keys, 1 the values
};

// How the offsets of a segmented op are drawn (make_inputs), over the n elements.
enum class SegmentPattern : std::uint8_t {
  Random,     // cut points uniform in [0, n], sorted: up to 2n segments, many empty
  Tiny,       // lengths 0..3, mostly 0 and 1
  Between,    // lengths 10..50
  Threes,     // all of length 3 (the last one shorter)
  Huge,       // one to three segments, one of them nearly everything
  Skewed,     // mostly 0..2, now and then a quarter of n
  None,       // one offset: no segments at all
};
const char* pattern_name(SegmentPattern p);

struct InputSpec {
  std::string name;
  ScalarType type = ScalarType::I32;
  double lo = 0, hi = 0;         // values drawn uniformly in [lo, hi]
  bool integral_values = false;  // floats rounded to integers (ties for argmin/argmax)
  // Offsets of a segmented op (an integral input of its own length, never read as
  // elements): drawn with this pattern; with `partial`, the segments start after element
  // 0 and end before n (the elements outside belong to no segment).
  bool offsets = false;
  SegmentPattern pattern = SegmentPattern::Random;
  bool partial = false;
  // Keys of a by-key op (an integral input read as elements): a random walk from a start
  // in [lo, hi] that stays put with probability `stay`, else steps by -2..2, so that runs
  // of equal keys form.
  bool walk = false;
  double stay = 0;
  // Offsets of a segmented op over a filter's survivors index() % every == 0: drawn over
  // ceil(n / every) elements, the survivors' count (a variant of shape "filtered_keyed").
  std::int64_t every = 1;
  // Offsets given as segment lengths (with `offsets`): the differences of the drawn offsets
  // (which start at 0), a 0 after them, so that their exclusive scan is the offsets
  // (OpDesc::offsets_scan; issues 21 and 25: offsets computed in the program).
  bool lengths = false;
};

struct ParamSpec {
  std::string name;
  Value value;  // narrow
};

struct Case {
  std::uint64_t seed = 0;
  std::int64_t n = 0;
  std::string shape;  // "reduce", "scan", "filter_reduce", "two_reduces", "map_of_reduce", ..., "histogram",
                      // "segmented_reduce", "counting_sort", "sort_by_key", "array_op_of_reduce",
                      // "filter", "segmented_scan", "scan_by_key", "reduce_by_key"
  std::vector<InputSpec> inputs;
  std::vector<ParamSpec> params;
  std::vector<OpDesc> ops;  // in dependency order
  std::vector<OutputDesc> outputs;
};

// The case for a seed: the same seed gives the same case on every platform (own PRNG, no
// std distributions).
Case generate(std::uint64_t seed);

// Every shape generate() draws, in the order of its tables.
const std::vector<std::string>& all_shapes();

struct Built {
  Program program;
  std::vector<Expr> inputs;      // per InputSpec
  std::vector<Expr> params;      // per ParamSpec
  std::vector<Expr> values;      // per op: its element values (before zip / parts / filter)
  std::vector<Expr> predicates;  // per op: its filter predicate, or an empty Expr
  std::vector<Expr> keys;        // per op: its keys (scan_by_key, reduce_by_key), or an empty Expr
};
Built build(const Case& c, Mode mode);

// The input data (deterministic from the seed), narrow types; and the wide copy of it.
std::vector<HostArray> make_inputs(const Case& c);
std::vector<HostArray> widen_inputs(const Case& c, const std::vector<HostArray>& narrow);
// Binds the inputs and parameters the program uses (program.inputs() / params()); a
// generated input the maps never read stays unbound, as Runtime::run requires.
HostBindings bind_data(const Case& c, const Built& b, const std::vector<HostArray>& data, Mode mode);
// Whether the program reads this input or parameter leaf.
bool uses(const Program& p, const Expr& leaf);

// What the results of a case are compared against.
struct Reference {
  std::vector<HostResult> narrow;  // when some output compares exactly
  std::vector<HostResult> wide;    // when some output compares within a tolerance
  std::vector<HostArray> wide_values;      // per op (floats only): the element values in f64
  std::vector<HostArray> wide_predicates;  // per op with a filter (floats only)
  // Per segmented or by-key op (floats only): its segment bounds (by key: the start of each
  // run of equal keys, then n).
  std::vector<std::vector<std::size_t>> segments;
};
Reference compute_reference(const Case& c, const std::vector<HostArray>& narrow_inputs);

// "" when `got` (one HostResult per output, narrow types) matches the reference; else a
// description of the first mismatch of each output that differs.
std::string compare(const Case& c, const Reference& ref, const std::vector<HostResult>& got);

// How each output is compared, in words ("exact", "float sum within ...").
std::string check_kind(const Case& c, std::size_t output);

// Seed, size, shape, inputs, parameters, ops with strategies, how each output is checked,
// and to_string of the program: everything to reproduce and read a failure.
std::string describe(const Case& c);

// Known code generator bugs, detected from the case's structure: the reason (the bug's
// name and symptom) when the case hits one, else "". The fuzz tests skip these cases and
// list their seeds; the compile test also checks that they still fail, so a fix is
// noticed and the entry removed. None now (see describe.cpp for the history).
std::string known_bug(const Case& c);

// Writes a test's report (summary and failures) to $FUSEFLOW_FUZZ_REPORT_DIR/<name>.txt,
// else to $OUT/<name>.txt when OUT is set (scripts/device.sh's output folder, which comes
// back from the GPU machine: ctest shows no output of a passing test); else nowhere.
void write_report(const std::string& name, const std::string& text);

// FUSEFLOW_FUZZ_SEED (decimal or 0x-hex): run only that seed. Otherwise `count` seeds
// starting at FUSEFLOW_FUZZ_BASE (default 1); FUSEFLOW_FUZZ_COUNT overrides `count`.
std::vector<std::uint64_t> seeds_from_environment(std::size_t count);

}  // namespace fuseflow::fuzz
