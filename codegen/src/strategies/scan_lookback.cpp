// Scan, any monoid: single pass with decoupled look-back (Merrill & Garland, "Single-pass
// Parallel Prefix Scan with Decoupled Look-back", 2016). One block per tile; a block
// takes its tile id from an atomic counter, so tile ids follow the order in which blocks
// start and every predecessor of a tile is already running (no deadlock, whatever order
// the hardware schedules blocks in). The tile is loaded coalesced through shared memory
// into registers (a full tile with no bounds checks, only the last one checks), scanned
// per thread, per warp (shuffles) and per block; the block publishes its aggregate, warp
// 0 looks back over the predecessors' status for the tile's exclusive prefix, publishes
// the inclusive prefix, and the block stores the scanned tile through shared memory,
// coalesced. Reads n elements, writes n.
//
// Deterministic (DESIGN.md: the same bits on every run of the same program and n): the
// look-back (ff::look_back in scan.cuh) waits for the nearest inclusive prefix P(j) among
// the 32 nearest predecessors instead of searching further back, and folds P(j) . A(j+1)
// . ... . A(t-1) strictly left to right, so every tile's prefix is the chained left fold
// P(t) = P(t-1) . A(t) of the tile aggregates whichever j it found: a float scan does not
// depend on the timing of the blocks.
#include "../scan_context.hpp"

namespace fuseflow::codegen {

Kernel emit_scan_lookback(const ScanGroup& g, const Target& /*target: one block per tile, sized by n*/) {
  const ScanTiling tiling = scan_tiling(g);
  ScanKernelWriter k(g, scan_kernel_name(g, "lookback"), tiling);
  const Type& type = g.op->monoid.type();
  const bool packed = type.size() <= 4;

  SourceWriter w;
  k.emit_constants(w);
  std::vector<Arg> extra = {{Arg::Kind::Scratch, 0, "tile_counter", ScalarType::U32},
                            {Arg::Kind::Scratch, 1, "tile_status", type}};
  std::vector<Arg> args = k.args(true, true, extra);
  k.open_kernel(w, args, {"unsigned int", "void"});
  k.emit_functions(w, true, true);
  w.line();
  k.emit_shared(w);
  k.emit_tile_id(w, k.acc());
  k.emit_tile_load_and_items(w, true);
  k.emit_look_back(w, type, k.acc(), "combine", "identity");
  k.emit_tile_store(w, "combine(tile_prefix, thread_prefix)", true);
  w.close();

  Kernel out;
  out.name = k.name();
  out.strategy = Strategy::Lookback;
  out.block = tiling.block;
  out.max_grid = 0;  // one block per tile: the grid grows with n
  out.any_grid = false;
  out.items_per_block_step = tiling.tile();
  out.args = args;
  out.summary = std::string("lookback (single pass, decoupled look-back): block ") + std::to_string(tiling.block) +
                ", " + std::to_string(tiling.items) + " items per thread, tiles of " + std::to_string(tiling.tile()) +
                " elements, one block per tile, " + (packed ? "packed 64-bit tile status" : "separate tile status arrays") +
                ", deterministic look-back (chained prefixes)";
  out.why = g.op->strategy == Strategy::Lookback ? "strategy lookback was asked for"
                                                  : "the default scan: one pass, reads n and writes n";
  out.source = k.assemble("strategy: " + out.summary, w.str());
  return out;
}

std::function<void(std::int64_t, ScheduleBuilder&)> lookback_step(int kernel, const Kernel& k, const Type& t) {
  const std::int64_t tile = k.items_per_block_step;
  return [=](std::int64_t n, ScheduleBuilder& b) {
    if (n == 0) return;
    const std::int64_t tiles = (n + tile - 1) / tile;
    Launch l;
    l.kernel = kernel;
    l.n = n;
    l.grid = static_cast<int>(tiles);
    l.scratch = {b.allocate(sizeof(unsigned), true), b.allocate(lookback_status_bytes(t, tiles), true)};
    b.launch(std::move(l));
  };
}

}  // namespace fuseflow::codegen
