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

TEST_CASE("log-sum-exp is two reduce kernels; the second's last block computes the epilogue") {
  const auto x = ff::input<float>("x");
  const auto m = ff::reduce(x, ff::max);
  const ff::Program p(m + ff::log(ff::reduce(ff::exp(x - m), ff::plus)));
  const auto plan = plan_of(p);
  REQUIRE(plan.kernels.size() == 2);
  REQUIRE(plan.scalars.size() == 3);  // m, the sum, the epilogue
  REQUIRE(plan.output_scalar.size() == 1);
  const int slot = plan.output_scalar[0];
  CHECK(slot == 2);
  CHECK(plan.scalars[2].type == ff::Type(ff::ScalarType::F32));
  const auto& last = plan.kernels[1];
  CHECK(has_arg(last, Arg::Kind::ScalarOutput, slot));
  CHECK(has_arg(last, Arg::Kind::Scalar, 0));   // m, from the first kernel
  CHECK(has_arg(last, Arg::Kind::ScalarOutput, 1));
  CHECK_FALSE(has_arg(plan.kernels[0], Arg::Kind::ScalarOutput, slot));
  CHECK(last.source.find("*out2 = ") != std::string::npos);
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
