#!/usr/bin/env bash
# Before/after benchmark on the GPU machine, in one call: builds fuseflow-bench from a
# baseline source tree and from this tree, runs both on the same GPU group by group
# (baseline and current back to back for each group, alternating which goes first), and
# prints the two side by side: the ratio current / baseline per row, CUB's own ratio as
# that row's drift (CUB is the same code on both sides), the CUB-normalised ratio (ratio /
# CUB ratio), '!' on rows more than 2% slower (judged on the normalised ratio where the
# row's CUB moved more than 2%; bench/compare.py says when that holds), and the flagged
# rows. The full table (every row, both times) goes to $OUT/bench_compare.txt, the same
# as Markdown tables for bench/RESULTS.md to $OUT/bench_compare.md, every run's log and
# CSV files to $OUT/bench_compare_runs.tar.gz.
#
#   bash scripts/bench_compare.sh BASELINE_DIR [options] [-- fuseflow-bench arguments]
#
# BASELINE_DIR: a source tree of fuseflow (e.g. .carry/baseline, filled here with
#   rm -rf .carry/baseline && mkdir -p .carry/baseline && git archive <commit> | tar x -C .carry/baseline
#   git log -1 --format='%h %s' <commit> > .carry/baseline/COMMIT
# and carried with the device tool's carry [".carry"]).
#
# Options:
#   --quick          device time only (--device-only): about half the time, same sizes
#                    and repetitions; what RESULTS.md's runs report
#   --smoke          the benchmark's own --quick and --device-only (sizes up to 2^20, 10
#                    repetitions): a check that both trees build and run, not a verdict
#   --groups LIST    comma-separated groups (default: every group the current tree has:
#                    compile,scan,reduce,histogram,segmented,sort,filter,keyed,course,latency)
#   --rounds N       run every group N times on each side and keep each row's best (default
#                    1); rounds after the first run only while the time budget allows
#   --budget S       seconds from the start after which no more runs start (default 480,
#                    builds included: leaves room for the comparison in a 10-minute call)
#   --threshold PCT  percent slower that flags a row (default 2)
#   --settle S       seconds of idle before every run (default 2; 0: none). In the first H100
#                    comparison, every run that came right after a scan, sort or keyed run
#                    (10 GB or more of device memory at 2^28) had its small-n rows 20-30%
#                    slower, CUB's as much as fuseflow's, as if that process's teardown
#                    were still going on (a guess: compare CUB's drift with --settle 0 and 2)
#   --jobs N         build parallelism for each tree (default: nproc; both build at once)
#   --no-build       use the builds already in build-compare/ (a warm machine)
# Anything after `--` goes to both benchmarks (e.g. -- --min-log2 16 --max-log2 24).
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
baseline_src="$(cd "$repo_root" && realpath -m "$1")"; shift
[[ -f "$baseline_src/CMakeLists.txt" && -f "$baseline_src/bench/CMakeLists.txt" ]] || {
  echo "bench_compare: $baseline_src is not a fuseflow source tree with a benchmark (no bench/CMakeLists.txt)" >&2
  exit 2
}

groups="compile,scan,reduce,histogram,segmented,sort,filter,keyed,course,latency"
rounds=1 budget=480 threshold=2 settle=2 jobs="$(nproc 2>/dev/null || echo 16)" build=1 bench_args=()
while (($#)); do
  case "$1" in
    --quick) bench_args+=(--device-only) ;;
    --smoke) bench_args+=(--device-only --quick) ;;
    --groups) groups="${2:?--groups needs a list}"; shift ;;
    --rounds) rounds="${2:?--rounds needs a number}"; shift ;;
    --budget) budget="${2:?--budget needs seconds}"; shift ;;
    --threshold) threshold="${2:?--threshold needs a percentage}"; shift ;;
    --settle) settle="${2:?--settle needs seconds}"; shift ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift ;;
    --no-build) build=0 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) echo "bench_compare: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_compare: --rounds wants a positive integer, not '$rounds'" >&2; exit 2; }
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "bench_compare: --budget wants seconds, not '$budget'" >&2; exit 2; }
[[ "$settle" =~ ^[0-9]+$ ]] || { echo "bench_compare: --settle wants whole seconds, not '$settle'" >&2; exit 2; }

work="$repo_root/build-compare"
runs="$work/runs"
declare -A src=([baseline]="$baseline_src" [current]="$repo_root")
rm -rf "$runs"
mkdir -p "$runs" "$work/bin"

section() { printf '\n==== %s (%ds) ====\n' "$*" "$((SECONDS - start))"; }
# A tree's commit: its COMMIT file (write one beside a git archive), else its own git
# checkout's HEAD (not that of a repository it merely sits in).
describe() {
  if [[ -f "$1/COMMIT" ]]; then head -c 70 "$1/COMMIT"
  elif [[ "$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)" == "$1" ]]; then
    git -C "$1" log -1 --format='%h %s' | cut -c1-70
  fi
}

