// Segmented scans, scans by key and reduce_by_key over every kind of element, key and
// offsets they take compile with NVRTC for sm_90 (no GPU needed): narrow and wide
// integers, f64, bool keys, tuple keys and values, a parameter, a reduction's result read
// by the values, an epilogue, mapped offsets. The catalog's programs are compiled for
// sm_80 and sm_90 by the golden tests; this covers the types they do not, with tiered
// compilation's tier-0 options (what a tiered first run compiles: NVRTC's front end is the
// same, NVVM and ptxas take half the time).
#include <doctest/doctest.h>

#include <string>

#include <fuseflow/fuseflow.hpp>

#include "example_support.hpp"  // example::device_headers(): the device library for NVRTC

namespace ff = fuseflow;

namespace {

// Plans `p` for sm_90 and compiles every kernel at tier 0; returns the kernels' names.
std::string compile_all(const ff::Program& p) {
  std::string names;
  ff::CompileOptions tier0;
  tier0.quick = true;
  tier0.fmad = false;
  tier0.minimal = true;
  ff::codegen::PlanOptions options;
  options.segmented_pipeline = true;  // the opt-in pipelined kernels compile too
  for (const auto& k : ff::codegen::plan(p, ff::codegen::Target::preset("sm_90"), options).kernels) {
    INFO(ff::to_string(p));
    CHECK_NOTHROW((void)ff::Compiler::compile(k.source, k.name, tier0, example::device_headers()));
    names += (names.empty() ? "" : " ") + k.name;
  }
  return names;
}

}  // namespace

TEST_CASE("segmented scans by offsets of every kind compile with NVRTC") {
  auto i8 = ff::input<std::int8_t>("small");
  auto f64 = ff::input<double>("wide");
  auto f = ff::input<float>("f");
  auto o64 = ff::input<long long>("o64");
  auto o32 = ff::input<unsigned>("o32");
  auto t = ff::param<float>("t");
  CHECK(compile_all(ff::segmented_scan(i8, o64, ff::plus, ff::exclusive)) == "ff_segmented_scan_i8_plus_exclusive");
  CHECK(compile_all(ff::segmented_scan(f64, o32 * 2u, ff::min)) == "ff_segmented_scan_f64_min");
  CHECK(compile_all(ff::segmented_scan(ff::zip(f, ff::index()), o32, ff::argmax)) == "ff_segmented_scan_f32_i64_argmax");
  // A reduction's result read by the values and an epilogue: the reduction's kernel first.
  CHECK(compile_all(ff::segmented_scan(f / ff::reduce(f, ff::plus) + t, o32, ff::plus) * 2.0f) ==
        "ff_reduce_chunked_f32_plus ff_segmented_scan_f32_plus ff_segmented_scan_f32_plus_pipelined");
}

TEST_CASE("scans by key of every kind compile with NVRTC") {
  auto x = ff::input<int>("x");
  auto u = ff::input<std::uint64_t>("u");
  auto k16 = ff::input<std::int16_t>("k16");
  auto kd = ff::input<double>("kd");
  CHECK(compile_all(ff::scan_by_key(x > 0, x, ff::plus)) ==
        "ff_scan_by_key_bool_i32_plus ff_scan_by_key_bool_i32_plus_pipelined");
  CHECK(compile_all(ff::scan_by_key(ff::zip(k16, kd), u, ff::max, ff::exclusive)) ==
        "ff_scan_by_key_i16_f64_u64_max_exclusive");
  CHECK(compile_all(ff::scan_by_key(k16, ff::zip(x, ff::index()), ff::argmin)) == "ff_scan_by_key_i16_i32_i64_argmin");
  // A reduction's result reaches the scan as scalar argument s0: no local of the kernel may
  // take that name (one did).
  CHECK(compile_all(ff::scan_by_key(k16, x - ff::reduce(x, ff::min), ff::plus)) ==
        "ff_reduce_chunked_i32_min ff_scan_by_key_i16_i32_plus");
}

TEST_CASE("reduce_by_key of every kind compiles with NVRTC") {
  auto x = ff::input<int>("x");
  auto d = ff::input<double>("d");
  auto k8 = ff::input<std::uint8_t>("k8");
  auto k = ff::input<int>("k");
  auto p = ff::param<int>("p");
  ff::KeyedResult products = ff::reduce_by_key(k8, d, ff::times);
  CHECK(compile_all(ff::outputs(products.keys, products.values)) == "ff_reduce_by_key_u8_f64_times");
  ff::KeyedResult pairs = ff::reduce_by_key(ff::zip(k, k8), ff::zip(x, ff::index()), ff::argmin);
  CHECK(compile_all(ff::outputs(pairs.values, pairs.keys)) == "ff_reduce_by_key_i32_u8_i32_i64_argmin");
  CHECK(compile_all(ff::reduce_by_key(k, x + p, ff::bit_xor).values) ==
        "ff_reduce_by_key_i32_i32_bit_xor ff_reduce_by_key_i32_i32_bit_xor_pipelined");
}

// The pipelined kernels (sm_90, 4-byte inputs and values; segmented_scan_pipelined.cpp) of
// what the ones above do not reach: tuple keys of two inputs, a reduction's result and a
// parameter read by the values, an epilogue over the inputs, keys alone, mapped offsets.
TEST_CASE("the pipelined segmented scans and reduce_by_key compile with NVRTC") {
  auto x = ff::input<int>("x");
  auto f = ff::input<float>("f");
  auto k = ff::input<int>("k");
  auto o = ff::input<unsigned>("o");
  auto p = ff::param<float>("p");
  CHECK(compile_all(ff::scan_by_key(ff::zip(k, x > 0), x, ff::max, ff::exclusive)) ==
        "ff_scan_by_key_i32_bool_i32_max_exclusive ff_scan_by_key_i32_bool_i32_max_exclusive_pipelined");
  CHECK(compile_all(ff::scan_by_key(k, f - ff::reduce(f, ff::min) * p, ff::plus) + f) ==
        "ff_reduce_chunked_f32_min ff_scan_by_key_i32_f32_plus ff_scan_by_key_i32_f32_plus_pipelined");
  CHECK(compile_all(ff::reduce_by_key(k, f, ff::plus).keys) ==
        "ff_reduce_by_key_i32_f32_plus ff_reduce_by_key_i32_f32_plus_pipelined");
  CHECK(compile_all(ff::segmented_scan(f * p, o * 2u + 1u, ff::min, ff::exclusive) * 2.0f) ==
        "ff_segmented_scan_f32_min_exclusive ff_segmented_scan_f32_min_exclusive_pipelined");
  // Three inputs: the one-tile-per-block kernel alone.
  CHECK(compile_all(ff::scan_by_key(k, x + f, ff::plus)) == "ff_scan_by_key_i32_f32_plus");
}
