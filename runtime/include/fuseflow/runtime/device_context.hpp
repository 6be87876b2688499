#pragma once
// The device state that a Runtime and every DeviceArray it made share: the retained
// primary context, the stream, and the sticky-error record. Shared ownership lets an
// array outlive its Runtime safely (the context is released by whoever goes last).
#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <string>

namespace fuseflow::detail {

class DeviceContext {
 public:
  // Retains the device's primary context; uses `user_stream` if given, else creates a
  // stream that it owns.
  DeviceContext(int ordinal, CUstream user_stream);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  CUdevice device() const noexcept { return device_; }
  CUcontext context() const noexcept { return context_; }
  CUstream stream() const noexcept { return stream_; }

  // Throws CudaError for any result but success. Errors that leave the context unusable
  // (illegal address, launch failure, ...) are remembered: afterwards ensure_usable()
  // throws for every call, naming the first such error.
  void check(CUresult result, const char* call);
  void ensure_usable() const;

  // Makes this context current on the calling thread for a scope, restoring the
  // previous one; a no-op when it already is (the common case). Throws CudaError when the
  // context cannot be made current; the std::nothrow form (for destructors) goes on.
  class Scope {
   public:
    explicit Scope(const DeviceContext& context);
    Scope(const DeviceContext& context, std::nothrow_t) noexcept;
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool pushed_ = false;
  };

  CUdeviceptr allocate(std::size_t bytes);  // 0 for 0 bytes; OOM says asked vs free
  void free(CUdeviceptr ptr) noexcept;
  // Page-locked host memory (a run's results land there in one asynchronous copy).
  // Page-locked host memory; `mapped`: also mapped into the device's address space (with
  // unified addressing, which every 64-bit platform CUDA supports, at the same address).
  void* allocate_host(std::size_t bytes, bool mapped = false);
  void free_host(void* ptr) noexcept;
  // Whether the stream is being captured into a CUDA graph now.
  bool capturing();
  // Both copies are ordered on the stream and complete before returning.
  void copy_to_device(CUdeviceptr dst, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, CUdeviceptr src, std::size_t bytes);
  void synchronize();

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  bool owns_stream_ = false;
  std::atomic<bool> unusable_{false};  // checked on every call; the mutex only after
  mutable std::mutex sticky_mutex_;
  std::string sticky_error_;
};

}  // namespace fuseflow::detail