section "device"
nvidia-smi -L 2>&1 | head -n 2
echo "baseline: $baseline_src $(describe "$baseline_src")"
echo "current:  $repo_root $(describe "$repo_root")"
echo "groups: $groups; rounds: $rounds; settle: ${settle}s before each run; benchmark arguments: ${bench_args[*]:-(none)}"

# --- build both trees at once ------------------------------------------------------------
build_tree() {  # side
  local side="$1" dir="$work/$1"
  local generator=()
  [[ -f "$dir/CMakeCache.txt" ]] || ! command -v ninja >/dev/null 2>&1 || generator=(-G Ninja)
  cmake -S "${src[$side]}" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DFUSEFLOW_BUILD_TESTS=OFF -DFUSEFLOW_BUILD_EXAMPLES=OFF -DFUSEFLOW_BUILD_BENCH=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 > "$work/build-$side.log" 2>&1 &&
    cmake --build "$dir" -j "$jobs" --target fuseflow-bench >> "$work/build-$side.log" 2>&1
}
if ((build)); then
  section "build both trees (-j$jobs each, at once)"
  build_tree baseline & pid_base=$!
  build_tree current & pid_cur=$!
  wait $pid_base; rc_base=$?
  wait $pid_cur; rc_cur=$?
  for side in baseline current; do
    rc=$rc_base; [[ $side == current ]] && rc=$rc_cur
    if ((rc != 0)); then
      echo "build of the $side tree FAILED (rc=$rc); the end of its log:"
      grep -E -m 10 'error' "$work/build-$side.log"
      tail -n 15 "$work/build-$side.log"
      exit 1
    fi
  done
  echo "built in $((SECONDS - start))s"
fi
for side in baseline current; do
  [[ -x "$work/$side/bench/fuseflow-bench" ]] || { echo "no benchmark binary in $work/$side/bench" >&2; exit 1; }
done

# The benchmark draws bench.png with matplotlib after every run (seconds each): a python3
# that says matplotlib is missing, and runs everything else (the latency anchors) as is.
real_python="$(command -v python3 || true)"
if [[ -n "$real_python" ]]; then
  printf '#!/bin/sh\ncase "$*" in *"import matplotlib"*) exit 1 ;; esac\nexec "%s" "$@"\n' "$real_python" \
    > "$work/bin/python3"
  chmod +x "$work/bin/python3"
fi

# --- runs ----------------------------------------------------------------------------------
run_one() {  # side round group
  local side="$1" round="$2" group="$3"
  local dir="$runs/$side/r$round/$group" t0=$SECONDS
  mkdir -p "$dir"
  (cd "$dir" && PATH="$work/bin:$PATH" FUSEFLOW_BENCH_OUT="$dir" FUSEFLOW_CACHE_DIR="$work/cache-$side" \
     timeout 300 "$work/$side/bench/fuseflow-bench" --only "$group" "${bench_args[@]}") > "$dir/log" 2>&1
  local rc=$?
  printf '  %-8s r%d %-10s %4ds%s\n' "$side" "$round" "$group" "$((SECONDS - t0))" \
    "$( ((rc == 0)) || echo "  rc=$rc: $(grep -m1 -E 'MISMATCH|error|failed' "$dir/log")")"
  echo $((SECONDS - t0)) > "$dir/seconds"
}

IFS=, read -r -a group_list <<< "$groups"
declare -A group_seconds
skipped=()
for ((round = 1; round <= rounds; ++round)); do
  section "round $round"
  for i in "${!group_list[@]}"; do
    g="${group_list[$i]}"
    # A later round's group starts only if its first round's time still fits the budget.
    need=${group_seconds[$g]:-0}
    if ((SECONDS - start + need > budget)); then
      skipped+=("r$round:$g")
      continue
    fi
    t0=$SECONDS
    if (((i + round) % 2)); then order=(current baseline); else order=(baseline current); fi
    for side in "${order[@]}"; do
      ((settle > 0)) && sleep "$settle"
      run_one "$side" "$round" "$g"
    done
    ((round == 1)) && group_seconds[$g]=$((SECONDS - t0))
  done
done
((${#skipped[@]})) && echo "not run (time budget of ${budget}s): ${skipped[*]}"

# --- comparison ----------------------------------------------------------------------------
section "comparison"
full="$work/bench_compare.txt"
python3 "$repo_root/bench/compare.py" "$runs" --threshold "$threshold" --full "$full" --markdown "$work/bench_compare.md" \
  --baseline-name "baseline" --current-name "current"
compare_rc=$?
if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
  cp "$full" "$OUT/bench_compare.txt" 2>/dev/null
  cp "$work/bench_compare.md" "$OUT/bench_compare.md" 2>/dev/null
  tar czf "$OUT/bench_compare_runs.tar.gz" -C "$work" runs build-baseline.log build-current.log 2>/dev/null
  echo "wrote \$OUT/bench_compare.txt, bench_compare.md (Markdown, for RESULTS.md) and bench_compare_runs.tar.gz"
fi
echo "time: $((SECONDS - start))s"
exit $compare_rc
