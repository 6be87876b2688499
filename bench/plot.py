#!/usr/bin/env python3
"""Plot fuseflow-bench's bench.csv: bandwidth against n, fuseflow vs CUB, one panel per op,
with the streaming-read ceiling measured in the same run.  usage: plot.py bench.csv bench.png"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench.csv"
    dst = sys.argv[2] if len(sys.argv) > 2 else "bench.png"
    rows = defaultdict(list)
    with open(src, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("mode", "device") != "device":
                continue  # plot GPU time per call; the sync rows add a fixed round trip
            if r["op"].startswith("course"):
                continue  # printed as a table, not plotted
            if r["op"] == "mssp CUB Reduce":
                continue  # wrong answers: not a bandwidth to compare against
            rows[r["op"]].append(r)
    ops = list(rows)
    if not ops:
        print("plot.py: no rows in", src)
        return 1
    cols = min(3, len(ops))
    nrows = (len(ops) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.8 * nrows), squeeze=False)
    for ax, op in zip(axes.flat, ops):
        rs = sorted(rows[op], key=lambda r: int(r["n"]))
        n = [int(r["n"]) for r in rs]
        ax.plot(n, [float(r["fuseflow_gbps"]) for r in rs], "o-", label="fuseflow")
        cub_label = "CUB " + rs[0]["cub_variant"] if op.startswith("mssp") else "CUB"
        ax.plot(n, [float(r["cub_gbps"]) for r in rs], "s--", label=cub_label)
        ax.plot(n, [float(r["ceiling_gbps"]) for r in rs], "k:", label="read ceiling")
        ax.set_xscale("log", base=2)
        ax.set_title(op)
        ax.set_xlabel("n")
        ax.set_ylabel("GB/s (input bytes / time)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
