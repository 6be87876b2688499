#pragma once
// What the sharded-runtime tests share: the worlds to test and how to make them (in
// process on the CPU emulator, or NCCL over the GPUs present: FUSEFLOW_MULTI_BACKEND=nccl),
// random inputs, and the CPU reference over the whole (unsharded) input.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <fuseflow/fuseflow.hpp>
#include <fuseflow/runtime/sharded.hpp>

#include "fuseflow/runtime/driver_api.hpp"

namespace fuseflow::multi_test {

inline bool use_nccl() {
  const char* b = std::getenv("FUSEFLOW_MULTI_BACKEND");
  return b && std::string(b) == "nccl";
}
// FUSEFLOW_MULTI_BACKEND=grouped: in process, one thread issuing every rank's work (the
// path NCCL takes in one process), instead of a thread per rank.
inline bool grouped() {
  const char* b = std::getenv("FUSEFLOW_MULTI_BACKEND");
  return b && std::string(b) == "grouped";
}
inline bool emulated() {
  const char* lib = std::getenv("FUSEFLOW_CUDA_LIBRARY");
  return lib && *lib;
}

inline int device_count() {
  int n = 0;
  if (detail::driver().cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

// The world sizes to test: in process 1, 2, 3, 4 and 8 ranks; over NCCL every count of
// GPUs from 1 to all of them.
inline std::vector<int> worlds() {
  if (!use_nccl()) return {1, 2, 3, 4, 8};
  std::vector<int> out;
  for (int w = 1; w <= device_count(); ++w) out.push_back(w);
  return out;
}

inline RuntimeOptions poisoned() {
  RuntimeOptions o;
  o.poison = true;
  return o;
}

// One ShardedRuntime per world size, kept for the process (a Runtime compiles each program
// once).
inline ShardedRuntime& world(int w) {
  static std::vector<std::unique_ptr<ShardedRuntime>> made(16);
  auto& slot = made.at(static_cast<std::size_t>(w));
  if (!slot) {
    if (use_nccl()) {
      std::vector<int> devices;
      for (int d = 0; d < w; ++d) devices.push_back(d);
      slot = std::make_unique<ShardedRuntime>(ShardedRuntime::nccl_all(devices, poisoned()));
    } else {
      slot = std::make_unique<ShardedRuntime>(
          ShardedRuntime::in_process(w, std::vector<int>(w, 0), poisoned(), grouped()));
    }
  }
  return *slot;
}

// Element counts: empty, fewer than the ranks, uneven, and larger ones on GPUs.
inline std::vector<std::size_t> sizes() {
  std::vector<std::size_t> out = {0, 1, 3, 7, 1000, 40009};
  if (!emulated()) {
    out.push_back((std::size_t{1} << 20) + 7);
    out.push_back(std::size_t{1} << 24);
  }
  return out;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}
inline std::vector<int> random_ints(std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}
inline std::vector<float> random_floats(std::size_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

// The CPU reference of `program` over the whole input.
inline std::vector<HostResult> reference(const Program& program, const HostBindings& b) { return evaluate(program, b); }

}  // namespace fuseflow::multi_test
