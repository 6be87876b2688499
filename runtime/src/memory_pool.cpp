#include "fuseflow/runtime/memory_pool.hpp"

#include <algorithm>

namespace fuseflow {

ScratchPool::ScratchPool(std::shared_ptr<detail::DeviceContext> context)
    : context_(std::move(context)) {}

ScratchPool::~ScratchPool() { context_->free(ptr_); }

CUdeviceptr ScratchPool::get(std::size_t bytes) {
  if (bytes <= capacity_) return ptr_;
  // Queued kernels may still read or write the old buffer.
  context_->synchronize();
  // Grow geometrically so a sequence of slightly larger requests reallocates rarely.
  const std::size_t grown = std::max(bytes, 2 * capacity_);
  const std::size_t rounded = (std::max<std::size_t>(grown, 4096) + 255) / 256 * 256;
  context_->free(ptr_);
  ptr_ = 0;
  capacity_ = 0;
  ptr_ = context_->allocate(rounded);
  capacity_ = rounded;
  return ptr_;
}

}  // namespace fuseflow
