#!/usr/bin/env bash
# Several source trees' benchmarks in one device call, each tree on its own groups:
#   bash scripts/bench_variants.sh "BENCH ARGS" TREE:GROUP,GROUP... [TREE:GROUPS]...
# TREE is a fuseflow source tree under .carry/v/ (git archive <commit> | tar x -C .carry/v/NAME),
# carried with the device tool's carry [".carry/v"]. Builds every tree's fuseflow-bench at
# once (16 cores shared), runs each group on the trees that list it (rotating which goes
# first), and prints one table (also $OUT/var_table.txt): per (mode, op, log2 n) every
# tree's fuseflow time, the ratios to the first tree, and each tree's CUB / anchor time from
# its own process. Every run's log and CSV go to $OUT/runs.tgz.
# Example (session 9): bash scripts/bench_variants.sh "--min-log2 24 --device-only --reps 10" \
#   base:sort,keyed M:sort,keyed,filter
set -uo pipefail
args="$1"; shift
declare -A tg; trees=()
for spec in "$@"; do trees+=("${spec%%:*}"); tg[${spec%%:*}]="${spec#*:}"; done
nt=${#trees[@]}
groups="$(for t in "${trees[@]}"; do echo "${tg[$t]}" | tr , '\n'; done | awk '!s[$0]++' | paste -sd,)"
export NCCL_NVLS_ENABLE=0
j=$(( 16 / nt )); ((j < 2)) && j=2
for t in "${trees[@]}"; do
  ( cmake -S .carry/v/$t -B /tmp/vb/$t -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEFLOW_BUILD_TESTS=OFF \
      -DFUSEFLOW_BUILD_EXAMPLES=OFF -DFUSEFLOW_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/build-$t.log 2>&1 &&
    cmake --build /tmp/vb/$t -j $j --target fuseflow-bench >> $OUT/build-$t.log 2>&1 || echo "BUILD FAILED $t" ) &
done
wait
echo "built at ${SECONDS}s"
IFS=, read -ra gs <<< "$groups"
k=0
for g in "${gs[@]}"; do
  for ((i = 0; i < nt; ++i)); do
    t=${trees[$(( (i + k) % nt ))]}
    [[ ",${tg[$t]}," == *",$g,"* ]] || continue
    mkdir -p $OUT/r/$t/$g
    [[ -x /tmp/vb/$t/bench/fuseflow-bench ]] || continue
    FUSEFLOW_BENCH_OUT=$OUT/r/$t/$g timeout 150 /tmp/vb/$t/bench/fuseflow-bench --only $g $args > $OUT/r/$t/$g/log.txt 2>&1 \
      || echo "RUN FAILED $t $g rc=$?"
    grep -h -i "mismatch\|FAIL\|wrong" $OUT/r/$t/$g/log.txt | head -3
    sleep 1
  done
  k=$((k + 1))
  echo "group $g done at ${SECONDS}s"
done
python3 - "${trees[@]}" <<'PY'
import csv, glob, os, sys
trees = sys.argv[1:]; out = os.environ["OUT"]
rows = {}; order = []
for t in trees:
    for f in sorted(glob.glob(f"{out}/r/{t}/*/bench.csv")):
        for r in csv.DictReader(open(f)):
            key = (r["mode"], r["op"], int(r["log2n"]))
            if key not in rows: rows[key] = {}; order.append(key)
            rows[key][t] = (float(r["fuseflow_us"]), float(r["cub_us"]), r["check"])
lines = ["mode|op|2^n|" + "|".join(trees) + "|" + "|".join(f"{t}/{trees[0]}" for t in trees[1:]) + "|" +
         "|".join(f"cub({t})" for t in trees) + "|check"]
for key in order:
    d = rows[key]
    ff = [d.get(t, (float('nan'),))[0] for t in trees]
    base = ff[0]
    cubs = "|".join(f"{d.get(t, (0, float('nan')))[1]:.1f}" for t in trees)
    chk = ";".join(sorted(set(d[t][2][:20] for t in d)))
    lines.append(f"{key[0][:3]}|{key[1]}|{key[2]}|" + "|".join(f"{x:.1f}" for x in ff) + "|" +
                 "|".join(f"{x/base:.3f}" for x in ff[1:]) + f"|{cubs}|{chk}")
open(f"{out}/var_table.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
tar czf "$OUT/runs.tgz" -C "$OUT" r && rm -rf "$OUT/r"
