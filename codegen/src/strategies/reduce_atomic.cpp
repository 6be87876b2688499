// Reduce with per-element atomics: "atomic" (kept to reproduce the course's measurements,
// never chosen automatically). Kernel 0 writes the identity; kernel 1 (the loop in
// ff::reduce::atomic, <fuseflow/reduce.cuh>) has every thread apply atomicAdd / atomicMin
// / atomicMax to the single result for each element of a grid-strided loop. Every element contends for one address, so it is slow at scale; a
// float sum's rounding depends on the order the atomics land in, so it is not
// deterministic. Supports plus on numbers and min/max on integers.
#include "../kernel_context.hpp"

namespace fuseflow::codegen {

namespace {

// The atomic for a built-in monoid on `t`, or "" when there is none.
std::string atomic_function(const Monoid& m) {
  const Type& t = m.type();
  if (!t.is_scalar() || t.is_bool()) return "";
  const bool small = t.size() < 4;
  if (small) return "";
  if (m.kind() == MonoidKind::Plus) return "atomicAdd";
  if ((m.kind() == MonoidKind::Min || m.kind() == MonoidKind::Max) && t.is_integral())
    return m.kind() == MonoidKind::Min ? "atomicMin" : "atomicMax";
  return "";
}

// CUDA's atomics take unsigned long long for 64-bit adds; two's complement makes that
// right for signed values too.
std::string atomic_target(const Type& t, const std::string& ptr, const std::string& fn) {
  if (fn == "atomicAdd" && t.scalar() == ScalarType::I64) return "(unsigned long long*)" + ptr;
  return ptr;
}
std::string atomic_value(const Type& t, const std::string& v, const std::string& fn) {
  if (fn == "atomicAdd" && t.scalar() == ScalarType::I64) return "(unsigned long long)" + v;
  return v;
}
}  // namespace

std::vector<KernelSpec> emit_reduce_atomic(const KernelContext& g) {
  const Target& t = g.target();
  const int kBlock = g.policies().reduce.block;
  const FusedReduce& r = g.reduces.at(0);
  const Monoid& m = r.op->monoid;
  const std::string fn = atomic_function(m);
  if (g.reduces.size() != 1 || fn.empty())
    throw GraphError("reduce: strategy atomic supports plus on 32- and 64-bit numbers and min/max on 32- and 64-bit "
                     "integers; got " + m.name() + " on " + m.type().name());
  std::vector<KernelSpec> out;
  const std::string slot = "out" + std::to_string(r.output_slot);
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "atomic_init"), ReduceKernelWriter::Partials::None);
    SourceWriter w;
    w.line("extern \"C\" __global__ void " + k.name() + "(" + k.types().name(m.type()) + "* __restrict__ " + slot + ") {");
    w.indent();
    w.line("*" + slot + " = " + k.types().literal(m.identity()) + ";");
    w.close();
    KernelSpec init;
    init.name = k.name();
    init.strategy = Strategy::Atomic;
    init.block = 1;
    init.max_grid = 1;
    init.items_per_block_step = 1;
    init.args = {{Arg::Kind::ScalarOutput, r.output_slot, slot, m.type()}};
    init.summary = "atomic: the result starts at the identity";
    init.source = k.assemble("strategy: atomic, first kernel: write the identity", w.str());
    out.push_back(std::move(init));
  }
  {
    ReduceKernelWriter k(g, reduce_kernel_name(g, "atomic"), ReduceKernelWriter::Partials::None);
    SourceWriter w;
    emit_constants(w, {"constexpr int kBlock = " + std::to_string(kBlock) + ";"});
    k.open_kernel(w, kBlock);
    k.emit_functions(w);  // identity too: a masked element (filter -> reduce) contributes it
    // add(v): the atomic on the single result.
    w.open("const auto add = [&](const " + k.acc() + " v)");
    w.line(fn + "(" + atomic_target(m.type(), slot, fn) + ", " + atomic_value(m.type(), "v", fn) + ");");
    w.close("};");
    w.line();
    w.line("ff::reduce::atomic<kBlock>(n, element, add" + k.input_pointers() + ");");
    w.close();
    const int max_grid = t.sm_count * (t.max_threads_per_sm / kBlock);
    KernelSpec main = k.spec(Strategy::Atomic, kBlock,
                             "atomic: one " + fn + " per element on the single result, block " + std::to_string(kBlock) +
                                 ", grid-strided, grid <= " + std::to_string(max_grid) + " (not deterministic for floats)",
                             w.str());
    main.max_grid = max_grid;
    main.items_per_block_step = kBlock;
    main.tuning = {{"block", kBlock}};
    main.why = "strategy atomic was asked for (kept to reproduce the course's measurements)";
    out.push_back(std::move(main));
  }
  return out;
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ReduceAtomic final : public RegisteredStrategy {
 public:
  ReduceAtomic() : RegisteredStrategy("reduce atomic", "reduce", Strategy::Atomic) {}
  Applies applies(const KernelContext& g) const override {
    for (const auto& r : g.reduces)
      if (atomic_function(r.op->monoid).empty())
        return {false, "supports plus on 32- and 64-bit numbers and min/max on 32- and 64-bit integers; got " +
                           r.op->monoid.name() + " on " + r.op->monoid.type().name()};
    return {true, "every monoid has a hardware atomic"};
  }
  TuningValues tuning(const Policies& p) const override { return {{"block", p.reduce.block}}; }
  // One pair of kernels per reduction: each needs its own atomic on its own result.
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    std::vector<KernelSpec> out;
    for (const auto& r : g.reduces) {
      KernelContext single = g;
      single.reduces = {r};
      for (auto& k : emit_reduce_atomic(single)) out.push_back(std::move(k));
    }
    return out;
  }
  std::vector<StepSpec> schedule(const KernelContext&, const std::vector<KernelSpec>& kernels, int first) const override {
    std::vector<StepSpec> steps;
    for (std::size_t i = 0; i < kernels.size(); ++i) steps.push_back({StepSpec::Kind::OnePass, first + static_cast<int>(i)});
    return steps;
  }
};

}  // namespace

const RegisteredStrategy& reduce_atomic_strategy() {
  static const ReduceAtomic s;
  return s;
}

}  // namespace fuseflow::codegen
