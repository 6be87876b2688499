#pragma once
// Graph ops and programs. The ops that materialise something (reduce, scan, filter,
// segmented reduce/scan, reduce/scan by key, histogram, counting sort) are immutable
// OpNodes, checked when made; their results are Exprs of kind Result, so a later map can
// use them (a scan's elements, or a reduction's scalar broadcast over an array). A
// Program is the list of results the user asks for; ops shared between them run once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuseflow/frontend/expr.hpp"
#include "fuseflow/frontend/monoid.hpp"

namespace fuseflow {

enum class OpKind : std::uint8_t {
  Reduce, Scan, Filter, SegmentedReduce, SegmentedScan, ReduceByKey, ScanByKey, Histogram,
  CountingSort,
};
const char* op_name(OpKind k);  // "reduce", "segmented_scan" ...

enum class ScanKind : std::uint8_t { Inclusive, Exclusive };
inline constexpr ScanKind inclusive = ScanKind::Inclusive;
inline constexpr ScanKind exclusive = ScanKind::Exclusive;

// How an op becomes a kernel. Automatic lets the planner choose; the others force a
// strategy for study and benchmarking (DESIGN.md "Strategies").
enum class Strategy : std::uint8_t { Automatic, Tree, Atomic, Chunked, Staged, Lookback, ReduceThenScan };
const char* strategy_name(Strategy s);
namespace strategy {
inline constexpr Strategy automatic = Strategy::Automatic;
inline constexpr Strategy tree = Strategy::Tree;
inline constexpr Strategy atomic = Strategy::Atomic;
inline constexpr Strategy chunked = Strategy::Chunked;
inline constexpr Strategy staged = Strategy::Staged;
inline constexpr Strategy lookback = Strategy::Lookback;
inline constexpr Strategy reduce_then_scan = Strategy::ReduceThenScan;
}  // namespace strategy

struct OpNode {
  OpKind kind;
  Expr values;     // element-wise values the op consumes (maps fused in)
  Expr predicate;  // Filter: bool per element
  Expr offsets;    // SegmentedReduce/Scan: n_segments + 1 non-decreasing offsets
  Expr keys;       // ReduceByKey/ScanByKey: segment keys; Histogram: bin; CountingSort: key
                   // (values: a weighted histogram's weights, in its sum type)
  Monoid monoid;   // instantiated for values' type
  ScanKind scan_kind = ScanKind::Inclusive;
  Strategy strategy = Strategy::Automatic;
  std::int64_t bins = 0;            // Histogram, CountingSort
  std::vector<Type> output_types;   // one per result
  bool scalar_output = false;       // Reduce: a single value, not an array
  int begin_bit = 0, end_bit = 0;   // CountingSort with bins == 0 (ff::sort): the key bits it sorts by
};

// ---- ops ----------------------------------------------------------------------------
// reduce(xs, m): combines all elements left to right; an empty array gives m's identity.
Expr reduce(const Expr& xs, const Monoid& m, Strategy s = Strategy::Automatic);
// scan(xs, m, inclusive|exclusive): prefix combinations; exclusive starts at the identity.
Expr scan(const Expr& xs, const Monoid& m, ScanKind kind = ScanKind::Inclusive,
          Strategy s = Strategy::Automatic);
// filter(xs, pred): the elements of xs whose predicate is true, in order.
Expr filter(const Expr& xs, const Expr& predicate);
template <class F, class = std::enable_if_t<std::is_invocable_v<F, Expr>>>
Expr filter(const Expr& xs, F&& predicate) {
  return filter(xs, Expr(predicate(xs)));
}
// Segments by offsets (CSR): segment s is [offsets[s], offsets[s+1]).
Expr segmented_reduce(const Expr& xs, const Expr& offsets, const Monoid& m);
Expr segmented_scan(const Expr& xs, const Expr& offsets, const Monoid& m,
                    ScanKind kind = ScanKind::Inclusive);
// Segments by runs of equal consecutive keys.
struct KeyedResult {
  Expr keys;    // one key per segment (reduce_by_key) or per element (sort_by_key)
  Expr values;
};
KeyedResult reduce_by_key(const Expr& keys, const Expr& xs, const Monoid& m);
Expr scan_by_key(const Expr& keys, const Expr& xs, const Monoid& m,
                 ScanKind kind = ScanKind::Inclusive);
// histogram(bin, nbins): counts of each bin value in [0, nbins); others are dropped.
Expr histogram(const Expr& bin, std::int64_t nbins, const Type& count_type = ScalarType::U32);
// histogram(bin, weights, nbins): the sum of the weights of each bin in [0, nbins) (f32,
// f64 or an integer type; i8/i16/u8/u16 summed as i32, integers wrapping); the same bits on
// every run, floats included (a fixed order of additions for a given n and device).
Expr histogram(const Expr& bin, const Expr& weights, std::int64_t nbins);
template <class F, class = std::enable_if_t<std::is_invocable_v<F, Expr>>>
Expr histogram(const Expr& xs, F&& bin_of, std::int64_t nbins,
               const Type& count_type = ScalarType::U32) {
  return histogram(Expr(bin_of(xs)), nbins, count_type);
}
// Stable counting sort by a small integer key in [0, nbins): the keys (any integral map
// of the inputs) in ascending order, equal keys in input order. A key outside [0, nbins)
// sorts after every key inside, in input order, so the result is always a permutation of
// the n elements. sort_by_key also returns the values, permuted alike (keys, values).
Expr counting_sort(const Expr& keys, std::int64_t nbins);
KeyedResult sort_by_key(const Expr& keys, const Expr& values, std::int64_t nbins);
// Stable sort of 32-bit keys (u32, i32, f32: any map of the inputs) by their value, an LSD
// radix sort over 8-bit digits. i32 sorts as signed; f32 by the order-preserving bit flip:
// -inf < ... < -0.0 < +0.0 < ... < +inf < every NaN (NaNs in input order). KeyBits{b, e}
// sorts by bits [b, e) of that ordered form only (CUB's begin_bit/end_bit): the keys are
// ordered by ((ordered >> b) mod 2^(e - b)), equal ones in input order; name only the
// bits that vary to save passes (one pass per 8 bits). The keys come out unchanged.
struct KeyBits {
  int begin = 0;
  int end = 32;
};
Expr sort(const Expr& keys, KeyBits bits = {});
KeyedResult sort_by_key(const Expr& keys, const Expr& values, KeyBits bits = {});

// ---- programs -----------------------------------------------------------------------
class Program {
 public:
  Program(const Expr& single);  // NOLINT: a result is a one-output program
  explicit Program(std::vector<Expr> outputs);
  // A rewritten program (lift_filters) over the same leaves: its inputs and parameters in
  // `order`'s order, so bindings by position stay valid.
  Program(std::vector<Expr> outputs, const Program& order);

