#!/usr/bin/env python3
"""The latency group's anchors: torch and CuPy on fuseflow-bench's small programs (sum,
fused (x*x + c).sum(), argmax, MSSP), host wall time per call, median of --reps calls
after a warm-up. fuseflow-bench (latency.cu) runs this and reads its lines:

    row <library> <program> <n> <run_us> <async_us>

run: the result on the host (.item(), float(), int()); async: the host time of the call
that leaves the result on the device (the device is synchronised after each such call,
outside the timed region). A library that cannot be imported, or a program it cannot
run, prints a note instead of rows.

usage: latency_anchors.py [--sizes 1024,65536] [--reps 2000]
"""
import argparse
import statistics
import sys
import time

C = 0.5  # the fused program's constant, as in latency.cu


def first_line(e):
    lines = str(e).splitlines()
    return (lines[0] if lines else repr(e))[:120]


def timed(fn, reps, sync=None):
    """Median host microseconds of fn(); `sync` (untimed) runs after every call."""
    for _ in range(max(10, reps // 10)):
        fn()
        if sync:
            sync()
    pc = time.perf_counter_ns
    ts = []
    for _ in range(reps):
        t0 = pc()
        fn()
        ts.append(pc() - t0)
        if sync:
            sync()
    return statistics.median(ts) / 1e3


def torch_programs(torch, n):
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.rand(n, device="cuda", generator=g) * 1.5 - 0.5
    xi = torch.randint(-100, 101, (n,), device="cuda", dtype=torch.int32, generator=g)

    def mssp(v):  # best sum of a run: prefix sums less the lowest earlier prefix (0 included)
        p = torch.cumsum(v, 0)
        return (p - torch.clamp(torch.cummin(p, 0).values, max=0)).max()

    return {
        "sum": (lambda: torch.sum(x).item(), lambda: torch.sum(x)),
        "fused": (lambda: (x * x + C).sum().item(), lambda: (x * x + C).sum()),
        "argmax": (lambda: torch.argmax(x).item(), lambda: torch.argmax(x)),
        "mssp": (lambda: mssp(xi).item(), lambda: mssp(xi)),
    }, torch.cuda.synchronize


def cupy_programs(cp, n):
    rs = cp.random.RandomState(n)
    x = (rs.random_sample(n, dtype=cp.float32) * 1.5 - 0.5).astype(cp.float32)
    xi = rs.randint(-100, 101, n, dtype=cp.int32)

    def mssp(v):
        p = cp.cumsum(v)
        return (p - cp.minimum(cp.minimum.accumulate(p), 0)).max()

    progs = {
        "sum": (lambda: float(x.sum()), lambda: x.sum()),
        "fused": (lambda: float((x * x + C).sum()), lambda: (x * x + C).sum()),
        "argmax": (lambda: int(x.argmax()), lambda: x.argmax()),
        "mssp": (lambda: int(mssp(xi)), lambda: mssp(xi)),
    }
    return progs, cp.cuda.Device().synchronize


def measure(lib, make, sizes, reps):
    for n in sizes:
        try:
            progs, sync = make(n)
        except Exception as e:  # noqa: BLE001 - a note, not a failure of the benchmark
            print("note %s n=%d: could not set up (%s)" % (lib, n, first_line(e)))
            continue
        for name, (run, run_async) in progs.items():
            try:
                run_us = timed(run, reps)
                async_us = timed(run_async, reps, sync)
            except Exception as e:  # noqa: BLE001
                print("note %s %s n=%d: %s" % (lib, name, n, first_line(e)))
                continue
            print("row %s %s %d %.3f %.3f" % (lib, name, n, run_us, async_us), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,65536")
    ap.add_argument("--reps", type=int, default=2000)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]

    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no GPU")
        measure("torch", lambda n: torch_programs(torch, n), sizes, args.reps)
        print("note torch %s" % torch.__version__)
    except Exception as e:  # noqa: BLE001
        print("note torch not measured: %s" % first_line(e))
    try:
        import cupy as cp

        measure("cupy", lambda n: cupy_programs(cp, n), sizes, args.reps)
        print("note cupy %s" % cp.__version__)
    except Exception as e:  # noqa: BLE001
        print("note cupy not measured: %s" % first_line(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
