#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end tier migration test in the two-node QEMU guest.
#
# usage: vm_numa_migrate.sh BUILD_DIR            (host: boots the guest)
#        vm_numa_migrate.sh --guest BUILD_DIR    (guest: what the VM runs)
#
# In the guest: starts BUILD_DIR/daemon/cxlpoold with its embedded default
# configuration (it finds NUMA node 1, which has no CPUs, and makes it a tier
# of kind cxl), waits for its socket, runs BUILD_DIR/tests/vm/vm_numa_migrate
# against it, then stops the daemon and requires a clean exit.
set -u
readonly kStateDir=/tmp/cxlpool
readonly kSocket=$kStateDir/cxlpoold.sock
readonly kStartTimeout=120  # seconds; TCG is slow and everything comes over 9p

guest() {
  local build=$1
  local results=${CXLPOOL_VM_RESULTS:-/tmp}
  local daemon=$build/daemon/cxlpoold client=$build/tests/vm/vm_numa_migrate
  if [ ! -d /sys/devices/system/node/node1 ]; then
    echo "SKIP: no NUMA node 1 here (run through run-in-vm.sh)"
    exit 77
  fi
  mkdir -p "$kStateDir"
  "$daemon" --state-dir "$kStateDir" > "$results/cxlpoold.log" 2>&1 &
  local daemon_pid=$! waited=0
  while [ ! -S "$kSocket" ]; do
    if ! kill -0 "$daemon_pid" 2> /dev/null; then
      wait "$daemon_pid"
      echo "FAIL: cxlpoold exited with $? before creating $kSocket; its log:"
      cat "$results/cxlpoold.log"
      exit 1
    fi
    if [ "$waited" -ge $((kStartTimeout * 10)) ]; then
      echo "FAIL: no socket $kSocket after ${kStartTimeout} s; cxlpoold log:"
      cat "$results/cxlpoold.log"
      kill -KILL "$daemon_pid"
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "cxlpoold (pid $daemon_pid) listening after $((waited / 10)).$((waited % 10)) s"

  "$client" --socket "$kSocket"
  local rc=$?

  kill -TERM "$daemon_pid"
  waited=0
  while kill -0 "$daemon_pid" 2> /dev/null && [ "$waited" -lt 200 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$daemon_pid" 2> /dev/null; then
    echo "FAIL: cxlpoold still running 20 s after SIGTERM"
    kill -KILL "$daemon_pid"
    rc=1
  else
    wait "$daemon_pid"
    local daemon_rc=$?
    if [ "$daemon_rc" -ne 0 ]; then
      echo "FAIL: cxlpoold exited with $daemon_rc after SIGTERM"
      rc=1
    fi
  fi
  if [ "$rc" -ne 0 ]; then
    echo "---- cxlpoold log"
    tail -n 50 "$results/cxlpoold.log"
  fi
  exit "$rc"
}

host() {
  local here build results rc
  here=$(cd "$(dirname "$0")" && pwd)
  build=$(cd "$1" && pwd) || exit 1
  for f in "$build/daemon/cxlpoold" "$build/tests/vm/vm_numa_migrate"; do
    [ -x "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }
  done
  results=$build/tests/vm/vm_numa_migrate-results
  rm -rf "$results" && mkdir -p "$results" || exit 1
  "$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
    --share "$here/../.." --share "$build" --timeout 600 -- /bin/bash "$here/vm_numa_migrate.sh" --guest "$build"
  rc=$?
  if [ -s "$results/vm_numa_migrate.txt" ]; then
    echo "---- vm_numa_migrate results ($results)"
    cat "$results/vm_numa_migrate.txt"
  fi
  exit "$rc"
}

case "${1:-}" in
  --guest) [ $# -eq 2 ] || exit 2; guest "$2" ;;
  ''|-*) echo "usage: $0 [--guest] BUILD_DIR" >&2; exit 2 ;;
  *) [ $# -eq 1 ] || exit 2; host "$1" ;;
esac
