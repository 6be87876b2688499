#pragma once
// Device scratch for kernels' temporary state (block partials, tickets, look-back
// flags), reused across runs so a steady-state run allocates nothing.
#include <cuda.h>

#include <cstddef>
#include <memory>

#include "fuseflow/runtime/device_context.hpp"

namespace fuseflow {

class ScratchPool {
 public:
  explicit ScratchPool(std::shared_ptr<detail::DeviceContext> context);
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // At least `bytes` of device memory (256-byte aligned), valid until the next call.
  // Growing waits for the stream first, because queued kernels may still use the old
  // buffer. Contents are unspecified.
  CUdeviceptr get(std::size_t bytes);
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::shared_ptr<detail::DeviceContext> context_;
  CUdeviceptr ptr_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace fuseflow
