#pragma once
// Combining for the CPU reference: a typed monoid applied to packed elements, left to
// right. Built-in monoids over scalars take a typed loop; every other monoid runs its
// compiled combine function.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "reference_code.hpp"

namespace fuseflow::cpu_reference {

// acc = acc . xs[0] ... xs[count-1]; with `out`, also writes each prefix (inclusive: after
// the element, exclusive: before it).
using RunFn = void (*)(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive);

// The typed loop for a built-in monoid over a scalar, or nullptr (custom monoids, tuples).
RunFn builtin_run_for(const Monoid& m);

// The compiled combine function of a typed monoid (operands a and b in the first slots).
Code compile_combine(const Monoid& m);

// A typed monoid applied to packed elements, left to right.
class Combiner {
 public:
  explicit Combiner(const Monoid& m)
      : type_(m.type()), identity_(type_.size()), combine_(compile_combine(m)), builtin_(builtin_run_for(m)) {
    m.identity().to_bytes(identity_.data());
  }

  std::size_t size() const { return type_.size(); }
  const Type& type() const { return type_; }
  std::vector<std::byte> identity() const { return identity_; }

  // acc = acc . xs[0] . ... . xs[count-1]
  void fold(std::byte* acc, const std::byte* xs, std::size_t count) const { run(acc, xs, count, nullptr, true); }
  // As fold, writing each prefix to out: inclusive (acc after the element) or exclusive (before).
  void scan(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, ScanKind kind) const {
    run(acc, xs, count, out, kind == ScanKind::Inclusive);
  }

 private:
  void run(std::byte* acc, const std::byte* xs, std::size_t count, std::byte* out, bool inclusive) const {
    if (builtin_) {
      builtin_(acc, xs, count, out, inclusive);
      return;
    }
    // Reused across calls: segmented ops call this once per (often tiny) segment.
    thread_local std::vector<Slot> slots;
    slots = combine_.initial();
    Range a = combine_.operand(0), b = combine_.operand(1), r = combine_.result();
    std::size_t size = type_.size();
    combine_.load(slots.data(), a, acc);
    for (std::size_t j = 0; j < count; ++j) {
      combine_.load(slots.data(), b, xs + j * size);
      if (out && !inclusive) combine_.store(slots.data(), a, out + j * size);
      combine_.run(slots.data(), 0);
      if (r.base != a.base) std::copy_n(slots.begin() + r.base, r.width, slots.begin() + a.base);
      if (out && inclusive) combine_.store(slots.data(), a, out + j * size);
    }
    combine_.store(slots.data(), a, acc);
  }

  Type type_;
  std::vector<std::byte> identity_;
  Code combine_;
  RunFn builtin_;
};

}  // namespace fuseflow::cpu_reference
