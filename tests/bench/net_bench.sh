#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The network engine against a direct path, between the same two network
# namespaces:
#   pooled:  hostB (TAP of a cxlpool-devpool frontend, 10.88.0.2)
#            -> link file in /dev/shm -> backend in hostA on veth -> peer (10.88.0.1)
#   direct:  hostB (veth, 10.99.0.2) -> peer (10.99.0.1)
# Both peer-side veths send wire-sized frames (gso_max_segs 1), as a NIC's
# wire would. Reports UDP round-trip p50/p99 (64-byte datagrams), UDP
# throughput (1472-byte datagrams) and TCP throughput for each, and the
# pooled/direct ratios. Needs root; exits 77 (skipped) otherwise.
# NETPORT=afxdp or NETPORT=dpdk runs the backend on that NetPort (default:
# packet; CXLPOOL_DPDK_PMD=af_xdp makes dpdk use net_af_xdp).
#   tests/bench/net_bench.sh [BUILD_DIR] [SECONDS] [RTT_COUNT] [ENGINE_ARGS...]
set -euo pipefail
build=${1:-build}
seconds=${2:-3}
count=${3:-20000}
shift $(( $# < 3 ? $# : 3 ))
engine_args=("$@")
if [ "$(id -u)" != 0 ] || [ ! -e /dev/net/tun ] || ! command -v ip >/dev/null; then
  echo "net_bench: needs root, /dev/net/tun and iproute2; skipped" >&2
  exit 77
fi
devpool="$build/tools/devpool/cxlpool-devpool"
bench="$build/tests/bench/net_bench"
tag=$$
A=cxbA$tag B=cxbB$tag P=cxbP$tag
link=/dev/shm/cxlpool-netbench-$tag.link
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in "$A" "$B" "$P"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -f "$link" "$link.ready"*
}
trap cleanup EXIT
for ns in "$A" "$B" "$P"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add na$tag netns "$A" type veth peer name pa$tag netns "$P"
ip -n "$A" link set na$tag up
ip -n "$P" addr add 10.88.0.1/24 dev pa$tag
ip -n "$P" link set pa$tag gso_max_segs 1 up
ip link add db$tag netns "$B" type veth peer name dp$tag netns "$P"
ip -n "$B" addr add 10.99.0.2/24 dev db$tag
ip -n "$B" link set db$tag gso_max_segs 1 up
ip -n "$P" addr add 10.99.0.1/24 dev dp$tag
ip -n "$P" link set dp$tag gso_max_segs 1 up

"$devpool" format --link-file "$link"
"$devpool" backend --netns "$A" --link-file "$link" --nic na$tag --netport "${NETPORT:-packet}" --ready-file "$link.ready1" "${engine_args[@]}" &
pids+=($!)
"$devpool" frontend --netns "$B" --link-file "$link" --tap tb$tag --mac 02:00:00:88:00:02 --ready-file "$link.ready2" "${engine_args[@]}" &
pids+=($!)
for _ in $(seq 100); do [ -e "$link.ready1" ] && [ -e "$link.ready2" ] && break; sleep 0.05; done
ip -n "$B" addr add 10.88.0.2/24 dev tb$tag

ip netns exec "$P" "$bench" udp-echo 10.88.0.1 9000 & pids+=($!)
ip netns exec "$P" "$bench" udp-echo 10.99.0.1 9000 & pids+=($!)
sleep 0.2

measure() {  # path peer_ip
  local path=$1 ip=$2
  echo "== $path"
  echo -n "udp_rtt_64B "; ip netns exec "$B" "$bench" udp-rtt "$ip" 9000 "$count" 64
  ip netns exec "$P" "$bench" udp-sink "$ip" 9001 > "/tmp/netbench-$tag-udp" &
  local sink=$!
  sleep 0.2
  ip netns exec "$B" "$bench" udp-send "$ip" 9001 "$seconds" 1472 >/dev/null
  wait $sink
  echo -n "udp_1472B "; cat "/tmp/netbench-$tag-udp"
  ip netns exec "$P" "$bench" tcp-sink "$ip" 5001 > "/tmp/netbench-$tag-tcp" &
  sink=$!
  sleep 0.2
  ip netns exec "$B" "$bench" tcp-send "$ip" 5001 "$seconds"
  wait $sink
  echo -n "tcp "; cat "/tmp/netbench-$tag-tcp"
  rm -f "/tmp/netbench-$tag-udp" "/tmp/netbench-$tag-tcp"
}
measure direct 10.99.0.1
measure pooled 10.88.0.1
