// The scans' tiling: threads, items per thread and stages of a scan kernel's tile, from
// the scan policy and what the kernel reads and writes (scan_common.cpp: the rest of
// what every scan strategy shares).
#include <algorithm>

#include "../scan_context.hpp"

namespace fuseflow::codegen {

bool scan_stages_can_share(const KernelContext& g) {
  // The store reads the predicate from the input stage, or the folds after the scan their inputs.
  if (compacts_survivors(g) || g.folds_scanned) return false;
  for (const auto& o : g.outputs)
    if (o.kind() != ExprKind::Result) return false;  // an epilogue reads the input stage at the store
  return true;
}

ScanTiling scan_tiling(const KernelContext& g, bool shared_stages) {
  const ScanPolicy& p = g.policies().scan;
  ScanTiling t;
  if (p.tile) {  // PlanOptions::scan_tile (FUSEFLOW_SCAN_TILE), for tuning studies
    t.block = p.tile->block;
    t.items = p.tile->items;
    t.min_blocks = p.tile->min_blocks;
    return t;
  }
  std::size_t in_bytes = 0;
  for (const auto& in : g.leaves.inputs) in_bytes += in.type().size();
  const std::size_t value_bytes = g.op->monoid.type().size();
  const std::size_t widest = std::max(in_bytes, value_bytes);
  const bool pieces = g.op->kind == OpKind::SegmentedScan || g.op->kind == OpKind::ScanByKey;
  if (pieces && value_bytes <= 4 && in_bytes <= 8) {
    // Segmented scans and scans by key of 4-byte values scan (value, head flag) pieces: 8
    // warps with registers for 5 blocks per SM beat 6 warps x 22 (by offsets) and 6 x 17
    // (by key) at 2^28 (bench/RESULTS.md, sixth run). Not reduce_by_key (no gain
    // measured), nor wider values (the 8-byte pairs of a linear recurrence spill under
    // launch bounds, as in the plain scan).
    t.block = p.pieces.block;
    t.items = p.pieces.items;
    t.min_blocks = p.pieces.min_blocks;
  } else if (widest <= 8) {
    // Measured on the H100 at 2^28 (bench/RESULTS.md, the FUSEFLOW_SCAN_TILE sweep): 6 warps
    // x 22 items beat 256 x 16 by 6% on 4-byte sums and by 17% on 8-byte linear-recurrence
    // pairs (bigger tiles: fewer look-backs and barriers per byte).
    t.block = p.narrow.block;
    t.items = p.narrow.items;
    t.min_blocks = p.narrow.min_blocks;
    // A plain look-back scan of 4-byte inputs and values: registers for 7 blocks per SM
    // (bench/RESULTS.md, fifth run: 949 us against 991 for the f32 sum at 2^28). Not for
    // 8-byte ones (the linear recurrence's pairs spill there: 1336 us against 873), nor
    // with reductions folded in (more registers live; not measured).
    if (widest <= 4 && shared_stages && g.reduces.empty()) t.min_blocks = p.narrow_min_blocks;
  } else {
    t.block = p.wide_block;
    t.items = static_cast<int>(
        std::clamp<std::size_t>(p.thread_bytes / widest, 1, static_cast<std::size_t>(p.wide_max_items)));
  }
  // Shared stages hold the widest of the two at a time; separate ones both.
  const std::size_t slot_bytes = shared_stages && scan_stages_can_share(g) ? widest : in_bytes + value_bytes;
  auto stage = [&] { return static_cast<std::size_t>(shared::stage_slots(t.tile())) * slot_bytes; };
  while (t.items > 1 && stage() > p.max_stage_bytes) --t.items;
  return t;
}

std::optional<ScanTiling> staged_scan_tiling(const KernelContext& g) {
  if (g.policies().scan.tile) return std::nullopt;  // a study picks its one tile
  const auto& inputs = g.leaves.inputs;
  if (g.op->kind != OpKind::Scan || inputs.size() != 1 || inputs[0].type().size() != 4 ||
      g.op->monoid.type().size() != 4 || !scan_stages_can_share(g) || !g.reduces.empty())
    return std::nullopt;
  // Measured on the H100 (bench/RESULTS.md, seventh run; f32 sum): 4 warps x 88 elements
  // from the stage, 4 blocks per SM, take 883 us at 2^28 against 948 for 192 x 22 in
  // registers (CUB 873), 449 against 478 at 2^27, 124 against 126 at 2^25, the same at
  // 2^24 (67.6 against 68.1) and 11.6 against 11.1 at 2^20. 88 keeps the stage (46464
  // bytes) under the 48 KB of static shared memory.
  ScanTiling t;
  t.block = g.policies().scan.staged.block;
  t.items = g.policies().scan.staged.items;
  t.min_blocks = g.policies().scan.staged.min_blocks;
  t.staged = true;
  return t;
}

}  // namespace fuseflow::codegen
