// Tiered compilation's numerics pin (README "Tiered compilation"): with the Runtime's
// options (CompileOptions::fmad off), the PTX of tier 0 (quick) and tier 1 has no float
// add, subtract, multiply, divide or square root without an explicit IEEE rounding mode.
// Such instructions are never fused or approximated by ptxas, so whatever either tier
// inlines or unrolls, both round every operation alike: the same bits. With NVRTC's
// default (--fmad=true) the same kernels do have fusible ones (the check can fail).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "fuseflow/codegen/plan.hpp"
#include "fuseflow/runtime/compiler.hpp"

namespace ff = fuseflow;

namespace {

std::vector<ff::Header> headers() {
  std::vector<ff::Header> out;
  for (const auto& h : ff::codegen::device_headers()) out.push_back({h.name, h.text});
  return out;
}

// Float arithmetic the assembler may contract into an FMA or compute approximately: an
// add, sub, mul, fma, div, sqrt or rcp on f32/f64 with no rounding modifier (.rn/.rz/...).
// An instruction token matching (add|sub|mul|fma|div|sqrt|rcp)(.approx|.full)?(.ftz)?(.sat)?.f(32|64):
// the name, then the optional modifiers in that order, then the float type, nothing else.
// (Parsed by hand: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers.)
bool unrounded(const std::string& token) {
  std::vector<std::string> parts;
  std::stringstream in(token);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  if (parts.size() < 2) return false;
  static const std::vector<std::string> ops = {"add", "sub", "mul", "fma", "div", "sqrt", "rcp"};
  if (std::find(ops.begin(), ops.end(), parts.front()) == ops.end()) return false;
  if (parts.back() != "f32" && parts.back() != "f64") return false;
  const std::vector<std::vector<std::string>> optional = {{"approx", "full"}, {"ftz"}, {"sat"}};
  std::size_t next = 0;  // the first optional group the next modifier may come from
  for (std::size_t i = 1; i + 1 < parts.size(); ++i) {
    bool matched = false;
    for (; next < optional.size() && !matched; ++next)
      matched = std::find(optional[next].begin(), optional[next].end(), parts[i]) != optional[next].end();
    if (!matched) return false;
  }
  return true;
}

// Float arithmetic the assembler may contract into an FMA or compute approximately: an
// add, sub, mul, fma, div, sqrt or rcp on f32/f64 with no rounding modifier (.rn/.rz/...).
std::vector<std::string> unpinned(const std::string& ptx) {
  std::vector<std::string> found;
  std::string token;
  for (std::size_t i = 0; i <= ptx.size(); ++i) {
    const char c = i < ptx.size() ? ptx[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') {
      token += c;
      continue;
    }
    if (unrounded(token)) found.push_back(token);
    token.clear();
  }
  return found;
}

std::vector<std::string> unpinned_in(const std::string& program, bool fmad, bool quick) {
  ff::CompileOptions options;
  options.arch = "sm_90";
  options.fmad = fmad;
  options.quick = quick;
  std::vector<std::string> found;
  const ff::Program p = ff::catalog::find(program).build();
  for (const auto& k : ff::codegen::plan(p, ff::codegen::Target::preset("sm_90"), {}).kernels)
    for (std::string& s : unpinned(ff::Compiler::ptx(k.source, options, headers(), k.name))) found.push_back(k.name + ": " + s);
  return found;
}

}  // namespace

TEST_CASE("the pattern finds unrounded float arithmetic and leaves rounded or integer arithmetic alone") {
  CHECK(unpinned("\tmul.f32 \t%f3, %f1, %f2;\n\tadd.ftz.f64 %fd1, %fd2, %fd3;\n\tdiv.full.f32 %f1, %f2, %f3;").size() == 3);
  CHECK(unpinned("\tmul.rn.f32 %f3, %f1, %f2;\n\tfma.rn.f64 %fd1, %fd2, %fd3, %fd4;\n\tadd.s32 %r1, %r2, 1;\n"
                 "\tdiv.rn.f32 %f1, %f2, %f3;\n\tmul.wide.u32 %rd1, %r1, 4;")
            .empty());
}

TEST_CASE("with fmad off both tiers round every float operation explicitly; NVRTC's default does not") {
  // Maps with a multiply feeding an add (dot, the 2x2 matrix product, the linear
  // recurrence's affine maps), a division (normalize), a tiered scan and segmented sum.
  for (const char* program : {"dot", "matmul2x2", "linear_recurrence", "normalize", "segmented_sum"}) {
    CAPTURE(program);
    for (bool quick : {false, true}) {
      CAPTURE(quick);
      const std::vector<std::string> found = unpinned_in(program, /*fmad=*/false, quick);
      CHECK_MESSAGE(found.empty(), (found.empty() ? std::string() : found.front()));
    }
  }
  CHECK(!unpinned_in("dot", /*fmad=*/true, /*quick=*/false).empty());
}
