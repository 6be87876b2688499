#!/usr/bin/env bash
# The README's test command: set up, configure build/, build everything, run CTest; then
# the same CPU tests once more built with AddressSanitizer and UBSan in build-asan/.
#   bash scripts/test.sh              # all tests, then the sanitized pass
#   bash scripts/test.sh -R golden    # extra arguments go to both ctest runs
#   FUSEFLOW_ASAN=0 bash scripts/test.sh   # without the sanitized pass
# Exit status: the first failing build's, else the first failing ctest's. Safe to run
# again (incremental).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

configure_build
cmake --build "$build_dir" -j "$jobs"
# GPU tests exit 77 on a machine without a GPU and show up as "Skipped" in the summary.
rc=0
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "$@" || rc=$?
[[ "${FUSEFLOW_ASAN:-1}" == 0 ]] && exit "$rc"

# Host code under ASan + UBSan: the CPU tests (GPU tests are compute-sanitizer's, in
# scripts/sanitize.sh; the emulator switches stacks, which ASan does not follow), less the one-minute fuzz_compile_test and the install test, whose
# consumer project does not link the sanitizer runtimes. The golden suite runs apart with
# leak detection off: under lit, LeakSanitizer's exit-time check in fuseflow-dump stops with
# "LeakSanitizer has encountered a fatal error" (its stop-the-world fails; filter/ptx.test,
# every time under ctest, never when run by hand); ASan's and UBSan's other checks stay on.
echo "==== the CPU tests again, under AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/) ===="
build_dir="$repo_root/build-asan"
# libfuseflow as a shared library and line-table debug info (-g1, enough for sanitizer
# stack traces): static, fully debug-annotated sanitized test binaries came to 7.6 GB and
# filled CI's disk; this way the directory is under 1 GB.
configure_build -DFUSEFLOW_SANITIZE=address,undefined -DFUSEFLOW_EMULATOR_TESTS=OFF \
  -DBUILD_SHARED_LIBS=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
cmake --build "$build_dir" -j "$jobs"
asan_rc=0
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
  ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -LE "gpu|emu" -E 'fuzz_compile_test|package|^golden$' "$@" \
  || asan_rc=$?
UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  ctest --test-dir "$build_dir" --output-on-failure -R '^golden$' "$@" \
  || asan_rc=$?
((rc != 0)) && exit "$rc"
exit "$asan_rc"
