// The bad-input matrix, the rows found on the host (no GPU needed): each row is one test
// asserting the exact message. Rows tested elsewhere:
//   device_span with a null pointer            runtime/memory_test.cpp
//   a custom monoid breaking its laws          frontend/monoid_test.cpp
//   offsets that decrease or exceed n          frontend/reference_test.cpp (CPU reference),
//                                              golden/segmented (the flag), gpu/bad_input_gpu_test.cpp
//   a Runtime after a sticky device error      gpu/runtime_gpu_sticky_error_test.cpp
//   an allocation larger than the device       gpu/runtime_gpu_test.cpp
//
// Bindings are checked with ff::check_bindings, which Runtime::run calls (in parts) before
// it compiles or launches anything. The spans point at fake device addresses: nothing is
// ever read through them here.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/kernel_cache.hpp"
#include "fuseflow/runtime/runtime.hpp"
#include "graph_error_of.hpp"

namespace ff = fuseflow;

namespace {

template <class T>
ff::device_span<T> fake_array(std::size_t n) {
  return ff::device_span<T>(CUdeviceptr{0x100000}, n);
}

// n elements at a fake device address `at`, for the tests of results bound to memory.
template <class T>
ff::device_span<T> fake_at(CUdeviceptr at, std::size_t n) {
  return ff::device_span<T>(at, n);
}

using ff::test::graph_error_of;

// The generated kernels of a program, compiled for sm_90 as a Runtime would compile them.
void compile_for_sm90(const ff::Program& program) {
  std::vector<ff::Header> headers;
  for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
  ff::KernelCache cache(ff::CacheSettings{});
  ff::CompileOptions options;
  options.arch = "sm_90";
  for (const auto& k : ff::codegen::plan(program, ff::codegen::Target::preset("sm_90")).kernels)
    cache.get(k.name, k.source, options, headers);
}

// The 1-based number of the line of `source` that contains `text`.
int line_of(const std::string& source, const std::string& text) {
  const std::size_t at = source.find(text);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// A raw CUDA snippet that NVRTC rejects: the CompileError names the kernel and the arch,
// carries NVRTC's error for the snippet's line, and shows that line numbered and marked.
void check_snippet_error(const std::string& snippet, const std::string& nvrtc_error) {
  const auto x = ff::input<float>("x");
  const ff::Program program(ff::reduce(ff::cuda_expr<float>(snippet, x), ff::plus));
  const std::string source = ff::codegen::plan(program, ff::codegen::Target::preset("sm_90")).kernels.at(0).source;
  const std::string kernel = "ff_reduce_chunked_f32_plus";
  const std::string line_text = "const float v0 = (" + std::string(snippet).replace(snippet.find("$0"), 2, "(x)") + ");";
  const std::string line = std::to_string(line_of(source, line_text));
  try {
    compile_for_sm90(program);
    FAIL("NVRTC accepted the snippet " << snippet);
  } catch (const ff::CompileError& e) {
    CHECK(e.kernel() == kernel);
    CHECK(e.log().find(kernel + ".cu(" + line + "): error: " + nvrtc_error) != std::string::npos);
    CHECK(e.source().rfind(kernel + ".cu:" + line + ":\n", 0) == 0);
    CHECK(e.source().find("\n> " + line + " |     " + line_text + "\n") != std::string::npos);
    const std::string what = e.what();
    CHECK(what.rfind("fuseflow: NVRTC could not compile kernel '" + kernel + "' for sm_90:\n", 0) == 0);
    CHECK(what.find("> " + line + " |     " + line_text) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("an unbound input is named") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x * y, ff::plus), {{x, fake_array<float>(8)}}); }) ==
        "fuseflow: run: input 'y' is not bound");
}

TEST_CASE("an unbound parameter is named") {
  const auto x = ff::input<float>("x");
  const auto t = ff::param<float>("t");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x * t, ff::plus), {{x, fake_array<float>(8)}}); }) ==
        "fuseflow: run: parameter 't' is not bound");
}

TEST_CASE("an input bound twice is named, even to the same array") {
  const auto x = ff::input<float>("x");
  const auto xs = fake_array<float>(8);
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x, xs}, {x, xs}}); }) ==
        "fuseflow: run: input 'x' is bound twice");
}

