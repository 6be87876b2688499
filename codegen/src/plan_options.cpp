// PlanOptions: its key (for kernel caches and explain()) and the range checks of its
// values, which throw ConfigError naming the option.
#include "fuseflow/codegen/plan_options.hpp"

#include <charconv>

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

// Parses "<digits>" fully into an int64 (no sign, no spaces, no trailing text).
bool whole_number(const std::string& text, std::int64_t& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

// The one strict parser of option values: the runtime's configuration (config.cpp, every
// FUSEFLOW_* variable) and set_option (fuseflow-dump --option) both use these.
bool parse_switch(const std::string& source, const std::string& text) {
  for (const char* yes : {"1", "on", "true", "yes"})
    if (text == yes) return true;
  for (const char* no : {"0", "off", "false", "no"})
    if (text == no) return false;
  bad_text(source, text, "0 or 1 (or off/on, false/true, no/yes)");
}

std::int64_t parse_count(const std::string& source, const std::string& text, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  if (!whole_number(text, n) || n < min || n > max)
    bad_text(source, text, "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return n;
}

TileShape parse_tile(const std::string& source, const std::string& text, int max_items) {
  const std::string expected = "<block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], items in [1, " +
                               std::to_string(max_items) + "] and min blocks in [0, 32], e.g. 256x8 or 128x16x4";
  std::int64_t parts[3] = {0, 0, 0};
  int count = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    const std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (count == 3 || !whole_number(part, parts[count])) bad_text(source, text, expected);
    ++count;
    if (x == std::string::npos) break;
    start = x + 1;
  }
  const std::int64_t block = parts[0], items = parts[1], min_blocks = parts[2];
  if (count < 2 || block < 32 || block > 1024 || block % 32 != 0 || items < 1 || items > max_items || min_blocks > 32)
    bad_text(source, text, expected);
  return {static_cast<int>(block), static_cast<int>(items), static_cast<int>(min_blocks)};
}

void set_option(PlanOptions& o, const std::string& name, const std::string& text, const std::string& source_name) {
  const std::string source = source_name.empty() ? name : source_name;
  if (name == "scan_tile") {
    o.scan_tile = parse_tile(source, text, kMaxScanTileItems);
  } else if (name == "filter_tile") {
    o.filter_tile = parse_tile(source, text, kMaxFilterTileItems);
  } else if (name == "segmented_tile") {
    o.segmented_tile = parse_tile(source, text, kMaxSegmentedTileItems);
  } else if (name == "scan_staged_from") {
    o.scan_staged_from = parse_count(source, text, 0, std::int64_t{1} << 62);
  } else if (name == "scan_pipeline") {
    o.scan_pipeline = parse_switch(source, text);
  } else if (name == "segmented_short") {
    o.segmented_short = parse_switch(source, text);
  } else if (name == "segmented_pipeline") {
    o.segmented_pipeline = parse_switch(source, text);
  } else {
    throw ConfigError("unknown plan option '" + name + "' (" + source + "); known: scan_tile, filter_tile, "
                      "segmented_tile, scan_staged_from, scan_pipeline, segmented_short, segmented_pipeline");
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
  if (segmented_pipeline) add("segmented_pipeline=1");
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
