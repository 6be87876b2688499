// Graph ops and programs (program.hpp): the GraphError of every misused op, and the fixed
// dependency order in which a Program collects its inputs, parameters and ops.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "fuseflow/frontend/program.hpp"

namespace ff = fuseflow;
using ff::ScalarType;
using ff::Type;

namespace {
using Mssp = ff::Tuple<int, int, int, int>;
ff::Monoid mssp() {
  return ff::monoid<Mssp>(
      [](auto a, auto b) {
        return ff::tuple(ff::max(ff::max(a[0], b[0]), a[2] + b[1]), ff::max(a[1], a[3] + b[1]),
                         ff::max(b[2], a[2] + b[3]), a[3] + b[3]);
      },
      ff::tuple(0, 0, 0, 0), ff::non_commutative, "mssp");
}
ff::Expr mssp_parts(const ff::Expr& x) {
  return ff::map(x, [](auto v) {
    auto p = ff::max(v, 0);
    return ff::tuple(p, p, p, v);
  });
}
const ff::OpNode& op_of(const ff::Expr& result) {
  REQUIRE(result.kind() == ff::ExprKind::Result);
  return *result.node().op;
}
}  // namespace

TEST_CASE("reduce makes a scalar result of the monoid's type with the map fused in") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const ff::Expr dot = ff::reduce(x * y, ff::plus);
  CHECK(dot.type() == Type(ScalarType::F32));
  const ff::OpNode& op = op_of(dot);
  CHECK(op.kind == ff::OpKind::Reduce);
  CHECK(op.scalar_output);
  CHECK(op.strategy == ff::Strategy::Automatic);
  CHECK(op.monoid.is_typed());
  CHECK(op.monoid.type() == Type(ScalarType::F32));
  CHECK(ff::to_string(op.values) == "x * y");
  CHECK_FALSE(ff::is_array(dot));
  CHECK(ff::is_array(x * y));
}

TEST_CASE("array ops make array results of the right types") {
  const auto x = ff::input<float>("x");
  const auto k = ff::input<int>("k");
  const auto offsets = ff::input<std::int64_t>("offsets");
  const ff::Expr s = ff::scan(x, ff::plus, ff::exclusive, ff::strategy::lookback);
  CHECK(s.type() == Type(ScalarType::F32));
  CHECK(op_of(s).scan_kind == ff::ScanKind::Exclusive);
  CHECK(op_of(s).strategy == ff::Strategy::Lookback);
  CHECK_FALSE(op_of(s).scalar_output);
  CHECK(ff::is_array(s * 2.0f));
  CHECK(ff::filter(x, [](auto v) { return v > 0.0f; }).type() == Type(ScalarType::F32));
  CHECK(ff::segmented_reduce(x, offsets, ff::max).type() == Type(ScalarType::F32));
  CHECK(ff::segmented_scan(k, offsets, ff::plus, ff::exclusive).type() == Type(ScalarType::I32));
  const ff::KeyedResult by_key = ff::reduce_by_key(k, x, ff::plus);
  CHECK(by_key.keys.type() == Type(ScalarType::I32));
  CHECK(by_key.values.type() == Type(ScalarType::F32));
  CHECK(by_key.keys.node().op == by_key.values.node().op);
  CHECK(by_key.values.node().index == 1);
  CHECK(ff::scan_by_key(k, x, ff::max).type() == Type(ScalarType::F32));
  const ff::Expr h = ff::histogram(k, 16);
  CHECK(h.type() == Type(ScalarType::U32));
  CHECK(op_of(h).bins == 16);
  CHECK(ff::histogram(x, [](auto v) { return ff::cast<int>(v * 4.0f); }, 4, ScalarType::U64).type() ==
        Type(ScalarType::U64));
  CHECK(ff::counting_sort(k, 8).type() == Type(ScalarType::I32));
  const ff::KeyedResult sorted = ff::sort_by_key(k, x, 8);
  CHECK(sorted.values.type() == Type(ScalarType::F32));
  CHECK(op_of(sorted.values).output_types.size() == 2);
}

TEST_CASE("reduce and scan of something that is not an array throw, showing the expression") {
  const auto p = ff::param<float>("p");
  CHECK_THROWS_WITH_AS(ff::reduce(ff::Expr(1.0f), ff::plus),
                       "fuseflow: reduce: its argument is not an array (it uses no input or array result): 1.0f",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::scan(p * 2.0f, ff::plus),
                       "fuseflow: scan: its argument is not an array (it uses no input or array result): $p * 2.0f",
                       ff::GraphError);
  const ff::Expr total = ff::reduce(ff::input<float>("x"), ff::plus);
  CHECK_THROWS_WITH_AS(
      ff::reduce(total, ff::plus),
      "fuseflow: reduce: its argument is not an array (it uses no input or array result): reduce(...)",
      ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::reduce(ff::Expr(), ff::plus), "fuseflow: reduce: its argument is an empty ff::Expr",
                       ff::GraphError);
}

