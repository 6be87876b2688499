#!/usr/bin/env bash
# The one script for the lent GPU machine (an H100 or H200, 16 cores, CUDA 13, CMake,
# ninja; no FileCheck, no package installs): configure build-dev/, build, run CTest
# (GPU tests included), run the benchmark, and print a SUMMARY block last.
#
#   bash scripts/device.sh                       # build, all tests, benchmark
#   bash scripts/device.sh --tests-only --filter 'gpu|runtime'
#   bash scripts/device.sh --bench-only -- --sizes 1e6,1e8   # after `--`: benchmark args
#   bash scripts/device.sh --carried    # a build made on the CPU machine (carry_build.sh)
#   bash scripts/device.sh --long       # the long sweeps alone (label gpu-long, 4 at a time)
#   bash scripts/bench_compare.sh DIR   # before/after benchmark against the tree in DIR
#
# Tests: the default run is the label gpu alone, 4 tests at a time (--serial: one at a
# time, the figure the 5-minute budget is about); --long runs the label gpu-long alone (4 at
# a time, in its own call). CPU tests are CI's (scripts/test.sh). Each test case's time
# comes back in ctest-junit.xml (doctest --duration, CTest's JUnit output).
# Options: --long (the gpu-long label alone, no benchmark), --serial, --tests-only, --bench-only, --filter REGEX (ctest -R), --build-dir DIR (default
# build-dev), --no-build (use DIR as it is), --carried (unpack build-ship/build-carry.tar.gz,
# which scripts/carry_build.sh makes on the CPU machine, and run build-carry/ without
# building: it saves the device the minute and a half a build takes there; carry
# "build-ship"); any other argument, and
# everything after `--`, is passed to build-dev/bench/fuseflow-bench, which runs with $OUT
# as its working directory and FUSEFLOW_BENCH_OUT=$OUT, so its CSV/PNG files land there.
# Full logs go to $OUT (build.log, ctest.log, bench.log); only 8 files come back from it.
#
# doctest: found on the machine if it is there (a CMake package or just the header);
# otherwise carry this machine's copy. Once, here, in the repo root:
#   mkdir -p .carry/doctest && cp -r /usr/include/doctest .carry/doctest/
# (.carry/ is git-ignored) and name ".carry" in the device tool's carry list.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo_root/build-dev"
jobs="$(nproc 2>/dev/null || echo 16)"

run_tests=1 run_bench=1 build=1 filter="" bench_args=() long=0 test_jobs=4
while (($#)); do
  case "$1" in
    --build-dir) build_dir="$(cd "$repo_root" && realpath -m "${2:?--build-dir needs a directory}")"; shift ;;
    --no-build) build=0 ;;
    --carried)
      tar xzf "$repo_root/build-ship/build-carry.tar.gz" -C "$repo_root" || exit 2
      build_dir="$repo_root/build-carry" build=0 ;;
    --tests-only) run_bench=0 ;;
    --long) long=1 run_bench=0 ;;
    --serial) test_jobs=1 ;;
    --bench-only) run_tests=0 ;;
    --filter) filter="${2:?--filter needs a regular expression}"; shift ;;
    --filter=*) filter="${1#--filter=}" ;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}"; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) bench_args+=("$1") ;;
  esac
  shift
done

OUT="${OUT:-$build_dir/out}"
mkdir -p "$OUT" "$build_dir"

section() { printf '\n==== %s (%ds) ====\n' "$*" "$SECONDS"; }

section "device"
gpus="$(nvidia-smi -L 2>&1)"; echo "$gpus"
nvcc --version 2>/dev/null | tail -n 2

# --- doctest -----------------------------------------------------------------------------
# A CMake package if one is installed, else a one-target package around whichever
# doctest/doctest.h is found (the machine's, or the carried copy).
find_doctest() {
  local dir header
  for dir in /usr/lib/cmake/doctest /usr/local/lib/cmake/doctest \
             /usr/lib/x86_64-linux-gnu/cmake/doctest /usr/share/doctest/cmake; do
    [[ -f "$dir/doctestConfig.cmake" ]] && { echo "-Ddoctest_DIR=$dir"; return; }
  done
  header="$(ls /usr/include/doctest/doctest.h /usr/local/include/doctest/doctest.h 2>/dev/null | head -n1)"
  [[ -n "$header" ]] || header="$(timeout 20 find /usr /opt -path '*/doctest/doctest.h' -print -quit 2>/dev/null)"
  [[ -n "$header" ]] || { [[ -f "$repo_root/.carry/doctest/doctest/doctest.h" ]] \
                          && header="$repo_root/.carry/doctest/doctest/doctest.h"; }
  [[ -n "$header" ]] || return 1
  local include_dir shim="$build_dir/doctest-package"
  include_dir="$(dirname "$(dirname "$header")")"
  mkdir -p "$shim"
  cat > "$shim/doctestConfig.cmake" <<CMAKE
if(NOT TARGET doctest::doctest)
  add_library(doctest::doctest INTERFACE IMPORTED)
  set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$include_dir")
endif()
CMAKE
  echo "-Ddoctest_DIR=$shim"
}

build_tests=ON
if doctest_arg="$(find_doctest)"; then
  echo "doctest: $doctest_arg"
