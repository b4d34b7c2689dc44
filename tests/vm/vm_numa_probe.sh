#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Host side of the vm_numa_probe test: boots the two-node guest and runs the
# probe there. usage: vm_numa_probe.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 1
probe=$build/tests/vm/vm_numa_probe
[ -x "$probe" ] || { echo "FAIL: $probe is not built" >&2; exit 1; }

results=$build/tests/vm/vm_numa_probe-results
rm -rf "$results" && mkdir -p "$results" || exit 1
"$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
  --share "$build" --timeout 240 -- "$probe"
rc=$?
if [ -s "$results/vm_numa_probe.txt" ]; then
  echo "---- vm_numa_probe results ($results)"
  cat "$results/vm_numa_probe.txt"
fi
exit "$rc"
