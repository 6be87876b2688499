#pragma once
// The program generator's internals, shared by its files (program_generator.hpp is what the
// tests use):
//   nodes.cpp                  the scalar types and the static analysis of a node (bound,
//                              rounding error, exactness), the node constructors, clamps;
//   generator.hpp              the Generator class, which draws a Case from a seed:
//     generate_expressions.cpp   sizes, inputs, leaves and element-wise expressions,
//     generate_ops.cpp           monoids, reductions, scans, maps over their results, the
//                                shapes of the non-array-op group,
//     generate_array_ops.cpp     histogram, sort, segmented ops, filter, by-key ops;
//   build.cpp                  a Case as an ff::Program (narrow or wide) and its input data;
//   reference_check.cpp        the CPU reference and how each output is compared with it;
//   describe.cpp               names, describe(), reports and seeds from the environment.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/program_generator.hpp"

namespace fuseflow::fuzz::detail {

// ---- random numbers -------------------------------------------------------------------
// splitmix64: small, fast, and the same sequence on every platform.
inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(mix(seed)) {}
  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  std::int64_t range(std::int64_t lo, std::int64_t hi) {  // inclusive, in unsigned arithmetic (no overflow)
    std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    std::uint64_t off = span == ~std::uint64_t{0} ? next() : below(span + 1);
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + off);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(below(v.size()))];
  }
  // An index drawn with the given weights.
  std::size_t weighted(const std::vector<int>& weights) {
    int total = 0;
    for (int w : weights) total += w;
    auto r = static_cast<int>(below(static_cast<std::uint64_t>(total)));
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  std::uint64_t state_;
};

// ---- types and the static analysis (nodes.cpp) -----------------------------------------

constexpr double kFloatLimit = 1e4;    // float magnitudes are clamped to this
constexpr double kIntClampLimit = 1e6; // float -> int casts clamp to this first
constexpr double kSumRelTol = 2e-5;    // float sums: relative to the sum of |terms|

bool is_float(ScalarType t);
bool is_unsigned(ScalarType t);
bool is_int(ScalarType t);
double ulp(ScalarType t);
double type_max(ScalarType t);

// The type or value in the program built in mode m: f32 becomes f64 in the wide program.
ScalarType widen(ScalarType t, Mode m);
Type widen(const Type& t, Mode m);
Value widen(const Value& v, Mode m);

ScalarType st(const NodeRef& n);
// Exact after conversion: the same bits on both sides and the same real value when wide.
bool exact_conv(const Node& a, ScalarType to);
// Sets the node's error as an absolute and a relative part (its bound must be set).
void set_err(Node& n, double abs_part, double rel_part);

// The node constructors: each sets the node's type and its static analysis.
std::shared_ptr<Node> fresh(NodeKind k, Type t);
std::shared_ptr<Node> make_input(int k, const InputSpec& spec);
std::shared_ptr<Node> make_index(std::int64_t count);
std::shared_ptr<Node> make_const(const Value& v);
std::shared_ptr<Node> make_const(ScalarType t, double x);  // about the value x
std::shared_ptr<Node> make_param(int k, const ParamSpec& p);
std::shared_ptr<Node> make_unary(UnaryOp op, const NodeRef& a);
// `divisor_min`: for a float division, a lower bound on |divisor| (the generator divides
// only by constants or by abs(x) + 1).
std::shared_ptr<Node> make_binary(BinaryOp op, const NodeRef& a, const NodeRef& b, double divisor_min = 1);
std::shared_ptr<Node> make_select(const NodeRef& c, const NodeRef& a, const NodeRef& b);
std::shared_ptr<Node> make_call(MathFn fn, std::vector<NodeRef> args);
std::shared_ptr<Node> make_cast(ScalarType to, const NodeRef& a);
std::shared_ptr<Node> make_tuple(std::vector<NodeRef> fields);
std::shared_ptr<Node> make_get(const NodeRef& t, int field);
// shift(x, k, fill) of an input x; gather(x, index() / 2) (every index inside [0, n) at
// any n, as a test may shrink n). The gather's length comes from other arrays: it does not
// count as reading an input.
std::shared_ptr<Node> make_shift(const NodeRef& x, int k, const NodeRef& fill);
std::shared_ptr<Node> make_halved(const NodeRef& x, const NodeRef& index);
// fill(like, value): value (index(), a constant, the parameter) at every element, as many
// elements as the input `like` (ff::fill of an array's length; ff::iota when value is index()).
std::shared_ptr<Node> make_fill(const NodeRef& like, const NodeRef& value);
// min(max(a, -limit), limit) (min(a, limit) for unsigned): bounds |a| by limit.
NodeRef clamp(const NodeRef& a, double limit);
// Keeps float magnitudes bounded.
NodeRef tame(const NodeRef& a);

// ---- op kinds ---------------------------------------------------------------------------

inline bool is_array_op(OpKind k) {
  return k == OpKind::Histogram || k == OpKind::SegmentedReduce || k == OpKind::CountingSort || k == OpKind::Filter ||
         k == OpKind::SegmentedScan || k == OpKind::ScanByKey || k == OpKind::ReduceByKey;
}

inline bool is_by_key(OpKind k) { return k == OpKind::ScanByKey || k == OpKind::ReduceByKey; }
inline bool is_segmented(OpKind k) { return k == OpKind::SegmentedReduce || k == OpKind::SegmentedScan; }

// A number with all its digits (reference_check.cpp).
std::string num(double v);

}  // namespace fuseflow::fuzz::detail
