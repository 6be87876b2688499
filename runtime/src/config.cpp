// The one place that reads the environment (config.hpp). Every FUSEFLOW_* variable is
// parsed strictly: a value that is not what the variable takes throws ConfigError naming
// the variable, the value and the expected form; an unset or empty variable keeps its
// default. The README's "Environment variables" table lists the same variables.
#include "fuseflow/runtime/config.hpp"

#include <charconv>
#include <cstdlib>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/codegen/plan_options.hpp"
#include "fuseflow/frontend/error.hpp"

namespace fuseflow {
namespace {

// The variable's text; empty when unset.
std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

[[noreturn]] void bad_value(const std::string& name, const std::string& text, const std::string& expected) {
  throw ConfigError(name + "='" + text + "': expected " + expected);
}

std::optional<std::filesystem::path> path_variable(const char* name) {
  std::string text = variable(name);
  if (text.empty()) return std::nullopt;
  return std::filesystem::path(text);
}

// Parses "<digits>" fully into an int64 (no sign, no spaces, no trailing text).
bool whole_number(const std::string& text, std::int64_t& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

namespace detail {

bool parse_flag(const std::string& name, const std::string& text) {
  for (const char* yes : {"1", "on", "true", "yes"})
    if (text == yes) return true;
  for (const char* no : {"0", "off", "false", "no"})
    if (text == no) return false;
  bad_value(name, text, "0 or 1 (or off/on, false/true, no/yes)");
}

std::int64_t parse_integer(const std::string& name, const std::string& text, std::int64_t min, std::int64_t max) {
  std::int64_t n = 0;
  if (!whole_number(text, n) || n < min || n > max)
    bad_value(name, text, "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return n;
}

codegen::TileShape parse_tile(const std::string& name, const std::string& text, int max_items) {
  const std::string expected = "<block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], items in [1, " +
                               std::to_string(max_items) + "] and min blocks in [0, 32], e.g. 256x8 or 128x16x4";
  std::int64_t parts[3] = {0, 0, 0};
  int count = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    const std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (count == 3 || !whole_number(part, parts[count])) bad_value(name, text, expected);
    ++count;
    if (x == std::string::npos) break;
    start = x + 1;
  }
  const std::int64_t block = parts[0], items = parts[1], min_blocks = parts[2];
  if (count < 2 || block < 32 || block > 1024 || block % 32 != 0 || items < 1 || items > max_items || min_blocks > 32)
    bad_value(name, text, expected);
  return {static_cast<int>(block), static_cast<int>(items), static_cast<int>(min_blocks)};
}

}  // namespace detail

EnvironmentConfig read_environment() {
  EnvironmentConfig config;
  auto flag = [](const char* name, bool fallback) {
    const std::string text = variable(name);
    return text.empty() ? fallback : detail::parse_flag(name, text);
  };

  // The disk cache: $FUSEFLOW_CACHE_DIR, else $XDG_CACHE_HOME/fuseflow, else
  // $HOME/.cache/fuseflow; none (memory only) with FUSEFLOW_CACHE=0 or nowhere to put it.
  if (flag("FUSEFLOW_CACHE", true)) {
    if (auto dir = path_variable("FUSEFLOW_CACHE_DIR")) {
      config.cache.disk_dir = *dir;
    } else if (auto xdg = path_variable("XDG_CACHE_HOME")) {
      config.cache.disk_dir = *xdg / "fuseflow";
    } else if (auto home = path_variable("HOME")) {
      config.cache.disk_dir = *home / ".cache" / "fuseflow";
    }
  }
  config.cache.read_only = flag("FUSEFLOW_CACHE_READONLY", false);
  config.cache.dump_dir = path_variable("FUSEFLOW_DUMP");
  // FUSEFLOW_LOG: 0/1, or "compile" (also each compile's NVRTC phases).
  if (const std::string log = variable("FUSEFLOW_LOG"); log == "compile") {
    config.cache.log = config.cache.log_compile = true;
  } else {
    config.cache.log = flag("FUSEFLOW_LOG", false);
  }

  config.poison = flag("FUSEFLOW_POISON", false);
  if (std::string text = variable("FUSEFLOW_LOOKBACK_EPOCHS"); !text.empty())
    config.lookback_epochs = static_cast<unsigned>(
        detail::parse_integer("FUSEFLOW_LOOKBACK_EPOCHS", text, 1, codegen::kMaxLookbackEpoch));

  // Tile overrides: the scans' tiles hold up to 32 items per thread, the compaction's and
  // the merge path's 16 (the limits the strategies' shared memory allows).
  if (std::string text = variable("FUSEFLOW_SCAN_TILE"); !text.empty())
    config.plan.scan_tile = detail::parse_tile("FUSEFLOW_SCAN_TILE", text, 32);
  if (std::string text = variable("FUSEFLOW_FILTER_TILE"); !text.empty())
    config.plan.filter_tile = detail::parse_tile("FUSEFLOW_FILTER_TILE", text, 16);
  if (std::string text = variable("FUSEFLOW_SEGMENTED_TILE"); !text.empty())
    config.plan.segmented_tile = detail::parse_tile("FUSEFLOW_SEGMENTED_TILE", text, 16);
  if (std::string text = variable("FUSEFLOW_SCAN_STAGED_FROM"); !text.empty())
    config.plan.scan_staged_from =
        detail::parse_integer("FUSEFLOW_SCAN_STAGED_FROM", text, 0, std::int64_t{1} << 62);
  config.plan.scan_pipeline = flag("FUSEFLOW_SCAN_PIPELINE", true);
  config.plan.segmented_short = flag("FUSEFLOW_SEGMENTED_SHORT", true);
  codegen::validate(config.plan);  // what the strategies' policies allow beyond the forms above

  if (std::string text = variable("FUSEFLOW_CHECK_MONOIDS"); !text.empty())
    config.check_monoids = detail::parse_flag("FUSEFLOW_CHECK_MONOIDS", text);
  return config;
}

LibraryConfig read_library_environment() {
  return {variable("FUSEFLOW_CUDA_LIBRARY"), variable("FUSEFLOW_NVRTC_LIBRARY"), variable("CUDA_PATH")};
}

}  // namespace fuseflow
