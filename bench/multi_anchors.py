#!/usr/bin/env python3
"""torch.distributed anchors of the bench's multi group (bench/multi.cu): one process per
GPU (mp.spawn, NCCL backend), for each world size given. Cases, as in issue 23's table:
  weak_sum     torch.sum of 2^28 f32 per GPU + all_reduce of the scalar
  strong_sum   torch.sum of 2^30 / w f32 per GPU + all_reduce
  strong_scan  local cumsum of 2^28 / w + all_gather of the totals + the offset added
  combine      all_reduce of one float
Each case: warm-up, then per call a barrier, the call (synchronised), the time; the median
per rank, and the slowest rank's median is printed: "row <case> <world> <us>".
NVLink multicast stays off: NCCL_NVLS_ENABLE=0 (and the torch/NVSHMEM switches) are set
before torch is imported, here and in every spawned process."""
import argparse
import os
import sys
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:  # the bench prints this line as a note
    print(f"torch not available ({e}): no anchors")
    sys.exit(0)


def timed(fn, warmup, reps, device):
    t = []
    for i in range(warmup + reps):
        dist.barrier(device_ids=[device])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if i >= warmup:
            t.append((time.perf_counter() - t0) * 1e6)
    t.sort()
    return t[len(t) // 2]


def worker(rank, world, scale_down, reps, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    dev = torch.device("cuda", rank)
    results = {}

    def sum_case(n_local):
        x = torch.rand(n_local, device=dev, dtype=torch.float32) - 0.5

        def call():
            s = x.sum()
            dist.all_reduce(s)
            s.item()

        return timed(call, 3, reps, rank)

    results["weak_sum"] = sum_case((1 << 28) // scale_down)
    results["strong_sum"] = sum_case((1 << 30) // scale_down // world)

    n_local = (1 << 28) // scale_down // world
    x = torch.rand(n_local, device=dev, dtype=torch.float32) - 0.5
    totals = torch.empty(world, device=dev, dtype=torch.float32)

    def scan():
        y = torch.cumsum(x, 0)
        dist.all_gather_into_tensor(totals, y[-1:].contiguous())
        offset = totals[:rank].sum()
        y += offset

    results["strong_scan"] = timed(scan, 3, reps, rank)

    one = torch.ones(1, device=dev, dtype=torch.float32)

    def combine():
        dist.all_reduce(one)

    results["combine"] = timed(combine, 50, max(reps, 200), rank)

    # The slowest rank's median.
    names = sorted(results)
    t = torch.tensor([results[k] for k in names], device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        queue.put({k: float(v) for k, v in zip(names, t.tolist())})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", default="1")
    ap.add_argument("--scale-down", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    gpus = torch.cuda.device_count()
    print(f"torch {torch.__version__}, NCCL {torch.cuda.nccl.version()}, {gpus} GPU(s)")
    ctx = mp.get_context("spawn")
    for i, w in enumerate(int(s) for s in a.worlds.split(",")):
        if w > gpus:
            continue
        queue = ctx.SimpleQueue()
        mp.spawn(worker, args=(w, a.scale_down, a.reps, 29500 + 7 * i + os.getpid() % 1000, queue), nprocs=w,
                 join=True)
        for name, us in queue.get().items():
            print(f"row {name} {w} {us:.2f}", flush=True)


if __name__ == "__main__":
    main()
