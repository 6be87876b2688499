#!/usr/bin/env python3
"""The log-sum-exp row's anchor: torch.logsumexp over n f32 on the GPU, host wall time per
call with the result read on the host (as fuseflow-bench's end-to-end rows), median of
--reps calls after a warm-up. Prints "row torch_lse <n> <us>"; any other line is a note.
Run by fuseflow-bench (bench/log_sum_exp.cu); torch missing is a note, not an error."""
import argparse
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no GPU")
    except Exception as e:  # noqa: BLE001: any reason torch cannot run is a note
        print("torch not measured: %s" % str(e).splitlines()[0])
        return
    g = torch.Generator(device="cuda").manual_seed(args.n)
    x = torch.rand(args.n, device="cuda", generator=g) * 1.5 - 0.5
    for _ in range(3):
        torch.logsumexp(x, 0).item()
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        torch.logsumexp(x, 0).item()
        times.append((time.perf_counter() - t0) * 1e6)
    print("row torch_lse %d %.1f" % (args.n, statistics.median(times)))
    print("torch %s" % torch.__version__)


if __name__ == "__main__":
    main()
