// Scan, any monoid: single pass with decoupled look-back (Merrill & Garland, "Single-pass
// Parallel Prefix Scan with Decoupled Look-back", 2016). One block per tile; a block
// takes its tile id from an atomic counter, so tile ids follow the order in which blocks
// start and every predecessor of a tile is already running (no deadlock, whatever order
// the hardware schedules blocks in). The tile is loaded coalesced through shared memory
// into registers (a full tile with no bounds checks, only the last one checks), scanned
// per thread, per warp (shuffles) and per block; warp 0 publishes the tile's aggregate
// and looks back over the predecessors' status for the tile's exclusive prefix, and the
// block stores the scanned tile through shared memory, coalesced. Reads n elements,
// writes n.
//
// Deterministic (DESIGN.md: the same bits on every run of the same program and n): the
// look-back (ff::tile_exclusive_prefix in scan.cuh) gives every tile's prefix one fixed
// form over groups of 32 tiles, folded left to right, whatever the timing of the blocks;
// it waits only for predecessors' aggregates, never for their look-backs, so it is as
// free of waiting as a plain decoupled look-back.
#include <algorithm>
#include <cstdint>

#include "../scan_context.hpp"
#include "../schedule.hpp"

namespace fuseflow::codegen {

KernelSpec emit_scan_lookback(const KernelContext& g, const ScanTiling& tiling) {  // one block per tile, sized by n
  ScanKernelWriter k(g, scan_kernel_name(g, tiling.staged ? "lookback_staged" : "lookback"), tiling);
  const Type& type = g.op->monoid.type();
  const std::size_t status_words = (type.size() + 3) / 4;

  SourceWriter w;
  k.emit_tile_constants(w);
  std::vector<Arg> extra = lookback_args(type);
  for (const Arg& a : k.fold_args()) extra.push_back(a);
  std::vector<Arg> args = k.args(true, true, extra);
  k.open_kernel(w, args);
  k.emit_functions(w, true, true);
  k.emit_tile_functors(w, true);
  k.emit_fold_functions(w);
  w.line();
  if (compacts_survivors(g)) {
    w.comment("No elements, no survivors: the one tile launched for n = 0 writes the counts 0.");
    w.open("if (n == 0 && threadIdx.x == 0)");
    for (int id : g.output_ids) w.line("*out" + std::to_string(id) + "_count = 0;");
    w.close();
  }
  // Where the tile lives between load and store (scan_tile.cuh's TileStages).
  const char* stages = tiling.staged ? "Staged" : k.stages_can_share() ? "Shared" : "Separate";
  w.line(std::string("ff::lookback_scan_tile<kBlock, kItems, kInputStageBytes, ff::TileStages::") + stages +
         ", kInclusive>(");
  w.line("    n, tile_counter, tile_status, epoch, combine, identity, load, staged_element, store, " + k.fold_call() +
         ");");
  w.close();

  KernelSpec out;
  out.name = k.name();
  out.strategy = Strategy::Lookback;
  out.block = tiling.block;
  out.max_grid = 0;  // one block per tile: the grid grows with n
  out.any_grid = false;
  out.in_place = true;  // a tile reads its own range into shared memory, then stores it
  out.items_per_block_step = tiling.tile();
  out.tuning = {{"block", tiling.block}, {"items", tiling.items}, {"min_blocks", tiling.min_blocks}};
  out.args = args;
  out.summary = std::string("lookback (single pass, decoupled look-back): block ") + std::to_string(tiling.block) +
                ", " + std::to_string(tiling.items) + " items per thread" +
                (tiling.staged ? " read from the shared stage (a staged tile, from " +
                                     std::to_string(g.policies().scan.staged_from) + " elements)"
                               : "") +
                ", tiles of " + std::to_string(tiling.tile()) +
                " elements, one block per tile, " + std::to_string(status_words) + " flagged 64-bit word" +
                (status_words == 1 ? "" : "s") + " of status per tile and per group of 32 tiles, deterministic look-back" +
                k.fold_summary();
  out.why = g.op->strategy == Strategy::Lookback ? "strategy lookback was asked for"
                                                  : "the default scan: one pass, reads n and writes n";
  if (tiling.staged)
    out.why = "instead of the kernel before it from " + std::to_string(g.policies().scan.staged_from) +
              " elements: larger tiles, fewer look-backs per element";
  out.source = k.assemble("strategy: " + out.summary, w.str(), {"fuseflow/scan_tile.cuh"});
  return out;
}

StepSpec lookback_step(int kernel, int kernels, const Type& status, std::int64_t from, bool launch_empty) {
  StepSpec s;
  s.kind = StepSpec::Kind::Lookback;
  s.kernel = kernel;
  s.kernels = kernels;
  s.value_bytes = status.size();
  s.from = kernels > 1 ? from : INT64_MAX;
  s.launch_empty = launch_empty;
  return s;
}

void lookback_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (step.domain >= 0 && b.length(step.domain) < 1)
    throw GraphError("segmented_scan: the offsets are empty; s segments need s + 1 offsets");
  const KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(step.kernel));
  // Fused reductions: one fold per tile (the Scratch argument), and a launch even for n = 0,
  // whose one tile stores nothing and gives each reduction its identity.
  bool folds = false;
  for (const Arg& a : k.args) folds = folds || a.kind == Arg::Kind::Scratch;
  if (n == 0 && !folds && !step.launch_empty) return;
  // The second kernel (the staged tile, or the pipelined kernel's persistent blocks) from
  // step.from elements on.
  const bool second = step.kernels > 1 && n >= step.from && n > 0;
  const KernelSpec& launched = second ? plan.kernels.at(static_cast<std::size_t>(step.kernel) + 1) : k;
  const std::int64_t per_tile = launched.items_per_block_step;
  const std::int64_t tiles = std::max<std::int64_t>(1, (n + per_tile - 1) / per_tile);
  const std::int64_t grid = second && launched.max_grid > 0 ? std::min<std::int64_t>(tiles, launched.max_grid) : tiles;
  if (grid > 0x7fffffff)
    throw GraphError(k.name + ": " + std::to_string(n) + " elements need more tiles than a launch can have");
  Launch l;
  l.kernel = second ? step.kernel + 1 : step.kernel;
  l.n = n;
  l.grid = static_cast<int>(grid);
  l.status_bytes = lookback_status_bytes(step.value_bytes, tiles);
  if (folds) l.scratch.push_back(allocate_scratch(b, k, 0, {grid, tiles, n}));
  b.launch(std::move(l));
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ScanLookback : public RegisteredStrategy {
 public:
  explicit ScanLookback(const char* name = "scan lookback") : RegisteredStrategy(name, "scan", Strategy::Lookback) {}
  Applies applies(const KernelContext&) const override {
    return {true, "one pass over the input: each tile's prefix from its predecessors' (decoupled look-back)"};
  }
  TuningValues tuning(const Policies& p) const override {
    const ScanPolicy& s = p.scan;
    return {{"block", s.narrow.block},        {"items", s.narrow.items},        {"min_blocks", s.narrow_min_blocks},
            {"wide_block", s.wide_block},     {"staged_block", s.staged.block}, {"staged_items", s.staged.items},
            {"staged_from", s.staged_from}};
  }
  // The tile kernel, and for large n the staged tile where it applies.
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    std::vector<KernelSpec> ks = {emit_scan_lookback(g, scan_tiling(g, true))};
    if (const std::optional<ScanTiling> staged = staged_scan_tiling(g)) ks.push_back(emit_scan_lookback(g, *staged));
    return ks;
  }
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>& kernels, int first) const override {
    // A scan of a filter's result launches even for n = 0: its one tile writes the counts.
    return {lookback_step(first, static_cast<int>(kernels.size()), g.op->monoid.type(), g.policies().scan.staged_from,
                          compacts_survivors(g))};
  }
};

// The same with the pipelined kernel (scan_pipelined.cpp) for large n in place of the staged tile.
class ScanPipelined final : public ScanLookback {
 public:
  ScanPipelined() : ScanLookback("scan pipelined") {}
  Applies applies(const KernelContext& g) const override {
    if (!pipelined_scan_applies(g))
      return {false, "pipelined needs sm_90 or later, one 4-byte input, 4-byte values, no mask, no reduction folded "
                     "in, no scan_tile option and the scan pipeline on"};
    return {true, "sm_90 with one 4-byte input and value: look-back tiles, and from " +
                      std::to_string(g.policies().scan.staged_from) + " elements the pipelined kernel"};
  }
  TuningValues tuning(const Policies& p) const override {
    return pipelined_tuning(p.scan, p.scan.narrow.block, p.scan.narrow.items, p.scan.narrow_min_blocks);
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return {emit_scan_lookback(g, scan_tiling(g, true)), emit_scan_pipelined(g)};
  }
};

}  // namespace

const RegisteredStrategy& scan_pipelined_strategy() {
  static const ScanPipelined s;
  return s;
}
const RegisteredStrategy& scan_lookback_strategy() {
  static const ScanLookback s;
  return s;
}

}  // namespace fuseflow::codegen
