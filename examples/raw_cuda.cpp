// raw_cuda: a CUDA expression pasted into a fused map. ff::cuda_expr<T>(text, args...)
// is the escape hatch for what the DSL lacks: the text goes into the generated kernel
// with $0, $1 ... replaced by the arguments, and its result has type T. Here __popc
// counts the set bits of each 32-bit word of a bitmap, fused into the sum.
//
// A mistake in the snippet is found by NVRTC, at the first run (or compile). The
// ff::CompileError it raises carries NVRTC's log and the kernel's numbered lines around
// the error, so the culprit is easy to see; the second half shows one.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "example_support.hpp"

namespace ff = fuseflow;

namespace {
void report(const ff::CompileError& e) {
  std::printf("\nthe broken snippet raises ff::CompileError (kernel %s):\n%s\n", e.kernel().c_str(), e.what());
}
}  // namespace

int main() {
  auto words = ff::input<std::uint32_t>("words");
  auto program = ff::reduce(ff::cuda_expr<int>("__popc($0)", words), ff::plus);
  // The same with a typo: CUDA has no __popcount.
  auto broken = ff::reduce(ff::cuda_expr<int>("__popcount($0)", words), ff::plus);

  if (!ff::gpu_available()) {
    example::no_gpu(program);
    try {
      example::compile(broken);
    } catch (const ff::CompileError& e) {
      report(e);
    }
    return 0;
  }

  const std::size_t n = 1 << 22;
  std::vector<std::uint32_t> host(n);
  std::uint32_t state = 2463534242u;
  for (auto& w : host) {  // xorshift32
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    w = state;
  }

  ff::Runtime rt;
  auto ws = rt.upload(host);
  int bits = rt.run(program, {{words, ws}});
  long long want = 0;
  for (std::uint32_t w : host) want += std::popcount(w);
  std::printf("set bits in %zu words: %d (host: %lld): %s\n", n, bits, want, bits == want ? "ok" : "WRONG");

  try {
    rt.run(broken, {{words, ws}});
    std::printf("the broken snippet compiled: WRONG\n");
    return 1;
  } catch (const ff::CompileError& e) {
    report(e);
  }
  return bits == want ? 0 : 1;
}
