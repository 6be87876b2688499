#!/usr/bin/env bash
# Builds, on the CPU machine, what the GPU machine runs (tests with the GPU ones, examples,
# the benchmark) into build-carry/: Release without debug information, so that it fits in
# the device tool's carry limit (64 MiB), and no emulator or golden tests (the GPU machine
# has no use for the first and no FileCheck for the second). Then, with the device tool:
#
#   carry [".carry", "build-carry"]   command: bash scripts/device.sh --build-dir build-carry --no-build
#
# Prints the build's size last.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo_root/build-carry"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$repo_root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DFUSEFLOW_BUILD_TESTS=ON -DFUSEFLOW_BUILD_BENCH=ON -DFUSEFLOW_GOLDEN=OFF \
      -DFUSEFLOW_EMULATOR_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"
# Object files are not needed to run anything; they would only use up the carry limit.
find "$build_dir" -name '*.o' -delete
du -sh "$build_dir"
