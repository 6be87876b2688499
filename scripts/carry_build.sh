#!/usr/bin/env bash
# Builds, on the CPU machine, what the GPU machine runs (tests with the GPU ones, examples,
# the benchmark) into build-carry/: Release without debug information, so that it fits in
# the device tool's carry limit (64 MiB). It is also a full local build (emulator and golden
# tests too; device.sh leaves those out on the GPU machine). Then, with the device tool:
#
#   carry [".carry", "build-ship"]   command: bash scripts/device.sh --carried
#
# The build itself is too big to carry (80 MB without object files), so what travels is
# build-ship/build-carry.tar.gz (about 30 MB): the build without object files and kernel
# caches. device.sh --carried unpacks it at the same path and runs it without building.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo_root/build-carry"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$repo_root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DFUSEFLOW_BUILD_TESTS=ON -DFUSEFLOW_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"
# What is carried: everything but object files and caches (not needed to run anything).
mkdir -p "$repo_root/build-ship"
tar czf "$repo_root/build-ship/build-carry.tar.gz" --exclude='*.o' --exclude=emulator-cache \
    -C "$repo_root" "$(basename "$build_dir")"
du -h "$repo_root/build-ship/build-carry.tar.gz"
