// quickstart: the sum of squares of a million floats, with the map (x * x) fused into
// the reduction: one kernel, one pass over x.
//
// On a machine with a GPU it runs the program and checks the answer. Without one it
// prints the plan and the generated CUDA, compiles it with NVRTC for sm_90 (no GPU
// needed for that), and says that no GPU was found.
#include <cmath>
#include <cstdio>
#include <vector>

#include <fuseflow/fuseflow.hpp>

namespace ff = fuseflow;

int main() {
  // 1. Describe the computation with symbolic arrays.
  auto x = ff::input<float>("x");
  auto program = ff::reduce(x * x, ff::plus);

  std::vector<float> host(1 << 20);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::sin(0.001f * static_cast<float>(i));

  if (!ff::gpu_available()) {
    // 2a. No GPU: show what fuseflow would run, and compile it.
    std::printf("%s\n", ff::explain(program).c_str());
    std::string cuda = ff::cuda_source(program);
    std::printf("%s\n", cuda.c_str());
    ff::CompileOptions options;  // sm_90
    std::vector<ff::Header> headers;
    for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
    for (const auto& k : ff::codegen::plan(program, ff::codegen::Target::preset("sm_90")).kernels) {
      ff::CompiledKernel binary = ff::Compiler::compile(k.source, k.name, options, headers);
      std::printf("compiled %s for %s with NVRTC: %zu bytes of cubin\n", k.name.c_str(), options.arch.c_str(),
                  binary.image.size());
    }
    std::printf("no GPU found: the program was not run\n");
    return 0;
  }

  // 2b. A GPU: upload, run, read the scalar back.
  ff::Runtime rt;
  auto xs = rt.upload(host);
  float sum = rt.run(program, {{x, xs}});

  double want = 0;
  for (float v : host) want += static_cast<double>(v) * v;
  std::printf("sum of squares of %zu floats: %.6f (f64 reference %.6f)\n", host.size(), sum, want);
  return std::fabs(sum - want) <= 1e-4 * want ? 0 : 1;
}
