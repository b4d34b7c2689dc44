#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KV store across a pod: two cxlpoold ("hosts" A and B), each in a
# network namespace of its own, joined by a veth pair, with etcd in A's
# namespace; the transfer engine runs tcp;ofi_rxm over the veth (shm off,
# since both namespaces share this host's memory). Both daemons hold the
# pod's secret ([pod] secret_file): their control connections start with
# the handshake. etcd's authentication is on: the daemons call it as a
# user whose role may only use /cxlpool/ ([pod] etcd_user,
# etcd_password_file).
#   1. prefill -> decode handoff: a client on A puts chunks, a client on B
#      gets them, byte-exact, and the counters of both say they moved;
#   2. four clients on B get another sequence A put, concurrently, over
#      and over: every byte they are given is right;
#   3. chunks A keeps only on its SSD tier (pushed out of A's DRAM by
#      other puts): B gets them byte-exact, A read them into DRAM for it;
#   4. B's lookup of a prefix only A holds reports it (result2), without
#      fetching it;
#   5. a client on B's network that sends A a pin without the handshake
#      is closed without an answer, and A counts it (pod.kv.auth_failures);
#      so are 100 that connect and close, without A keeping their threads;
#   6. etcd restarts (its tokens are gone): both daemons authenticate
#      again and are connected, with both members listed;
#   7. A is killed with SIGKILL: B's get of a sequence only A held is a
#      miss (at once, and after B dropped A), while what B fetched before
#      is still served from B.
# Needs root, iproute2, etcd (Debian's etcd-server) and python3 (exit 77
# otherwise), and libfabric's tcp;ofi_rxm (77 when A's engine cannot open).
#   pod_kv_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL
set -euo pipefail
daemon=${1:?usage: pod_kv_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL}
client=${2:?}
ctl=${3:?}
source "$(dirname "$0")/pod_kv_lab.sh"
pod_kv_lab kv 95 "$daemon" "$ctl"
fail() {
  echo "FAIL: $*"
  for h in a b; do echo "--- daemon $h log (end)"; tail -n 40 "$dir/$h.log" 2>/dev/null || true; done
  exit 1
}
kv_keys="slot_bytes = 1048576
dram_bytes = 134217728
put_window_bytes = 33554432"
head -c 32 /dev/urandom > "$dir/pod.key"
chmod 600 "$dir/pod.key"
(umask 077; printf 'member-pw\n' > "$dir/etcd.pw")
pod_kv_etcd_auth cxlpool-member member-pw || fail "could not turn etcd's authentication on"
pod_keys="secret_file = \"$dir/pod.key\"
etcd_user = \"cxlpool-member\"
etcd_password_file = \"$dir/etcd.pw\""
# A: 48 DRAM slots over an SSD tier that every commit is written through to,
# so that chunks pushed out of DRAM are on SSD only.
pod_kv_start a "slot_bytes = 1048576
dram_bytes = 50331648
put_window_bytes = 33554432
ssd_path = \"$dir/a-ssd.img\"
ssd_bytes = 268435456
ssd_region_bytes = 4194304
ssd_sync = \"per-commit\"" "$pod_keys"
pod_kv_start b "$kv_keys" "$pod_keys"
pod_kv_wait_both
[ "$(field b "s['fabric']['transport']")" = "ofi tcp;ofi_rxm" ] || fail "B's transfer engine: $(status b)"

