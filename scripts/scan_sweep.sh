#!/usr/bin/env bash
# Sweeps the scan tile shape on a GPU machine: one benchmark run of the scan group per
# shape given to FUSEFLOW_SCAN_TILE (<block>x<items>[x<min blocks per SM>]; "default" is
# the planner's own choice), device time only, from 2^MIN_LOG2 (default 24) up, and
# prints every shape's scan rows one after another. The constants are in each kernel's
# source, so the kernel cache keeps the shapes apart.
#
#   bash scripts/scan_sweep.sh [BENCH_BINARY] [SHAPE...]
#   MIN_LOG2=28 bash scripts/scan_sweep.sh build-dev/bench/fuseflow-bench default 256x16x6 128x16
set -uo pipefail
bench="${1:-build-dev/bench/fuseflow-bench}"
shift || true
shapes=("$@")
((${#shapes[@]})) || shapes=(default 256x16x6 256x16x8 128x16 128x16x10 192x22 128x24 512x8 256x12 256x24)
[[ -x "$bench" ]] || { echo "scan_sweep.sh: no benchmark binary at $bench" >&2; exit 2; }
for shape in "${shapes[@]}"; do
  if [[ $shape == default ]]; then unset FUSEFLOW_SCAN_TILE; else export FUSEFLOW_SCAN_TILE="$shape"; fi
  echo "== FUSEFLOW_SCAN_TILE=$shape"
  "$bench" --only scan --min-log2 "${MIN_LOG2:-24}" --device-only 2>&1 |
    grep -E '^  (incl|excl|lin|scan|sum|copy)|FAIL|rror' | grep -v '^  op '
done
