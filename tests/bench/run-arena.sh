#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KV arena's measurements quoted in docs/perf.md ("KV arena"), host
# backend, against a cxlpoold this script starts in a temporary state dir:
#   1. step() cost at batch 256 (sync, and step_async + wait);
#   2. mapping bandwidth, 64 KiB and 2 MiB pages: one bulk step, and
#      decode-like growth without and with the worker thread;
#   3. map-on-demand vs preallocating the whole arena: tokens/s of both and
#      the memory on-demand saves;
#   4. offload/restore of one row through the KV store while a decode loop
#      steps the others: the loop's time per iteration without transfers,
#      with them overlapped and with them waited for; offload and restore
#      bytes/s against memcpy of the same bytes.
#   tests/bench/run-arena.sh [BUILD_DIR]
# Environment: ARENA_STEPS (decode steps, default 2000), ARENA_COMPUTE_US
# (simulated compute per step, default 200), ARENA_REPEAT (runs of the
# demand pair, default 3), ARENA_PARTS (which of 1..4 to run, default all).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
steps=${ARENA_STEPS:-2000}
compute=${ARENA_COMPUTE_US:-200}
reps=${ARENA_REPEAT:-3}
parts=" ${ARENA_PARTS:-1 2 3 4} "
ninja -C "$build" daemon/cxlpoold tests/bench/arena_bench >/dev/null

. tests/bench/bench_daemon.sh
bench_make_workdir "${TMPDIR:-/tmp}" cxlpool-arenabench
# The DRAM tier may hand out most of the node: a preallocated arena takes
# its whole size in regions (untouched pages cost no memory until written).
cat >"$work/cxlpoold.toml" <<'TOML'
[daemon]
log_level = "warning"

[numa]
capacity_percent = 90

[tiering]
enabled = false

# Part 4: 1 MiB chunks (32 tokens of 16 tensors of 2 KiB), a 64 MiB put
# window, 256 MiB of DRAM: four offloaded rows; older ones are evicted.
[kvstore]
slot_bytes = 1048576
dram_bytes = 268435456
cxl_bytes = 0
put_window_bytes = 67108864
TOML
bench_start_daemon "$build/daemon/cxlpoold" "$work/cxlpoold.toml"

bench="$build/tests/bench/arena_bench"
echo "== KV arena benchmarks ($(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
# 8 layers, 8 KV heads x 128, bf16: 2 KiB per token and tensor, 32 KiB per
# token over all 16 tensors; 2048-token rows.
shape=(--layers 8 --kv-heads 8 --head-dim 128 --dtype 2 --context 2048)

if [[ $parts == *" 1 "* ]]; then
echo "-- 1. step() at batch 256"
"$bench" "$sock" step "${shape[@]}" --batch 256 --steps "$steps" --compute-us "$compute"
fi

# 16 rows: at 64 KiB pages that is 16384 mappings, well inside
# vm.max_map_count (65530 by default); each host page is one VMA.
if [[ $parts == *" 2 "* ]]; then
echo "-- 2. mapping bandwidth"
for page in 65536 2097152; do
  "$bench" "$sock" mapbw "${shape[@]}" --rows 16 --page "$page" --grow 16 --compute-us "$compute" --touch 1
done
fi

# Longer rows so that a row is several pages: 4 layers, 4 KV heads x 128,
# bf16 (1 KiB per token and tensor), 16384-token rows of 8 pages; requests
# of 64..8000 tokens. Batch 128: the preallocated arena is 16 GiB of
# regions, which the DRAM tier must be able to hand out.
if [[ $parts == *" 3 "* ]]; then
echo "-- 3. map on demand vs preallocated"
long=(--layers 4 --kv-heads 4 --head-dim 128 --dtype 2 --context 16384 --min-len 64 --max-len 8000)
for rep in $(seq "$reps"); do
  "$bench" "$sock" demand "${long[@]}" --batch 128 --steps "$steps" --compute-us "$compute" --seed "$rep"
done
fi

# 8 layers as above; a 2000-token row is 62.5 MiB. 32 decode rows from 256
# tokens; 5 cycles of offload + restore per way of running them, after 5
# offloads that fault the store's DRAM in.
if [[ $parts == *" 4 "* ]]; then
echo "-- 4. offload/restore overlapped with decode"
for rep in $(seq "$reps"); do
  "$bench" "$sock" offload "${shape[@]}" --batch 32 --min-len 256 --steps 500 --compute-us "$compute" \
    --offload-len 2000 --chunk 32 --cycles 5
done
fi
