#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Host side of the vm_devpool_channel test: a device channel between this
# kernel and a guest's. The host end creates a file on /dev/shm, formats
# two non-coherent channels in it and waits; the guest gets the same file
# as its ivshmem-plain BAR 2; both send and check COUNT records each way.
# usage: vm_devpool_channel.sh BUILD_DIR [COUNT]
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 BUILD_DIR [COUNT]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 1
count=${2:-200000}
peer=$build/tests/vm/vm_devpool_channel
[ -x "$peer" ] || { echo "FAIL: $peer is not built" >&2; exit 1; }
command -v qemu-system-x86_64 > /dev/null ||
  { echo "SKIP: qemu-system-x86_64 not found (apt-get install qemu-system-x86)"; exit 77; }
qemu-system-x86_64 -device help 2> /dev/null | grep -q '"ivshmem-plain"' ||
  { echo "SKIP: this QEMU has no ivshmem-plain device"; exit 77; }

results=$build/tests/vm/vm_devpool_channel-results
rm -rf "$results" && mkdir -p "$results" || exit 1
. "$here/channel_host_end.sh"

start_channel_host "$peer" --count "$count" --timeout-ms 280000
"$here/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
  --share "$build" --ivshmem "$channel_dir/link" --timeout 300 -- "$peer" guest --timeout-ms 240000
guest_rc=$?
# Otherwise the host end waits for records that will not come.
[ "$guest_rc" -ne 0 ] && kill "$channel_host_pid" 2> /dev/null
stop_channel_host
echo "---- host end"
cat "$channel_dir/host.txt"
if [ -s "$results/vm_devpool_channel_guest.txt" ]; then
  echo "---- guest end ($results)"
  cat "$results/vm_devpool_channel_guest.txt"
fi
[ "$guest_rc" -eq 77 ] && exit 77
[ "$guest_rc" -ne 0 ] && { echo "FAIL: guest end exited $guest_rc"; exit 1; }
[ "$channel_host_rc" -ne 0 ] && { echo "FAIL: host end exited $channel_host_rc"; exit 1; }
echo "PASS: $count records each way between two kernels"
exit 0
