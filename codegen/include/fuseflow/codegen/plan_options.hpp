#pragma once
// What the caller may override in a plan: tile shapes and thresholds for tuning studies
// and tests. The defaults are the strategies' tuning policies (per target); a field left
// unset keeps the policy's value. The runtime fills these from its configuration (the
// FUSEFLOW_* variables, read once in runtime/src/config.cpp); codegen never reads the
// environment. Every field is part of the plan, so the kernel cache keeps variants apart.
#include <cstdint>
#include <optional>
#include <string>

namespace fuseflow::codegen {

// A tile: threads per block, items per thread and, when > 0, blocks per SM asked of
// __launch_bounds__.
struct TileShape {
  int block = 0;
  int items = 0;
  int min_blocks = 0;
  bool operator==(const TileShape&) const = default;
};

struct PlanOptions {
  std::optional<TileShape> scan_tile;       // FUSEFLOW_SCAN_TILE: every look-back scan's tile
  std::optional<TileShape> filter_tile;     // FUSEFLOW_FILTER_TILE: the compaction's tile
  std::optional<TileShape> segmented_tile;  // FUSEFLOW_SEGMENTED_TILE: the merge path's tile
  // FUSEFLOW_SCAN_STAGED_FROM: the element count from which scans and compactions take
  // their large-n kernel (the policy says 2^24).
  std::optional<std::int64_t> scan_staged_from;
  bool scan_pipeline = true;    // FUSEFLOW_SCAN_PIPELINE=0: no pipelined (sm_90) kernels
  bool segmented_short = true;  // FUSEFLOW_SEGMENTED_SHORT=0: the merge path alone
  // FUSEFLOW_SEGMENTED_PIPELINE=1: the pipelined (sm_90) segmented scan, scan_by_key and
  // reduce_by_key kernels for large n. Off by default: on the H200 they measured 0.43-0.81x
  // CUB against about 1x for the one-tile-per-block kernels (bench/RESULTS.md).
  bool segmented_pipeline = false;

  bool operator==(const PlanOptions&) const = default;
  // A stable text of every field set, for cache keys and explain(); empty for defaults.
  std::string key() const;
};

// The most items per thread each tile option takes (the strategies' register budgets).
inline constexpr int kMaxScanTileItems = 32;
inline constexpr int kMaxFilterTileItems = 16;  // rows of vector loads per thread
inline constexpr int kMaxSegmentedTileItems = 16;

// Throws ConfigError naming the option (its field and its FUSEFLOW_* variable), the value
// and what was expected, for a value out of range: a tile's block must be a multiple of 32
// in [32, 1024], its items in [1, the strategy's maximum above], its min blocks in
// [0, 32]; scan_staged_from must be >= 0. plan() calls it first. (A tile that fits these
// but not a kernel's shared memory is reported by that kernel's emitter, also as a
// ConfigError, since it depends on the program's types.)
void validate(const PlanOptions& options);

// Sets option `name` (a field above: scan_tile, filter_tile, segmented_tile,
// scan_staged_from, scan_pipeline, segmented_short, segmented_pipeline) from its text, strictly (the parsers
// below): a tile as <block>x<items>[x<min blocks>] within the ranges validate() checks, a
// count as a whole number, a switch as 0/1 (off/on, false/true, no/yes). For the
// runtime's configuration (each FUSEFLOW_* variable) and tools (fuseflow-dump --option).
// ConfigError naming `source` (the variable or flag; `name` when empty), the text and what
// was expected; validate() checks the ranges.
void set_option(PlanOptions& options, const std::string& name, const std::string& text,
                const std::string& source = "");

// The one strict parser of option values (set_option and the runtime's FUSEFLOW_*
// variables use it): the whole text or a ConfigError "<source>='<text>': expected ...".
bool parse_switch(const std::string& source, const std::string& text);
std::int64_t parse_count(const std::string& source, const std::string& text, std::int64_t min, std::int64_t max);
TileShape parse_tile(const std::string& source, const std::string& text, int max_items);

}  // namespace fuseflow::codegen
