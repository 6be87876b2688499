#!/usr/bin/env python3
"""The programs group's anchors (issue 25): torch and CuPy on CSR SpMV (2^24 non-zeros over
a vector of 2^20 f32: 30 per row, and power-law rows, Zipf 1.2) and the adjacent
difference of 2^28 f32 (torch.diff, cupy.diff, and a device copy of the same bytes).
Device time per call: CUDA events around --reps back-to-back calls after a warm-up,
median of 5 such batches. fuseflow-bench (programs.cu) runs this and reads its lines:

    row <library> <program> <us>

A library that cannot be imported, or a program it cannot run, prints a note instead.

usage: programs_anchors.py [--reps 20] [--only spmv30,spmvzipf,diff]
"""
import argparse
import sys

import numpy as np

from anchor_timing import timed  # bench/anchor_timing.py, beside this script

NNZ = 1 << 24
COLS = 1 << 20
DIFF_N = 1 << 28


def row_lengths(kind):
    """Row lengths summing to NNZ: 30 each, or Zipf(1.2) drawn and scaled (the same recipe
    as programs.cu, not the same draw)."""
    if kind == "spmv30":
        lens = np.full(NNZ // 30, 30, dtype=np.int64)
        lens[-1] += NNZ - lens.sum()
        return lens
    rng = np.random.default_rng(25)
    lens = np.minimum(rng.zipf(1.2, size=NNZ // 30), COLS).astype(np.int64)
    lens = np.maximum(1, (lens * (NNZ / lens.sum())).astype(np.int64))
    lens[-1] += NNZ - lens.sum()
    return lens


def csr(kind):
    lens = row_lengths(kind)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    rng = np.random.default_rng(7)
    cols = rng.integers(0, COLS, size=NNZ, dtype=np.int32)
    vals = rng.random(NNZ, dtype=np.float32)
    return offsets, cols, vals, len(lens)


def run(lib, program, reps):
    if lib == "torch":
        import torch
        if program == "diff":
            x = torch.rand(DIFF_N, device="cuda")
            out = torch.empty_like(x)
            yield "diff", timed(lib, lambda: torch.diff(x), reps)
            yield "copy", timed(lib, lambda: out.copy_(x), reps)
            return
        offsets, cols, vals, rows = csr(program)
        a = torch.sparse_csr_tensor(torch.from_numpy(offsets).cuda(), torch.from_numpy(cols).cuda(),
                                    torch.from_numpy(vals).cuda(), size=(rows, COLS))
        x = torch.rand(COLS, device="cuda")
        yield program, timed(lib, lambda: torch.mv(a, x), reps)
    else:
        import cupy
        import cupyx.scipy.sparse as sp
        if program == "diff":
            x = cupy.random.random(DIFF_N, dtype=cupy.float32)
            out = cupy.empty_like(x)
            yield "diff", timed(lib, lambda: cupy.diff(x), reps)
            yield "copy", timed(lib, lambda: out.__setitem__(slice(None), x), reps)
            return
        offsets, cols, vals, rows = csr(program)
        a = sp.csr_matrix((cupy.asarray(vals), cupy.asarray(cols), cupy.asarray(offsets)), shape=(rows, COLS))
        x = cupy.random.random(COLS, dtype=cupy.float32)
        yield program, timed(lib, lambda: a @ x, reps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", default="spmv30,spmvzipf,diff")
    args = ap.parse_args()
    for lib in ("torch", "cupy"):
        try:
            __import__(lib)
        except Exception as e:  # noqa: BLE001
            print(f"{lib}: not available ({str(e).splitlines()[0][:100]})")
            continue
        for program in args.only.split(","):
            try:
                for name, us in run(lib, program, args.reps):
                    print(f"row {lib} {name} {us:.2f}", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"{lib} {program}: failed ({str(e).splitlines()[0][:120]})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
