#!/usr/bin/env bash
# The README's first command: set up, build the quickstart example, run it.
# Shares build/ with scripts/test.sh. Needs a GPU to print results; without one the
# example says so.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

configure_build
if ! cmake --build "$build_dir" --target help 2>/dev/null | grep -qE '^(\.\.\. )?quickstart(:|$)'; then
  echo "quickstart: the example is not part of the build yet (no 'quickstart' target in" \
       "examples/CMakeLists.txt); run 'bash scripts/test.sh' to build and test the rest." >&2
  exit 1
fi
cmake --build "$build_dir" -j "$jobs" --target quickstart
exec "$build_dir/examples/quickstart" "$@"
