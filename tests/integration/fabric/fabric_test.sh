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
source "$(dirname "$0")/fabric_lab.sh"
fabric_lab f 93 "$peer"

rails_a=10.93.0.1,10.93.1.1
rails_b=10.93.0.2,10.93.1.2

echo "== 1. two rails, two threads, byte-exact"
owner_start --rails "$rails_b" --no-shm --region-mib 32
ip netns exec "$A" "$peer" verify --rails "$rails_a" --no-shm --region-mib 32 --card "$dir/card" \
  --seconds 4 --threads 2 --max-bytes $((6 << 20)) | tee "$dir/verify1.log"
grep -q "bad=0" "$dir/verify1.log"
# Both rails carried data.
for r in 0 1; do
  grep -E "^rail $r tcp" "$dir/verify1.log" | grep -qv "written=0 " || { echo "FAIL: rail $r carried nothing"; exit 1; }
done
owner_stop

echo "== 2. rail 1 taken down during transfers"
owner_start --rails "$rails_b" --no-shm --region-mib 32
ip netns exec "$A" "$peer" verify --rails "$rails_a" --no-shm --region-mib 32 --card "$dir/card" \
  --seconds 8 --threads 2 --max-bytes $((6 << 20)) --timeout-ms 2000 > "$dir/verify2.log" &
client=$!
# Rail 1 goes down only once it carries a connection (the client's first
# read connects both rails) and a second later, when the workers run: on a
# loaded machine getting there can take seconds, and a rail that never
# connected is never reset. The 2 s stall timeout keeps a slow but healthy
# rail 0 from being taken for a dead one on such a machine.
for _ in $(seq 100); do
  ip netns exec "$A" ss -Htn state established dst 10.93.1.2 | grep -q . && break
  sleep 0.1
done
sleep 1
ip -n "$A" link set "fa1_$tag" down
echo "rail 1 down at $(date +%T.%N)"
wait "$client" || { cat "$dir/verify2.log"; echo "FAIL: transfers failed with a rail down"; exit 1; }
cat "$dir/verify2.log"
grep -q "bad=0" "$dir/verify2.log"
resets=$(sed -n 's/^rail 1 .* resets=\([0-9]*\).*/\1/p' "$dir/verify2.log")
[ "${resets:-0}" -ge 1 ] || { echo "FAIL: rail 1 was never taken out of service"; exit 1; }
grep -Eq "retried_chunks=[1-9]" "$dir/verify2.log" || { echo "FAIL: no chunk moved to the other rail"; exit 1; }
owner_stop
ip -n "$A" link set "fa1_$tag" up

echo "== 3. shm between processes on one host"
owner_start --rails 10.93.0.2 --region-mib 32
if ! grep -q "rail=shm," "$dir/card"; then
  echo "fabric_test: no shm provider here; case 3 skipped"
else
  ip netns exec "$A" "$peer" verify --rails 10.93.0.1 --region-mib 32 --card "$dir/card" \
    --seconds 2 --threads 2 | tee "$dir/verify3.log"
  grep -q "bad=0" "$dir/verify3.log"
  grep -E "^rail 1 shm" "$dir/verify3.log" | grep -qv "written=0 " || { echo "FAIL: shm carried nothing"; exit 1; }
  grep -E "^rail 0 tcp" "$dir/verify3.log" | grep -q "read=0 written=0 " || { echo "FAIL: tcp used for a peer on this host"; exit 1; }
fi
owner_stop
echo "fabric_test: all passed"
