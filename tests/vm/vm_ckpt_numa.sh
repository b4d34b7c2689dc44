#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Host side of the vm_ckpt_numa test: boots the two-node guest and runs the
# checkpoint on node 1 / restore on node 0 there (vm_ckpt_numa.cpp).
# usage: vm_ckpt_numa.sh BUILD_DIR [--size-mib N]
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--size-mib N]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 1
shift
for p in tests/vm/vm_ckpt_numa tests/bench/ckpt_bench_target tools/ckpt/cxlpool-ckpt tools/ckpt-restore/cxlpool-restore; do
  [ -x "$build/$p" ] || { echo "FAIL: $build/$p is not built" >&2; exit 1; }
done

results=$build/tests/vm/vm_ckpt_numa-results
rm -rf "$results" && mkdir -p "$results" || exit 1
"$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
  --share "$build" --timeout 400 -- "$build/tests/vm/vm_ckpt_numa" "$build/tests/bench/ckpt_bench_target" \
  "$build/tools/ckpt/cxlpool-ckpt" "$build/tools/ckpt-restore/cxlpool-restore" "$@"
rc=$?
if [ -s "$results/vm_ckpt_numa.txt" ]; then
  echo "---- vm_ckpt_numa results ($results)"
  cat "$results/vm_ckpt_numa.txt"
fi
exit "$rc"
