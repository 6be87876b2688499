#!/usr/bin/env bash
# The README's test command: set up, configure build/, build everything, run CTest.
#   bash scripts/test.sh              # all tests
#   bash scripts/test.sh -R golden    # extra arguments go to ctest
# Exit status: the build's if it fails, otherwise ctest's. Safe to run again (incremental).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

configure_build
cmake --build "$build_dir" -j "$jobs"
# GPU tests exit 77 on a machine without a GPU and show up as "Skipped" in the summary.
exec ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "$@"