TEST_CASE("a reduce given a scan strategy, or a scan given a reduce strategy, throws") {
  const auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::reduce(x, ff::plus, ff::strategy::lookback),
                       "fuseflow: reduce: strategy lookback is a scan strategy", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::reduce(x, ff::plus, ff::strategy::reduce_then_scan),
                       "fuseflow: reduce: strategy reduce_then_scan is a scan strategy", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::scan(x, ff::plus, ff::inclusive, ff::strategy::chunked),
                       "fuseflow: scan: strategy chunked is a reduce strategy (scan takes lookback or "
                       "reduce_then_scan)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::scan(x, ff::plus, ff::exclusive, ff::strategy::tree),
                       "fuseflow: scan: strategy tree is a reduce strategy (scan takes lookback or "
                       "reduce_then_scan)",
                       ff::GraphError);
  for (ff::Strategy s : {ff::strategy::tree, ff::strategy::atomic, ff::strategy::chunked, ff::strategy::staged}) {
    CHECK(op_of(ff::reduce(x, ff::plus, s)).strategy == s);
  }
}

TEST_CASE("chunked reduce with a non-commutative monoid throws; staged accepts it") {
  const auto x = ff::input<int>("x");
  CHECK_THROWS_WITH_AS(ff::reduce(mssp_parts(x), mssp(), ff::strategy::chunked),
                       "fuseflow: reduce: strategy chunked needs a commutative monoid; mssp is non-commutative "
                       "(use staged or automatic)",
                       ff::GraphError);
  CHECK(op_of(ff::reduce(mssp_parts(x), mssp(), ff::strategy::staged)).strategy == ff::Strategy::Staged);
}

TEST_CASE("an op whose monoid does not apply to its elements throws naming the op") {
  const auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::reduce(ff::zip(x, x), ff::plus),
                       "fuseflow: reduce: monoid plus needs a scalar element type (use a custom monoid for "
                       "tuples), got (f32, f32)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::scan(x, ff::bit_or), "fuseflow: scan: monoid bit_or needs an integral type, got f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::reduce_by_key(ff::input<int>("k"), x, ff::logical_and),
                       "fuseflow: reduce_by_key: monoid logical_and needs bool elements, got f32", ff::GraphError);
}

TEST_CASE("a filter predicate that is not bool throws naming its type") {
  const auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::filter(x, x * 2.0f), "fuseflow: filter: the predicate must be bool, got f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::filter(x, ff::zip(x > 0.0f, x > 1.0f)),
                       "fuseflow: filter: the predicate must be bool, got (bool, bool)", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::filter(x, ff::Expr()), "fuseflow: filter: the predicate is an empty ff::Expr",
                       ff::GraphError);
}

TEST_CASE("a histogram bin that is not integral, or a bin count that is not positive, throws") {
  const auto x = ff::input<float>("x");
  const auto k = ff::input<int>("k");
  CHECK_THROWS_WITH_AS(ff::histogram(x, 10), "fuseflow: histogram: the bin expression must be integral, got f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::histogram(x > 0.0f, 2),
                       "fuseflow: histogram: the bin expression must be integral, got bool", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::histogram(k, 0), "fuseflow: histogram: the bin count must be positive, got 0",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::histogram(k, -3), "fuseflow: histogram: the bin count must be positive, got -3",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::histogram(k, 8, ScalarType::F32), "fuseflow: histogram: counts are u32 or u64, got f32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::counting_sort(k, 0), "fuseflow: counting_sort: the bin count must be positive, got 0",
                       ff::GraphError);
}

TEST_CASE("counting sort of floating keys throws naming the key type") {
  CHECK_THROWS_WITH_AS(ff::counting_sort(ff::input<float>("x"), 16),
                       "fuseflow: counting_sort: the keys must be integral, got f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort_by_key(ff::input<double>("d"), ff::input<int>("v"), 16),
                       "fuseflow: counting_sort: the keys must be integral, got f64", ff::GraphError);
}

TEST_CASE("segmented ops need integral offsets") {
  const auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::segmented_reduce(x, ff::input<float>("o"), ff::plus),
                       "fuseflow: segmented_reduce: the offsets must be integral, got f32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::segmented_scan(x, x > 0.0f, ff::plus),
                       "fuseflow: segmented_scan: the offsets must be integral, got bool", ff::GraphError);
}