TEST_CASE("arrays of different lengths in one map name both inputs and lengths") {
  const auto x = ff::input<float>("x");
  const auto y = ff::input<float>("y");
  CHECK(graph_error_of([&] {
          ff::check_bindings(ff::reduce(x * y, ff::plus), {{x, fake_array<float>(10)}, {y, fake_array<float>(12)}});
        }) == "fuseflow: run: arrays of different lengths: input 'x' has 10 elements, input 'y' has 12");
  // Segment offsets are a domain of their own: their length differs from the values'.
  const auto v = ff::input<float>("v");
  const auto off = ff::input<int>("off");
  CHECK(graph_error_of([&] {
          ff::check_bindings(ff::segmented_reduce(v, off, ff::plus), {{v, fake_array<float>(10)}, {off, fake_array<int>(3)}});
        }) == "(no GraphError thrown)");
}

TEST_CASE("an input declared with a length and bound to another is named") {
  const auto x = ff::input<float>("x", 16);
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x, fake_array<float>(15)}}); }) ==
        "fuseflow: run: input 'x' was declared with 16 elements but was bound to 15");
}

TEST_CASE("an array of the wrong element type names both types") {
  // DeviceArray<T> and device_span<T> bind through the same type_of<T>().
  const auto x = ff::input<float>("x");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x, fake_array<int>(8)}}); }) ==
        "fuseflow: run: input 'x' holds f32 but was bound to an array of i32");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x, fake_array<double>(8)}}); }) ==
        "fuseflow: run: input 'x' holds f32 but was bound to an array of f64");
}

TEST_CASE("an input bound to a scalar and a parameter bound to an array are named") {
  const auto x = ff::input<float>("x");
  const auto t = ff::param<float>("t");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x * t, ff::plus), {{x, 2.0f}, {t, 1.0f}}); }) ==
        "fuseflow: run: input 'x' is an array but was bound to the scalar 2.0f");
  CHECK(graph_error_of([&] {
          ff::check_bindings(ff::reduce(x * t, ff::plus), {{x, fake_array<float>(8)}, {t, fake_array<float>(8)}});
        }) == "fuseflow: run: parameter 't' is a scalar but was bound to an array");
}

TEST_CASE("a binding the program does not read is named") {
  const auto x = ff::input<float>("x");
  const auto z = ff::input<float>("z");
  CHECK(graph_error_of([&] {
          ff::check_bindings(ff::reduce(x, ff::plus), {{x, fake_array<float>(8)}, {z, fake_array<float>(8)}});
        }) == "fuseflow: run: input 'z' is bound but not used by this program");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x + 1.0f, fake_array<float>(8)}}); }) ==
        "fuseflow: run: only inputs, parameters and results of this program can be bound, not x + 1.0f");
}

TEST_CASE("a scan's result bound to exactly its input's memory is an in-place scan; any other overlap is named") {
  const auto x = ff::input<float>("x");
  const ff::Expr s = ff::scan(x, ff::plus, ff::exclusive);
  const CUdeviceptr at = 0x100000;
  auto error = [&](const ff::Program& p, const ff::Bindings& b) { return graph_error_of([&] { ff::check_bindings(p, b); }); };
  // In place, with either strategy, and with a reduction folded into the scan's pass.
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at, 1000)}}) == "(no GraphError thrown)");
  const ff::Expr rts = ff::scan(x, ff::plus, ff::inclusive, ff::strategy::reduce_then_scan);
  CHECK(error(rts, {{x, fake_at<float>(at, 1000)}, {rts, fake_at<float>(at, 1000)}}) == "(no GraphError thrown)");
  CHECK(error(ff::outputs(s, ff::reduce(x, ff::max)), {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at, 1000)}}) ==
        "(no GraphError thrown)");
  // Separate memory of the right length and type is fine too.
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at + 4000, 1000)}}) == "(no GraphError thrown)");

  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at + 4000, 999)}}) ==
        "fuseflow: run: output 0 (" + ff::to_string(s) + ") has 1000 elements but was bound to an array of 999");
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<int>(at, 1000)}}) ==
        "fuseflow: run: output 0 (" + ff::to_string(s) + ") holds f32 but was bound to an array of i32");
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at + 4, 1000)}}) ==
        "fuseflow: run: output 0 (" + ff::to_string(s) +
            ") is bound to memory that partly overlaps input 'x'; an output may share memory with an input only "
            "exactly (the same address, element size and length), to be written in place");
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at + 8000, 1000)}, {s, fake_at<float>(at, 1000)}}) ==
        "fuseflow: run: the result " + ff::to_string(s) + " is bound twice");
  CHECK(error(s, {{x, fake_at<float>(at, 1000)}, {s * 2.0f, fake_at<float>(at + 8000, 1000)}}) ==
        "fuseflow: run: only inputs, parameters and results of this program can be bound, not scan(...) * 2.0f");
}

