"""Timing shared by the anchor scripts of the program groups (rows_anchors.py,
programs_anchors.py): device time per call of a torch or CuPy callable, CUDA events around
`reps` back-to-back calls after 3 warm-up calls, the median of 5 such batches, in us."""
import statistics


def timed(lib, fn, reps):
    if lib == "torch":
        import torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync = torch.cuda.synchronize
    else:
        import cupy
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        sync = cupy.cuda.Device().synchronize
    for _ in range(3):
        fn()
    sync()
    batches = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end) if lib == "torch" else cupy.cuda.get_elapsed_time(start, end)
        batches.append(ms * 1000.0 / reps)
    return statistics.median(batches)
