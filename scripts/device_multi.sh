#!/usr/bin/env bash
# The multi-GPU run for a lent machine of several GPUs (nvidia-h100-x2 / -x4 / -x8):
# configure build-multi/ (bench included), build the sharded runtime's tests, examples and
# the benchmark, run the tests labelled multigpu (NCCL over every GPU count present, the
# examples in both ways to start), then the benchmark's multi group beside torch.distributed,
# and print a SUMMARY block last. Under 10 minutes on an H100 x4.
#
#   bash scripts/device_multi.sh              # build, multigpu tests, multi bench group
#   bash scripts/device_multi.sh --quick      # bench sizes / 16 (a smoke run)
#   bash scripts/device_multi.sh --tests-only | --bench-only
#
# NVLink multicast stays off in every process: NCCL_NVLS_ENABLE=0,
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 are exported here (and the
# runtime forces them again before NCCL starts). Logs in $OUT (build.log, ctest.log,
# bench.log, topo.txt) and bench_multi.csv.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$repo_root/build-multi"
jobs="$(nproc 2>/dev/null || echo 16)"
run_tests=1 run_bench=1 quick=()
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    --tests-only) run_bench=0 ;;
    --bench-only) run_tests=0 ;;
    *) echo "unknown argument $a"; exit 2 ;;
  esac
done
OUT="${OUT:-$build_dir/out}"
mkdir -p "$OUT" "$build_dir"
start=$(date +%s)

gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
echo "GPUs: $gpus"; cat "$OUT/topo.txt"

# doctest: the machine's, or the copy carried in .carry/doctest (as scripts/device.sh).
doctest_arg=""
header="$(ls /usr/include/doctest/doctest.h /usr/local/include/doctest/doctest.h 2>/dev/null | head -n1)"
[[ -n "$header" ]] || header="$(timeout 20 find /usr /opt -path '*/doctest/doctest.h' -print -quit 2>/dev/null)"
[[ -n "$header" ]] || { [[ -f "$repo_root/.carry/doctest/doctest/doctest.h" ]] && header="$repo_root/.carry/doctest/doctest/doctest.h"; }
if [[ -n "$header" ]]; then
  shim="$build_dir/doctest-package"; mkdir -p "$shim"
  cat > "$shim/doctestConfig.cmake" <<CMAKE
if(NOT TARGET doctest::doctest)
  add_library(doctest::doctest INTERFACE IMPORTED)
  set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$(dirname "$(dirname "$header")")")
endif()
CMAKE
  doctest_arg="-Ddoctest_DIR=$shim"
else
  echo "doctest not found: tests are not built (carry .carry/doctest, see scripts/device.sh)"; run_tests=0
fi

# NCCL: the header and library of the pip package (nvidia-nccl-cu13) that torch uses.
nccl_root="$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)"
echo "NCCL package: ${nccl_root:-not found}"
[[ -n "$nccl_root" && -f "$nccl_root/lib/libnccl.so.2" ]] && export FUSEFLOW_NCCL_LIBRARY="$nccl_root/lib/libnccl.so.2"

build_rc=0
targets=(multi_sharded_ops_test multi_sharded_segments_test multi_sharded_errors_test multi_all_gpus multi_per_process)
((run_bench)) && targets+=(fuseflow-bench)
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$repo_root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEFLOW_BUILD_BENCH=ON \
  -DFUSEFLOW_EMULATOR_TESTS=OFF -DFUSEFLOW_GOLDEN=OFF -DCMAKE_CUDA_ARCHITECTURES=90 ${nccl_root:+-DFUSEFLOW_NCCL_ROOT="$nccl_root"} ${doctest_arg:+"$doctest_arg"} \
  > "$OUT/build.log" 2>&1 || build_rc=$?
# Every test executable of tests/multi (tests/multi/NAME_test.cpp builds multi_NAME_test), so
# that a test added later is not left "Not Run": session 10's first x2 runs missed two that way.
for f in "$repo_root"/tests/multi/*_test.cpp; do
  t="multi_$(basename "$f" .cpp)"
  [[ " ${targets[*]} " == *" $t "* ]] || targets+=("$t")
done
((build_rc == 0)) && { cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" >> "$OUT/build.log" 2>&1 || build_rc=$?; }
grep -E "fuseflow: (NCCL|nccl)" "$OUT/build.log"
if ((build_rc)); then grep -E -m 20 'error|Error' "$OUT/build.log"; tail -n 20 "$OUT/build.log"; fi
echo "build: rc $build_rc, $(( $(date +%s) - start )) s"

test_rc=skipped
if ((run_tests && build_rc == 0)); then
  (cd "$build_dir" && timeout 420 ctest -L multigpu --output-on-failure > "$OUT/ctest.log" 2>&1); test_rc=$?
  tail -n 25 "$OUT/ctest.log"
fi

bench_rc=skipped
if ((run_bench && build_rc == 0)); then
  remaining=$(( 570 - ($(date +%s) - start) ))
  (cd "$OUT" && FUSEFLOW_BENCH_OUT="$OUT" timeout "$remaining" "$build_dir/bench/fuseflow-bench" --only multi "${quick[@]}" \
     > "$OUT/bench.log" 2>&1); bench_rc=$?
  cat "$OUT/bench.log"
fi

echo
echo "===== SUMMARY (device_multi.sh) ====="
echo "GPUs: $gpus ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)); links: $(grep -oE 'NV[0-9]+|SYS|PIX|PHB|NODE' "$OUT/topo.txt" | sort | uniq -c | tr '\n' ' ')"
echo "NCCL library: ${FUSEFLOW_NCCL_LIBRARY:-libnccl.so.2 from the loader path}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
echo "build: rc $build_rc"
echo "multigpu tests: rc $test_rc; $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" 2>/dev/null | tail -n1)"
grep -E "(Passed|Failed|Skipped|\*\*\*)" "$OUT/ctest.log" 2>/dev/null | sed 's/^/  /'
echo "bench multi: rc $bench_rc"
sed -n '/^  case /,$p' "$OUT/bench.log" 2>/dev/null | grep -E "^  (case|weak|strong|combine|goal)" | sed 's/^/ /'
grep -iE "mismatch|WRONG" "$OUT/bench.log" 2>/dev/null | head -n 5
echo "total: $(( $(date +%s) - start )) s"
