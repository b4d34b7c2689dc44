#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Transport between two processes, each in a network namespace of its
# own ("hosts" A and B) joined by two veth pairs (two rails):
#   1. tcp;ofi_rxm on both rails, two threads: every byte written and read
#      back, the owner's own pattern read whole, nothing fails;
#   2. the same while rail 1 is taken down (`ip link set down`) halfway:
#      every transfer still completes, on rail 0, and rail 1 was reset;
#   3. shm between two processes on this host (the namespaces share it):
#      the peer is reached through shm and every byte arrives.
# Needs root and iproute2 (exit 77 otherwise), and the tcp;ofi_rxm
# provider (77 when libfabric has none).
#   fabric_test.sh FABRIC_PEER
set -euo pipefail
peer=${1:?usage: fabric_test.sh FABRIC_PEER}
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
  echo "fabric_test: needs root and iproute2 (network namespaces); skipped"
  exit 77
fi
tag=$$
A=cxfA$tag B=cxfB$tag
dir=$(mktemp -d /tmp/cxlpool-fabric-test.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
for r in 0 1; do
  ip link add "fa${r}_$tag" netns "$A" type veth peer name "fb${r}_$tag" netns "$B"
  ip -n "$A" addr add "10.93.$r.1/24" dev "fa${r}_$tag"
  ip -n "$B" addr add "10.93.$r.2/24" dev "fb${r}_$tag"
  ip -n "$A" link set "fa${r}_$tag" up
  ip -n "$B" link set "fb${r}_$tag" up
done

# Starts the owner in namespace $1 with the remaining arguments; its card
# goes to $dir/card. The owner serves until its input (a fifo) closes.
start_owner() {
  local ns=$1
  shift
  rm -f "$dir/card" "$dir/hold"
  mkfifo "$dir/hold"
  ip netns exec "$ns" "$peer" serve "$@" --card "$dir/card" < "$dir/hold" > "$dir/owner.log" 2>&1 &
  pids+=($!)
  exec {hold}> "$dir/hold"
  for _ in $(seq 100); do [ -s "$dir/card" ] && return 0; sleep 0.05; done
  if grep -q "No data available" "$dir/owner.log"; then
    echo "fabric_test: libfabric has no tcp;ofi_rxm provider here; skipped"
    cat "$dir/owner.log"
    exit 77
  fi
  echo "FAIL: the owner did not start"
  cat "$dir/owner.log"
  exit 1
}
# The owner ends when its input closes; it must end cleanly (a sanitizer's
# report makes it fail).
stop_owner() {
  exec {hold}>&-
  local rc=0
  wait "${pids[-1]}" || rc=$?
  unset 'pids[-1]'
  if [ "$rc" != 0 ]; then
    echo "FAIL: the owner exited with $rc"
    cat "$dir/owner.log"
    exit 1
  fi
}

rails_a=10.93.0.1,10.93.1.1
rails_b=10.93.0.2,10.93.1.2

echo "== 1. two rails, two threads, byte-exact"
start_owner "$B" --rails "$rails_b" --no-shm --region-mib 32
ip netns exec "$A" "$peer" verify --rails "$rails_a" --no-shm --region-mib 32 --card "$dir/card" \
  --seconds 4 --threads 2 --max-bytes $((6 << 20)) | tee "$dir/verify1.log"
grep -q "bad=0" "$dir/verify1.log"
# Both rails carried data.
for r in 0 1; do
  grep -E "^rail $r tcp" "$dir/verify1.log" | grep -qv "written=0 " || { echo "FAIL: rail $r carried nothing"; exit 1; }
done
stop_owner

echo "== 2. rail 1 taken down during transfers"
start_owner "$B" --rails "$rails_b" --no-shm --region-mib 32
ip netns exec "$A" "$peer" verify --rails "$rails_a" --no-shm --region-mib 32 --card "$dir/card" \
  --seconds 6 --threads 2 --max-bytes $((6 << 20)) --timeout-ms 500 > "$dir/verify2.log" &
client=$!
sleep 2
ip -n "$A" link set "fa1_$tag" down
echo "rail 1 down at $(date +%T.%N)"
wait "$client" || { cat "$dir/verify2.log"; echo "FAIL: transfers failed with a rail down"; exit 1; }
cat "$dir/verify2.log"
grep -q "bad=0" "$dir/verify2.log"
resets=$(sed -n 's/^rail 1 .* resets=\([0-9]*\).*/\1/p' "$dir/verify2.log")
[ "${resets:-0}" -ge 1 ] || { echo "FAIL: rail 1 was never taken out of service"; exit 1; }
grep -Eq "retried_chunks=[1-9]" "$dir/verify2.log" || { echo "FAIL: no chunk moved to the other rail"; exit 1; }
stop_owner
ip -n "$A" link set "fa1_$tag" up

echo "== 3. shm between processes on one host"
start_owner "$B" --rails 10.93.0.2 --region-mib 32
if ! grep -q "rail=shm," "$dir/card"; then
  echo "fabric_test: no shm provider here; case 3 skipped"
else
  ip netns exec "$A" "$peer" verify --rails 10.93.0.1 --region-mib 32 --card "$dir/card" \
    --seconds 2 --threads 2 | tee "$dir/verify3.log"
  grep -q "bad=0" "$dir/verify3.log"
  grep -E "^rail 1 shm" "$dir/verify3.log" | grep -qv "written=0 " || { echo "FAIL: shm carried nothing"; exit 1; }
  grep -E "^rail 0 tcp" "$dir/verify3.log" | grep -q "read=0 written=0 " || { echo "FAIL: tcp used for a peer on this host"; exit 1; }
fi
stop_owner
echo "fabric_test: all passed"
