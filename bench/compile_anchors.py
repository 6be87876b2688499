#!/usr/bin/env python3
"""The compile group's anchors: CuPy's cold first call of a ReductionKernel (a sum), an
ElementwiseKernel (x * x + c) and cupy.cumsum, each in a fresh process (this script runs
once per anchor) with a kernel cache directory of its own (CUPY_CACHE_DIR, set by the
caller: empty for a cold call, filled by an earlier process for a disk hit). Prints

    anchor cupy <name> <context_ms> <first_ms> <second_us>

context: importing CuPy and making the context (cupy.zeros(1) + synchronize); first: the
first call including its compile (or disk-cache load), result synchronised; second: the
same call again (a memory hit). Without CuPy it prints a note.

usage: compile_anchors.py reduction|elementwise|cumsum
"""
import sys
import time

which = sys.argv[1] if len(sys.argv) > 1 else "reduction"
t0 = time.perf_counter()
try:
    import cupy
except Exception as e:  # noqa: BLE001: any import failure means "no CuPy here"
    print("note: CuPy not available: %s" % (str(e).splitlines() or [repr(e)])[0][:120])
    sys.exit(0)
cupy.zeros(1)
cupy.cuda.Device().synchronize()
context_ms = (time.perf_counter() - t0) * 1e3
x = cupy.arange(1 << 16, dtype=cupy.float32) * 1e-3
cupy.cuda.Device().synchronize()

if which == "reduction":
    kernel = cupy.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "ff_anchor_sum")
    call = lambda: kernel(x)  # noqa: E731
elif which == "elementwise":
    kernel = cupy.ElementwiseKernel("T x, T c", "T y", "y = x * x + c", "ff_anchor_map")
    call = lambda: kernel(x, cupy.float32(0.5))  # noqa: E731
else:
    call = lambda: cupy.cumsum(x)  # noqa: E731

t0 = time.perf_counter()
call()
cupy.cuda.Device().synchronize()
first_ms = (time.perf_counter() - t0) * 1e3
t0 = time.perf_counter()
call()
cupy.cuda.Device().synchronize()
second_us = (time.perf_counter() - t0) * 1e6
print("anchor cupy %s %.3f %.3f %.1f" % (which, context_ms, first_ms, second_us))