  const std::vector<Expr>& outputs() const { return outputs_; }
  // Whether output i comes back as one value (a reduction's result or an expression of
  // them), found once when the program is built (runs ask it every time).
  bool output_is_scalar(std::size_t i) const { return scalar_outputs_.at(i); }
  // In a fixed order (first reached, depth first from output 0): the distinct input
  // leaves, parameter leaves, and ops (each op after the ops it depends on).
  const std::vector<Expr>& inputs() const { return inputs_; }
  const std::vector<Expr>& params() const { return params_; }
  const std::vector<std::shared_ptr<const OpNode>>& ops() const { return ops_; }

 private:
  std::vector<Expr> outputs_;
  std::vector<bool> scalar_outputs_;
  std::vector<Expr> inputs_;
  std::vector<Expr> params_;
  std::vector<std::shared_ptr<const OpNode>> ops_;
};

// A program of N results: Runtime::run gives them back as a std::array, so
// `auto [sum, max] = rt.run(ff::outputs(...), ...)` works.
template <std::size_t N>
class Outputs : public Program {
 public:
  using Program::Program;
};

// outputs(a, b, ...): several results of one program, computed together.
template <class... Es>
Outputs<sizeof...(Es)> outputs(const Es&... results) {
  return Outputs<sizeof...(Es)>(std::vector<Expr>{Expr(results)...});
}

// The stable textual form of a program (errors, explain(), golden tests).
std::string to_string(const Program& p);
// One expression, as to_string prints it inside a program.
std::string to_string(const Expr& e);
std::string to_string(const Monoid& m);
std::string to_string(const Type& t);

// ---- element-wise domains -----------------------------------------------------------
// The leaves that give an element-wise expression its length: its inputs and the array
// results of earlier ops. Scalars (constants, parameters, reductions) broadcast.
std::vector<Expr> array_leaves(const Expr& e);
bool is_array(const Expr& e);

// ---- scalar outputs -----------------------------------------------------------------
// A reduction's result, or a scalar epilogue: an expression of reductions' results (and
// parameters and constants) with no array leaf, such as log-sum-exp's
// `m + log(reduce(exp(x - m), plus))`. Both come back to the host as one value; an
// epilogue is computed on the device after the reductions it reads.
bool is_reduction_result(const Expr& e);
bool is_scalar_epilogue(const Expr& e);
inline bool is_scalar_output(const Expr& e) { return is_reduction_result(e) || is_scalar_epilogue(e); }

}  // namespace fuseflow
