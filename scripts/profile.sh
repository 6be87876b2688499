#!/usr/bin/env bash
# Profiles kernels of the benchmark with Nsight Compute on the GPU machine: where their
# time goes (throughput against the memory ceiling, occupancy, warp stalls, the SASS
# lines warps stall on most). One report per kernel regex, as text, in $OUT (or
# ./profile-out), and a few headline figures printed last.
#
#   bash scripts/profile.sh BENCH_BINARY 'KERNEL_REGEX' COUNT -- BENCH_ARGS...
#   bash scripts/profile.sh build-carry/bench/fuseflow-bench 'ff_scan_lookback_f32|DeviceScanKernel' 4 \
#        -- --only scan --min-log2 28 --device-only --reps 1
#
# ncu runs with --clock-control none (the lent machine's clocks are left alone) and
# profiles COUNT launches whose names match KERNEL_REGEX, after skipping SKIP (env, default 0)
# of them (the count of skipped launches is of matching ones only).
set -uo pipefail
bench="${1:?benchmark binary}"
regex="${2:?kernel name regex}"
count="${3:?launch count}"
shift 3
[[ ${1:-} == -- ]] && shift
out="${OUT:-profile-out}"
mkdir -p "$out"
ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
[[ -x "$ncu_bin" ]] || { echo "profile.sh: ncu not found" >&2; exit 2; }
skip="${SKIP:-0}"
tag="$(echo "$regex" | tr -c 'A-Za-z0-9' '_' | cut -c1-40)-$skip"
report="$out/ncu-$tag.txt"
"$ncu_bin" --clock-control none -k "regex:$regex" --launch-skip "$skip" -c "$count" \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section SourceCounters \
    "$bench" "$@" > "$report" 2>&1
rc=$?
echo "== ncu rc=$rc, report $report"
# Headlines: per kernel, its duration, memory throughput, occupancy and the top stall reasons.
grep -E '^  [A-Za-z_].*\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Stall' "$report" |
  grep -v -E '^ +-' | head -200
exit $rc
