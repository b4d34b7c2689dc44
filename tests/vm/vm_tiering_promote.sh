#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end test of the tiering engine in the two-node QEMU guest.
#
# usage: vm_tiering_promote.sh BUILD_DIR            (host: boots the guest)
#        vm_tiering_promote.sh --guest BUILD_DIR    (guest: what the VM runs)
#
# In the guest: starts BUILD_DIR/daemon/cxlpoold with a configuration whose
# fast tier is DRAM node 0 and slow tier the memory-only node 1 (the cxl
# tier) and short tiering epochs, runs BUILD_DIR/tests/vm/vm_tiering_promote
# against it (hot pages must reach node 0, cold ones stay on node 1, cooled
# ones go back under fast-tier pressure), then stops the daemon and requires
# a clean exit (tests/vm/vm_daemon_test.sh).
set -u
source "$(dirname "$0")/vm_daemon_test.sh"

# Writes the daemon's configuration and points the daemon at it.
vm_guest_setup() {
  mkdir -p "$kStateDir"
  cat > "$kStateDir/cxlpoold.toml" << 'EOF2'
[daemon]
socket_group = ""
log_level = "debug"

[tiering]
epoch_ms = 200
sources = ["client"]
EOF2
  VM_DAEMON_ARGS=(--config "$kStateDir/cxlpoold.toml")
}

vm_daemon_test_main vm_tiering_promote "$0" "$@"
