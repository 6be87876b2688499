// The registry's view (strategy.hpp, strategies/registry.cpp) of the one-tile-per-block
// segmented scans and reduce_by_key, whose kernels segmented_scan.cpp writes.
#include "../scan_context.hpp"
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
TuningValues pieces_tuning(const Policies& p) {
  return {{"block", p.scan.pieces.block}, {"items", p.scan.pieces.items}, {"min_blocks", p.scan.pieces.min_blocks}};
}

// segmented_scan (heads from offsets, their own input domain) and scan_by_key.
class SegmentedScan final : public RegisteredStrategy {
 public:
  SegmentedScan() : RegisteredStrategy("segmented scan", "segmented_scan") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one look-back pass over (value, head) pieces"};
  }
  TuningValues tuning(const Policies& p) const override { return pieces_tuning(p); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return {emit_segmented_scan(g, g.offsets ? &*g.offsets : nullptr, g.target())};
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    StepSpec step = lookback_step(first, 1, segmented_piece_type(g));
    if (g.offsets) step.domain = g.offsets->domain;  // a GraphError for empty offsets
    return {step};
  }
};

class ReduceByKey final : public RegisteredStrategy {
 public:
  ReduceByKey() : RegisteredStrategy("reduce by key", "reduce_by_key") {}
  Applies applies(const KernelContext&) const override {
    return {true, "one look-back pass over (value, head count) pieces writes each run's key and total"};
  }
  TuningValues tuning(const Policies& p) const override { return pieces_tuning(p); }
  std::vector<KernelSpec> emit(const KernelContext& g) const override { return {emit_reduce_by_key(g, g.target())}; }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {lookback_step(first, 1, segmented_piece_type(g))};
  }
};

}  // namespace

const RegisteredStrategy& segmented_scan_strategy() {
  static const SegmentedScan s;
  return s;
}
const RegisteredStrategy& reduce_by_key_strategy() {
  static const ReduceByKey s;
  return s;
}

}  // namespace fuseflow::codegen