TEST_CASE("a map over declared inputs of different lengths throws naming both inputs") {
  const auto x = ff::input<float>("x", 10);
  const auto y = ff::input<float>("y", 20);
  const auto z = ff::input<float>("z");
  CHECK_THROWS_WITH_AS(ff::reduce(x * y, ff::plus),
                       "fuseflow: reduce: map over arrays of different lengths: input 'x' has 10 elements, "
                       "input 'y' has 20",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::filter(x, y > 0.0f),
                       "fuseflow: filter: map over arrays of different lengths: input 'x' has 10 elements, "
                       "input 'y' has 20",
                       ff::GraphError);
  const auto k = ff::input<int>("k", 5);
  CHECK_THROWS_WITH_AS(ff::reduce_by_key(k, x, ff::plus),
                       "fuseflow: reduce_by_key: map over arrays of different lengths: input 'k' has 5 elements, "
                       "input 'x' has 10",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Program(x + y),
                       "fuseflow: program: map over arrays of different lengths: input 'x' has 10 elements, "
                       "input 'y' has 20",
                       ff::GraphError);
  // A histogram's result has its bin count as length.
  const ff::Expr counts = ff::histogram(k, 16);
  CHECK_THROWS_WITH_AS(ff::scan(ff::cast<float>(counts) + x, ff::plus),
                       "fuseflow: scan: map over arrays of different lengths: the result of histogram has 16 "
                       "elements, input 'x' has 10",
                       ff::GraphError);
  // An input of unknown length agrees with any.
  CHECK(ff::reduce(x * z, ff::plus).valid());
  CHECK(ff::reduce(x * ff::input<float>("w", 10), ff::plus).valid());
}

TEST_CASE("an empty program, an empty output or an output that is a constant throws") {
  CHECK_THROWS_WITH_AS(ff::outputs(), "fuseflow: program: an empty program (outputs() with no results)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Program(ff::constant(1)),
                       "fuseflow: program: output 0 (1) is neither an array nor an expression of reductions' results "
                       "(it reads only constants and parameters)",
                       ff::GraphError);
  const auto x = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::outputs(ff::reduce(x, ff::plus), ff::param<float>("p") * 2.0f),
                       "fuseflow: program: output 1 ($p * 2.0f) is neither an array nor an expression of reductions' "
                       "results (it reads only constants and parameters)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::outputs(x, ff::Expr()), "fuseflow: program: output 1 is an empty ff::Expr",
                       ff::GraphError);
}

TEST_CASE("an expression of reductions' results is a scalar output (a scalar epilogue)") {
  const auto x = ff::input<float>("x");
  const auto m = ff::reduce(x, ff::max);
  const auto lse = m + ff::log(ff::reduce(ff::exp(x - m), ff::plus));
  CHECK(ff::is_scalar_epilogue(lse));
  CHECK(ff::is_scalar_output(lse));
  CHECK_FALSE(ff::is_scalar_epilogue(m));  // a reduction's result itself
  CHECK(ff::is_reduction_result(m));
  CHECK_FALSE(ff::is_scalar_epilogue(x - m));  // an array
  const ff::Program p = ff::outputs(lse, m * ff::param<float>("scale"), x - m);
  CHECK(p.outputs().size() == 3);
  CHECK(p.ops().size() == 2);
  CHECK_THROWS_WITH_AS(ff::Program(m + ff::cast<float>(ff::index())),
                       "fuseflow: program: output 0 (reduce(...) + cast<f32>(index)) reads index() but maps over no "
                       "array; an expression of reductions' results has no element index",
                       ff::GraphError);
}

TEST_CASE("two different inputs or parameters with the same name throw") {
  const auto x1 = ff::input<float>("x");
  const auto x2 = ff::input<float>("x");
  CHECK_THROWS_WITH_AS(ff::Program(ff::reduce(x1 + x2, ff::plus)),
                       "fuseflow: program: two different inputs or parameters are named 'x'", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::outputs(ff::reduce(x1, ff::plus), ff::reduce(x2, ff::max)),
                       "fuseflow: program: two different inputs or parameters are named 'x'", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::Program(x1 * ff::param<float>("x")),
                       "fuseflow: program: two different inputs or parameters are named 'x'", ff::GraphError);
  // The same input used twice is one input.
  CHECK(ff::Program(x1 * x1).inputs().size() == 1);
}

