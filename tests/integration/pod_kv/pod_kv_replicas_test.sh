#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replicas of the KV store across a pod ([pod] replica_num = 2): three
# cxlpoold ("hosts" A, B and C), each in a network namespace of its own,
# their veths on a bridge, etcd in A's namespace; the transfer engine runs
# tcp;ofi_rxm (shm off: the namespaces share this host's memory).
#   1. A puts a sequence while it is alone in the pod: no member can hold
#      a copy, and A counts the copies it could not make;
#   2. with B and C up, A puts another sequence: one of B and C copies
#      all of it (the other none), A counts the request its peer accepted;
#   3. A is killed with SIGKILL: a get on the host that holds no copy
#      returns the second sequence byte-exact, read from the copy; the
#      first, which only A held, is a miss on both (at once, and after A
#      left the member table), never stale bytes.
# Needs root, iproute2, etcd (Debian's etcd-server) and python3 (exit 77
# otherwise), and libfabric's tcp;ofi_rxm (77 when A's engine cannot open).
#   pod_kv_replicas_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL
set -euo pipefail
daemon=${1:?usage: pod_kv_replicas_test.sh CXLPOOLD POD_KV_CLIENT CXLPOOLCTL}
client=${2:?}
ctl=${3:?}
source "$(dirname "$0")/pod_kv_lab.sh"
pod_kv_lab kr 97 "$daemon" "$ctl" "a b c"
fail() {
  echo "FAIL: $*"
  for h in a b c; do echo "--- daemon $h log (end)"; tail -n 40 "$dir/$h.log" 2>/dev/null || true; done
  exit 1
}
kv_keys="slot_bytes = 262144
dram_bytes = 67108864
put_window_bytes = 8388608"
pod_keys="replica_num = 2"
put() { "$client" put "$dir/a/cxlpoold.sock" "$@"; }
get() { local h=$1; shift; "$client" get "$dir/$h/cxlpoold.sock" "$@"; }

echo "== 1. a put on A while it is alone: no copy can be made"
pod_kv_start a "$kv_keys" "$pod_keys"
wait_for a "sorted(m['host'] for m in s['members'])" "['host-a']" 20 || fail "A did not join: $(status a)"
put 5 4 262144 | grep -q "stored=4" || fail "put of sequence 5 on A"
wait_for a "s['kv']['replication_dropped'] >= 4" True 10 || fail "A did not count the copies it dropped: $(status a)"

echo "== 2. with B and C up, a put on A is copied to one of them"
pod_kv_start b "$kv_keys" "$pod_keys"
pod_kv_start c "$kv_keys" "$pod_keys"
pod_kv_wait_all
[ "$(field c "s['fabric']['transport']")" = "ofi tcp;ofi_rxm" ] || fail "C's transfer engine: $(status c)"
put 1 8 262144 | grep -q "stored=8" || fail "put of sequence 1 on A"
copies_on() { field "$1" "s['kv']['replicated_chunks']" | sed 's/?/0/'; }
copies() { echo $(($(copies_on b) + $(copies_on c))); }
for _ in $(seq 100); do [ "$(copies)" -ge 8 ] && break; sleep 0.1; done
[ "$(copies)" = 8 ] || fail "B and C hold $(copies) copies of A's 8 chunks: $(status b) $(status c)"
if [ "$(copies_on b)" = 8 ]; then holder=b reader=c; else holder=c reader=b; fi
[ "$(copies_on $reader)" = 0 ] || fail "both B and C copied part of the sequence"
[ "$(field a "s['kv']['replications_sent']")" -ge 1 ] || fail "A's counters: $(status a)"
echo "copies on host-$holder; host-$reader reads after A dies"
CXLPOOL_SOCKET="$dir/a/cxlpoold.sock" "$ctl" pod status | grep "KV replicas"

echo "== 3. A killed: the copy is read, what only A held is a miss"
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null || true
out=$(get $reader 1 8 262144) || fail "get on $reader after A died: $out"
[ "$out" = "got=8 bad=0" ] || fail "the copy was not read byte-exact on $reader: $out"
[ "$(field $reader "s['kv']['remote_hits']")" -ge 8 ] || fail "$reader's counters: $(status $reader)"
[ "$(field $holder "s['kv']['pins_served']")" -ge 8 ] || fail "$holder's counters: $(status $holder)"
for h in $reader $holder; do
  out=$(get $h 5 4 262144) || fail "get on $h after A died: $out"
  [ "$out" = "got=0 bad=0" ] || fail "$h served chunks only a dead host held: $out"
done
wait_for $reader "sorted(m['host'] for m in s['members'])" "['host-b', 'host-c']" 10 ||
  fail "$reader still lists A: $(status $reader)"
for h in $reader $holder; do
  out=$(get $h 5 4 262144) || fail "get on $h after A left: $out"
  [ "$out" = "got=0 bad=0" ] || fail "$h served chunks only a departed host held: $out"
  [ "$(get $h 1 8 262144)" = "got=8 bad=0" ] || fail "$h lost sequence 1"
done
echo "pod_kv_replicas_test: all passed"
