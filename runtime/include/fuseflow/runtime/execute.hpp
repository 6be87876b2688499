#pragma once
// Running programs: what inputs and parameters are bound to (Binding), and what comes
// back (Result: a scalar on the host, or an array that stays on the device).
#include <cuda.h>

#include <array>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuseflow/frontend/program.hpp"
#include "fuseflow/runtime/device_array.hpp"

namespace fuseflow {

// An input bound to device memory (a DeviceArray or a device_span over the user's own
// memory), or a parameter bound to a host scalar. An array result of the program may be
// bound too: the run writes it into that memory instead of allocating it, and that memory
// may be exactly an input's (same address, element size and length) where the program
// can write in place (a scan over its own input):
//   auto s = ff::scan(x, ff::plus);
//   rt.run(s, {{x, xs}, {s, xs}});   // xs now holds its prefix sums
class Binding {
 public:
  template <class T>
  Binding(const DeviceArray<T>& array) : Binding(array.bytes(), type_of<T>()) {}  // NOLINT
  template <class T>
  Binding(const device_span<T>& span) : Binding(span.bytes(), type_of<T>()) {}  // NOLINT
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Binding(T scalar) : is_array_(false), scalar_(Value(scalar)) {}  // NOLINT
  Binding(const Value& scalar) : is_array_(false), scalar_(scalar) {}  // NOLINT
  Binding(DeviceBytes bytes, Type type) : is_array_(true), bytes_(bytes), type_(std::move(type)) {}

  bool is_array() const { return is_array_; }
  const DeviceBytes& bytes() const { return bytes_; }
  const Type& type() const { return is_array_ ? type_ : scalar_.type(); }
  const Value& scalar() const { return scalar_; }

 private:
  bool is_array_;
  DeviceBytes bytes_{};
  Type type_;
  Value scalar_;
};

using Bindings = std::vector<std::pair<Expr, Binding>>;

// Checks bindings against a program as Runtime::run does before it launches anything:
// every input bound once to an array of its element type, every parameter once to a
// scalar, array results at most once to an array of their type and length, overlapping
// no other result and an input only exactly and only where it is written in place,
// nothing else bound, and inputs that must have one length (a map's operands) having it. Touches no device, so it works without a GPU. Throws GraphError naming
// what is wrong, e.g. "fuseflow: run: input 'y' is not bound". The plan checked against is
// sm_90's (no device is asked); Runtime::check_bindings checks against its device's.
void check_bindings(const Program& program, const Bindings& bindings);

// One result of a program. A reduction's value comes back to the host:
//   float s = rt.run(ff::reduce(x, ff::plus), {{x, xs}});
// An array stays on the device until asked for:
//   ff::DeviceArray<float> y = rt.run(x * 2.0f, {{x, xs}});
// A filter's result (stream compaction) has a length only the device knows: the kernel
// writes the survivor count into device memory, and size(), download() and the size of
// the DeviceArray moved out of it read that count (one small copy) when first asked, never
// before; run_async does not wait for it.
//   ff::Result kept = rt.run(ff::filter(x, x > 0.0f), {{x, xs}});
//   std::size_t k = kept.size();                        // reads the count
//   ff::DeviceArray<float> pos = std::move(kept);      // k elements
class Result {
 public:
  static Result scalar(Value v);
  static Result array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t);
  // An array whose element count a kernel writes at `count.at` (inside the allocation at ptr).
  static Result counted_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, DeviceCount count, Type t);
  // A scalar still on the device (run_async): read on first use of value(). `owner` keeps
  // the memory at ptr alive until then (the prepared program, should its cache evict it).
  // `live` (a run captured into a CUDA graph): every value() reads the device again, so
  // after each launch of the graph it gives that launch's result.
  static Result pending_scalar(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, Type t,
                               std::shared_ptr<const void> owner = nullptr, bool live = false);
  // An array written into memory the caller bound it to: a view, never freed or moved out.
  static Result caller_array(std::shared_ptr<detail::DeviceContext> ctx, CUdeviceptr ptr, std::size_t n, Type t);
  Result(Result&&) noexcept;
  Result& operator=(Result&&) noexcept;
  ~Result();

  bool is_scalar() const { return !is_array_; }
  const Type& type() const;
  // A reduction's value (GraphError for an array result).
  const Value& value() const;
  // The array's element count (GraphError for a scalar result); for a filter's result,
  // read from the device on the first call.
  std::size_t size() const;
  // What is still on the device, for code that moves it on without the host (the sharded
  // runtime's combine): run_async's scalar (0 once read, or when the value is on the
  // host), and a filter's survivor count, an unsigned long long (at == 0 once read).
  CUdeviceptr device_scalar() const noexcept { return pending_; }
  DeviceCount device_count() const noexcept { return count_; }
  CUdeviceptr device_array() const noexcept { return is_array_ && !moved_out_ ? ptr_ : 0; }  // an array's memory

  template <class T>
  T as() const {
    return value().template as<T>();
  }
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> || detail::IsTuple<T>::value>>
  operator T() const {  // NOLINT: float s = rt.run(...)
    return as<T>();
  }
  operator Value() const { return value(); }  // NOLINT

  // Moves the array out as a typed DeviceArray; T must be the element type. Not for an
  // array in the caller's memory (a bound result), which the caller already has.
  template <class T>
  DeviceArray<T> array() {
    auto [ctx, ptr, n, count] = release(type_of<T>());
    if (count.at != 0) return DeviceArray<T>(std::move(ctx), ptr, count, adopt_memory);
    return DeviceArray<T>(std::move(ctx), ptr, n, adopt_memory);
  }
  template <class T>
  operator DeviceArray<T>() && {  // NOLINT: ff::DeviceArray<float> y = rt.run(...)
    return array<T>();
  }
  // Copies the array to the host; T must be the element type.
  template <class T>
  std::vector<T> download() const {
    std::vector<T> out(size());
    copy_out(type_of<T>(), out.data());
    return out;
  }

 private:
  Result() = default;
  struct Released {
    std::shared_ptr<detail::DeviceContext> ctx;
    CUdeviceptr ptr;
    std::size_t n;
    DeviceCount count;  // at != 0: the count is still on the device, n is the capacity
  };
  Released release(const Type& want);
  void copy_out(const Type& want, void* host) const;

  mutable Value value_;
  mutable CUdeviceptr pending_ = 0;  // device address of a scalar not read back yet
  bool live_ = false;                // pending_ is read again by every value()
  std::shared_ptr<detail::DeviceContext> ctx_;
  bool is_array_ = false;
  CUdeviceptr ptr_ = 0;
  bool owns_ = false;
  bool moved_out_ = false;
  bool caller_memory_ = false;
  mutable std::size_t size_ = 0;  // the capacity until a pending count is read
  mutable DeviceCount count_;     // a count not read from the device yet (at != 0)
  Type type_;
  mutable std::shared_ptr<const void> owner_;  // what holds pending_'s memory
};

template <std::size_t I>
Value get(const Result& r) {
  return r.value()[I];
}

}  // namespace fuseflow
