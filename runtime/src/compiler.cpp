#include "fuseflow/runtime/compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

#include "fuseflow/runtime/error.hpp"
#include "nvrtc_api.hpp"
#include "source_excerpt.hpp"

namespace fuseflow {
namespace {

using detail::nvrtc;

void check_nvrtc(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS)
    throw Error(std::string("fuseflow: ") + call + " failed: " + nvrtc().nvrtcGetErrorString(result));
}

// The kernel being compiled: a failing NVRTC call is a CompileError for it, naming the call.
struct Compiling {
  std::string kernel, arch;
  void check(nvrtcResult result, const char* call) const {
    if (result != NVRTC_SUCCESS)
      throw CompileError(kernel, arch, std::string(call) + " failed: " + nvrtc().nvrtcGetErrorString(result), "");
  }
};

struct ProgramDeleter {
  void operator()(_nvrtcProgram* program) const noexcept {
    nvrtc().nvrtcDestroyProgram(&program);
  }
};
using Program = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

std::string program_log(const Compiling& site, nvrtcProgram program) {
  std::size_t size = 0;
  site.check(nvrtc().nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize");
  std::string log(size, '\0');
  site.check(nvrtc().nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

std::string program_ptx(const Compiling& site, nvrtcProgram program) {
  std::size_t size = 0;
  site.check(nvrtc().nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');  // size counts the terminating NUL, which the driver needs
  site.check(nvrtc().nvrtcGetPTX(program, ptx.data()), "nvrtcGetPTX");
  return ptx;
}

std::string program_cubin(const Compiling& site, nvrtcProgram program) {
  std::size_t size = 0;
  site.check(nvrtc().nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  site.check(nvrtc().nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN");
  return cubin;
}

// NVRTC's --time=- table, at the end of the log:
//   File name, phase name, metric, unit
//   k.cu, CUDA C++ Frontend, 9, ms
//   k.cu, NVVM Optimizer, 26, ms
//   k.cu, PTX Translation, 29, ms
// Fills `phases` from it and removes it from `log`.
void take_phase_table(std::string& log, CompilePhases& phases) {
  const std::size_t at = log.find("File name, phase name, metric, unit");
  if (at == std::string::npos) return;
  std::size_t line = log.find('\n', at);
  while (line != std::string::npos && line + 1 < log.size()) {
    const std::size_t end = log.find('\n', line + 1);
    const std::string row = log.substr(line + 1, end == std::string::npos ? std::string::npos : end - line - 1);
    line = end;
    const std::size_t c1 = row.find(", "), c2 = row.find(", ", c1 == std::string::npos ? 0 : c1 + 2);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string phase = row.substr(c1 + 2, c2 - c1 - 2);
    const double ms = std::strtod(row.c_str() + c2 + 2, nullptr);
    if (phase.find("Frontend") != std::string::npos) phases.front_end_ms += ms;
    else if (phase.find("NVVM") != std::string::npos) phases.optimizer_ms += ms;
    else if (phase.find("PTX") != std::string::npos) phases.ptxas_ms += ms;
    else continue;
    phases.measured = true;
  }
  log.erase(at);
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
}

}  // namespace

CompiledKernel Compiler::compile(std::string_view source, std::string_view kernel_name,
                                 const CompileOptions& options, std::span<const Header> headers,
                                 CompilePhases* phases) {
  const auto start = std::chrono::steady_clock::now();
  const std::string program_name = std::string(kernel_name) + ".cu";
  const std::string source_text(source);  // NVRTC wants NUL-terminated text
  std::vector<const char*> header_contents, header_names;
  for (const Header& header : headers) {
    header_contents.push_back(header.content.c_str());
    header_names.push_back(header.name.c_str());
  }
  const Compiling site{std::string(kernel_name), options.target()};
  nvrtcProgram raw = nullptr;
  site.check(nvrtc().nvrtcCreateProgram(&raw, source_text.c_str(), program_name.c_str(),
                                         static_cast<int>(headers.size()), header_contents.data(),
                                         header_names.data()),
              "nvrtcCreateProgram");
  Program program(raw);

  std::vector<std::string> flags = options.nvrtc_flags();
  if (phases) flags.push_back("--time=-");
  std::vector<const char*> flag_ptrs;
  for (const std::string& flag : flags) flag_ptrs.push_back(flag.c_str());
  const nvrtcResult result =
      nvrtc().nvrtcCompileProgram(raw, static_cast<int>(flag_ptrs.size()), flag_ptrs.data());

  CompiledKernel compiled;
  compiled.log = program_log(site, raw);
  if (phases) take_phase_table(compiled.log, *phases);
  if (result == NVRTC_ERROR_COMPILATION)
    throw CompileError(std::string(kernel_name), options.target(), compiled.log,
                       detail::source_excerpt(compiled.log, program_name, source, headers));
  if (result != NVRTC_SUCCESS)
    throw CompileError(std::string(kernel_name), options.target(),
                       std::string("nvrtcCompileProgram failed: ") + nvrtc().nvrtcGetErrorString(result) + "\n" +
                           compiled.log,
                       "");
  compiled.format = options.ptx ? BinaryFormat::ptx : BinaryFormat::cubin;
  compiled.image = options.ptx ? program_ptx(site, raw) : program_cubin(site, raw);
  if (phases)
    phases->total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return compiled;
}

std::string Compiler::ptx(std::string_view source, const CompileOptions& options,
                          std::span<const Header> headers, std::string_view kernel_name) {
  CompileOptions as_ptx = options;
  as_ptx.ptx = true;
  std::string text = compile(source, kernel_name, as_ptx, headers).image;
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

NvrtcVersion Compiler::warm_up() {
  const NvrtcVersion v = version();
  // The CPU emulator's stand-in (version 0.x) compiles with the host compiler: nothing to
  // initialise there, and a host-compiler run per process would only cost time.
  static const bool warmed = v.major < 12 || [] {
    try {
      (void)compile("extern \"C\" __global__ void ff_warm_up() {}\n", "ff_warm_up", CompileOptions{});
    } catch (const std::exception&) {
      // A real compile reports whatever is wrong; warming up only saves it time.
    }
    return true;
  }();
  (void)warmed;
  return v;
}

NvrtcVersion Compiler::version() {
  static const NvrtcVersion version = [] {
    NvrtcVersion v;
    check_nvrtc(detail::nvrtc().nvrtcVersion(&v.major, &v.minor), "nvrtcVersion");
    return v;
  }();
  return version;
}

}  // namespace fuseflow
