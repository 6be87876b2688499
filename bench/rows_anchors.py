#!/usr/bin/env python3
"""The rows group's anchors (issue 25): torch.softmax(x.view(-1, c), dim=1) over 2^26 f32
in rows of 1024 and of 4096, and torch's copy of the same bytes. Device time per call: CUDA
events around --reps back-to-back calls after a warm-up, median of 5 such batches.
fuseflow-bench (rows.cu) runs this and reads its lines:

    row <library> <program> <us>

When torch cannot be imported it prints a note instead.

usage: rows_anchors.py [--reps 20]
"""
import argparse
import sys

from anchor_timing import timed  # bench/anchor_timing.py, beside this script

N = 1 << 26


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(f"torch: not available ({str(e).splitlines()[0][:100]})")
        return 0
    x = torch.randn(N, device="cuda")
    out = torch.empty_like(x)
    for cols in (1024, 4096):
        v = x.view(-1, cols)
        print(f"row torch softmax{cols} {timed('torch', lambda: torch.softmax(v, dim=1), args.reps):.2f}", flush=True)
    print(f"row torch copy {timed('torch', lambda: out.copy_(x), args.reps):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
