#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/bench/ckpt_restore.sh inside the QEMU guest (tests/vm/run-in-vm.sh,
# Debian's 6.1 kernel), where CRIU runs, so that its restore is measured
# beside cxlpool's in the same run (docs/perf.md "Checkpoint restore").
# CRIU's kernel checks need nf_tables, the socket diag modules and a
# loopback interface, which the guest gets here; the guest's memory is sized
# for the largest process asked for (our image, CRIU's images and a clone
# live at once). Needs root, QEMU, busybox-static and criu on the host.
#
#   tests/bench/ckpt_restore_vm.sh [BUILD_DIR] [SIZES_MIB...]   (default 64 512)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd) || exit 1
shift || true
sizes=("${@:-64 512}")
[[ $(id -u) == 0 ]] || { echo "ckpt_restore_vm.sh: needs root" >&2; exit 77; }
command -v criu > /dev/null || { echo "ckpt_restore_vm.sh: criu is not installed (apt-get install criu)" >&2; exit 77; }
largest=0
for s in ${sizes[*]}; do
  case "$s" in ''|*[!0-9]*) echo "ckpt_restore_vm.sh: sizes are MiB, got '$s'" >&2; exit 2 ;; esac
  (( s > largest )) && largest=$s
done
# Four copies of the largest process and room for the rest, on node 0.
node0_mib=$(( largest * 4 + 1024 ))
results=$build/tests/bench/ckpt_restore_vm-results
rm -rf "$results" && mkdir -p "$results" || exit 1
"$here/../vm/run-in-vm.sh" --cache "${CXLPOOL_VM_CACHE:-$build/vm-cache}" --results "$results" \
  --share "$build" --share "$here" --mem-node0 "${node0_mib}M" --timeout 3000 \
  --modules "crc32c_generic nf_tables unix_diag netlink_diag inet_diag tcp_diag udp_diag" -- \
  bash -c 'ip link set lo up && exec "$0" "$@"' "$here/ckpt_restore.sh" "$build" ${sizes[*]}
