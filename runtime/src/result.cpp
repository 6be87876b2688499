// Result: what a run gives back. A scalar on the host (or, after run_async, still on the
// device until read), or an array on the device that the caller may move out, download,
// or (for a count only the device knows) size on demand.
#include <cstring>

#include "fuseflow/runtime/execute.hpp"

namespace fuseflow {

// ---- Result -------------------------------------------------------------------------

Result Result::scalar(Value v) {
  Result r;
  r.value_ = std::move(v);
  r.type_ = r.value_.type();
  return r;
}

Result Result::array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t) {
  Result r;
  r.is_array_ = true;
  r.ctx_ = std::move(ctx);
  r.ptr_ = ptr;
  r.owns_ = true;
  r.size_ = n;
  r.type_ = std::move(t);
  return r;
}

Result Result::counted_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, DeviceCount count, Type t) {
  Result r = array(std::move(ctx), ptr, count.capacity, std::move(t));
  // With no room there is nothing to count (and no kernel may have run: reduce_by_key of
  // no elements launches none).
  if (count.capacity > 0) r.count_ = count;
  return r;
}

Result Result::caller_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t) {
  Result r = array(std::move(ctx), ptr, n, std::move(t));
  r.owns_ = false;
  r.caller_memory_ = true;
  return r;
}

Result Result::pending_scalar(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, Type t,
                              std::shared_ptr<const void> owner, bool live) {
  Result r;
  r.live_ = live;
  r.ctx_ = std::move(ctx);
  r.owner_ = std::move(owner);
  r.pending_ = ptr;
  r.type_ = std::move(t);
  return r;
}

Result::Result(Result&& o) noexcept
    : value_(std::move(o.value_)), pending_(std::exchange(o.pending_, 0)), live_(o.live_), ctx_(std::move(o.ctx_)), is_array_(o.is_array_), ptr_(std::exchange(o.ptr_, 0)),
      owns_(std::exchange(o.owns_, false)), moved_out_(o.moved_out_), caller_memory_(o.caller_memory_), size_(o.size_),
      count_(std::exchange(o.count_, {})), type_(std::move(o.type_)), owner_(std::move(o.owner_)) {}

Result& Result::operator=(Result&& o) noexcept {
  if (this != &o) {
    if (owns_ && ptr_) ctx_->free(ptr_);
    value_ = std::move(o.value_);
    pending_ = std::exchange(o.pending_, 0);
    live_ = o.live_;
    ctx_ = std::move(o.ctx_);
    is_array_ = o.is_array_;
    ptr_ = std::exchange(o.ptr_, 0);
    owns_ = std::exchange(o.owns_, false);
    moved_out_ = o.moved_out_;
    caller_memory_ = o.caller_memory_;
    size_ = o.size_;
    count_ = std::exchange(o.count_, {});
    type_ = std::move(o.type_);
    owner_ = std::move(o.owner_);
  }
  return *this;
}

Result::~Result() {
  if (owns_ && ptr_) ctx_->free(ptr_);
}

const Type& Result::type() const { return type_; }

const Value& Result::value() const {
  if (is_array_) throw GraphError("result: this result is an array of " + type_.name() + " on the device, not a scalar; use .array<T>() or .download<T>()");
  if (pending_) {
    std::vector<unsigned char> bytes(type_.size());
    ctx_->copy_to_host(bytes.data(), pending_, bytes.size());
    value_ = Value::from_bytes(type_, bytes.data());
    if (!live_) {
      pending_ = 0;
      owner_.reset();
    }
  }
  return value_;
}

std::size_t Result::size() const {
  if (!is_array_) throw GraphError("result: this result is a scalar " + type_.name() + ", not an array");
  if (moved_out_) throw GraphError("result: the array was already moved out");
  if (count_.at != 0) {
    size_ = detail::read_device_count(*ctx_, count_);
    count_ = {};
  }
  return size_;
}

Result::Released Result::release(const Type& want) {
  if (!is_array_) throw GraphError("result: this result is a scalar " + type_.name() + ", not an array");
  if (want != type_) throw GraphError("result: the array holds " + type_.name() + ", asked for " + want.name());
  if (caller_memory_)
    throw GraphError("result: the array was written into the memory it was bound to, which the caller owns; use that "
                     "memory (or download<T>())");
  if (moved_out_) throw GraphError("result: the array was already moved out");
  owns_ = false;
  moved_out_ = true;
  return {ctx_, std::exchange(ptr_, 0), size_, std::exchange(count_, {})};
}

void Result::copy_out(const Type& want, void* host) const {
  size();
  if (want != type_) throw GraphError("result: the array holds " + type_.name() + ", asked for " + want.name());
  if (size() != 0) ctx_->copy_to_host(host, ptr_, size_ * type_.size());
}

namespace detail {

std::size_t read_device_count(DeviceContext& context, const DeviceCount& count) {
  unsigned long long n = 0;
  context.copy_to_host(&n, count.at, sizeof n);
  if (n > count.capacity)
    throw Error("fuseflow: an array's element count on the device is " + std::to_string(n) + ", more than its " +
                std::to_string(count.capacity) + " elements of room: the kernel that counts it did not write it");
  return static_cast<std::size_t>(n);
}

}  // namespace detail

}  // namespace fuseflow
