#!/usr/bin/env python3
"""Compare two sets of fuseflow-bench runs (a baseline and the current tree), as
scripts/bench_compare.sh makes them: RUNS/<side>/r<round>/<group>/bench*.csv.

usage: compare.py RUNS [--threshold PCT] [--full FILE] [--markdown FILE] [--baseline-name S] [--current-name S]

Rows are matched by (mode, op, n); a row measured in several rounds keeps its best
(lowest) time on each side. Prints a short table (ratios current / baseline, one line per
op, one column per size, '!' where the current tree is more than PCT percent slower) and
the flagged rows; --full writes every row side by side (both times, the ratio, CUB's
times on the same runs) plus the compile and latency figures, --markdown the same rows as
Markdown tables for bench/RESULTS.md. Exit status 0, also when
rows are flagged: the table is the verdict, not the status.

CUB-normalised ratio: CUB is the same code on both sides, so its own ratio in a row is
that row's drift (the machine, the host's speed during that run). Every row with CUB
times on both sides also gets (ff current / ff baseline) / (CUB current / CUB baseline),
printed beside the raw ratio. Where the row's CUB moved by more than PCT percent either
way, the '!' flag is judged on the normalised ratio (marked '*'), else on the raw one.
Normalising assumes fuseflow and CUB are limited by the same thing in that row (both
host-bound or both device-bound); where they are not (e.g. a fuseflow row of a few us
beside a CUB row of hundreds), read the raw times.
"""
import argparse
import csv
import glob
import math
import os
import statistics
import sys
from collections import defaultdict

SIDES = ("baseline", "current")
# The benchmark's groups in the order rows are listed (the order bench_compare.sh runs them).
GROUP_ORDER = ["compile", "scan", "reduce", "histogram", "segmented", "sort", "filter", "keyed", "course", "latency"]


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return math.nan
    return v


def best(values):
    vals = [v for v in values if not math.isnan(v)]
    return min(vals) if vals else math.nan


def load(runs, side, name):
    """Every row of every bench CSV called `name` under runs/side, with its round."""
    rows = []
    for path in sorted(glob.glob(os.path.join(runs, side, "r*", "*", name))):
        rnd, group = path.split(os.sep)[-3:-1]
        with open(path, newline="") as f:
            prev_mode = ""
            for r in csv.DictReader(f):
                r["_round"] = rnd
                r["_group"] = group
                # Benchmarks before the mode fix wrote "mssp CUB Reduce" without one; it is
                # always the row right after "mssp 4xi32" of its mode.
                if "mode" in r:
                    if not r["mode"]:
                        r["mode"] = prev_mode
                    prev_mode = r["mode"]
                rows.append(r)
    return rows


def main_rows(runs):
    """{side: {(mode, op, n): {"ff": best us, "cub": best us, "check": str, "rank": sort key}}}"""
    out = {}
    for side in SIDES:
        acc = defaultdict(lambda: {"ff": [], "cub": [], "check": set(), "group": ""})
        first = {}  # op -> the order it was first printed in
        for r in load(runs, side, "bench.csv"):
            key = (r["mode"], r["op"], int(r["n"]))
            acc[key]["ff"].append(num(r["fuseflow_us"]))
            acc[key]["cub"].append(num(r["cub_us"]))
            acc[key]["check"].add(r.get("check", ""))
            acc[key]["group"] = r["_group"]
            first.setdefault(r["op"], len(first))
        def rank(k, g):
            gi = GROUP_ORDER.index(g) if g in GROUP_ORDER else len(GROUP_ORDER)
            return (0 if k[0] == "device" else 1, gi, g, first[k[1]], k[2])
        out[side] = {k: {"ff": best(v["ff"]), "cub": best(v["cub"]), "check": v["check"],
                         "rank": rank(k, v["group"])} for k, v in acc.items()}
    return out


def size_label(n):
    if n > 0 and n & (n - 1) == 0:
        return "2^%d" % (n.bit_length() - 1)
    return str(n)


def mode_label(mode):
    return mode or "(no mode)"  # rows written without one (an older benchmark's "mssp CUB Reduce")


