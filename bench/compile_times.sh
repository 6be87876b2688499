#!/usr/bin/env bash
# The first-run compile split of every catalog program, without a GPU: each program in a
# fresh process (fuseflow-dump --emit times), the median row of REPEAT runs (by compile ms),
# and the catalog's total. Usage: bench/compile_times.sh [BUILD_DIR] [REPEAT] [ARCH] [JOBS] [quick]
# JOBS: threads for a program's kernels (default: one per hardware thread; 1: one after
# another, as main compiled them; "" for the default). quick: a tiered first run's
# compile (fuseflow-dump --quick: fixed-grid kernels at tier 0).
# NVRTC 12.9+ caches PTX and cubins in the driver's compute cache where a driver is
# installed (a GPU host): CUDA_CACHE_DISABLE=1, else the 2nd..REPEATth run of a program would
# be NVRTC cache hits (front end only) and the median row one of them.
set -euo pipefail
build=${1:-build}
repeat=${2:-3}
arch=${3:-sm_90}
jobs=()
if [ -n "${4:-}" ]; then jobs=(--jobs "$4"); fi
if [ "${5:-}" = quick ]; then jobs+=(--quick); fi
dump="$build/examples/fuseflow-dump"
"$dump" --emit times-header
total=0
for name in $("$dump" --list | awk '{print $1}'); do
  row=$(for _ in $(seq "$repeat"); do CUDA_CACHE_DISABLE=1 FUSEFLOW_CACHE=0 "$dump" --example "$name" --arch "$arch" "${jobs[@]}" --emit times; done |
        sort -n -k9 | sed -n "$(((repeat + 1) / 2))p")
  echo "$row"
  total=$(awk -v t="$total" -v r="$row" 'BEGIN { split(r, f, " "); printf "%.1f", t + f[9] + f[3] }')
done
echo "catalog total (plan + compile, median rows, each in a fresh process): $total ms"
