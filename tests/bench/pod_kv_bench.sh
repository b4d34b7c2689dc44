#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A cross-host KV get against a local SSD-tier get of the same chunk, in
# the same run: two cxlpoold in two network namespaces joined by a veth
# (tcp;ofi_rxm, pod_kv_lab.sh). Host A holds a chunk in DRAM; host B's
# client gets it ROUNDS times, deleting it on B after each get so that the
# next one fetches it from A again (pin, one-sided read, CRC check, unpin).
# Then B puts the same chunk itself (written through to its SSD log,
# ssd_sync = "per-commit"), and before each get pushes it out of DRAM with
# other puts, so that each get reads it back from the SSD (O_DIRECT,
# io_uring). Last, the remote get again with the chunk only on A's SSD
# (A writes every commit through to its SSD log too, and before each get
# 24 other puts on A push the chunk out of A's 16 DRAM slots): A reads it
# into DRAM before it answers B's pin. Prints each median latency and GB/s
# and their ratios.
# Needs root, iproute2, etcd and python3 (77 otherwise).
#   tests/bench/pod_kv_bench.sh [BUILD_DIR] [ROUNDS] [CHUNK_BYTES] [SSD_DIR]
# CHUNK_BYTES defaults to 2 MiB: a 256-token chunk at 8 KiB of KV per token
# (e.g. a 1B-parameter model's KV in bf16); SSD_DIR must take O_DIRECT.
set -euo pipefail
build=${1:-build}
rounds=${2:-50}
bytes=${3:-2097152}
ssd_dir=${4:-/var/tmp}
client="$build/tests/integration/pod_kv/pod_kv_client"
for f in "$build/daemon/cxlpoold" "$build/tools/ctl/cxlpoolctl" "$client"; do
  [ -x "$f" ] || { echo "pod_kv_bench: build $f first" >&2; exit 1; }
done
source "$(dirname "$0")/../integration/pod_kv/pod_kv_lab.sh"
pod_kv_lab kvb 96 "$build/daemon/cxlpoold" "$build/tools/ctl/cxlpoolctl"
ssd_file="$ssd_dir/cxlpool-pod-kv-bench.$$.img"
ssd_file_a="$ssd_dir/cxlpool-pod-kv-bench-a.$$.img"
pod_kv_cleanup_ssd() { rm -f "$ssd_file" "$ssd_file_a"; pod_kv_lab_cleanup; }
trap pod_kv_cleanup_ssd EXIT
slot=$(( (bytes + 4095) / 4096 * 4096 ))
pod_kv_start a "slot_bytes = $slot
dram_bytes = $((16 * slot))
put_window_bytes = $((4 * slot))
admission_threshold = 1
ssd_path = \"$ssd_file_a\"
ssd_bytes = $((128 * slot))
ssd_region_bytes = $((2 * slot + 65536))
ssd_sync = \"per-commit\""
pod_kv_start b "slot_bytes = $slot
dram_bytes = $((8 * slot))
put_window_bytes = $((4 * slot))
admission_threshold = 1
ssd_path = \"$ssd_file\"
ssd_bytes = $((64 * slot))
ssd_region_bytes = $((2 * slot + 65536))
ssd_sync = \"per-commit\""
pod_kv_wait_both

echo "pod_kv_bench: $(nproc) CPUs, kernel $(uname -r), chunk $bytes bytes, $rounds rounds"
"$client" put "$dir/a/cxlpoold.sock" 7 1 "$bytes" > /dev/null
remote=$("$client" bench-remote "$dir/b/cxlpoold.sock" 7 1 "$bytes" 1 "$rounds")
echo "$remote"
ssd=$("$client" bench-ssd "$dir/b/cxlpoold.sock" 7 1 "$bytes" 8 "$rounds")
echo "$ssd"
remote_ssd=$(POD_KV_HOLDER_SOCKET="$dir/a/cxlpoold.sock" "$client" bench-remote-ssd "$dir/b/cxlpoold.sock" 7 1 "$bytes" 24 "$rounds")
echo "$remote_ssd"
value() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
python3 - "$(value median_us <<< "$remote")" "$(value median_us <<< "$ssd")" "$(value median_us <<< "$remote_ssd")" <<'PY'
import sys
remote, ssd, remote_ssd = (float(v) for v in sys.argv[1:4])
print(f"remote get / local SSD get, median latency: {remote / ssd:.2f} (below 1: the peer's DRAM is faster)")
print(f"remote get of a chunk on the peer's SSD / remote get from its DRAM, median latency: {remote_ssd / remote:.2f}")
PY
echo "A's chunks read from SSD for B's pins: $(CXLPOOL_SOCKET="$dir/a/cxlpoold.sock" "$build/tools/ctl/cxlpoolctl" stats | awk '$1 == "pod.kv.ssd_loads_for_peers" {print $2}')"
echo "B's KV counters: $(field b "s['kv']")"
# Every SSD-mode get was read from the device (the chunk was out of DRAM).
CXLPOOL_SOCKET="$dir/b/cxlpoold.sock" "$build/tools/ctl/cxlpoolctl" stats | grep -E "kv\.tier\.ssd\.(hits|bytes_read)"
