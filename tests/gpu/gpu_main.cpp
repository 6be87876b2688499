// main() of every GPU test executable: skip (exit 77, CTest's SKIP_RETURN_CODE) when
// there is no driver or no GPU, otherwise run doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "fuseflow/runtime/device.hpp"

int main(int argc, char** argv) {
  if (!fuseflow::gpu_available()) {
    std::puts("no GPU: skipped");
    return 77;
  }
  const fuseflow::DeviceProperties device = fuseflow::read_device_properties(0);
  std::printf("running on %s (%s, %d SMs)\n", device.name.c_str(), device.arch().c_str(),
              device.sm_count);
  doctest::Context context(argc, argv);
  return context.run();
}