TEST_CASE("a program collects inputs, parameters and ops in a fixed dependency order") {
  const auto x = ff::input<float>("x");
  const auto w = ff::input<float>("w");
  const auto b = ff::input<float>("b");
  const auto scale = ff::param<float>("scale");
  const auto shift = ff::param<float>("shift");
  const ff::Expr prefix = ff::scan(x * scale, ff::plus);
  const ff::Expr weighted = ff::reduce(prefix * w + shift, ff::plus);
  const ff::Expr biased = ff::reduce(b, ff::max);
  const ff::Program p = ff::outputs(weighted, prefix, biased);

  REQUIRE(p.outputs().size() == 3);
  REQUIRE(p.inputs().size() == 3);
  CHECK(ff::same_node(p.inputs()[0], x));
  CHECK(ff::same_node(p.inputs()[1], w));
  CHECK(ff::same_node(p.inputs()[2], b));
  REQUIRE(p.params().size() == 2);
  CHECK(ff::same_node(p.params()[0], scale));
  CHECK(ff::same_node(p.params()[1], shift));
  REQUIRE(p.ops().size() == 3);
  // Each op comes after the ops it depends on: the scan before the reduce that uses it.
  CHECK(p.ops()[0].get() == weighted.node().op->values.args()[0].args()[0].node().op.get());
  CHECK(p.ops()[0]->kind == ff::OpKind::Scan);
  CHECK(p.ops()[1].get() == weighted.node().op.get());
  CHECK(p.ops()[2].get() == biased.node().op.get());

  // The same program built again collects in the same order.
  const ff::Program again = ff::outputs(weighted, prefix, biased);
  CHECK(again.ops() == p.ops());
  CHECK(ff::same_node(again.inputs()[1], w));
}

TEST_CASE("an op used twice is one op of the program") {
  const auto x = ff::input<float>("x");
  const ff::Expr total = ff::reduce(x, ff::plus);
  const ff::Program p = ff::outputs(total, x / total, x - total);
  REQUIRE(p.ops().size() == 1);
  CHECK(p.ops()[0].get() == total.node().op.get());
  CHECK(p.inputs().size() == 1);

  const ff::KeyedResult by_key = ff::reduce_by_key(ff::input<int>("k"), x, ff::plus);
  const ff::Program keyed = ff::outputs(by_key.keys, by_key.values);
  CHECK(keyed.ops().size() == 1);
  CHECK(keyed.inputs().size() == 2);
}

TEST_CASE("array_leaves finds inputs and array results, not scalars that broadcast") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  const ff::Expr total = ff::reduce(x, ff::plus);
  const ff::Expr prefix = ff::scan(y, ff::plus);
  const auto leaves = ff::array_leaves(x / total + prefix * ff::param<float>("p") + x);
  REQUIRE(leaves.size() == 2);
  CHECK(ff::same_node(leaves[0], x));
  CHECK(ff::same_node(leaves[1], prefix));
  CHECK(ff::array_leaves(ff::index() * 2).empty());
  CHECK_FALSE(ff::is_array(ff::Expr()));
}

TEST_CASE("a radix sort takes u32, i32 or f32 keys and a bit range inside [0, 32), and says what is wrong otherwise") {
  const auto u = ff::input<unsigned>("u");
  const auto f = ff::input<float>("f");
  CHECK(ff::sort(f).type() == Type(ScalarType::F32));
  const ff::KeyedResult by_bits = ff::sort_by_key(u, f, {4, 12});
  CHECK(by_bits.keys.node().op->begin_bit == 4);
  CHECK(by_bits.keys.node().op->end_bit == 12);
  CHECK(by_bits.keys.node().op->bins == 0);
  CHECK(by_bits.values.type() == Type(ScalarType::F32));
  CHECK_THROWS_WITH_AS(ff::sort(ff::input<double>("d")),
                       "fuseflow: sort: the keys must be u32, i32 or f32, got f64 (cast them, or use counting_sort for "
                       "small integer keys)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort_by_key(ff::input<std::uint64_t>("w"), f),
                       "fuseflow: sort_by_key: the keys must be u32, i32 or f32, got u64 (cast them, or use "
                       "counting_sort for small integer keys)",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort(u, {8, 8}), "fuseflow: sort: the key bits [8, 8) must satisfy 0 <= begin < end <= 32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort(u, {0, 33}), "fuseflow: sort: the key bits [0, 33) must satisfy 0 <= begin < end <= 32",
                       ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort_by_key(u, f, {-1, 8}),
                       "fuseflow: sort_by_key: the key bits [-1, 8) must satisfy 0 <= begin < end <= 32", ff::GraphError);
  CHECK_THROWS_WITH_AS(ff::sort_by_key(u, ff::Expr()), "fuseflow: sort_by_key: the values are an empty ff::Expr",
                       ff::GraphError);
}
