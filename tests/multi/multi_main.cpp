// main() of the sharded-runtime tests: NCCL multicast off before anything, then skip
// (exit 77) without a driver or GPU, and over NCCL with fewer than 2 GPUs.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "multi_test_support.hpp"

int main(int argc, char** argv) {
  fuseflow::disable_nvlink_multicast();
  if (!fuseflow::gpu_available()) {
    std::puts("no GPU (and no emulator): skipped");
    return 77;
  }
  if (fuseflow::multi_test::use_nccl() && fuseflow::multi_test::device_count() < 2) {
    std::printf("%d GPU(s): the multigpu tests need 2 or more: skipped\n", fuseflow::multi_test::device_count());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
