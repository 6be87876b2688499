#!/usr/bin/env bash
# One device call's study of the keyed group's default kernels (segmented scan by offsets,
# scan_by_key, reduce_by_key; issue 21): builds fuseflow-bench from this tree, profiles the
# fuseflow kernels and CUB's at 2^24 with Nsight Compute (the headlines printed, the reports
# in $OUT/ncu.tar.gz), then runs the keyed group at 2^24 under several scan tiles
# (FUSEFLOW_SCAN_TILE, the planner's tuning-study option: it sets the tile of all three
# ops at once, each row its own) and prints the rows ($OUT/sweep.tar.gz). Stops starting
# work after about 370 s, so it fits a 420 s call.
#
#   bash scripts/keyed_study.sh [TILE...]      (default tiles below; "" is the policy's)
set -u
cd "$(dirname "$0")/.."
start=$SECONDS
OUT=${OUT:-$PWD/keyed-study}
mkdir -p "$OUT"
nvidia-smi -L
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-study "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEFLOW_BUILD_TESTS=OFF \
  -DFUSEFLOW_BUILD_EXAMPLES=OFF -DFUSEFLOW_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 &&
  cmake --build build-study -j "$(nproc)" --target fuseflow-bench >> "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start))s"
bench=$PWD/build-study/bench/fuseflow-bench
export FUSEFLOW_CACHE_DIR=$PWD/build-study/cache
ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
work=$PWD/build-study/work
mkdir -p "$work"
cd "$work" || exit 1

profile() {  # name regex skip count: COUNT launches matching REGEX after SKIP of them
  timeout 100 "$ncu_bin" --clock-control none -k "regex:$2" --launch-skip "$3" -c "$4" \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section SourceCounters \
    "$bench" --only keyed --min-log2 24 --max-log2 24 --device-only --reps 1 > "$work/ncu-$1.txt" 2>&1
  echo "== ncu $1 rc=$? at $((SECONDS - start))s"
  grep -E '^  [A-Za-z_].*\(|Duration|DRAM Throughput|L2 Hit|Mem Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Static Shared|Block Limit (Reg|Shared)|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Local Memory' \
    "$work/ncu-$1.txt" | grep -v -E '^ +-' | head -60
  grep -E -i 'stall' "$work/ncu-$1.txt" | head -12 | cut -c1-400
}

sweep() {  # tile ("" for the policy's)
  ((SECONDS - start > 370)) && { echo "skipped tile '${1}' (time)"; return; }
  FUSEFLOW_SCAN_TILE=$1 timeout $((405 - (SECONDS - start))) "$bench" --only keyed --min-log2 24 --max-log2 24 \
    --device-only --reps 10 > "$work/sweep-${1:-policy}.txt" 2>&1
  echo "== tile ${1:-policy} rc=$? at $((SECONDS - start))s"
  grep -E 'segscan|scanbykey|redbykey' "$work/sweep-${1:-policy}.txt" | cut -c1-150
}

# Each row's first launch: the check run (1), then 5 warm-up and 10 timed (--reps 1) calls,
# so a kernel's 17th launch is the next shape's (10..50 first, then 1..3).
profile segscan 'ff_segmented_scan|DeviceScanByKeyKernel' 0 2
profile sbk 'ff_scan_by_key' 0 1
profile rbk 'ff_reduce_by_key|DeviceReduceByKeyKernel' 0 2
tiles=("$@")
# Tiles whose two 4-byte input stages fit the 48 KB of static shared memory (at most ~5800 elements).
((${#tiles[@]})) || tiles=("" 256x16x6 128x22x8 384x14x4 192x16x8 512x11x3 192x22x6)
for t in "${tiles[@]}"; do sweep "$t"; done
tar czf "$OUT/sweep.tar.gz" sweep-*.txt
((SECONDS - start < 360)) && profile segscan13 'ff_segmented_scan' 16 1
tar czf "$OUT/ncu.tar.gz" ncu-*.txt
echo "done in $((SECONDS - start))s"
