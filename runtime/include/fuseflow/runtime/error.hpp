#pragma once
// Errors raised by the runtime layer. Both derive from fuseflow::Error, so a caller can
// catch everything fuseflow throws in one place, or tell a bad kernel from a bad device.
#include <cuda.h>

#include <string>

#include "fuseflow/frontend/error.hpp"

namespace fuseflow {

// NVRTC rejected a kernel. what() holds the whole story (kernel, arch, log, and the
// numbered source lines around every line NVRTC reported); log() and source() give the
// two parts separately for tools and tests.
class CompileError : public Error {
 public:
  CompileError(std::string kernel, std::string arch, std::string log, std::string source_excerpt);

  const std::string& kernel() const noexcept { return kernel_; }
  const std::string& log() const noexcept { return log_; }
  // Lines around each reported line, e.g. "> 41 | float v = foo(x);" for the culprit
  // and "  40 | ..." for its neighbours; empty when the log named no line.
  const std::string& source() const noexcept { return source_; }

 private:
  std::string kernel_;
  std::string log_;
  std::string source_;
};

// A CUDA driver call failed (or there is no driver / no GPU at all).
class CudaError : public Error {
 public:
  CudaError(std::string call, CUresult code, std::string code_name, const std::string& message);

  const std::string& call() const noexcept { return call_; }
  CUresult code() const noexcept { return code_; }
  const std::string& code_name() const noexcept { return code_name_; }

 private:
  std::string call_;
  CUresult code_;
  std::string code_name_;
};

}  // namespace fuseflow
