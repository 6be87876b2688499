#!/usr/bin/env bash
# One device call's Nsight Compute study of benchmark groups: builds fuseflow-bench from
# this tree, then for each group profiles every kernel matching a regex once per launch
# configuration (after 2 warm-up launches of it) at 2^24 elements, and prints a few lines
# per kernel (scripts/ncu_summary.py; CSVs in $OUT). Edit the `prof` lines at the end.
#   bash scripts/profile_groups.sh     # about 140 s on an H200 (session 9)
set -uo pipefail
B=/tmp/pb
export NCCL_NVLS_ENABLE=0
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEFLOW_BUILD_TESTS=OFF -DFUSEFLOW_BUILD_EXAMPLES=OFF \
  -DFUSEFLOW_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/build.log 2>&1 && \
  cmake --build $B -j16 --target fuseflow-bench >> $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo "built at ${SECONDS}s"
NCU="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
prof() {  # tag regex count group [skip]
  local tag=$1 re=$2 cnt=$3 grp=$4 skip=${5:-0}
  timeout 95 "$NCU" --clock-control none -k "regex:$re" --launch-skip 2 -c 1 --filter-mode per-launch-config \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    --csv --page details $B/bench/fuseflow-bench --only $grp --min-log2 24 --max-log2 24 --device-only --reps 1 \
    > $OUT/ncu-$tag.csv 2> $OUT/ncu-$tag.err
  echo "== $tag rc=$? (${SECONDS}s)"
  python3 scripts/ncu_summary.py $OUT/ncu-$tag.csv | tee -a $OUT/summary.txt
}
prof keyed   'ff_|DeviceScanByKey|DeviceReduceByKey' 0 keyed
prof sort    'ff_|Onesweep|RadixSortHistogram' 16 sort
prof progs   'ff_' 0 programs
prof rows    'ff_' 6 rows

