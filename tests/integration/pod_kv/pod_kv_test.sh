#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KV store across a pod: two cxlpoold ("hosts" A and B), each in a
# network namespace of its own, joined by a veth pair, with etcd in A's
# namespace; the transfer engine runs tcp;ofi_rxm over the veth (shm off,
# since both namespaces share this host's memory).
#   1. prefill -> decode handoff: a client on A puts chunks, a client on B
#      gets them, byte-exact, and the counters of both say they moved;
#   2. four clients on B get another sequence A put, concurrently, over
#      and over: every byte they are given is right;
#   3. A is killed with SIGKILL: B's get of a sequence only A held is a
#      miss (at once, and after B dropped A), while what B fetched before
#      is still served from B.
# Needs root, iproute2, etcd (Debian's etcd-server) and python3 (exit 77
# otherwise), and libfabric's tcp;ofi_rxm (77 when A's engine cannot open).
#   pod_kv_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL
set -euo pipefail
daemon=${1:?usage: pod_kv_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL}
client=${2:?}
ctl=${3:?}
etcd=${CXLPOOL_ETCD:-$(command -v etcd || true)}
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
  echo "pod_kv_test: needs root and iproute2 (network namespaces); skipped"
  exit 77
fi
if [ -z "$etcd" ] || ! command -v python3 >/dev/null; then
  echo "pod_kv_test: needs etcd (Debian package etcd-server) and python3; skipped"
  exit 77
fi

tag=$$
A=cxkvA$tag
B=cxkvB$tag
dir=$(mktemp -d /tmp/cxlpool-podkv.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for h in a b; do echo "--- daemon $h log (end)"; tail -n 40 "$dir/$h.log" 2>/dev/null || true; done
  exit 1
}

ip netns add "$A"
ip netns add "$B"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip link add "kva_$tag" netns "$A" type veth peer name "kvb_$tag" netns "$B"
ip -n "$A" addr add 10.95.0.1/24 dev "kva_$tag"
ip -n "$B" addr add 10.95.0.2/24 dev "kvb_$tag"
ip -n "$A" link set "kva_$tag" up
ip -n "$B" link set "kvb_$tag" up

etcd_url=http://10.95.0.1:23795
ip netns exec "$A" "$etcd" --name=podkv --data-dir="$dir/etcd" --listen-client-urls="$etcd_url" \
  --advertise-client-urls="$etcd_url" --listen-peer-urls=http://127.0.0.1:23796 \
  --initial-advertise-peer-urls=http://127.0.0.1:23796 --initial-cluster=podkv=http://127.0.0.1:23796 \
  --log-level=warn > "$dir/etcd.log" 2>&1 &
pids+=($!)

config() {  # HOST IP
  cat <<TOML
[daemon]
socket_group = ""
log_level = "debug"

[[emulated_tier]]
name = "emu"
capacity = 268435456
latency_ns = 300
bandwidth_mbps = 15000

[kvstore]
slot_bytes = 1048576
dram_bytes = 134217728
cxl_bytes = 0
put_window_bytes = 33554432
client_quota_bytes = 0

[pod]
state = "etcd"
name = "kv-pod"
host = "$1"
etcd_endpoints = ["$etcd_url"]
lease_ttl_s = 2
etcd_timeout_ms = 500
provider = "tcp;ofi_rxm"
address = "$2:7411"
shm = false
TOML
}
config host-a 10.95.0.1 > "$dir/a.toml"
config host-b 10.95.0.2 > "$dir/b.toml"
mkdir -p "$dir/a" "$dir/b"
ip netns exec "$A" "$daemon" --config "$dir/a.toml" --state-dir "$dir/a" > "$dir/a.log" 2>&1 &
pid_a=$!
pids+=($pid_a)
ip netns exec "$B" "$daemon" --config "$dir/b.toml" --state-dir "$dir/b" > "$dir/b.log" 2>&1 &
pids+=($!)

status() { CXLPOOL_SOCKET="$dir/$1/cxlpoold.sock" "$ctl" pod status --json 2>/dev/null; }
# field HOST PYTHON-EXPRESSION over the status `s`
field() { status "$1" | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)" 2>/dev/null || echo "?"; }
wait_for() {  # HOST EXPRESSION EXPECTED SECONDS
  local i
  for i in $(seq $(($4 * 10))); do
    [ "$(field "$1" "$2")" = "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

if grep -q "transfer engine not opened" "$dir/a.log" 2>/dev/null ||
   { sleep 1; grep -q "transfer engine not opened" "$dir/a.log"; }; then
  grep "transfer engine not opened" "$dir/a.log"
  echo "pod_kv_test: the transfer engine cannot open here; skipped"
  exit 77
fi
for h in a b; do
  wait_for $h "sorted(m['host'] for m in s['members'])" "['host-a', 'host-b']" 20 ||
    fail "daemon $h does not see both members: $(status $h)"
done
[ "$(field b "s['fabric']['transport']")" = "ofi tcp;ofi_rxm" ] || fail "B's transfer engine: $(status b)"

get() { "$client" get "$dir/b/cxlpoold.sock" "$@"; }
put() { "$client" put "$dir/a/cxlpoold.sock" "$@"; }

echo "== 1. prefill on A, decode on B"
put 1 8 1048576 | grep -q "stored=8" || fail "put on A"
out=$(get 1 8 1048576) || fail "get on B: $out"
echo "$out"
[ "$out" = "got=8 bad=0" ] || fail "B did not get A's chunks byte-exact: $out"
[ "$(field b "s['kv']['remote_hits']")" -ge 8 ] || fail "B's counters: $(status b)"
[ "$(field b "[p['fetched_chunks'] for p in s['fabric']['peers'] if p['host']=='host-a'][0]")" -ge 8 ] ||
  fail "B's per-peer counters: $(status b)"
[ "$(field b "s['fabric']['rails'][0]['bytes_read']")" -ge $((8 << 20)) ] || fail "B's rail counters: $(status b)"
[ "$(field a "s['kv']['pins_served']")" -ge 8 ] || fail "A's counters: $(status a)"
CXLPOOL_SOCKET="$dir/b/cxlpoold.sock" "$ctl" pod status

echo "== 2. concurrent gets on B"
put 2 16 262144 | grep -q "stored=16" || fail "put on A"
out=$(get 2 16 262144 4 20) || fail "concurrent gets on B: $out"
echo "$out"
[ "$out" = "got=16 bad=0" ] || fail "concurrent gets: $out (every get should see the whole sequence, byte-exact)"
[ "$(get 2 16 262144)" = "got=16 bad=0" ] || fail "B does not hold all of sequence 2"

echo "== 3. A killed: what only A held is a miss"
put 3 4 1048576 | grep -q "stored=4" || fail "put on A"
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null || true
out=$(get 3 4 1048576) || fail "get on B after A died: $out"
[ "$out" = "got=0 bad=0" ] || fail "B served chunks of a dead host: $out"
wait_for b "sorted(m['host'] for m in s['members'])" "['host-b']" 10 || fail "B still lists A: $(status b)"
out=$(get 3 4 1048576) || fail "get on B after A left: $out"
[ "$out" = "got=0 bad=0" ] || fail "B served chunks of a departed host: $out"
[ "$(get 1 8 1048576)" = "got=8 bad=0" ] || fail "B lost the chunks it fetched before"
echo "pod_kv_test: all passed"
