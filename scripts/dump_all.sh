#!/usr/bin/env bash
# Writes the generated CUDA (and the plan) of every catalog program, for sm_90 and sm_80,
# into DIR, one file per program and arch: compare two trees' DIRs with `diff -r` to see
# which kernels a change touched.
#   scripts/dump_all.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=${1:?usage: dump_all.sh BUILD_DIR OUT_DIR}
out=${2:?usage: dump_all.sh BUILD_DIR OUT_DIR}
dump="$build/examples/fuseflow-dump"
[[ -x $dump ]] || { echo "dump_all.sh: $dump not built (target fuseflow-dump)" >&2; exit 2; }
mkdir -p "$out"
count=0
for name in $("$dump" --list | awk '{print $1}'); do
  for arch in sm_90 sm_80; do
    "$dump" --example "$name" --arch "$arch" --emit cuda >"$out/$name.$arch.cu"
    "$dump" --example "$name" --arch "$arch" --emit plan >"$out/$name.$arch.plan"
    count=$((count + 1))
  done
done
echo "dump_all.sh: $count program/arch pairs written to $out"
