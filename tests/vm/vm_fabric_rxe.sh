#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Host side of the vm_fabric_rxe test: the Transport over verbs;ofi_rxm on
# rdma_rxe (soft RoCE) in a guest, whose kernel has the module this host's
# may lack; the guest end (vm_fabric_rxe_guest.sh) makes the rxe devices
# and moves bytes both ways between two fabric_peer processes.
# usage: vm_fabric_rxe.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 1
peer=$build/tests/integration/fabric/fabric_peer
[ -x "$peer" ] || { echo "FAIL: $peer is not built" >&2; exit 1; }

results=$build/tests/vm/vm_fabric_rxe-results
rm -rf "$results" && mkdir -p "$results" || exit 1
# rdma_ucm: rdma_cm for user space (libfabric's verbs connects through it);
# crc32_generic: the "crc32" rxe asks the crypto API for (its packets' ICRC),
# which no module dependency names;
# veth: the links the rxe devices sit on.
"$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
  --share "$build" --share "$here" --modules "rdma_rxe rdma_ucm ib_uverbs crc32_generic veth" --timeout 480 -- \
  "$here/vm_fabric_rxe_guest.sh" "$peer"
rc=$?
if [ -s "$results/vm_fabric_rxe.txt" ]; then
  echo "---- guest end ($results)"
  cat "$results/vm_fabric_rxe.txt"
fi
exit "$rc"
