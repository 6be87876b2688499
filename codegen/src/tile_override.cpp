#include "tile_override.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::codegen {

bool tile_override(const char* variable, int max_items, TileOverride& out) {
  const char* v = std::getenv(variable);
  if (!v || !*v) return false;
  int block = 0, items = 0, min_blocks = 0;
  char x1 = 0, x2 = 0, extra = 0;
  const int got = std::sscanf(v, "%d%c%d%c%d%c", &block, &x1, &items, &x2, &min_blocks, &extra);
  if ((got != 3 && got != 5) || x1 != 'x' || (got == 5 && x2 != 'x') || block < 32 || block > 1024 ||
      block % 32 != 0 || items < 1 || items > max_items || min_blocks < 0 || min_blocks > 32)
    throw GraphError(std::string(variable) + "='" + v +
                     "' is not <block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], items in "
                     "[1, " + std::to_string(max_items) + "] and min blocks in [0, 32]");
  out.block = block;
  out.items = items;
  out.min_blocks = min_blocks;
  return true;
}

}  // namespace fuseflow::codegen
