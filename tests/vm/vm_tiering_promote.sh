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
# a clean exit.
set -u
readonly kStateDir=/tmp/cxlpool
readonly kSocket=$kStateDir/cxlpoold.sock
readonly kStartTimeout=120  # seconds; TCG is slow and everything comes over 9p

guest() {
  local build=$1
  local results=${CXLPOOL_VM_RESULTS:-/tmp}
  local daemon=$build/daemon/cxlpoold client=$build/tests/vm/vm_tiering_promote
  if [ ! -d /sys/devices/system/node/node1 ]; then
    echo "SKIP: no NUMA node 1 here (run through run-in-vm.sh)"
    exit 77
  fi
  mkdir -p "$kStateDir"
  cat > "$kStateDir/cxlpoold.toml" << 'EOF2'
[daemon]
socket_group = ""
log_level = "debug"

[tiering]
epoch_ms = 200
sources = ["client"]
EOF2
  "$daemon" --config "$kStateDir/cxlpoold.toml" --state-dir "$kStateDir" > "$results/cxlpoold.log" 2>&1 &
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
  for f in "$build/daemon/cxlpoold" "$build/tests/vm/vm_tiering_promote"; do
    [ -x "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }
  done
  results=$build/tests/vm/vm_tiering_promote-results
  rm -rf "$results" && mkdir -p "$results" || exit 1
  "$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
    --share "$here/../.." --share "$build" --timeout 600 -- /bin/bash "$here/vm_tiering_promote.sh" --guest "$build"
  rc=$?
  if [ -s "$results/vm_tiering_promote.txt" ]; then
    echo "---- vm_tiering_promote results ($results)"
    cat "$results/vm_tiering_promote.txt"
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -s "$results/cxlpoold.log" ]; then
    echo "---- cxlpoold log (tiering lines)"
    grep -i "tiering\|error" "$results/cxlpoold.log" | tail -n 40
  fi
  exit "$rc"
}

case "${1:-}" in
  --guest) [ $# -eq 2 ] || exit 2; guest "$2" ;;
  ''|-*) echo "usage: $0 [--guest] BUILD_DIR" >&2; exit 2 ;;
  *) [ $# -eq 1 ] || exit 2; host "$1" ;;
esac