get() { "$client" get "$dir/b/cxlpoold.sock" "$@"; }
put() { "$client" put "$dir/a/cxlpoold.sock" "$@"; }
lookup() { "$client" lookup "$dir/$1/cxlpoold.sock" "${@:2}"; }
metric() {  # HOST NAME: a counter of `cxlpoolctl stats`
  CXLPOOL_SOCKET="$dir/$1/cxlpoold.sock" "$ctl" stats 2>/dev/null | awk -v n="$2" '$1 == n {print $2}'
}
# counter HOST NAME: one of the daemon's counters (`cxlpoolctl stats`).
counter() {
  CXLPOOL_SOCKET="$dir/$1/cxlpoold.sock" "$ctl" --json stats 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin).get('$2', '?'))" 2>/dev/null || echo "?"
}
wait_counter() {  # HOST NAME AT-LEAST SECONDS
  local i v
  for i in $(seq $(($4 * 10))); do
    v=$(counter "$1" "$2")
    [ "$v" != "?" ] && [ "$v" -ge "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

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

echo "== 3. chunks A keeps only on SSD"
put 4 4 1048576 | grep -q "stored=4" || fail "put on A"
"$client" fill "$dir/a/cxlpoold.sock" 40 64 1048576 | grep -q "stored=64" || fail "filling A's DRAM"
out=$(lookup a 4 4 1048576) || fail "lookup on A: $out"
[ "$out" = "local=4 ssd=4 pod=0" ] || fail "A should hold sequence 4 on SSD only: $out"
out=$(get 4 4 1048576) || fail "get on B: $out"
echo "$out"
[ "$out" = "got=4 bad=0" ] || fail "B did not get A's SSD chunks byte-exact: $out"
[ "$(metric a pod.kv.ssd_loads_for_peers)" -ge 4 ] || fail "A's ssd_loads_for_peers: $(metric a pod.kv.ssd_loads_for_peers)"

echo "== 4. B's lookup sees what A holds"
put 5 3 1048576 | grep -q "stored=3" || fail "put on A"
out=$(lookup b 5 3 1048576) || fail "lookup on B: $out"
echo "$out"
[ "$out" = "local=0 ssd=0 pod=3" ] || fail "B's lookup of A's prefix: $out"
[ "$(lookup b 4 4 1048576)" = "local=4 ssd=0 pod=0" ] || fail "B's lookup of what it holds: $(lookup b 4 4 1048576)"
[ "$(lookup b 6 2 1048576)" = "local=0 ssd=0 pod=0" ] || fail "B's lookup of what nobody holds: $(lookup b 6 2 1048576)"
[ "$(metric b pod.kv.lookup_probe_hits)" -ge 3 ] || fail "B's lookup_probe_hits: $(metric b pod.kv.lookup_probe_hits)"
[ "$(metric a pod.kv.probes_served)" -ge 2 ] || fail "A's probes_served: $(metric a pod.kv.probes_served)"
[ "$(get 5 3 1048576)" = "got=3 bad=0" ] || fail "B's get after the lookup"

echo "== 5. a pin without the handshake is refused"
grep -q "secret_file is not set" "$dir/a.log" && fail "A says it runs without a secret"
for h in a b; do
  [ "$(counter $h pod.kv.auth_failures)" = 0 ] || fail "a handshake between A and B failed ($h counted one)"
done
out=$(ip netns exec "$B" python3 - "10.$lab_net.0.1" 7411 <<'PY'
import socket, struct, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
# A pin request (type 1) of one key, in B's name, as kv_peer_wire.hpp frames it.
body = struct.pack("<H", 6) + b"host-b" + struct.pack("<QQI", 1, 2, 1) + struct.pack("<QQ", 3, 4)
s.sendall(struct.pack("<IHHIQ", 0x4B505843, 1, 1, len(body), 1) + body)
try:
    data = s.recv(4096)
except ConnectionResetError:
    data = b""
print("closed" if data == b"" else "answered with %d bytes" % len(data))
PY
) || fail "the raw client: $out"
[ "$out" = "closed" ] || fail "A answered a pin that skipped the handshake: $out"
wait_counter a pod.kv.auth_failures 1 5 ||
  fail "A did not count the refused connection: $(counter a pod.kv.auth_failures)"
grep -q "KV control connection from 10.$lab_net.0.2:[0-9]* refused" "$dir/a.log" || fail "A did not log the refusal"
# 100 more that connect and close at once: each is counted, and A joins the
# threads that served them (an exited thread left unjoined keeps its 8 MiB
# stack mapped: 100 would add 800 MiB to A's address space).
vm_before=$(awk '/^VmSize/ {print $2}' "/proc/$pid_a/status")
ip netns exec "$B" python3 - "10.$lab_net.0.1" 7411 <<'PY' || fail "the raw client could not connect"
import socket, sys, time
for _ in range(100):
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
    time.sleep(0.002)
PY
wait_counter a pod.kv.auth_failures 101 10 || fail "A counted $(counter a pod.kv.auth_failures) of 101 refused connections"
# The accept thread joins returned threads every second.
for i in $(seq 50); do
  vm_after=$(awk '/^VmSize/ {print $2}' "/proc/$pid_a/status")
  [ $((vm_after - vm_before)) -lt $((256 * 1024)) ] && break
  sleep 0.1
done
# Under AddressSanitizer the address space also holds the sanitizer's
# shadow and quarantine, which grow on their own: the bound is for the
# plain build (the count above still holds there).
if ldd "$daemon" 2>/dev/null | grep libasan >/dev/null; then
  echo "pod_kv_test: address-space bound not checked (AddressSanitizer build; grew $((vm_after - vm_before)) KiB)"
else
  [ $((vm_after - vm_before)) -lt $((256 * 1024)) ] ||
    fail "A's address space grew by $((vm_after - vm_before)) KiB over 100 refused connections"
fi
put 7 4 1048576 | grep -q "stored=4" || fail "put on A"
[ "$(get 7 4 1048576)" = "got=4 bad=0" ] || fail "B's authenticated gets stopped working"

echo "== 6. etcd restarted: the daemons authenticate again"
errors_before=$(field b "s['etcd_errors']")
kill "$pid_etcd"
wait "$pid_etcd" 2>/dev/null || true
pod_kv_etcd_start
for h in a b; do
  wait_for $h "s['connected'] and sorted(m['host'] for m in s['members'])" "['host-a', 'host-b']" 15 ||
    fail "daemon $h did not come back to etcd: $(status $h)"
done
[ "$(field b "s['etcd_errors']")" -gt "$errors_before" ] || fail "B did not notice etcd's restart: $(status b)"
put 8 2 1048576 | grep -q "stored=2" || fail "put on A"
[ "$(get 8 2 1048576)" = "got=2 bad=0" ] || fail "gets after etcd's restart"

echo "== 7. A killed: what only A held is a miss"
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
