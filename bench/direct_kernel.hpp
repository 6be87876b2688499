#pragma once
// DirectKernel: a program's one generated kernel launched without the executor, into
// caller-owned outputs and scratch (the filter's and the scans' "kernel" rows: what the
// kernel costs without the per-run allocation). It is the benchmark's one user of the
// codegen plan and the runtime's low-level load_kernel/launch: when those interfaces
// move, this file is what changes.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuseflow/runtime/low_level.hpp"
#include "harness.hpp"

namespace ffbench {

// The program's one kernel, loaded from its generated source, launched on the runtime's
// stream with caller-owned inputs, output and scratch.
// Tile status is at most 4 + 2 * 8 bytes per tile here (flags, aggregates and prefixes of
// a pair); 32 per tile is room enough.
struct DirectKernel {
  ff::KernelHandle handle;
  ff::codegen::KernelSpec kernel;
  std::unique_ptr<DeviceBuffer> counters;  // the tile counter (Ticket 1), left zeroed by the kernel; a count
  std::unique_ptr<DeviceBuffer> status;    // look-back status, never cleared: one epoch per launch
  unsigned epoch = 0;
  std::size_t planned_n = 0;
  int grid = 0;

  DirectKernel(ff::Runtime& rt, const ff::Program& p, std::size_t n) {
    ff::codegen::Plan plan = ff::codegen::plan(p, ff::codegen::Target::preset("sm_90"));
    // The kernel run picks for n (a plain scan has a second one for large n: the pipelined
    // scan on sm_90), with its grid and dynamic shared memory.
    const ff::codegen::Schedule schedule = plan.schedule((std::int64_t)n);
    if (schedule.launches.size() != 1) throw std::runtime_error("direct kernel: expected one launch");
    kernel = plan.kernels.at((std::size_t)schedule.launches[0].kernel);
    planned_n = n;
    grid = schedule.launches[0].grid;  // one block per tile, or per SM for the pipelined scan
    counters = std::make_unique<DeviceBuffer>(4 * sizeof(unsigned));
    status = std::make_unique<DeviceBuffer>(32 * tiles(n));
    CK(cudaMemset(counters->ptr, 0, 4 * sizeof(unsigned)));
    CK(cudaMemset(status->ptr, 0, 32 * tiles(n)));
    std::vector<ff::Header> headers;
    for (const auto& h : ff::codegen::device_headers()) headers.push_back({h.name, h.text});
    handle = ff::low_level::load_kernel(rt, kernel.source, kernel.name, ff::low_level::compile_options(rt), headers);
  }

  // A compaction's survivor count (its one output's OutputCount argument).
  unsigned long long* count() const { return reinterpret_cast<unsigned long long*>(counters->as<unsigned>() + 2); }

  std::size_t tiles(std::size_t n) const {
    return (n + kernel.items_per_block_step - 1) / kernel.items_per_block_step;
  }

  void launch(ff::Runtime& rt, cudaStream_t stream, const std::vector<const void*>& inputs, void* output,
              std::size_t n) {
    if (++epoch > ff::codegen::kMaxLookbackEpoch) {
      CK(cudaMemsetAsync(status->ptr, 0, 32 * tiles(n), stream));
      epoch = 1;
    }
    std::vector<CUdeviceptr> ptrs;
    long long length = (long long)n;
    ptrs.reserve(kernel.args.size());
    std::vector<void*> args;
    for (const auto& a : kernel.args) {
      switch (a.kind) {
        case ff::codegen::Arg::Kind::Input: ptrs.push_back((CUdeviceptr)inputs.at((std::size_t)a.index)); break;
        case ff::codegen::Arg::Kind::Output: ptrs.push_back((CUdeviceptr)output); break;
        case ff::codegen::Arg::Kind::Ticket:
          ptrs.push_back((CUdeviceptr)(counters->as<unsigned>() + a.index));
          break;
        case ff::codegen::Arg::Kind::TileStatus: ptrs.push_back((CUdeviceptr)status->ptr); break;
        case ff::codegen::Arg::Kind::OutputCount: ptrs.push_back((CUdeviceptr)count()); break;
        case ff::codegen::Arg::Kind::Length:
        case ff::codegen::Arg::Kind::Epoch: ptrs.push_back(0); break;
        default: throw std::runtime_error("direct kernel: unexpected kernel argument " + a.name);
      }
    }
    for (std::size_t i = 0; i < kernel.args.size(); ++i) {
      const auto kind = kernel.args[i].kind;
      args.push_back(kind == ff::codegen::Arg::Kind::Length  ? (void*)&length
                     : kind == ff::codegen::Arg::Kind::Epoch ? (void*)&epoch
                                                             : (void*)&ptrs[i]);
    }
    if (n != planned_n) throw std::runtime_error("direct kernel: launched for another n than planned");
    ff::low_level::launch(rt, handle, ff::Dim3{(unsigned)grid}, ff::Dim3{(unsigned)kernel.block}, kernel.shared_bytes, args.data());
  }
};

}  // namespace ffbench
