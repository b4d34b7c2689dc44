#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What replicas cost a put, in the same run: three cxlpoold in network
# namespaces on a bridge (tcp;ofi_rxm, pod_kv_lab.sh). Host A has
# [pod] replica_num = 2 (each put is copied to one of B and C), host C has
# replica_num = 1; each puts ROUNDS sequences of CHUNKS new chunks and the
# client times each put. A put is answered once committed locally, so the
# copies only compete with it for the CPU and the holder's event loop
# (pins); the copies are counted once the last put is in (and how long
# after it they were all seen), with every host's counters.
# Needs root, iproute2, etcd and python3 (77 otherwise).
#   tests/bench/pod_kv_replicas_bench.sh [BUILD_DIR] [ROUNDS] [CHUNKS] [CHUNK_BYTES]
set -euo pipefail
build=${1:-build}
rounds=${2:-40}
chunks=${3:-8}
bytes=${4:-262144}
client="$build/tests/integration/pod_kv/pod_kv_client"
for f in "$build/daemon/cxlpoold" "$build/tools/ctl/cxlpoolctl" "$client"; do
  [ -x "$f" ] || { echo "pod_kv_replicas_bench: build $f first" >&2; exit 1; }
done
source "$(dirname "$0")/../integration/pod_kv/pod_kv_lab.sh"
pod_kv_lab krb 98 "$build/daemon/cxlpoold" "$build/tools/ctl/cxlpoolctl" "a b c"
slot=$(( (bytes + 4095) / 4096 * 4096 ))
# Room for a host's own puts and the copies it takes (the defaults, 40
# rounds of 8 chunks of 256 KiB, need 80 MiB plus the copies).
kv_keys="slot_bytes = $slot
dram_bytes = $((160 << 20))
put_window_bytes = $((chunks * slot))"
pod_kv_start a "$kv_keys" "replica_num = 2"
pod_kv_start b "$kv_keys" "replica_num = 1"
pod_kv_start c "$kv_keys" "replica_num = 1"
pod_kv_wait_all
copies() {
  local n=0 h v
  for h in b c; do v=$(field $h "s['kv']['replicated_chunks']"); n=$((n + ${v/\?/0})); done
  echo $n
}
plain=$("$client" bench-put "$dir/c/cxlpoold.sock" 7 "$chunks" "$bytes" 1 "$rounds")
replicated=$("$client" bench-put "$dir/a/cxlpoold.sock" 5 "$chunks" "$bytes" 1 "$rounds")
done_at=$(date +%s.%N)
want=$((rounds * chunks))
while [ "$(copies)" -lt "$want" ] && python3 -c "import sys, time; sys.exit(time.time() - $done_at > 30)"; do
  sleep 0.05
done
settled=$(python3 -c "import time; print(f'{time.time() - $done_at:.2f}')")
echo "replica_num=1 (C): $plain"
echo "replica_num=2 (A): $replicated"
python3 - "$plain" "$replicated" <<'PY'
import sys
med = lambda s: float(dict(kv.split('=') for kv in s.split())['median_us'])
print(f"put median ratio replicated/plain: {med(sys.argv[2]) / med(sys.argv[1]):.2f}")
PY
if [ "$(copies)" -ge "$want" ]; then
  echo "copies made: $want of $want, the last seen $settled s after the last put (polled through cxlpoolctl)"
else
  echo "copies made: $(copies) of $want after 30 s (see replication_dropped and replication_errors below)"
fi
for h in a b c; do echo "$h: $(field $h "s['kv']")"; done
grep -h "KV fetch\|KV replication\|KV peer\|not indexed\|not kept" "$dir"/[abc].log | sort | uniq -c | head -20 || true
