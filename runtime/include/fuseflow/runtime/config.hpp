#pragma once
// The runtime's configuration: every FUSEFLOW_* variable that fuseflow honours, read in
// one place (runtime/src/config.cpp), once per Runtime construction, and parsed strictly:
// a value that does not parse is a ConfigError naming the variable, the value and what
// was expected, e.g.
//   fuseflow: FUSEFLOW_SCAN_TILE='abc': expected <block>x<items>[x<min blocks>] ...
// An unset or empty variable keeps the default. RuntimeOptions (runtime.hpp) takes the
// same settings as typed fields; a field the caller sets wins over the environment.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "fuseflow/codegen/plan_options.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"

namespace fuseflow {

struct EnvironmentConfig {
  // FUSEFLOW_CACHE (0/1), FUSEFLOW_CACHE_DIR, FUSEFLOW_CACHE_READONLY (0/1), FUSEFLOW_DUMP,
  // FUSEFLOW_LOG (0/1 or compile); the disk
  // cache's default place comes from XDG_CACHE_HOME or HOME.
  CacheSettings cache;
  bool poison = false;           // FUSEFLOW_POISON (0/1)
  unsigned lookback_epochs = 0;  // FUSEFLOW_LOOKBACK_EPOCHS; 0: codegen::kMaxLookbackEpoch
  // FUSEFLOW_SCAN_TILE, FUSEFLOW_FILTER_TILE, FUSEFLOW_SEGMENTED_TILE,
  // FUSEFLOW_SCAN_STAGED_FROM, FUSEFLOW_SCAN_PIPELINE (0/1), FUSEFLOW_SEGMENTED_SHORT (0/1).
  codegen::PlanOptions plan;
  // FUSEFLOW_CHECK_MONOIDS (0/1): nullopt when unset (the build's default). The frontend
  // checks monoid laws when a program is built, before any Runtime exists.
  std::optional<bool> check_monoids;
  bool tiered = false;  // FUSEFLOW_TIERED (0/1): RuntimeOptions::tiered's default
};

// Reads and parses every variable above; throws ConfigError for the first bad value.
EnvironmentConfig read_environment();

// Where the driver and NVRTC are loaded from (read when each library is first loaded,
// once per process): FUSEFLOW_CUDA_LIBRARY, FUSEFLOW_NVRTC_LIBRARY, CUDA_PATH; empty
// when unset.
struct LibraryConfig {
  std::string cuda_library;
  std::string nvrtc_library;
  std::string cuda_path;
};
LibraryConfig read_library_environment();

// The sharded runtime's variables: FUSEFLOW_NCCL_LIBRARY (the libnccl to load; empty: the
// default search) and FUSEFLOW_SHARDED_FOLD=host|device (where a reduction's per-rank
// partials are folded; unset: the runtime's default). ConfigError for any other value.
struct ShardedConfig {
  std::string nccl_library;
  std::optional<bool> device_fold;
};
ShardedConfig read_sharded_environment();

namespace detail {
// The parsers, for tests and for callers that take the same syntax from elsewhere. Each
// throws ConfigError("<name>='<text>': expected ...").
bool parse_flag(const std::string& name, const std::string& text);
std::int64_t parse_integer(const std::string& name, const std::string& text, std::int64_t min, std::int64_t max);
codegen::TileShape parse_tile(const std::string& name, const std::string& text, int max_items);
}  // namespace detail

}  // namespace fuseflow