class Verdict:
    """One row's ratios: raw (ff current / baseline), CUB's own, the CUB-normalised one, and
    which of raw and normalised the '!' flag is judged on."""

    def __init__(self, b, c, threshold):
        self.raw = c["ff"] / b["ff"] if b["ff"] > 0 else math.nan
        self.cub = c["cub"] / b["cub"] if b["cub"] > 0 and c["cub"] > 0 else math.nan
        self.norm = self.raw / self.cub if self.cub > 0 else math.nan
        # CUB moved more than the threshold either way: judge the row on the normalised ratio.
        self.uses_norm = (not math.isnan(self.cub) and not math.isnan(self.norm) and
                          abs(self.cub - 1) > threshold / 100)
        self.judged = self.norm if self.uses_norm else self.raw
        self.flagged = self.judged > 1 + threshold / 100

    def cell(self):
        """'!1.264/1.018*': flag, raw ratio, normalised ratio ('-' without CUB), '*' where the
        flag was judged on the normalised one."""
        if math.isnan(self.raw):
            return "-"
        norm = "-" if math.isnan(self.norm) else "%.3f" % self.norm
        return "%s%.3f/%s%s" % ("!" if self.flagged else " ", self.raw, norm, "*" if self.uses_norm else " ")


def ordered_keys(rows):
    """Keys by mode, group, op (in the order the benchmark printed them) and size."""
    ranks = {}
    for side in ("baseline", "current"):
        for k, v in rows[side].items():
            ranks[k] = v["rank"]  # the current side's order wins
    return sorted(ranks, key=lambda k: ranks[k])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs")
    ap.add_argument("--threshold", type=float, default=2.0, help="percent slower that flags a row (default 2)")
    ap.add_argument("--full", help="write every row side by side to this file")
    ap.add_argument("--markdown", help="write the side-by-side tables as Markdown (for RESULTS.md) to this file")
    ap.add_argument("--baseline-name", default="baseline")
    ap.add_argument("--current-name", default="current")
    ap.add_argument("--max-flagged", type=int, default=25, help="flagged rows listed in the short output")
    args = ap.parse_args()
    thr = args.threshold

    rows = main_rows(args.runs)
    keys = ordered_keys(rows)
    base, cur = rows["baseline"], rows["current"]
    rounds = {side: sorted({os.path.basename(os.path.dirname(p)) for p in
                            glob.glob(os.path.join(args.runs, side, "r*", "*"))}) for side in SIDES}

    short, full = [], []
    def both(line=""):
        short.append(line)
        full.append(line)

    both("==== fuseflow-bench: %s / %s ====" % (args.current_name, args.baseline_name))
    both("rows matched by (mode, op, n); each side's best of %d round(s); cells: ratio/CUB-normalised ratio, "
         "ratio = current us / baseline us (< 1: faster)" % max(len(rounds["current"]), 1))
    both("CUB-normalised = ratio / (CUB current / CUB baseline in the same row); '!' = more than %g%% slower, "
         "judged on the normalised ratio where the row's CUB moved more than %g%% (marked '*'), else on the ratio"
         % (thr, thr))

    # --- the short grid: one line per (mode, op), one column per power-of-two size ------
    flagged, mismatches, one_side = [], [], []
    cub_ratios = []
    ratio, verdict = {}, {}
    for k in keys:
        b, c = base.get(k), cur.get(k)
        if b is None or c is None:
            one_side.append(k)
            continue
        verdict[k] = Verdict(b, c, thr)
        ratio[k] = verdict[k].raw
        if not math.isnan(verdict[k].cub):
            cub_ratios.append(verdict[k].cub)
        if verdict[k].flagged:
            flagged.append(k)
    for side, rs in (("baseline", base), ("current", cur)):
        for k, v in rs.items():
            if any("MISMATCH" in ch for ch in v["check"]):
                mismatches.append((side, k))

    for mode in dict.fromkeys(k[0] for k in keys):
        pow2 = sorted({k[2] for k in keys if k[0] == mode and k[2] & (k[2] - 1) == 0})
        other = [k for k in keys if k[0] == mode and k[2] & (k[2] - 1) != 0]
        ops = list(dict.fromkeys(k[1] for k in keys if k[0] == mode and k[2] in pow2))
        both("")
        both("%-6s %-21s" % (mode_label(mode), "op") + "".join("%14s" % size_label(n) for n in pow2))
        for op in ops:
            cells = []
            for n in pow2:
                k = (mode, op, n)
                if k in verdict:
                    cells.append("%14s" % verdict[k].cell())
                elif k in base or k in cur:
                    cells.append("%14s" % ("cur only " if k in cur else "base only "))
                else:
                    cells.append("%14s" % "")
            both("%-6s %-21s" % ("", op[:21]) + "".join(cells))
        if other:
            cells = ["%s %s %s" % (op, size_label(n), verdict[(mode, op, n)].cell().strip() if (mode, op, n) in verdict
                                   else "-") for (_, op, n) in other]
            both("%-6s other sizes: %s" % ("", "; ".join(cells)))

    both("")
    if cub_ratios:
        q = sorted(cub_ratios)
        lo, hi = q[int(0.05 * (len(q) - 1))], q[int(0.95 * (len(q) - 1))]
        both("CUB in the same runs, current / baseline (the machine's drift; CUB did not change): median %.3f, "
             "5th..95th percentile %.3f..%.3f over %d rows" % (statistics.median(q), lo, hi, len(q)))
    geo = {}
    for mode in dict.fromkeys(k[0] for k in ratio):
        rs = [ratio[k] for k in ratio if k[0] == mode and ratio[k] > 0]
        if rs:
            geo[mode] = math.exp(sum(math.log(r) for r in rs) / len(rs))
    if geo:
        both("fuseflow, geometric mean of the ratios: " +
             ", ".join("%s %.3f (%d rows)" % (mode_label(m), g, sum(1 for k in ratio if k[0] == m))
                       for m, g in geo.items()))
    geo_norm = {}
    for mode in dict.fromkeys(k[0] for k in verdict):
        rs = [v.norm for k, v in verdict.items() if k[0] == mode and v.norm > 0]
        if rs:
            geo_norm[mode] = (math.exp(sum(math.log(r) for r in rs) / len(rs)), len(rs))
    if geo_norm:
        both("fuseflow, geometric mean of the CUB-normalised ratios: " +
             ", ".join("%s %.3f (%d rows with CUB)" % (mode_label(m), g, cnt) for m, (g, cnt) in geo_norm.items()))

    # --- compile and latency --------------------------------------------------------------
    comp = {side: defaultdict(lambda: defaultdict(list)) for side in SIDES}
    for side in SIDES:
        for r in load(args.runs, side, "bench_compile.csv"):
            for f in ("cold_first_run_ms", "default_cache_first_run_ms", "warm_run_us"):
                comp[side][r["program"]][f].append(num(r[f]))
    progs = [p for p in comp["current"] if p in comp["baseline"]]
    if progs:
        both("")
        both("compile (compile group): cold first run ms and warm run us, baseline -> current")
        for p in progs:
            b, c = comp["baseline"][p], comp["current"][p]
            bc, cc = best(b["cold_first_run_ms"]), best(c["cold_first_run_ms"])
            bw, cw = best(b["warm_run_us"]), best(c["warm_run_us"])
            both("  %-16s cold %8.2f -> %8.2f ms (%+.1f%%)   warm %7.2f -> %7.2f us (%+.1f%%)" %
                 (p, bc, cc, 100 * (cc / bc - 1) if bc > 0 else math.nan, bw, cw,
                  100 * (cw / bw - 1) if bw > 0 else math.nan))

    lat = {side: defaultdict(lambda: defaultdict(list)) for side in SIDES}
    for side in SIDES:
        for r in load(args.runs, side, "bench_latency.csv"):
            for f in ("run_us", "async_us", "rebuilt_us"):
                lat[side][(r["program"], int(r["n"]), r["impl"])][f].append(num(r[f]))
    lkeys = list(dict.fromkeys(list(lat["baseline"]) + list(lat["current"])))
    if lkeys:
        both("")
        both("latency (host us per call; best of the rounds): run / async / rebuilt, baseline -> current"
             " (torch and CuPy: in the full file)")
        for k in lkeys:
            def trio(side):
                d = lat[side].get(k)
                if not d:
                    return "        -"
                return "/".join("%.2f" % best(d[f]) if not math.isnan(best(d[f])) else "-"
                                for f in ("run_us", "async_us", "rebuilt_us"))
            line = "  %-7s %-6s %-9s %24s -> %s" % (k[0], size_label(k[1]), k[2], trio("baseline"), trio("current"))
            full.append(line)
            if k[2] == "fuseflow":
                short.append(line)

    # --- flagged rows, mismatches ---------------------------------------------------------
    both("")
    def detail(k):
        b, c, v = base[k], cur[k], verdict[k]
        cub = ""
        if not math.isnan(v.cub):
            cub = "; CUB %+.1f%%; CUB-normalised %+.1f%%%s" % (
                100 * (v.cub - 1), 100 * (v.norm - 1), " (judged on this)" if v.uses_norm else "")
        return "  %-6s %-21s %-5s %10.2f -> %10.2f us (%+.1f%%)%s" % (
            k[0], k[1], size_label(k[2]), b["ff"], c["ff"], 100 * (ratio[k] - 1), cub)
    drifted = sum(1 for v in verdict.values() if v.uses_norm)
    both("more than %g%% slower: %d of %d rows (%d rows judged on the CUB-normalised ratio, their CUB having "
         "moved more than %g%%)" % (thr, len(flagged), len(ratio), drifted, thr))
    for i, k in enumerate(flagged):
        line = detail(k)
        full.append(line)
        if i < args.max_flagged:
            short.append(line)
    if len(flagged) > args.max_flagged:
        short.append("  ... %d more in the full file" % (len(flagged) - args.max_flagged))
    if one_side:
        both("rows on one side only: %d (%s)" % (len(one_side), ", ".join(
            "%s %s %s" % (k[0], k[1], size_label(k[2])) for k in one_side[:6]) + (" ..." if len(one_side) > 6 else "")))
    if mismatches:
        both("MISMATCH reported by the benchmark in %d rows: %s" % (len(mismatches), ", ".join(
            "%s: %s %s %s" % (s, k[0], k[1], size_label(k[2])) for s, k in mismatches[:6])))
    else:
        both("results checked in every run: no mismatch reported")

    # --- the full table -------------------------------------------------------------------
    full.append("")
    full.append("every row (us): mode, op, n, %s fuseflow, %s fuseflow, ratio, CUB %s, CUB %s, CUB ratio, "
                "CUB-normalised ratio (* = the flag is judged on it), flag"
                % (args.baseline_name, args.current_name, args.baseline_name, args.current_name))
    full.append("%-6s %-36s %-5s %11s %11s %7s %11s %11s %7s %8s %1s" %
                ("mode", "op", "n", "base ff", "cur ff", "ratio", "base CUB", "cur CUB", "ratio", "norm", ""))
    for k in keys:
        b, c = base.get(k), cur.get(k)
        bf = b["ff"] if b else math.nan
        cf = c["ff"] if c else math.nan
        bc = b["cub"] if b else math.nan
        cc = c["cub"] if c else math.nan
        r = cf / bf if bf > 0 else math.nan
        rc = cc / bc if bc > 0 else math.nan
        v = verdict.get(k)
        norm = "%7.3f%s" % (v.norm, "*" if v.uses_norm else " ") if v and not math.isnan(v.norm) else "%8s" % "-"
        full.append("%-6s %-36s %-5s %11.2f %11.2f %7.3f %11.2f %11.2f %7.3f %8s %1s" %
                    (k[0], k[1][:36], size_label(k[2]), bf, cf, r, bc, cc, rc, norm, "!" if k in flagged else ""))

    if args.markdown:
        md = ["Before / after, us (each side's best of %d round(s)); ratio = after / before; CUB in the same "
              "runs: its own ratio; CUB-norm = ratio / CUB ratio. **bold**: more than %g%% slower, judged on "
              "CUB-norm where the row's CUB moved more than %g%% (marked \\*), else on the ratio." %
              (max(len(rounds["current"]), 1), thr, thr)]
        for mode in dict.fromkeys(k[0] for k in keys):
            md += ["", "**%s**" % mode_label(mode), "",
                   "| op | n | %s | %s | ratio | CUB %s | CUB %s | CUB ratio | CUB-norm |" %
                   (args.baseline_name, args.current_name, args.baseline_name, args.current_name),
                   "|---|---|---|---|---|---|---|---|---|"]
            for k in (k for k in keys if k[0] == mode):
                b, c = base.get(k), cur.get(k)
                vals = [b["ff"] if b else math.nan, c["ff"] if c else math.nan,
                        b["cub"] if b else math.nan, c["cub"] if c else math.nan]
                r = vals[1] / vals[0] if vals[0] > 0 else math.nan
                rc = vals[3] / vals[2] if vals[2] > 0 else math.nan
                v = verdict.get(k)
                cell = lambda x: "-" if math.isnan(x) else "%.2f" % x
                bold = lambda text, on: "**%s**" % text if on else text
                flag = k in flagged
                rs = "-" if math.isnan(r) else bold("%.3f" % r, flag and not (v and v.uses_norm))
                ns = "-"
                if v and not math.isnan(v.norm):
                    ns = bold("%.3f" % v.norm, flag and v.uses_norm) + ("\\*" if v.uses_norm else "")
                md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    k[1], size_label(k[2]), cell(vals[0]), cell(vals[1]), rs, cell(vals[2]), cell(vals[3]),
                    "-" if math.isnan(rc) else "%.3f" % rc, ns))
        with open(args.markdown, "w") as f:
            f.write("\n".join(md) + "\n")

    print("\n".join(short))
    if args.full:
        with open(args.full, "w") as f:
            f.write("\n".join(full) + "\n")
        print("full table: %s" % args.full)
    if args.markdown:
        print("markdown: %s" % args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
