#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The vm_devpool_channel program with both ends on this host over one tmpfs
# file (no QEMU), so its exchange and its checks run in the default suite:
# a clean exchange passes, and one record sent with a bad checksum makes the
# receiving end fail naming that record.
# usage: vm_devpool_channel_selftest.sh PROGRAM
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 PROGRAM" >&2; exit 2; }
peer=$1
. "$here/channel_host_end.sh"

start_channel_host "$peer" --count 50000 --timeout-ms 60000
"$peer" guest --file "$channel_dir/link" --timeout-ms 60000 > "$channel_dir/guest.txt" 2>&1
guest_rc=$?
stop_channel_host
cat "$channel_dir/host.txt" "$channel_dir/guest.txt"
if [ "$guest_rc" -ne 0 ] || [ "$channel_host_rc" -ne 0 ]; then
  echo "FAIL: clean exchange: host exited $channel_host_rc, guest $guest_rc"
  exit 1
fi

# The host end then waits for records the failed guest never sends, and
# gives up after its short timeout.
start_channel_host "$peer" --count 50000 --timeout-ms 3000 --corrupt-at 12345
"$peer" guest --file "$channel_dir/link" --timeout-ms 60000 > "$channel_dir/guest.txt" 2>&1
guest_rc=$?
stop_channel_host
cat "$channel_dir/guest.txt"
if [ "$guest_rc" -ne 1 ] || ! grep -q "record 12345: " "$channel_dir/guest.txt"; then
  echo "FAIL: the guest end did not report the corrupt record 12345 (exit $guest_rc)"
  exit 1
fi
echo "PASS: clean exchange passed, corrupt record caught"
