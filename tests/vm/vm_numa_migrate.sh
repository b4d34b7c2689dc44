#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tier migration test in the two-node QEMU guest.
#
# usage: vm_numa_migrate.sh BUILD_DIR            (host: boots the guest)
#        vm_numa_migrate.sh --guest BUILD_DIR    (guest: what the VM runs)
#
# In the guest: starts BUILD_DIR/daemon/cxlpoold with its embedded default
# configuration (it finds NUMA node 1, which has no CPUs, and makes it a tier
# of kind cxl), runs BUILD_DIR/tests/vm/vm_numa_migrate against it, then
# stops the daemon and requires a clean exit (tests/vm/vm_daemon_test.sh).
set -u
source "$(dirname "$0")/vm_daemon_test.sh"
vm_daemon_test_main vm_numa_migrate "$0" "$@"
