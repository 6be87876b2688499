// The segmented reduction's merge-path tile (SegmentedTuning, array_ops.hpp): its shared
// memory, and the tile shape from the policy, shared by the emitter
// (segmented_reduce.cpp) and the tuning studies' option (segmented_tile).
#include <string>

#include "../array_ops.hpp"

namespace fuseflow::codegen {

// Static shared memory of a tile: per item one 4-byte end and one value (padded by one
// slot in 32), a head byte per item (as words, plus 4), and per thread its tile_segment,
// open value, first head and whether its tile of a batch is needed (after the short pass).
std::size_t segmented_shared_bytes(const SegmentedTuning& s, const Type& acc) {
  const std::size_t tile = static_cast<std::size_t>(s.tile()), block = static_cast<std::size_t>(s.block);
  return (tile + tile / 32) * (4 + acc.size()) + ((tile + 3) / 4 + 4) * 4 + block * (8 + acc.size() + 1 + 1) +
         (block / 32) * (4 + acc.size() + 8 + acc.size());
}

SegmentedTuning segmented_tuning(const Type& acc, const SegmentedPolicy& p) {
  SegmentedTuning s;
  if (p.tile) {  // PlanOptions::segmented_tile (FUSEFLOW_SEGMENTED_TILE), for tuning studies
    s.block = p.tile->block;
    s.items = p.tile->items;
    s.min_blocks = p.tile->min_blocks;
    if (segmented_shared_bytes(s, acc) > p.shared_limit)
      throw ConfigError("segmented_tile (FUSEFLOW_SEGMENTED_TILE): " + std::to_string(s.block) + " x " +
                        std::to_string(s.items) + " items of " + std::to_string(acc.size()) + "-byte values need " +
                        std::to_string(segmented_shared_bytes(s, acc)) + " bytes of shared memory, over " +
                        std::to_string(p.shared_limit / 1024) + " KB");
    return s;
  }
  // As many items per thread as fit in 46 KB of static shared memory (under the 48 KB
  // limit), at most 16, a multiple of 4 where possible (tiles with no segment end load
  // 4-element vectors). Measured on the H100 at 2^28 (bench/RESULTS.md, the
  // FUSEFLOW_SEGMENTED_TILE sweep): 256 x 16 beat 256 x 12 by 8% on segments of 10..50
  // and 4% on segments of 3; more resident blocks (smaller tiles) did not help.
  s.block = p.block;
  s.items = p.max_items;
  while (s.items > 1 && segmented_shared_bytes(s, acc) > p.shared_budget) s.items -= s.items > 4 ? 4 : 1;
  return s;
}

}  // namespace fuseflow::codegen
