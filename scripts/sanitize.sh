#!/usr/bin/env bash
# Runs every GPU test binary under compute-sanitizer's four tools (memcheck, racecheck,
# synccheck, initcheck) on a machine with a GPU, prints one line per tool and test (and
# the first lines of each finding), and exits non-zero on any finding, any failed test,
# or a test skipped for want of a GPU. Build the tests first (scripts/device.sh builds
# build-dev/):
#
#   bash scripts/device.sh --tests-only --filter gpu && bash scripts/sanitize.sh
#   bash scripts/sanitize.sh --tool memcheck --filter 'reduce|scan'   # a part of it
#
# Options: --build-dir DIR (default build-dev), --tool NAME (repeatable; default all four),
# --filter REGEX (test names, e.g. 'reduce|segmented'), --max-n N (FUSEFLOW_TEST_MAX_N,
# default 2^20 + 7: the tests skip larger cases, the > 2^31 ones included, so a run stays
# in minutes), --fuzz-count N (FUSEFLOW_FUZZ_COUNT for fuzz_gpu_test, default 30).
# Logs: <build-dir>/sanitize/<tool>-<test>.log ($SANITIZE_LOGS to put them elsewhere).
#
# Left out: runtime_gpu_sticky_error_test, whose illegal address is the point of it.
# CUDA API errors are not reported (--report-api-errors no): tests provoke some on purpose
# (a 1 TiB allocation), and any other one fails its test anyway.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo_root/build-dev"
tools=() filter="" max_n=$(((1 << 20) + 7)) fuzz_count=30
while (($#)); do
  case "$1" in
    --build-dir) build_dir="${2:?}"; shift ;;
    --tool) tools+=("${2:?}"); shift ;;
    --filter) filter="${2:?}"; shift ;;
    --max-n) max_n="${2:?}"; shift ;;
    --fuzz-count) fuzz_count="${2:?}"; shift ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "sanitize.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
((${#tools[@]})) || tools=(memcheck racecheck synccheck initcheck)
logs="${SANITIZE_LOGS:-$build_dir/sanitize}"
mkdir -p "$logs"

sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[[ -x "$sanitizer" ]] || { echo "sanitize.sh: compute-sanitizer not found (CUDA toolkit bin/)" >&2; exit 2; }

mapfile -t tests < <(find "$build_dir/tests" -type f -executable -name '*gpu_test' 2>/dev/null |
                     grep -v sticky_error | sort)
((${#tests[@]})) || { echo "sanitize.sh: no GPU test binaries under $build_dir/tests: build them first" \
                           "(bash scripts/device.sh --tests-only --filter gpu)" >&2; exit 2; }

export FUSEFLOW_TEST_MAX_N="$max_n" FUSEFLOW_FUZZ_COUNT="$fuzz_count"
findings=0 failures=0 skipped=0 runs=0
printf '%-10s %-30s %s\n' tool test result
for tool in "${tools[@]}"; do
  for test in "${tests[@]}"; do
    name="$(basename "$test")"
    [[ -z "$filter" || "$name" =~ $filter ]] || continue
    log="$logs/$tool-$name.log"
    start=$SECONDS
    # Tests that write files (the disk cache) find their paths relative to their directory.
    (cd "$(dirname "$test")" && "$sanitizer" --tool "$tool" --error-exitcode 86 --report-api-errors no \
       --print-limit 20 "./$name") > "$log" 2>&1
    rc=$?
    runs=$((runs + 1))
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | tail -n 1 | grep -Eo '[0-9]+$')"
    # racecheck prints no ERROR SUMMARY but "RACECHECK SUMMARY: N hazards displayed (E errors,
    # W warnings)"; every hazard, a warning included, counts as a finding.
    hazards="$(grep -Eo 'RACECHECK SUMMARY: [0-9]+' "$log" | tail -n 1 | grep -Eo '[0-9]+$')"
    [[ -z "$errors" && -n "$hazards" ]] && errors=0
    errors="${errors:-?}"
    if [[ "$errors" != 0 || "${hazards:-0}" != 0 ]] || ((rc == 86)); then
      result="FINDINGS ($errors errors${hazards:+, $hazards racecheck hazards})"
      findings=$((findings + 1))
    elif ((rc == 77)); then
      result="SKIPPED (no GPU: nothing was checked)"
      skipped=$((skipped + 1))
    elif ((rc != 0)); then
      result="TEST FAILED (rc $rc)"
      failures=$((failures + 1))
    else
      result="clean"
    fi
    printf '%-10s %-30s %s (%ds)\n' "$tool" "$name" "$result" $((SECONDS - start))
    [[ "$result" == clean || "$result" == SKIPPED* ]] ||
      { grep -E '^========= |ERROR|FAILED' "$log" | head -n 15 | sed 's/^/    /'; echo "    (log: $log)"; }
  done
done
echo "sanitize.sh: $runs runs, $findings with findings, $failures failed tests, $skipped skipped" \
     "(FUSEFLOW_TEST_MAX_N=$max_n, FUSEFLOW_FUZZ_COUNT=$fuzz_count, ${SECONDS}s)"
((findings == 0 && failures == 0 && skipped == 0 && runs > 0))
