#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device-pooling step of run-demo.sh: an instance in one network
# namespace (no NIC of its own) sends UDP through another namespace's NIC,
# which the running cxlpoold's pod assigned to it. Prints what happened and
# the round trip; removes its namespaces. Without root, /dev/net/tun or
# iproute2 it prints why it skips.
#   scripts/demo-devpool.sh BUILD_DIR DAEMON_SOCKET
set -euo pipefail
B=$1
socket=$2
if [ "$(id -u)" -ne 0 ]; then echo "skipped: needs root (network namespaces, TAP and veth devices)"; exit 0; fi
if [ ! -e /dev/net/tun ]; then echo "skipped: no /dev/net/tun"; exit 0; fi
if ! command -v ip >/dev/null; then echo "skipped: no ip (iproute2)"; exit 0; fi
if [ ! -x "$B/tests/bench/net_bench" ]; then echo "skipped: $B/tests/bench/net_bench is not built"; exit 0; fi
tag=$$
nic=cxdA$tag inst=cxdB$tag peer=cxdP$tag
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in "$nic" "$inst" "$peer"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for ns in "$nic" "$inst" "$peer"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add dn$tag netns "$nic" type veth peer name dp$tag netns "$peer"
ip -n "$nic" link set dn$tag up
ip -n "$peer" addr add 10.90.0.1/24 dev dp$tag
ip -n "$peer" link set dp$tag gso_max_segs 1 up

wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.05; done; cat "$work"/*.log >&2; exit 1; }
"$B/tools/devpool/cxlpool-devpool" backend --netns "$nic" --socket "$socket" --host nic-host --nic dn$tag \
  --ready-file "$work/backend.ready" 2>"$work/backend.log" &
pids+=($!)
wait_file "$work/backend.ready"
"$B/tools/devpool/cxlpool-devpool" frontend --netns "$inst" --socket "$socket" --host instance-host --tap tp0 \
  --mac 02:00:00:90:00:02 --ready-file "$work/frontend.ready" 2>"$work/frontend.log" &
pids+=($!)
wait_file "$work/frontend.ready"
ip -n "$inst" addr add 10.90.0.2/24 dev tp0
echo "namespace $inst has only a TAP (tp0, 10.90.0.2); its frames cross a link in the pod file"
echo "to the backend in $nic, which sends them on that namespace's NIC (dn$tag) to $peer (10.90.0.1):"
grep -h "attachment\|registered" "$work"/*.log | sed 's/^/  /'
"$B/tools/ctl/cxlpoolctl" --socket "$socket" devices | sed 's/^/  /'
ip netns exec "$peer" "$B/tests/bench/net_bench" udp-echo 10.90.0.1 9000 &
pids+=($!)
sleep 0.2
echo "UDP round trips (64-byte datagrams, instance -> pooled NIC -> peer and back):"
ip netns exec "$inst" "$B/tests/bench/net_bench" udp-rtt 10.90.0.1 9000 1000 64 | sed 's/^/  /'
