// The runtime's configuration (config.hpp): every FUSEFLOW_* variable parsed strictly,
// a bad value a ConfigError naming the variable, the value and the expected form; good
// values land in the typed fields. No GPU needed.
#include <doctest/doctest.h>

#include <string>

#include "cache_test_support.hpp"
#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/config.hpp"

namespace ff = fuseflow;
using ff::test::ScopedEnv;

namespace {

// The ConfigError read_environment() throws, or "" when it throws none.
std::string error_of_environment() {
  try {
    (void)ff::read_environment();
  } catch (const ff::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every variable the configuration reads, unset for the test's scope.
struct CleanEnvironment {
  ScopedEnv vars[16] = {
      {"FUSEFLOW_CACHE", std::nullopt},          {"FUSEFLOW_CACHE_DIR", std::nullopt},
      {"FUSEFLOW_DUMP", std::nullopt},           {"FUSEFLOW_LOG", std::nullopt},
      {"FUSEFLOW_POISON", std::nullopt},         {"FUSEFLOW_LOOKBACK_EPOCHS", std::nullopt},
      {"FUSEFLOW_SCAN_TILE", std::nullopt},      {"FUSEFLOW_FILTER_TILE", std::nullopt},
      {"FUSEFLOW_SEGMENTED_TILE", std::nullopt}, {"FUSEFLOW_SCAN_STAGED_FROM", std::nullopt},
      {"FUSEFLOW_SCAN_PIPELINE", std::nullopt},  {"FUSEFLOW_SEGMENTED_SHORT", std::nullopt},
      {"FUSEFLOW_CHECK_MONOIDS", std::nullopt},  {"XDG_CACHE_HOME", std::nullopt},
      {"HOME", std::string("/home/someone")},    {"FUSEFLOW_TIERED", std::nullopt}};
};

}  // namespace

TEST_CASE("with nothing set, every setting has its default") {
  const CleanEnvironment clean;
  const ff::EnvironmentConfig c = ff::read_environment();
  CHECK(c.cache.disk_dir == std::filesystem::path("/home/someone/.cache/fuseflow"));
  CHECK_FALSE(c.cache.dump_dir.has_value());
  CHECK_FALSE(c.cache.log);
  CHECK_FALSE(c.poison);
  CHECK(c.lookback_epochs == 0);
  CHECK(c.plan == ff::codegen::PlanOptions{});
  CHECK(c.plan.key().empty());
  CHECK_FALSE(c.check_monoids.has_value());
  CHECK_FALSE(c.tiered);
}

TEST_CASE("FUSEFLOW_TIERED turns tiered compilation on or off; a bad value names the variable") {
  const CleanEnvironment clean;
  {
    const ScopedEnv on("FUSEFLOW_TIERED", "1");
    CHECK(ff::read_environment().tiered);
  }
  {
    const ScopedEnv off("FUSEFLOW_TIERED", "0");
    CHECK_FALSE(ff::read_environment().tiered);
  }
  const ScopedEnv bad("FUSEFLOW_TIERED", "sometimes");
  try {
    (void)ff::read_environment();
    FAIL("FUSEFLOW_TIERED=sometimes was accepted");
  } catch (const ff::ConfigError& e) {
    CHECK(contains(e.what(), "FUSEFLOW_TIERED"));
    CHECK(contains(e.what(), "sometimes"));
  }
}

TEST_CASE("good values take effect in the typed fields") {
  const CleanEnvironment clean;
  const ScopedEnv cache("FUSEFLOW_CACHE_DIR", "/tmp/ff-cache"), dump("FUSEFLOW_DUMP", "/tmp/ff-dump"),
      log("FUSEFLOW_LOG", "1"), poison("FUSEFLOW_POISON", "on"), epochs("FUSEFLOW_LOOKBACK_EPOCHS", "3"),
      scan("FUSEFLOW_SCAN_TILE", "128x16x4"), filter("FUSEFLOW_FILTER_TILE", "256x4"),
      segmented("FUSEFLOW_SEGMENTED_TILE", "1024x16x0"), staged("FUSEFLOW_SCAN_STAGED_FROM", "0"),
      pipeline("FUSEFLOW_SCAN_PIPELINE", "0"), shorts("FUSEFLOW_SEGMENTED_SHORT", "false"),
      monoids("FUSEFLOW_CHECK_MONOIDS", "yes");
  const ff::EnvironmentConfig c = ff::read_environment();
  CHECK(c.cache.disk_dir == std::filesystem::path("/tmp/ff-cache"));
  CHECK(c.cache.dump_dir == std::filesystem::path("/tmp/ff-dump"));
  CHECK(c.cache.log);
  CHECK(c.poison);
  CHECK(c.lookback_epochs == 3);
  CHECK(c.plan.scan_tile == ff::codegen::TileShape{128, 16, 4});
  CHECK(c.plan.filter_tile == ff::codegen::TileShape{256, 4, 0});
  CHECK(c.plan.segmented_tile == ff::codegen::TileShape{1024, 16, 0});
  CHECK(c.plan.scan_staged_from == 0);
  CHECK_FALSE(c.plan.scan_pipeline);
  CHECK_FALSE(c.plan.segmented_short);
  CHECK(c.check_monoids == true);
  CHECK(c.plan.key() ==
        "scan_tile=128x16x4;filter_tile=256x4;segmented_tile=1024x16;scan_staged_from=0;scan_pipeline=0;"
        "segmented_short=0");
}

TEST_CASE("FUSEFLOW_CACHE=0 keeps the disk cache off; XDG_CACHE_HOME places it when no directory is given") {
  const CleanEnvironment clean;
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    CHECK(ff::read_environment().cache.disk_dir == std::filesystem::path("/tmp/xdg/fuseflow"));
  }
  const ScopedEnv off("FUSEFLOW_CACHE", "0"), dir("FUSEFLOW_CACHE_DIR", "/tmp/ff-cache");
  CHECK_FALSE(ff::read_environment().cache.disk_dir.has_value());
  CHECK_FALSE(ff::CacheSettings::from_environment().disk_dir.has_value());
}

TEST_CASE("an empty variable is the same as an unset one") {
  const CleanEnvironment clean;
  const ScopedEnv tile("FUSEFLOW_SCAN_TILE", ""), log("FUSEFLOW_LOG", "");
  const ff::EnvironmentConfig c = ff::read_environment();
  CHECK_FALSE(c.plan.scan_tile.has_value());
  CHECK_FALSE(c.cache.log);
}

TEST_CASE("a bad value is a ConfigError naming the variable, the value and what was expected") {
  const CleanEnvironment clean;
  struct Case {
    const char* variable;
    const char* value;
    const char* expected;
  };
  const Case cases[] = {
      {"FUSEFLOW_SCAN_TILE", "abc", "expected <block>x<items>[x<min blocks>] with block a multiple of 32 in [32, 1024], items in [1, 32]"},
      {"FUSEFLOW_SCAN_TILE", "256x", "expected <block>x<items>"},
      {"FUSEFLOW_SCAN_TILE", "256x8x", "expected <block>x<items>"},
      {"FUSEFLOW_SCAN_TILE", "256x8x4x2", "expected <block>x<items>"},
      {"FUSEFLOW_SCAN_TILE", "100x8", "block a multiple of 32"},
      {"FUSEFLOW_SCAN_TILE", "2048x8", "in [32, 1024]"},
      {"FUSEFLOW_SCAN_TILE", "256x33", "items in [1, 32]"},
      {"FUSEFLOW_SCAN_TILE", "256x8x33", "min blocks in [0, 32]"},
      {"FUSEFLOW_SCAN_TILE", " 256x8", "expected <block>x<items>"},
      {"FUSEFLOW_FILTER_TILE", "256x17", "items in [1, 16]"},
      {"FUSEFLOW_SEGMENTED_TILE", "256x0", "items in [1, 16]"},
      {"FUSEFLOW_SCAN_STAGED_FROM", "-1", "expected a whole number in [0, "},
      {"FUSEFLOW_SCAN_STAGED_FROM", "1e6", "expected a whole number"},
      {"FUSEFLOW_SCAN_STAGED_FROM", "99999999999999999999999", "expected a whole number"},
      {"FUSEFLOW_LOOKBACK_EPOCHS", "0", "expected a whole number in [1, 1073741823]"},
      {"FUSEFLOW_LOOKBACK_EPOCHS", "3x", "expected a whole number in [1, "},
      {"FUSEFLOW_CACHE", "maybe", "expected 0 or 1"},
      {"FUSEFLOW_LOG", "2", "expected 0 or 1"},
      {"FUSEFLOW_POISON", "yes please", "expected 0 or 1"},
      {"FUSEFLOW_SCAN_PIPELINE", "off!", "expected 0 or 1"},
      {"FUSEFLOW_SEGMENTED_SHORT", "TRUE", "expected 0 or 1"},
      {"FUSEFLOW_CHECK_MONOIDS", "enable", "expected 0 or 1"},
  };
  for (const Case& c : cases) {
    const ScopedEnv set(c.variable, std::string(c.value));
    const std::string error = error_of_environment();
    INFO(c.variable, "=", c.value, ": ", error);
    CHECK(contains(error, std::string("fuseflow: ") + c.variable + "='" + c.value + "': "));
    CHECK(contains(error, c.expected));
  }
}

TEST_CASE("the parsers alone: what each accepts") {
  CHECK(ff::detail::parse_flag("V", "1"));
  CHECK_FALSE(ff::detail::parse_flag("V", "no"));
  CHECK(ff::detail::parse_integer("V", "42", 0, 100) == 42);
  CHECK_THROWS_AS(ff::detail::parse_integer("V", "101", 0, 100), ff::ConfigError);
  CHECK(ff::detail::parse_tile("V", "32x1", 16) == ff::codegen::TileShape{32, 1, 0});
  CHECK(ff::detail::parse_tile("V", "1024x16x32", 16) == ff::codegen::TileShape{1024, 16, 32});
  CHECK_THROWS_AS(ff::detail::parse_tile("V", "32x1x", 16), ff::ConfigError);
  // A ConfigError is an ff::Error like every other fuseflow error.
  CHECK_THROWS_AS(ff::detail::parse_flag("V", "?"), ff::Error);
}

TEST_CASE("one parser: set_option (fuseflow-dump --option) takes and refuses what the variables do") {
  ff::codegen::PlanOptions o;
  ff::codegen::set_option(o, "scan_tile", "128x16x4", "--option scan_tile");
  CHECK(o.scan_tile == ff::codegen::TileShape{128, 16, 4});
  ff::codegen::set_option(o, "scan_pipeline", "off");  // the variables' spellings of a switch
  CHECK_FALSE(o.scan_pipeline);
  ff::codegen::set_option(o, "scan_staged_from", "4096");
  CHECK(o.scan_staged_from == 4096);
  CHECK_FALSE(o.segmented_pipeline);  // opt-in: off unless set
  CHECK(o.key().find("segmented_pipeline") == std::string::npos);
  ff::codegen::set_option(o, "segmented_pipeline", "1");
  CHECK(o.segmented_pipeline);
  CHECK(o.key().find("segmented_pipeline=1") != std::string::npos);
  auto error = [](const char* name, const char* text) {
    ff::codegen::PlanOptions p;
    try {
      ff::codegen::set_option(p, name, text, "--option x");
    } catch (const ff::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // The ranges are checked while parsing, as for FUSEFLOW_FILTER_TILE (16 items at most).
  CHECK(contains(error("filter_tile", "256x17"), "--option x='256x17': expected"));
  CHECK(contains(error("filter_tile", "256x17"), "items in [1, 16]"));
  CHECK(contains(error("scan_staged_from", "-1"), "expected a whole number in [0, "));
  CHECK(contains(error("scan_staged_from", " 12"), "expected a whole number"));
  CHECK(contains(error("segmented_short", "TRUE"), "expected 0 or 1"));
  CHECK(contains(error("no_such_option", "1"), "unknown plan option 'no_such_option'"));
}

TEST_CASE("the loaders' variables are read as given") {
  const ScopedEnv cuda("FUSEFLOW_CUDA_LIBRARY", "/x/libcuda-emu.so"), nvrtc("FUSEFLOW_NVRTC_LIBRARY", std::nullopt),
      path("CUDA_PATH", "/opt/cuda");
  const ff::LibraryConfig c = ff::read_library_environment();
  CHECK(c.cuda_library == "/x/libcuda-emu.so");
  CHECK(c.nvrtc_library.empty());
  CHECK(c.cuda_path == "/opt/cuda");
}
