// Tile shapes from the environment, for tuning studies: FUSEFLOW_SCAN_TILE and
// FUSEFLOW_SEGMENTED_TILE take <block>x<items>[x<min blocks per SM>] instead of the
// planner's choice. The constants end up in the kernel's source, so the kernel cache keeps
// every shape apart.
#pragma once

namespace fuseflow::codegen {

struct TileOverride {
  int block = 0;
  int items = 0;
  int min_blocks = 0;  // 0: not given
};

// False when the variable is unset or empty; a GraphError naming the variable and the
// accepted form when it does not parse or is out of range (block a multiple of 32 in
// [32, 1024], items in [1, max_items], min blocks in [0, 32]).
bool tile_override(const char* variable, int max_items, TileOverride& out);

}  // namespace fuseflow::codegen
