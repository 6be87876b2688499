// Planner tests of scalar epilogues (outputs that are expressions of reductions'
// results): where each is computed, its slot, and the arguments of the kernel computing it.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;
using ff::codegen::Arg;

namespace {

ff::codegen::Plan plan_of(const ff::Program& p) { return ff::codegen::plan(p, ff::codegen::Target::preset("sm_90")); }

bool has_arg(const ff::codegen::KernelSpec& k, Arg::Kind kind, int index) {
  return std::any_of(k.args.begin(), k.args.end(), [&](const Arg& a) { return a.kind == kind && a.index == index; });
}

}  // namespace

TEST_CASE("log-sum-exp is one reduce kernel over the online (max, scaled sum) monoid; its last block computes the epilogue") {
  const auto x = ff::input<float>("x");
  const auto m = ff::reduce(x, ff::max);
  const ff::Program p(m + ff::log(ff::reduce(ff::exp(x - m), ff::plus)));
  const auto plan = plan_of(p);
  REQUIRE(plan.kernels.size() == 1);
  REQUIRE(plan.scalars.size() == 4);  // m, the sum (unwritten), the epilogue, the fused (max, scaled sum)
  REQUIRE(plan.output_scalar.size() == 1);
  const int slot = plan.output_scalar[0];
  CHECK(slot == 2);
  CHECK(plan.scalars[2].type == ff::Type(ff::ScalarType::F32));
  CHECK(plan.scalars[3].type == ff::Type::tuple({ff::ScalarType::F32, ff::ScalarType::F32}));
  const auto& k = plan.kernels[0];
  CHECK(k.name == "ff_reduce_chunked_f32x2_online_logsumexp");
  CHECK(has_arg(k, Arg::Kind::ScalarOutput, slot));
  CHECK_FALSE(has_arg(k, Arg::Kind::Scalar, 0));  // nothing read from an earlier kernel
  CHECK(k.source.find("*out2 = ") != std::string::npos);
  CHECK(k.source.find("expf(") != std::string::npos);
  CHECK(std::any_of(plan.notes.begin(), plan.notes.end(),
                    [](const std::string& n) { return n.find("log-sum-exp") != std::string::npos; }));
}

TEST_CASE("log-sum-exp of a map with its max and sum asked for: one kernel writing all three slots") {
  const auto x = ff::input<double>("x");
  const auto y = x * 2.0 + 1.0;
  const auto m = ff::reduce(y, ff::max);
  const auto s = ff::reduce(ff::exp(y - m), ff::plus);
  const auto plan = plan_of(ff::outputs(m, m + ff::log(s), s));
  REQUIRE(plan.kernels.size() == 1);
  const auto& k = plan.kernels[0];
  for (int slot : plan.output_scalar) CHECK(has_arg(k, Arg::Kind::ScalarOutput, slot));
  CHECK(plan.output_scalar[0] == 0);  // the max's own slot, written by an epilogue
  CHECK(plan.output_scalar[2] == 1);
}

TEST_CASE("the one-pass log-sum-exp is not used where the max or sum is read by an array or another reduction") {
  const auto x = ff::input<float>("x");
  const auto m = ff::reduce(x, ff::max);
  const auto s = ff::reduce(ff::exp(x - m), ff::plus);
  CHECK(plan_of(ff::outputs(m + ff::log(s), x - m)).kernels.size() == 3);  // max, sum, the map
  CHECK(plan_of(ff::outputs(m + ff::log(s), ff::reduce(x * s, ff::plus))).kernels.size() == 3);
  // Not the same values under the max and the exp, or another shape: two passes.
  const auto y = ff::input<float>("y");
  CHECK(plan_of(ff::Program(m + ff::log(ff::reduce(ff::exp(y - m), ff::plus)))).kernels.size() == 2);
  CHECK(plan_of(ff::Program(m + ff::log(ff::reduce(ff::exp(m - x), ff::plus)))).kernels.size() == 2);
  CHECK(plan_of(ff::Program(m + ff::log(ff::reduce(ff::exp(x - m), ff::max)))).kernels.size() == 2);
  CHECK(plan_of(ff::Program(m + ff::log(ff::reduce(ff::filter(ff::exp(x - m), x > 0.0f), ff::plus)))).kernels.size() == 2);
  // A forced strategy is kept (tree, atomic: built-in monoids only): two passes and the epilogue kernel.
  const auto mt = ff::reduce(x, ff::max, ff::strategy::tree);
  const auto plan = plan_of(ff::Program(mt + ff::log(ff::reduce(ff::exp(x - mt), ff::plus, ff::strategy::atomic))));
  CHECK(plan.kernels.size() > 2);
  CHECK(plan.kernels.back().name == "ff_epilogue_f32");
}

TEST_CASE("an epilogue reading a parameter and a reduction of an earlier stage takes both as arguments") {
  const auto x = ff::input<double>("x");
  const auto s = ff::reduce(x, ff::plus);
  const auto q = ff::reduce(x - s, ff::max);
  const auto p = ff::param<double>("scale");
  const auto plan = plan_of(ff::outputs(s * p, q + s));
  REQUIRE(plan.kernels.size() == 2);
  const auto& last = plan.kernels[1];
  CHECK(has_arg(last, Arg::Kind::Param, 0));
  CHECK(has_arg(last, Arg::Kind::ScalarOutput, plan.output_scalar[0]));
  CHECK(has_arg(last, Arg::Kind::ScalarOutput, plan.output_scalar[1]));
  CHECK(plan.output_scalar[0] != plan.output_scalar[1]);
}

TEST_CASE("after an atomic or tree reduction, or a reduction folded into a scan, an epilogue kernel runs last") {
  const auto x = ff::input<int>("x");
  for (ff::Strategy st : {ff::strategy::atomic, ff::strategy::tree}) {
    const auto plan = plan_of(ff::Program(ff::reduce(x, ff::plus, st) + 1));
    INFO("strategy " << ff::strategy_name(st));
    REQUIRE(plan.kernels.size() == 3);
    const auto& k = plan.kernels.back();
    CHECK(k.name == "ff_epilogue_i32");
    CHECK(k.registered == "scalar epilogue");
    CHECK(k.max_grid == 1);
    CHECK(has_arg(k, Arg::Kind::Scalar, 0));
    CHECK(has_arg(k, Arg::Kind::ScalarOutput, plan.output_scalar[0]));
    CHECK(plan.steps.back().kernel == 2);
  }
  const auto plan = plan_of(ff::outputs(ff::scan(x, ff::plus), ff::reduce(x, ff::plus) * 2));
  CHECK(plan.kernels.back().registered == "scalar epilogue");
  for (const auto& k : plan.kernels) CHECK(k.name.rfind("ff_reduce", 0) != 0);  // the reduction is folded in
}

TEST_CASE("a program of reductions alone plans as before, with no epilogue") {
  const auto x = ff::input<float>("x");
  const auto plan = plan_of(ff::outputs(ff::reduce(x, ff::plus), ff::reduce(x, ff::max)));
  REQUIRE(plan.kernels.size() == 1);
  CHECK(plan.kernels[0].source.find("epilogue") == std::string::npos);
}
