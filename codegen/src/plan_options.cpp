// PlanOptions: its key (for kernel caches and explain()) and the range checks of its
// values, which throw ConfigError naming the option.
#include "fuseflow/codegen/plan_options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow::codegen {

namespace {

std::string tile_text(const TileShape& t) {
  return std::to_string(t.block) + "x" + std::to_string(t.items) +
         (t.min_blocks > 0 ? "x" + std::to_string(t.min_blocks) : "");
}

void check_tile(const std::optional<TileShape>& tile, const char* option, int max_items) {
  if (!tile) return;
  const TileShape& t = *tile;
  if (t.block < 32 || t.block > 1024 || t.block % 32 != 0 || t.items < 1 || t.items > max_items || t.min_blocks < 0 ||
      t.min_blocks > 32)
    throw ConfigError(std::string(option) + " = " + tile_text(t) +
                      ": expected a tile <block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], "
                      "items in [1, " + std::to_string(max_items) + "] and min blocks in [0, 32]");
}

[[noreturn]] void bad_text(const std::string& source, const std::string& text, const std::string& expected) {
  throw ConfigError(source + "='" + text + "': expected " + expected);
}

TileShape parse_tile(const std::string& source, const std::string& text) {
  TileShape t;
  char x1 = 0, x2 = 0, extra = 0;
  const int got = std::sscanf(text.c_str(), "%d%c%d%c%d%c", &t.block, &x1, &t.items, &x2, &t.min_blocks, &extra);
  if ((got != 3 && got != 5) || x1 != 'x' || (got == 5 && x2 != 'x'))
    bad_text(source, text, "<block>x<items>[x<min blocks>], e.g. 256x16 or 256x16x2");
  if (got == 3) t.min_blocks = 0;
  return t;
}

}  // namespace

void set_option(PlanOptions& o, const std::string& name, const std::string& text, const std::string& source_name) {
  const std::string source = source_name.empty() ? name : source_name;
  if (name == "scan_tile") {
    o.scan_tile = parse_tile(source, text);
  } else if (name == "filter_tile") {
    o.filter_tile = parse_tile(source, text);
  } else if (name == "segmented_tile") {
    o.segmented_tile = parse_tile(source, text);
  } else if (name == "scan_staged_from") {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || errno) bad_text(source, text, "an element count, e.g. 16777216");
    o.scan_staged_from = n;
  } else if (name == "scan_pipeline" || name == "segmented_short") {
    if (text != "0" && text != "1") bad_text(source, text, "0 (off) or 1 (on)");
    (name == "scan_pipeline" ? o.scan_pipeline : o.segmented_short) = text == "1";
  } else {
    throw ConfigError("unknown plan option '" + name + "' (" + source + "); known: scan_tile, filter_tile, "
                      "segmented_tile, scan_staged_from, scan_pipeline, segmented_short");
  }
}

std::string PlanOptions::key() const {
  std::string k;
  const auto add = [&](const std::string& part) { k += (k.empty() ? "" : ";") + part; };
  if (scan_tile) add("scan_tile=" + tile_text(*scan_tile));
  if (filter_tile) add("filter_tile=" + tile_text(*filter_tile));
  if (segmented_tile) add("segmented_tile=" + tile_text(*segmented_tile));
  if (scan_staged_from) add("scan_staged_from=" + std::to_string(*scan_staged_from));
  if (!scan_pipeline) add("scan_pipeline=0");
  if (!segmented_short) add("segmented_short=0");
  return k;
}

void validate(const PlanOptions& o) {
  check_tile(o.scan_tile, "scan_tile (FUSEFLOW_SCAN_TILE)", kMaxScanTileItems);
  check_tile(o.filter_tile, "filter_tile (FUSEFLOW_FILTER_TILE)", kMaxFilterTileItems);
  check_tile(o.segmented_tile, "segmented_tile (FUSEFLOW_SEGMENTED_TILE)", kMaxSegmentedTileItems);
  if (o.scan_staged_from && *o.scan_staged_from < 0)
    throw ConfigError("scan_staged_from (FUSEFLOW_SCAN_STAGED_FROM) = " + std::to_string(*o.scan_staged_from) +
                      ": expected an element count >= 0");
}

}  // namespace fuseflow::codegen
