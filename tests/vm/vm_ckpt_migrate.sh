#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checkpoint daemon test whose image moves to another tier while a clone
# maps it, in the two-node QEMU guest: on a one-node host it skips, since
# the daemon's tiers share the node (docs/ckpt.md "Through the daemon").
# usage: vm_ckpt_migrate.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 1
test_exe=$build/tests/integration/ckpt_daemon/test_ckpt_daemon
for p in "$test_exe" "$build/daemon/cxlpoold" "$build/tools/ctl/cxlpoolctl" "$build/tests/ckpt_targets/ckpt_target" \
         "$build/tools/ckpt-restore/cxlpool-restore"; do
  [ -x "$p" ] || { echo "FAIL: $p is not built" >&2; exit 1; }
done
results=$build/tests/vm/vm_ckpt_migrate-results
rm -rf "$results" && mkdir -p "$results" || exit 1
"$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" --share "$build" \
  --timeout 400 -- env CXLPOOL_DAEMON="$build/daemon/cxlpoold" CXLPOOL_CTL="$build/tools/ctl/cxlpoolctl" \
  CXLPOOL_CKPT_TARGET="$build/tests/ckpt_targets/ckpt_target" LD_LIBRARY_PATH="$build/lib/client" \
  "$test_exe" --gtest_filter='CkptDaemon.TheImageMovesToAnotherTierWhileACloneMapsIt'
rc=$?
# Two nodes in the guest: the case must have run, not skipped.
if [ "$rc" -eq 0 ] && ! grep -q '^\[       OK \] CkptDaemon.TheImageMovesToAnotherTierWhileACloneMapsIt' "$results/output.log"; then
  echo "FAIL: the test did not run to its end in the guest (see $results/output.log)"
  exit 1
fi
exit "$rc"
