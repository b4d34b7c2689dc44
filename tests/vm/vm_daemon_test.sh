# SPDX-License-Identifier: Apache-2.0
# Shared by the guest tests that run a client against a real cxlpoold in the
# two-node QEMU guest (sourced, not run). A test script defines its name and
# calls vm_daemon_test_main with its own arguments:
#
#   NAME.sh BUILD_DIR            host: boots the guest through run-in-vm.sh
#   NAME.sh --guest BUILD_DIR    guest: starts BUILD_DIR/daemon/cxlpoold with
#                                the daemon arguments the script passes, waits
#                                for its socket, runs BUILD_DIR/tests/vm/NAME
#                                against it, stops the daemon (SIGTERM) and
#                                requires a clean exit.
#
# Results land in BUILD_DIR/tests/vm/NAME-results (NAME.txt is shown).
readonly kStateDir=/tmp/cxlpool
readonly kSocket=$kStateDir/cxlpoold.sock
readonly kStartTimeout=120  # seconds; TCG is slow and everything comes over 9p

# vm_guest_run NAME BUILD [DAEMON_ARG...]
vm_guest_run() {
  local name=$1 build=$2
  shift 2
  local results=${CXLPOOL_VM_RESULTS:-/tmp}
  local daemon=$build/daemon/cxlpoold client=$build/tests/vm/$name
  if [ ! -d /sys/devices/system/node/node1 ]; then
    echo "SKIP: no NUMA node 1 here (run through run-in-vm.sh)"
    exit 77
  fi
  mkdir -p "$kStateDir"
  "$daemon" --state-dir "$kStateDir" "$@" > "$results/cxlpoold.log" 2>&1 &
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

# vm_host_run NAME SCRIPT BUILD
vm_host_run() {
  local name=$1 script=$2 here build results rc
  here=$(cd "$(dirname "$script")" && pwd)
  build=$(cd "$3" && pwd) || exit 1
  for f in "$build/daemon/cxlpoold" "$build/tests/vm/$name"; do
    [ -x "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }
  done
  results=$build/tests/vm/$name-results
  rm -rf "$results" && mkdir -p "$results" || exit 1
  "$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
    --share "$here/../.." --share "$build" --timeout 600 -- /bin/bash "$here/$name.sh" --guest "$build"
  rc=$?
  if [ -s "$results/$name.txt" ]; then
    echo "---- $name results ($results)"
    cat "$results/$name.txt"
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -s "$results/cxlpoold.log" ]; then
    echo "---- cxlpoold log (errors and tiering lines)"
    grep -i "tiering\|error" "$results/cxlpoold.log" | tail -n 40
  fi
  exit "$rc"
}

# vm_daemon_test_main NAME SCRIPT ARG... : dispatches on the script's arguments.
# In the guest, the function vm_guest_setup (if the script defines it) runs
# first and may set the array VM_DAEMON_ARGS (extra daemon arguments).
vm_daemon_test_main() {
  local name=$1 script=$2
  shift 2
  case "${1:-}" in
    --guest)
      [ $# -eq 2 ] || exit 2
      VM_DAEMON_ARGS=()
      if declare -F vm_guest_setup > /dev/null; then
        vm_guest_setup || exit 1
      fi
      vm_guest_run "$name" "$2" "${VM_DAEMON_ARGS[@]}" ;;
    ''|-*) echo "usage: $script [--guest] BUILD_DIR" >&2; exit 2 ;;
    *) [ $# -eq 1 ] || exit 2; vm_host_run "$name" "$script" "$1" ;;
  esac
}
