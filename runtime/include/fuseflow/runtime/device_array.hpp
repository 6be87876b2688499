#pragma once
// Device memory as values: DeviceArray<T> owns an allocation (RAII, move-only);
// device_span<T> views memory fuseflow did not allocate; DeviceBytes is the type-erased
// form the executor binds to kernel parameters.
//
// Arrays of a length only the device knows: a filter's result (stream compaction) has as
// many elements as survive, counted by the kernel that writes them. Its buffer has room for
// every input element, and the kernel writes the count into device memory next to it; the
// DeviceArray reads it (one small copy, waiting for the stream to get there) the first time
// its size is asked for: size(), download(), bytes() (binding it to another program), and
// not before, so rt.run_async returns without waiting.
#include <cuda.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuseflow/frontend/error.hpp"
#include "fuseflow/runtime/device_context.hpp"

namespace fuseflow {

struct DeviceBytes {
  CUdeviceptr ptr = 0;
  std::size_t count = 0;  // elements
  std::size_t element_size = 0;
  std::size_t size_bytes() const noexcept { return count * element_size; }
};

// Tag: a DeviceArray takes over memory already allocated on its context.
struct AdoptMemory {};
inline constexpr AdoptMemory adopt_memory{};

// Where a kernel writes an array's element count (an unsigned long long in device memory),
// and how many elements the array has room for.
struct DeviceCount {
  CUdeviceptr at = 0;
  std::size_t capacity = 0;
};

namespace detail {
// The element count a kernel wrote at `count.at`, read after the work queued on the
// context's stream. Throws Error when it exceeds the capacity (no kernel wrote it).
std::size_t read_device_count(DeviceContext& context, const DeviceCount& count);
}  // namespace detail

template <class T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray<T> needs a trivially copyable T");

 public:
  DeviceArray() = default;
  DeviceArray(std::shared_ptr<detail::DeviceContext> context, std::size_t n)
      : context_(std::move(context)), size_(n), ptr_(context_->allocate(n * sizeof(T))) {}
  DeviceArray(std::shared_ptr<detail::DeviceContext> context, CUdeviceptr ptr, std::size_t n, AdoptMemory)
      : context_(std::move(context)), size_(n), ptr_(ptr) {}
  // Takes over `ptr`, whose element count a kernel writes at `count.at` (inside the same
  // allocation): read on the first size().
  DeviceArray(std::shared_ptr<detail::DeviceContext> context, CUdeviceptr ptr, DeviceCount count, AdoptMemory)
      : context_(std::move(context)), size_(count.capacity), ptr_(ptr), count_(count) {}
  ~DeviceArray() { reset(); }

  DeviceArray(DeviceArray&& other) noexcept
      : context_(std::move(other.context_)),
        size_(std::exchange(other.size_, 0)),
        ptr_(std::exchange(other.ptr_, 0)),
        count_(std::exchange(other.count_, {})) {}
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      reset();
      context_ = std::move(other.context_);
      size_ = std::exchange(other.size_, 0);
      ptr_ = std::exchange(other.ptr_, 0);
      count_ = std::exchange(other.count_, {});
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // The element count; for a filter's result, read from the device on the first call.
  std::size_t size() const {
    if (count_.at != 0) {
      size_ = detail::read_device_count(*context_, count_);
      count_ = {};
    }
    return size_;
  }
  bool empty() const { return size() == 0; }
  std::size_t size_bytes() const { return size() * sizeof(T); }
  CUdeviceptr data() const noexcept { return ptr_; }
  DeviceBytes bytes() const { return {ptr_, size(), sizeof(T)}; }

  std::vector<T> download() const {
    std::vector<T> out(size());
    download(std::span<T>(out));
    return out;
  }
  void download(std::span<T> out) const {
    check_length(out.size(), "download");
    if (size_ != 0) context_->copy_to_host(out.data(), ptr_, size_bytes());
  }
  // Overwrites the whole array from the host.
  void upload(std::span<const T> in) {
    check_length(in.size(), "upload");
    if (size_ != 0) context_->copy_to_device(ptr_, in.data(), size_bytes());
  }

 private:
  void reset() noexcept {
    if (ptr_ != 0) context_->free(ptr_);
    ptr_ = 0;
    size_ = 0;
    count_ = {};
    context_.reset();
  }
  void check_length(std::size_t n, const char* what) const {
    if (n != size())
      throw GraphError("DeviceArray::" + std::string(what) + ": host buffer has " +
                       std::to_string(n) + " elements but the device array has " +
                       std::to_string(size_));
  }

  std::shared_ptr<detail::DeviceContext> context_;
  mutable std::size_t size_ = 0;  // the capacity until a pending count is read
  CUdeviceptr ptr_ = 0;
  mutable DeviceCount count_;     // a count not read from the device yet (at != 0)
};

// A non-owning view of n elements of T at a device address fuseflow did not allocate
// (cuMemAlloc, cudaMalloc, another library's buffer). The memory must stay valid while
// fuseflow uses it.
template <class T>
class device_span {
  static_assert(std::is_trivially_copyable_v<T>, "device_span<T> needs a trivially copyable T");

 public:
  device_span(CUdeviceptr ptr, std::size_t n) : ptr_(ptr), size_(n) {
    if (ptr == 0 && n != 0)
      throw GraphError("device_span: null device pointer with length " + std::to_string(n) +
                       "; pass a valid device address, or length 0");
  }
  device_span(T* ptr, std::size_t n) : device_span(reinterpret_cast<CUdeviceptr>(ptr), n) {}
  device_span(const DeviceArray<T>& array)  // NOLINT: implicit by design
      : ptr_(array.data()), size_(array.size()) {}

  CUdeviceptr data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  DeviceBytes bytes() const noexcept { return {ptr_, size_, sizeof(T)}; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

}  // namespace fuseflow