else
  doctest_arg=""
  build_tests=OFF
  echo "doctest: NOT FOUND, tests are not built. Carry it: mkdir -p .carry/doctest &&" \
       "cp -r /usr/include/doctest .carry/doctest/ (here), then carry ['.carry']."
fi

# Golden tests need FileCheck and lit, which this machine does not have.
golden=OFF
if command -v FileCheck >/dev/null 2>&1 && command -v lit >/dev/null 2>&1; then golden=ON; fi

# The benchmark is built once bench/CMakeLists.txt exists.
bench_option=OFF
[[ -f "$repo_root/bench/CMakeLists.txt" ]] && ((run_bench)) && bench_option=ON

# --- configure and build -----------------------------------------------------------------
if ((build)); then
  section "configure"
  generator=()
  [[ -f "$build_dir/CMakeCache.txt" ]] || ! command -v ninja >/dev/null 2>&1 || generator=(-G Ninja)
  cmake -S "$repo_root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DFUSEFLOW_BUILD_TESTS="$build_tests" -DFUSEFLOW_BUILD_BENCH="$bench_option" \
        -DFUSEFLOW_GOLDEN="$golden" -DFUSEFLOW_EMULATOR_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
        ${doctest_arg:+"$doctest_arg"} > "$OUT/build.log" 2>&1
  configure_rc=$?
  build_rc=$configure_rc
  if ((configure_rc == 0)); then
    section "build (-j$jobs)"
    cmake --build "$build_dir" -j "$jobs" >> "$OUT/build.log" 2>&1
    build_rc=$?
  fi
  if ((build_rc != 0)); then
    echo "build FAILED (rc=$build_rc); the end of build.log:"
    grep -E -m 20 'error|Error' "$OUT/build.log"
    tail -n 30 "$OUT/build.log"
  fi
else
  # A carried build: CTest's files and the binaries hold this repository's absolute path,
  # which the device machine shares.
  build_rc=0
  [[ -f "$build_dir/CTestTestfile.cmake" ]] || { echo "--no-build: no build in $build_dir"; build_rc=2; }
  echo "build: carried ($build_dir), not rebuilt" > "$OUT/build.log"
fi

# --- tests -------------------------------------------------------------------------------
ctest_rc=-1
if ((run_tests && build_rc == 0)) && [[ $build_tests == ON ]]; then
  section "ctest${filter:+ -R $filter}"
  # Only the GPU labels: the emulator's tests, the goldens and the CPU unit tests are CI's.
  # CTest's -L/-LE take regular expressions: '^gpu$' and '^gpu-long$' name one label each.
  # Tests marked RUN_SERIAL (the ones measuring free device memory) run alone under -j.
  label='^gpu$' timeout=(--timeout 300)
  ((long)) && label='^gpu-long$' timeout=()
  junit=()
  ctest --help 2>/dev/null | grep -q -- --output-junit && junit=(--output-junit "$OUT/ctest-junit.xml")
  ctest --test-dir "$build_dir" --output-on-failure -j "$test_jobs" "${timeout[@]}" ${filter:+-R "$filter"} \
    -L "$label" "${junit[@]}" 2>&1 | tee "$OUT/ctest.log"
  ctest_rc=${PIPESTATUS[0]}
fi

# --- benchmark ---------------------------------------------------------------------------
bench="$build_dir/bench/fuseflow-bench"
bench_rc=-1
if ((run_bench && build_rc == 0)); then
  section "benchmark"
  if [[ -x "$bench" ]]; then
    (cd "$OUT" && FUSEFLOW_BENCH_OUT="$OUT" "$bench" "${bench_args[@]}") 2>&1 | tee "$OUT/bench.log"
    bench_rc=$?
  else
    echo "no benchmark binary at build-dev/bench/fuseflow-bench (not written yet?)"
  fi
fi

# --- summary (last, so the tool's output tail shows it) ----------------------------------
status() { case "$1" in -1) echo "not run" ;; 0) echo "ok" ;; *) echo "FAILED (rc=$1)" ;; esac; }
echo
echo "==================== SUMMARY ===================="
echo "device:    $(echo "$gpus" | head -n1)"
echo "build:     $(status "$build_rc")   (log: build.log)"
echo "tests:     $(status "$ctest_rc")"
if [[ -f "$OUT/ctest.log" ]]; then
  grep -E 'tests passed|tests failed out of|^(gpu|gpu-long) +=|Total Test time' "$OUT/ctest.log" | sed 's/^/           /'
  sed -n '/The following tests FAILED/,$p;/The following tests did not run/,/^$/p' "$OUT/ctest.log" \
    | head -n 30 | sed 's/^/           /'
fi
echo "benchmark: $(status "$bench_rc")"
[[ -f "$OUT/bench.log" ]] && tail -n 20 "$OUT/bench.log" | sed 's/^/           /'
mapfile -t outputs < <(cd "$OUT" && find . -type f | sed 's|^\./||' | sort)
echo "files:     ${outputs[*]:-none}"
((${#outputs[@]} > 8)) && echo "           WARNING: only 8 files come back from \$OUT; ${#outputs[@]} were written"
echo "time:      ${SECONDS}s"

for rc in "$build_rc" "$ctest_rc" "$bench_rc"; do
  ((rc > 0)) && exit "$rc"
done
exit 0
