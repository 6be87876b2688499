#!/usr/bin/env python3
"""The weighted histograms' anchors (issue 25): torch.bincount(k, weights=w, minlength=bins)
over 2^26 int32 bins uniform in [0, bins) and f32 weights, for 256, 4096 and 2^20 bins. Device time
per call: CUDA events around --reps back-to-back calls after a warm-up, median of 5 such
batches. fuseflow-bench (histogram.cu) runs this and reads its lines:

    row <library> <program> <us>

When torch cannot be imported it prints a note instead.

usage: histogram_anchors.py [--reps 20]
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
    u = torch.rand(N, device="cuda")
    w = torch.rand(N, device="cuda")
    for bins in (256, 4096, 1 << 20):
        k = (u * bins).to(torch.int32)
        us = timed("torch", lambda: torch.bincount(k, weights=w, minlength=bins), args.reps)
        print(f"row torch weighted_hist{bins} {us:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
