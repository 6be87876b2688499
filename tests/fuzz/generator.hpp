#pragma once
// The generator of random cases (program_generator.hpp): a Generator draws one Case from a
// seed. Its members are defined in three files, by topic: generate_expressions.cpp,
// generate_ops.cpp and generate_array_ops.cpp.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_detail.hpp"

namespace fuseflow::fuzz::detail {

// The shapes of the two groups (make_array_op_shape, make_shape) and their weights.
inline const std::vector<std::string> kArrayShapes = {"histogram",      "segmented_reduce", "counting_sort",
                                                      "sort_by_key",    "array_op_of_reduce", "filter",
                                                      "segmented_scan", "scan_by_key",      "reduce_by_key",
                                                      "filtered_keyed"};
inline const std::vector<int> kArrayWeights = {6, 7, 5, 5, 5, 5, 6, 5, 6, 5};
inline const std::vector<std::string> kOtherShapes = {"reduce",         "scan",          "filter_reduce",
                                                      "two_reduces",    "map_of_reduce", "reduce_of_reduce",
                                                      "scan_of_reduce", "scan_and_reduce", "scalar_epilogue"};
inline const std::vector<int> kOtherWeights = {12, 12, 11, 11, 10, 10, 10, 10, 10};

inline const std::vector<ScalarType> kTypes = {ScalarType::I32, ScalarType::I64, ScalarType::U32,
                                               ScalarType::F32, ScalarType::F64};
inline const std::vector<ScalarType> kIntTypes = {ScalarType::I32, ScalarType::I64, ScalarType::U32};
inline const std::vector<std::int64_t> kEdgeSizes = {0, 1, 31, 32, 33, 1000, 1023, 1025};

// The draw in [0, 1) that picks a seed's shape (generate_ops.cpp).
double shape_draw(std::uint64_t seed);

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed), shape_draw_(shape_draw(seed)) { c_.seed = seed; }

  Case run();

 private:
  // ---- sizes, inputs, parameters, leaves, expressions (generate_expressions.cpp) ------
  void pick_size();
  void pick_inputs();
  NodeRef input_leaf() { return leaves_[static_cast<std::size_t>(rng_.below(leaves_.size()))]; }
  NodeRef constant_leaf();
  NodeRef leaf(bool exact);
  NodeRef neighbour();
  NodeRef computed(const NodeRef& x);
  NodeRef to_float(const NodeRef& a);
  NodeRef to_int(const NodeRef& a, ScalarType t);
  NodeRef input_as_int();
  NodeRef coerce(const NodeRef& a, ScalarType t);
  NodeRef input_leaf_exact_int() { return input_as_int(); }
  std::pair<NodeRef, NodeRef> pair(int depth, bool exact);
  NodeRef similar_constant(const NodeRef& a);
  NodeRef number(int depth, bool exact);
  NodeRef integer(int depth);
  NodeRef divide(int depth, bool exact);
  NodeRef bitwise(int depth);
  NodeRef cast(int depth, bool exact);
  NodeRef math(int depth, bool exact);
  NodeRef boolean(int depth);
  NodeRef ensure_input(const NodeRef& a);
  int depth() { return static_cast<int>(rng_.range(1, 4)); }

  // ---- ops: monoids, reductions, scans, maps over their results (generate_ops.cpp) ----
  MonoidChoice pick_monoid(bool scan);
  NodeRef values_for(MonoidChoice m);
  static bool value_is_float(const OpDesc& op);
  Strategy reduce_strategy(const OpDesc& op);
  OpDesc reduce_op(bool filtered, std::vector<MonoidChoice> only = {});
  OpDesc scan_op();
  void scalar_reduce();
  NodeRef epilogue(int k);
  NodeRef map_of_scalar();
  NodeRef scalar_epilogue();
  NodeRef log_sum_exp();
  static bool reads_op(const NodeRef& n, int op);
  OpDesc reads_scalar(const std::function<OpDesc()>& make);
  std::size_t draw_shape(const std::vector<int>& weights);
  void make_shape();

  // ---- array ops: histogram, sort, segmented ops, filter, by-key ops
  // (generate_array_ops.cpp) ---------------------------------------------------------
  std::int64_t histogram_bins();
  std::int64_t sort_bins();
  NodeRef scaled_to_int();
  NodeRef bin_expression(std::int64_t bins);
  OpDesc histogram_op();
  NodeRef sort_values();
  OpDesc sort_op(bool with_values);
  int offsets_input();
  OpDesc segmented_op(int offsets);
  void rows_broadcast();
  NodeRef beside_broadcast(int k);
  MonoidChoice exact_monoid(bool integral);
  int push_exact_segmented(OpDesc op);
  OpDesc filter_op();
  NodeRef filter_output(int k, bool mix);
  void more_floats(OpDesc& op);
  OpDesc segmented_scan_op(int offsets);
  NodeRef walk_input();
  NodeRef scalar_key(const NodeRef& walk);
  NodeRef by_key_keys();
  OpDesc by_key_op(OpKind kind);
  OpDesc filtered_keyed_op();
  void array_op_outputs(int k);
  static bool op_reads_op(const OpDesc& d, int op);
  void make_array_op_shape();
  void offsets_broadcast(bool scanned = false);
  OpDesc scanned_offsets_op(bool scan);
  void rows_beside();
  void offsets_and_key_broadcasts();
  void by_key_broadcast(int k);
  void gathered_bins(int k);
  OpDesc filtered_segmented_op();

  // The shape comes from the seed's Weyl draw (shape_draw), not from the PRNG: first the
  // group (array ops: the first kArrayOpShare of [0, 1)), then the shape within it.
  // The share and the weights are chosen so that seeds 1..60 (the emulator's run) meet
  // every shape at least 3 times (checked by fuzz_compile_test).
  static constexpr double kArrayOpShare = 0.525;

  Rng rng_;
  double shape_draw_;
  Case c_;
  std::vector<NodeRef> leaves_;   // inputs
  std::vector<NodeRef> params_;
  std::vector<NodeRef> scalars_;  // clamped Scalar leaves
  NodeRef index_;
};

}  // namespace fuseflow::fuzz::detail
