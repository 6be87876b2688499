#include "fuseflow/runtime/compiler.hpp"

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

}  // namespace

CompiledKernel Compiler::compile(std::string_view source, std::string_view kernel_name,
                                 const CompileOptions& options, std::span<const Header> headers) {
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

  const std::vector<std::string> flags = options.nvrtc_flags();
  std::vector<const char*> flag_ptrs;
  for (const std::string& flag : flags) flag_ptrs.push_back(flag.c_str());
  const nvrtcResult result =
      nvrtc().nvrtcCompileProgram(raw, static_cast<int>(flag_ptrs.size()), flag_ptrs.data());

  CompiledKernel compiled;
  compiled.log = program_log(site, raw);
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

NvrtcVersion Compiler::version() {
  static const NvrtcVersion version = [] {
    NvrtcVersion v;
    check_nvrtc(detail::nvrtc().nvrtcVersion(&v.major, &v.minor), "nvrtcVersion");
    return v;
  }();
  return version;
}

}  // namespace fuseflow
