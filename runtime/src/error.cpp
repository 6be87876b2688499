#include "fuseflow/runtime/error.hpp"

#include <utility>

namespace fuseflow {
namespace {

std::string compile_message(const std::string& kernel, const std::string& arch,
                            const std::string& log, const std::string& excerpt) {
  std::string message = "fuseflow: NVRTC could not compile kernel '" + kernel + "' for " + arch +
                        ":\n" + log;
  if (!message.empty() && message.back() != '\n') message += '\n';
  if (!excerpt.empty()) message += excerpt;
  return message;
}

}  // namespace

CompileError::CompileError(std::string kernel, std::string arch, std::string log,
                           std::string source_excerpt)
    : Error(compile_message(kernel, arch, log, source_excerpt)),
      kernel_(std::move(kernel)),
      log_(std::move(log)),
      source_(std::move(source_excerpt)) {}

CudaError::CudaError(std::string call, CUresult code, std::string code_name,
                     const std::string& message)
    : Error("fuseflow: " + call + " failed with " + code_name + " (" +
            std::to_string(static_cast<int>(code)) + "): " + message),
      call_(std::move(call)),
      code_(code),
      code_name_(std::move(code_name)) {}

}  // namespace fuseflow
