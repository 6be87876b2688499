#!/usr/bin/env bash
# Prepares a Debian 12 machine to build and test fuseflow.
#
# Idempotent: every requirement is checked first and only what is missing is installed,
# so a second run takes about a second and changes nothing. It cannot install the CUDA
# toolkit; without one it stops and says what to install.
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: %s\n' "$*" >&2; exit 1; }

# --- CUDA toolkit (headers for the build, NVRTC loaded at run time) -------------------
cuda_root="${CUDA_PATH:-/usr/local/cuda}"
cuda_missing=()
[[ -x "$cuda_root/bin/nvcc" ]]        || cuda_missing+=("bin/nvcc")
[[ -f "$cuda_root/include/cuda.h" ]]  || cuda_missing+=("include/cuda.h")
[[ -f "$cuda_root/include/nvrtc.h" ]] || cuda_missing+=("include/nvrtc.h")
compgen -G "$cuda_root/lib64/libnvrtc.so*" >/dev/null || cuda_missing+=("lib64/libnvrtc.so")
if ((${#cuda_missing[@]})); then
  die "the CUDA toolkit (12.x or 13.x, with nvcc and NVRTC) is missing from $cuda_root" \
      "(no ${cuda_missing[*]}): install it from https://developer.nvidia.com/cuda-downloads" \
      "or point CUDA_PATH at an existing installation, then run this script again."
fi

# --- Debian packages -------------------------------------------------------------------
# Each package is wanted only when the file it provides is absent, so tools installed
# another way (a newer CMake, say) are respected.
declare -A provides=(
  [g++]="command:g++"
  [cmake]="command:cmake"
  [ninja-build]="command:ninja"
  [python3]="command:python3"
  [doctest-dev]="file:/usr/include/doctest/doctest.h"
  [llvm-14-tools]="file:/usr/lib/llvm-14/bin/FileCheck"
)
missing=()
for pkg in g++ cmake ninja-build python3 doctest-dev llvm-14-tools; do
  kind="${provides[$pkg]%%:*}" what="${provides[$pkg]#*:}"
  case "$kind" in
    command) command -v "$what" >/dev/null 2>&1 || missing+=("$pkg") ;;
    file)    [[ -e "$what" ]] || missing+=("$pkg") ;;
  esac
done
# lit ships inside llvm-14-tools; check it separately in case FileCheck came from elsewhere.
if [[ ! " ${missing[*]} " == *" llvm-14-tools "* && ! -f /usr/lib/llvm-14/build/utils/lit/lit.py ]] \
   && ! command -v lit >/dev/null 2>&1; then
  missing+=(llvm-14-tools)
fi

if ((${#missing[@]})); then
  command -v apt-get >/dev/null 2>&1 \
    || die "missing ${missing[*]} and apt-get is not available: install them by hand (Debian 12 package names)."
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "missing ${missing[*]}: run this script as root or install sudo."
    sudo=(sudo env DEBIAN_FRONTEND=noninteractive)
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_install() { "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; }
  say "installing ${missing[*]}"
  # Refresh the package lists only when they are empty or the first attempt fails.
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
    "${sudo[@]}" apt-get update -q
  fi
  if ! apt_install; then
    "${sudo[@]}" apt-get update -q
    apt_install
  fi
fi

# --- Versions the build relies on ------------------------------------------------------
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if [[ $(printf '3.22\n%s\n' "$cmake_version" | sort -V | head -n1) != 3.22 ]]; then
  die "cmake $cmake_version is too old: fuseflow needs CMake 3.22 or newer (pip install cmake, or Debian backports)."
fi

say "ready (CUDA at $cuda_root, cmake $cmake_version, $(ninja --version 2>/dev/null | sed 's/^/ninja /'))"
