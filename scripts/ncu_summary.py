#!/usr/bin/env python3
"""Condenses an Nsight Compute CSV (ncu --csv --page details with the SpeedOfLight,
Occupancy, LaunchStats and MemoryWorkloadAnalysis sections and the metrics
regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio) into a few lines per
kernel: duration, throughputs, registers, occupancy and the top five stall reasons per
issued instruction.  usage: ncu_summary.py REPORT.csv"""
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = None; data = collections.OrderedDict()
for r in rows:
    if hdr is None:
        if r and r[0] == "ID": hdr = r
        continue
    if len(r) < 15: continue
    d = dict(zip(hdr, r)); k = d["ID"]
    e = data.setdefault(k, {"name": d["Kernel Name"][:60], "block": d["Block Size"], "grid": d["Grid Size"], "m": {}})
    e["m"][d["Metric Name"]] = (d["Metric Value"], d["Metric Unit"])
want = ["Duration", "DRAM Throughput", "Memory Throughput", "L2 Cache Throughput", "L1/TEX Cache Throughput",
        "Compute (SM) Throughput", "Registers Per Thread", "Achieved Occupancy", "Theoretical Occupancy",
        "Dynamic Shared Memory Per Block", "Static Shared Memory Per Block"]
for k, e in data.items():
    m = e["m"]
    print(f"[{k}] {e['name']} block{e['block']} grid{e['grid']}")
    print("   " + "; ".join(f"{w}={m[w][0]}{m[w][1]}" for w in want if w in m))
    st = [(float(v[0].replace(',', '')), n.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""))
          for n, v in m.items() if n.startswith("smsp__average_warps_issue_stalled_") and v[0].replace(',', '').replace('.', '', 1).isdigit()]
    st.sort(reverse=True)
    print("   stalls/issue: " + ", ".join(f"{n}={v:.2f}" for v, n in st[:5]))
