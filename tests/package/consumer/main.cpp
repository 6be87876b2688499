// Uses the installed fuseflow: builds a program, prints it and the name of the kernel
// it becomes. Needs no GPU.
#include <cstdio>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;

int main() {
  auto x = ff::input<float>("x");
  auto y = ff::input<float>("y");
  ff::Program program = ff::reduce(x * y, ff::plus);
  std::printf("%s", ff::to_string(program).c_str());
  std::printf("kernel: %s\n", ff::codegen::plan(program, ff::codegen::Target::preset("sm_90")).kernels.at(0).name.c_str());
  return 0;
}