TEST_CASE("results bound to overlapping memory, scalars bound to memory and unsafe aliasing are named") {
  const auto x = ff::input<float>("x");
  const ff::Expr s = ff::scan(x, ff::plus);
  const ff::Expr doubled = s * 2.0f;
  const CUdeviceptr at = 0x100000;
  auto error = [&](const ff::Program& p, const ff::Bindings& b) { return graph_error_of([&] { ff::check_bindings(p, b); }); };
  CHECK(error(ff::outputs(s, doubled),
              {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at + 8000, 1000)}, {doubled, fake_at<float>(at + 8100, 1000)}}) ==
        "fuseflow: run: outputs 0 and 1 are bound to overlapping memory; each output needs memory of its own");
  const ff::Expr total = ff::reduce(x, ff::plus);
  CHECK(error(ff::outputs(s, total), {{x, fake_at<float>(at, 1000)}, {total, fake_at<float>(at + 8000, 1)}}) ==
        "fuseflow: run: output 1 (" + ff::to_string(total) +
            ") is a scalar, which comes back to the host; only array results can be bound to device memory");
  // A map writes element i while it reads it, but it is not a scan: not in place.
  const ff::Expr mapped = x * 2.0f;
  CHECK(error(mapped, {{x, fake_at<float>(at, 1000)}, {mapped, fake_at<float>(at, 1000)}}).find(
            "is bound to memory of input 'x', which its kernel ff_map") != std::string::npos);
  // A second scan of x runs after the first has overwritten x.
  const ff::Expr maxes = ff::scan(x, ff::max);
  CHECK(error(ff::outputs(s, maxes), {{x, fake_at<float>(at, 1000)}, {s, fake_at<float>(at, 1000)}}) ==
        "fuseflow: run: output 0 (" + ff::to_string(s) +
            ") is bound to memory of input 'x', which kernel ff_scan_lookback_f32_max reads after "
            "ff_scan_lookback_f32_plus has written the output there: bind a separate array");
}

TEST_CASE("correct bindings pass, parameters of another arithmetic type included") {
  const auto x = ff::input<float>("x");
  const auto t = ff::param<float>("t");
  CHECK(graph_error_of([&] {
          ff::check_bindings(ff::reduce(ff::filter(x, x > t), ff::plus), {{x, fake_array<float>(8)}, {t, 1}});
        }) == "(no GraphError thrown)");
  CHECK(graph_error_of([&] { ff::check_bindings(ff::reduce(x, ff::plus), {{x, fake_array<float>(0)}}); }) ==
        "(no GraphError thrown)");
}

TEST_CASE("an empty program is an error") {
  CHECK(graph_error_of([] { ff::Program p(ff::outputs()); }) ==
        "fuseflow: program: an empty program (outputs() with no results)");
}

TEST_CASE("a histogram with zero or negative bins is an error") {
  const auto k = ff::input<int>("k");
  CHECK(graph_error_of([&] { ff::histogram(k, 0); }) == "fuseflow: histogram: the bin count must be positive, got 0");
  CHECK(graph_error_of([&] { ff::histogram(k, -3); }) == "fuseflow: histogram: the bin count must be positive, got -3");
}

TEST_CASE("a raw CUDA snippet with a syntax error gives a CompileError showing its numbered line") {
  check_snippet_error("($0 * 2.0f", "expected a \")\"");
}

TEST_CASE("a raw CUDA snippet with a type error gives a CompileError showing its numbered line") {
  check_snippet_error("$0.x", "expression must have class type but it has type \"const float\"");
}

TEST_CASE("a segmented reduce plans a device check of its offsets") {
  const auto v = ff::input<float>("v");
  const auto off = ff::input<int>("off");
  const ff::Program program(ff::segmented_reduce(v, off, ff::plus));
  const ff::codegen::Plan plan = ff::codegen::plan(program, ff::codegen::Target::preset("sm_90"));
  REQUIRE(plan.checked_offsets.size() == 1);
  CHECK(plan.checked_offsets[0].get() == program.ops().back().get());
  // Both kernels read offsets, so both may find bad ones: the short-segment pass (every
  // consecutive pair) and the merge path (the tiles it loads).
  REQUIRE(plan.kernels.size() == 2);
  for (const ff::codegen::KernelSpec& k : plan.kernels) {
    INFO(k.name);
    CHECK(std::count_if(k.args.begin(), k.args.end(), [](const ff::codegen::Arg& a) {
            return a.kind == ff::codegen::Arg::Kind::InvalidFlag && a.index == 0;
          }) == 1);
  }
  // Reductions and scans need no such check.
  const auto x = ff::input<float>("x");
  CHECK(ff::codegen::plan(ff::Program(ff::scan(x, ff::plus)), ff::codegen::Target::preset("sm_90")).checked_offsets.empty());
}
