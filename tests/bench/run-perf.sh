#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every measurement quoted in docs/perf.md, each against its baseline from
# the same run:
#   1. control plane: alloc+map+free of 2 MiB through cxlpoold vs a local
#      memfd+mmap (tests/bench/run-control-plane.sh), 1 and 2 clients;
#   2. migration of a 256 MiB region between the two NUMA nodes of the QEMU
#      guest vs memcpy of the same size in the same guest (vm_numa_migrate);
#   3. the KV store vs fio and redis, and its multi-turn trace
#      (tests/bench/run-kvstore.sh; skipped when fio or redis is missing);
#   4. the KV arena: step cost, mapping bandwidth, on-demand vs preallocated,
#      offload/restore overlap (tests/bench/run-arena.sh);
#   5. decode attention over the contiguous arena vs a paged layout, CPU
#      (attention_bench --cpu-only; the GPU half runs in tests/gpu/run.sh);
#   6. weight streaming from the shared region vs memcpy and from the file
#      vs fio (tests/bench/run-weights.sh);
#   7. cxlpool-io vs fio on the same jobs (tests/bench/run-io-vs-fio.sh);
#   8. the device channel vs Unix SEQPACKET sockets and the access ring
#      (channel_bench);
#   9. UDP/TCP through a pooled NIC vs a direct veth
#      (tests/bench/net_bench.sh; skipped without root).
#  10. the storage engine vs direct io_uring on the same file
#      (tests/bench/run-devpool-blk.sh);
#  11. failover of a pooled NIC: the UDP gap and TCP stall when the primary
#      backend is killed (tests/bench/devpool_failover.sh: lease_ms 1000,
#      telemetry_ms 100; skipped without root).
# Parts that need a missing tool (fio, redis) print "skipped" and go on.
#   tests/bench/run-perf.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ninja -C "$build" daemon/cxlpoold tests/bench/control_plane_bench tests/vm/vm_numa_migrate >/dev/null
echo "== control plane ($(nproc) cores, $(uname -r))"
tests/bench/run-control-plane.sh "$build" 20000
echo
echo "== migration in the QEMU guest (TCG, node 1 memory-only)"
meson test -C "$build" --no-rebuild --suite slow vm_numa_migrate >/dev/null || {
  cat "$build/meson-logs/testlog.txt" | tail -40
  exit 1
}
grep -h "migrate node" "$build"/tests/vm/vm_numa_migrate-results/*.txt 2>/dev/null ||
  grep -h "migrate node" "$build/meson-logs/testlog.txt"
echo
echo "== KV store (SSD tier vs fio, DRAM latency, vs redis, multi-turn trace)"
status=0
tests/bench/run-kvstore.sh "$build" || status=$?
if [ "$status" -eq 77 ]; then echo "skipped: fio or redis-server missing"; elif [ "$status" -ne 0 ]; then exit "$status"; fi

# A part that exits 77 lacks a tool; any other failure stops the run.
run_part() {
  local title=$1
  shift
  echo
  echo "== $title"
  local rc=0
  "$@" || rc=$?
  if [ "$rc" -eq 77 ]; then echo "skipped: a tool it needs is missing"; elif [ "$rc" -ne 0 ]; then exit "$rc"; fi
}
run_part "KV arena (host backend)" tests/bench/run-arena.sh "$build"
ninja -C "$build" tests/bench/attention_bench >/dev/null
run_part "decode attention, contiguous vs paged (CPU, f32)" "$build/tests/bench/attention_bench" --cpu-only
run_part "decode attention, contiguous vs paged (CPU, bf16)" "$build/tests/bench/attention_bench" --cpu-only --dtype bf16
run_part "weight streaming (shared region vs memcpy, file vs fio)" tests/bench/run-weights.sh "$build"
run_part "cxlpool-io vs fio" tests/bench/run-io-vs-fio.sh "$build"
ninja -C "$build" tests/bench/channel_bench >/dev/null
run_part "device channel (16-byte messages, one thread per side)" "$build/tests/bench/channel_bench"
ninja -C "$build" tools/devpool/cxlpool-devpool tests/bench/net_bench >/dev/null
run_part "network engine: pooled NIC vs direct veth" tests/bench/net_bench.sh "$build" 5 20000
ninja -C "$build" daemon/cxlpoold tools/ctl/cxlpoolctl >/dev/null
run_part "network engine failover (kill -9 of the primary backend)" tests/bench/devpool_failover.sh "$build"
ninja -C "$build" tools/io/cxlpool-io tools/devpool/blk/cxlpool-devpool-blk >/dev/null
run_part "storage engine vs direct io_uring" tests/bench/run-devpool-blk.sh "$build"
