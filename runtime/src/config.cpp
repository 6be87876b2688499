// The one place that reads the environment (config.hpp). Every FUSEFLOW_* variable is
// parsed strictly: a value that is not what the variable takes throws ConfigError naming
// the variable, the value and the expected form; an unset or empty variable keeps its
// default. The README's "Environment variables" table lists the same variables.
#include "fuseflow/runtime/config.hpp"

#include <utility>
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

std::optional<std::filesystem::path> path_variable(const char* name) {
  std::string text = variable(name);
  if (text.empty()) return std::nullopt;
  return std::filesystem::path(text);
}

}  // namespace

namespace detail {

// The values are parsed by the code generator's option parser (plan_options.hpp), the one
// set_option uses: one strict parser for every variable and --option.
bool parse_flag(const std::string& name, const std::string& text) { return codegen::parse_switch(name, text); }

std::int64_t parse_integer(const std::string& name, const std::string& text, std::int64_t min, std::int64_t max) {
  return codegen::parse_count(name, text, min, max);
}

codegen::TileShape parse_tile(const std::string& name, const std::string& text, int max_items) {
  return codegen::parse_tile(name, text, max_items);
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
  config.tiered = flag("FUSEFLOW_TIERED", false);
  if (std::string text = variable("FUSEFLOW_LOOKBACK_EPOCHS"); !text.empty())
    config.lookback_epochs = static_cast<unsigned>(
        detail::parse_integer("FUSEFLOW_LOOKBACK_EPOCHS", text, 1, codegen::kMaxLookbackEpoch));

  // The planner's options, each from its variable through codegen::set_option (errors name
  // the variable).
  for (const auto& [option, name] : {std::pair<const char*, const char*>{"scan_tile", "FUSEFLOW_SCAN_TILE"},
                                     {"filter_tile", "FUSEFLOW_FILTER_TILE"},
                                     {"segmented_tile", "FUSEFLOW_SEGMENTED_TILE"},
                                     {"scan_staged_from", "FUSEFLOW_SCAN_STAGED_FROM"},
                                     {"scan_pipeline", "FUSEFLOW_SCAN_PIPELINE"},
                                     {"segmented_short", "FUSEFLOW_SEGMENTED_SHORT"},
                                     {"segmented_pipeline", "FUSEFLOW_SEGMENTED_PIPELINE"}})
    if (std::string text = variable(name); !text.empty()) codegen::set_option(config.plan, option, text, name);
  codegen::validate(config.plan);  // what the strategies' policies allow beyond the forms above

  if (std::string text = variable("FUSEFLOW_CHECK_MONOIDS"); !text.empty())
    config.check_monoids = detail::parse_flag("FUSEFLOW_CHECK_MONOIDS", text);
  return config;
}

ShardedConfig read_sharded_environment() {
  ShardedConfig config;
  config.nccl_library = variable("FUSEFLOW_NCCL_LIBRARY");
  if (const std::string fold = variable("FUSEFLOW_SHARDED_FOLD"); !fold.empty()) {
    if (fold != "host" && fold != "device")
      throw ConfigError("FUSEFLOW_SHARDED_FOLD='" + fold + "': expected host or device");
    config.device_fold = fold == "device";
  }
  return config;
}

LibraryConfig read_library_environment() {
  return {variable("FUSEFLOW_CUDA_LIBRARY"), variable("FUSEFLOW_NVRTC_LIBRARY"), variable("CUDA_PATH")};
}

}  // namespace fuseflow
