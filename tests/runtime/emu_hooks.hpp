#pragma once
// The CPU emulator's test hooks (tests/emulator/cuda_emulator.cpp, "fault injection"):
// counts of live allocations, modules and context retains, and the k-th driver or NVRTC
// call made to fail. Found in the library FUSEFLOW_CUDA_LIBRARY names (the emu_ tests'
// environment), the same one fuseflow loads.
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace fuseflow::test {

class EmulatorHooks {
 public:
  EmulatorHooks() {
    const char* path = std::getenv("FUSEFLOW_CUDA_LIBRARY");
    library_ = path ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!library_ || !::dlsym(library_, "ff_emu_live_allocations"))
      throw std::runtime_error("this test runs on the CPU emulator only (FUSEFLOW_CUDA_LIBRARY must name it)");
  }
  ~EmulatorHooks() { ::dlclose(library_); }
  EmulatorHooks(const EmulatorHooks&) = delete;
  EmulatorHooks& operator=(const EmulatorHooks&) = delete;

  long live_allocations() const { return call<long (*)()>("ff_emu_live_allocations")(); }
  long live_modules() const { return call<long (*)()>("ff_emu_live_modules")(); }
  long live_programs() const { return call<long (*)()>("ff_emu_live_programs")(); }  // NVRTC's
  long live_contexts() const { return call<long (*)()>("ff_emu_live_contexts")(); }
  long driver_calls() const { return call<long (*)()>("ff_emu_driver_calls")(); }
  long nvrtc_calls() const { return call<long (*)()>("ff_emu_nvrtc_calls")(); }
  // k >= 1: the k-th call from now fails, once; 0: none. Restarts the count either way.
  void fail_driver_call(long k) const { call<void (*)(long)>("ff_emu_fail_driver_call")(k); }
  void fail_nvrtc_call(long k) const { call<void (*)(long)>("ff_emu_fail_nvrtc_call")(k); }
  // The driver calls made since the last fail_driver_call, by name, each followed by a space.
  std::string driver_call_log() const { return call<const char* (*)()>("ff_emu_driver_call_log")(); }
  // Makes cuStreamIsCapturing say every stream is being captured (or not).
  void set_capturing(bool on) const { call<void (*)(int)>("ff_emu_set_capturing")(on ? 1 : 0); }
  std::string last_fault() const { return call<const char* (*)()>("ff_emu_last_fault")(); }

 private:
  template <class F>
  F call(const char* name) const {
    void* f = ::dlsym(library_, name);
    if (!f) throw std::runtime_error(std::string("the emulator lacks ") + name);
    return reinterpret_cast<F>(f);
  }
  void* library_ = nullptr;
};

}  // namespace fuseflow::test
