// Scan, any monoid: "reduce_then_scan", the three-phase scheme of the course (2n reads),
// kept for study and as a fallback. A fixed grid of blocks splits the tiles into
// contiguous chunks (quotient/remainder, as in the persistent-blocks paper):
//   1. each block reduces its chunk, tile by tile, in order -> one sum per block;
//   2. one block scans the block sums (exclusive) in place;
//   3. each block scans its chunk again, tile by tile, seeded with its block's prefix,
//      staging loads and stores through shared memory (coalesced), epilogue applied.
// Three launches in one step; no flags, no spinning.
#include <algorithm>

#include "../scan_context.hpp"
#include "../schedule.hpp"

namespace fuseflow::codegen {

namespace {

KernelSpec finish(ScanKernelWriter& k, SourceWriter& w, std::vector<Arg> args, int max_grid, const std::string& phase) {
  KernelSpec out;
  out.name = k.name();
  out.strategy = Strategy::ReduceThenScan;
  out.block = k.tiling().block;
  out.max_grid = max_grid;
  out.any_grid = false;  // phases 1 and 3 must split the tiles alike, phase 2 scans one sum per block
  out.items_per_block_step = k.tiling().tile();
  out.tuning = {{"block", k.tiling().block}, {"items", k.tiling().items}};
  out.args = std::move(args);
  out.summary = "reduce_then_scan, " + phase + ": block " + std::to_string(k.tiling().block) +
                (max_grid == 1 ? std::string(", one block")
                               : ", " + std::to_string(k.tiling().items) + " items per thread, tiles of " +
                                     std::to_string(k.tiling().tile()) + " elements, grid <= " + std::to_string(max_grid));
  out.why = "strategy reduce_then_scan was asked for";
  out.source = k.assemble("strategy: " + out.summary, w.str(), {"fuseflow/scan_tile.cuh"});
  return out;
}

KernelSpec emit_reduce_phase(const KernelContext& g, const ScanTiling& tiling, int max_grid) {
  ScanKernelWriter k(g, scan_kernel_name(g, "rts_reduce"), tiling);
  SourceWriter w;
  k.emit_tile_constants(w);
  auto args = k.args(true, false, {{Arg::Kind::Scratch, 0, "block_sums", g.op->monoid.type()}});
  k.open_kernel(w, args);
  k.emit_functions(w, true, false);
  k.emit_tile_functors(w, false);
  w.line();
  w.line("ff::reduce_tile_chunk<kBlock, kItems, kInputStageBytes>(n, block_sums, combine, identity, load, staged_element);");
  w.close();
  return finish(k, w, args, max_grid, "phase 1 of 3 (reduce each block's chunk)");
}

KernelSpec emit_block_sums_phase(const KernelContext& g, const ScanTiling& tiling) {
  ScanKernelWriter k(g, scan_kernel_name(g, "rts_block_sums"), tiling);
  SourceWriter w;
  k.emit_constants(w, false);
  auto args = k.args(false, false, {{Arg::Kind::Scratch, 0, "block_sums", g.op->monoid.type()}});
  k.open_kernel(w, args);
  k.emit_functions(w, false, false);
  w.line("ff::scan_block_sums<kBlock>(n, block_sums, combine, identity);");
  w.close();
  return finish(k, w, args, 1, "phase 2 of 3 (exclusive scan of the block sums by one block)");
}

KernelSpec emit_scan_phase(const KernelContext& g, const ScanTiling& tiling, int max_grid) {
  ScanKernelWriter k(g, scan_kernel_name(g, "rts_scan"), tiling);
  SourceWriter w;
  k.emit_tile_constants(w);
  auto args = k.args(true, true, {{Arg::Kind::Scratch, 0, "block_prefixes", g.op->monoid.type()}});
  k.open_kernel(w, args);
  k.emit_functions(w, true, true);
  k.emit_tile_functors(w, true);
  w.line();
  w.line("ff::scan_tile_chunk<kBlock, kItems, kInputStageBytes, kInclusive>(n, block_prefixes, combine, identity, load,");
  w.line("                                                                  staged_element, store);");
  w.close();
  KernelSpec out = finish(k, w, args, max_grid, "phase 3 of 3 (scan each chunk seeded with its block's prefix)");
  // Phase 1 has read everything before this launch; here a block reads each tile of its
  // own chunk into shared memory before it stores that tile.
  out.in_place = true;
  return out;
}

}  // namespace

std::vector<KernelSpec> emit_scan_reduce_then_scan(const KernelContext& g) {
  const Target& t = g.target();
  const ScanTiling tiling = scan_tiling(g, false);
  const int max_grid = t.sm_count * std::max(1, t.max_threads_per_sm / tiling.block);
  std::vector<KernelSpec> kernels = {emit_reduce_phase(g, tiling, max_grid), emit_block_sums_phase(g, tiling),
                                 emit_scan_phase(g, tiling, max_grid)};
  kernels[1].items_per_block_step = 1;
  return kernels;
}

void reduce_then_scan_launches(const Plan& plan, const StepSpec& step, std::int64_t n, ScheduleBuilder& b) {
  if (n == 0) return;
  const int first = step.kernel;
  const KernelSpec& k = plan.kernels.at(static_cast<std::size_t>(first));
  const int grid = grid_for(n, k.items_per_block_step, k.max_grid);
  const std::size_t sums = allocate_scratch(b, k, 0, {grid, 0, n});
  b.launch({first, n, grid, {sums}});
  b.launch({first + 1, grid, 1, {sums}});  // its n is the number of block sums
  b.launch({first + 2, n, grid, {sums}});
}

}  // namespace fuseflow::codegen

// ---- The registry's view of this strategy (strategy.hpp, strategies/registry.cpp) ----
#include "../strategy.hpp"

namespace fuseflow::codegen {

namespace {
class ScanReduceThenScan final : public RegisteredStrategy {
 public:
  ScanReduceThenScan() : RegisteredStrategy("scan reduce-then-scan", "scan", Strategy::ReduceThenScan) {}
  Applies applies(const KernelContext& g) const override {
    if (!g.reduces.empty()) return {false, "folds no reductions"};
    return {true, "three passes, no flags and no spinning"};
  }
  TuningValues tuning(const Policies& p) const override {
    // Its tile is the look-back scan's (scan_tiling): narrow up to 8 bytes per element, else wide.
    return {{"block", p.scan.narrow.block},
            {"items", p.scan.narrow.items},
            {"wide_block", p.scan.wide_block},
            {"thread_bytes", static_cast<std::int64_t>(p.scan.thread_bytes)}};
  }
  std::vector<KernelSpec> emit(const KernelContext& g) const override {
    return emit_scan_reduce_then_scan(g);
  }
  // The three kernels share the block sums (one value each).
  std::vector<StepSpec> schedule(const KernelContext& g, const std::vector<KernelSpec>&, int first) const override {
    return {{StepSpec::Kind::ReduceThenScan, first, 3, -1, g.op->monoid.type().size(), INT64_MAX, 0, false}};
  }
};

}  // namespace

const RegisteredStrategy& scan_reduce_then_scan_strategy() {
  static const ScanReduceThenScan s;
  return s;
}

}  // namespace fuseflow::codegen
