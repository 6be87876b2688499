#pragma once
// Where a run's host time goes (low_level::run_phases): steady_clock stamps at the phase
// boundaries of Runtime::execute, summed per phase. Compiled in only when the library is
// built with FUSEFLOW_RUN_PHASES (CMake option of that name, for the benchmark's latency
// breakdown); otherwise every stamp is an empty inline function and a run reads no clock.
#include <array>
#include <chrono>
#include <cstdint>

#include "fuseflow/runtime/low_level.hpp"

namespace fuseflow::detail {

class PhaseClock {
 public:
  using Phase = low_level::RunPhase;
#ifdef FUSEFLOW_RUN_PHASES
  static constexpr bool kEnabled = true;
  void start() { last_ = std::chrono::steady_clock::now(); }
  // The time since the previous stamp goes to `phase`.
  void mark(Phase phase) {
    const auto now = std::chrono::steady_clock::now();
    totals_[static_cast<std::size_t>(phase)] += now - last_;
    last_ = now;
  }
  void finish() { ++runs_; }
#else
  static constexpr bool kEnabled = false;
  void start() {}
  void mark(Phase) {}
  void finish() {}
#endif
  low_level::RunPhases read() const {
    low_level::RunPhases out;
    out.enabled = kEnabled;
    out.runs = runs_;
    for (std::size_t i = 0; i < totals_.size(); ++i)
      out.microseconds[i] = std::chrono::duration<double, std::micro>(totals_[i]).count();
    return out;
  }
  void reset() {
    totals_ = {};
    runs_ = 0;
  }

 private:
  std::array<std::chrono::steady_clock::duration, low_level::kRunPhases> totals_{};
  std::uint64_t runs_ = 0;
  [[maybe_unused]] std::chrono::steady_clock::time_point last_{};
};

}  // namespace fuseflow::detail
