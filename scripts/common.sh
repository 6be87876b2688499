# Shared by test.sh and quickstart.sh (sourced, not run): set up the machine and
# configure one build directory the same way for both, so each reuses the other's work.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${FUSEFLOW_BUILD_DIR:-$repo_root/build}"
jobs="$(nproc 2>/dev/null || echo 2)"

bash "$repo_root/scripts/setup.sh"

# configure_build: the CI configuration (Ninja, RelWithDebInfo, warnings as errors).
# An existing build directory keeps its generator; CMake re-runs only when inputs changed.
# Extra arguments go to cmake (e.g. -DFUSEFLOW_SANITIZE=address,undefined).
configure_build() {
  local args=(-S "$repo_root" -B "$build_dir"
              -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEFLOW_WERROR=ON "$@")
  [[ -f "$build_dir/CMakeCache.txt" ]] || args+=(-G Ninja)
  [[ -n "${CUDA_PATH:-}" ]] && args+=("-DCUDAToolkit_ROOT=$CUDA_PATH")
  cmake "${args[@]}"
}
