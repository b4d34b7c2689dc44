#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failover of a pooled NIC, measured: how long traffic stops when the
# backend that carries it is killed (kill -9) and its frontend moves to the
# backup NIC on another host.
#
#   peer (10.66.0.1) ── lan bridge ──┬── hostA NIC: backend (registered with the pod)
#                                    └── hostC NIC: backend (registered with the pod)
#   hostB: frontend only (TAP 10.66.0.2), attached through the pod daemon:
#          primary on hostA's NIC, backup on hostC's
#
# One cxlpoold (devpool enabled; lease_ms and telemetry_ms below) in the root
# namespace; every engine reaches it by its socket's path.
#   1. UDP: peer sends FAILOVER_RATE numbered 64-byte datagrams/s to an echo
#      on hostB; hostA's backend is killed in the middle; prints the longest
#      time without an echo after the kill (event_gap_ms: the failover), the
#      longest anywhere in the run (max_gap_ms, gap_at_s: scheduling noise of
#      a loaded machine shows there too) and the datagrams lost.
#   2. TCP: hostA's backend is started again (it becomes the backup), hostB
#      sends to the peer for FAILOVER_SECONDS; hostC's backend (now the
#      primary) is killed in the middle; prints the longest time the peer
#      received nothing (max_gap_ms) and when (gap_at_s, from the first byte).
# Needs root, /dev/net/tun and iproute2; exits 77 (skipped) otherwise.
#   tests/bench/devpool_failover.sh [BUILD_DIR]
# Environment: FAILOVER_RATE (datagrams/s, default 10000), FAILOVER_SECONDS
# (default 4), FAILOVER_LEASE_MS (default 1000), FAILOVER_TELEMETRY_MS
# (default 100).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
rate=${FAILOVER_RATE:-10000}
seconds=${FAILOVER_SECONDS:-4}
lease_ms=${FAILOVER_LEASE_MS:-1000}
telemetry_ms=${FAILOVER_TELEMETRY_MS:-100}
if [ "$(id -u)" != 0 ] || [ ! -e /dev/net/tun ] || ! command -v ip >/dev/null; then
  echo "devpool_failover: needs root, /dev/net/tun and iproute2; skipped" >&2
  exit 77
fi
devpool="$build/tools/devpool/cxlpool-devpool"
bench="$build/tests/bench/net_bench"
source tests/bench/bench_daemon.sh
tag=$$
A=cxfA$tag B=cxfB$tag C=cxfC$tag L=cxfL$tag P=cxfP$tag
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for ns in "$A" "$B" "$C" "$L" "$P"; do ip netns del "$ns" 2>/dev/null || true; done
  bench_cleanup
}
bench_make_workdir /tmp cxlpool-failover
trap cleanup EXIT

for ns in "$A" "$B" "$C" "$L" "$P"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n "$L" link add br0 type bridge
ip -n "$L" link set br0 up
plug() {  # namespace nic-name lan-name
  ip link add "$2" netns "$1" type veth peer name "$3" netns "$L"
  ip -n "$L" link set "$3" master br0 gso_max_segs 1 up
  ip -n "$1" link set "$2" gso_max_segs 1 up
}
plug "$A" nA$tag lA$tag
plug "$C" nC$tag lC$tag
plug "$P" nP$tag lP$tag
ip -n "$P" addr add 10.66.0.1/24 dev nP$tag

config=$work/cxlpoold.toml
cat > "$config" <<TOML
[daemon]
socket_group = ""

[[emulated_tier]]
name = "emu"
capacity = 67108864
latency_ns = 300
bandwidth_mbps = 15000

[devpool]
lease_ms = $lease_ms
telemetry_ms = $telemetry_ms
TOML
bench_start_daemon "$build/daemon/cxlpoold" "$config"

ready() {  # file: waits up to 10 s
  for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done
  echo "devpool_failover: an engine did not start:" >&2
  cat "$work"/*.log >&2
  exit 1
}
backend() {  # namespace host nic -> pid in $last
  rm -f "$work/$2.ready"
  "$devpool" backend --netns "$1" --socket "$sock" --host "$2" --nic "$3" --netport packet \
    --ready-file "$work/$2.ready" 2>>"$work/$2.log" &
  last=$!
  pids+=($last)
  ready "$work/$2.ready"
}
backend "$A" hostA nA$tag; pidA=$last
backend "$C" hostC nC$tag; pidC=$last
"$devpool" frontend --netns "$B" --socket "$sock" --host hostB --tap tB$tag --mac 02:00:00:66:00:02 \
  --prefer nA$tag --prefer-host hostA --ready-file "$work/hostB.ready" 2>>"$work/hostB.log" &
pids+=($!)
ready "$work/hostB.ready"
ip -n "$B" addr add 10.66.0.2/24 dev tB$tag
ip netns exec "$B" "$bench" udp-echo 10.66.0.2 9000 & pids+=($!)
sleep 0.3
echo "lease_ms $lease_ms telemetry_ms $telemetry_ms rate $rate/s seconds $seconds"
echo "before:"
"$build/tools/ctl/cxlpoolctl" --socket "$sock" devices

echo "== UDP: kill -9 hostA's backend (primary) at $(( seconds / 2 )) s"
ip netns exec "$P" "$bench" udp-stream 10.66.0.2 9000 "$seconds" "$rate" "$(echo "$seconds / 2" | bc -l)" \
  > "$work/udp.json" &
stream=$!
sleep "$(echo "$seconds / 2" | bc -l)"
kill -9 "$pidA"
wait "$stream"
echo -n "udp_failover "; cat "$work/udp.json"

echo "== TCP: hostA's backend again (the backup), kill -9 hostC's (primary) at $(( seconds / 2 )) s"
backend "$A" hostA nA$tag
sleep 0.3
ip netns exec "$P" "$bench" tcp-sink 10.66.0.1 5001 > "$work/tcp.json" &
sink=$!
sleep 0.2
ip netns exec "$B" "$bench" tcp-send 10.66.0.1 5001 "$seconds" &
sender=$!
sleep "$(echo "$seconds / 2" | bc -l)"
kill -9 "$pidC"
wait "$sender" || true
wait "$sink"
echo -n "tcp_failover "; cat "$work/tcp.json"
echo "after:"
"$build/tools/ctl/cxlpoolctl" --socket "$sock" devices
echo "frontend log:"; cat "$work/hostB.log"
