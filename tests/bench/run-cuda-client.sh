#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The client runtime's GPU figures in docs/perf.md ("GPU"), against a
# cxlpoold this script starts in a temporary state dir:
#   1. step() and step_async() + wait() at batch 256 with the cuda KV arena
#      backend (the worker maps the next step's device pages during
#      --compute-us of simulated compute);
#   2. the cuda arena's mapping bandwidth (2 MiB device pages): one bulk
#      step, and decode-like growth without and with the worker;
#   3. weight streaming from the shared region into a device window, against
#      pinned H2D copies of the same layer sizes in the same run (the
#      pinned-copy baseline of 4 too);
#   4. KV offload/restore of one device row through the KV store (DRAM
#      tier) while a decode loop steps other rows, and each alone in GB/s.
#   tests/bench/run-cuda-client.sh CXLPOOLD ARENA_BENCH WEIGHTS_BENCH
# (the gpu suite's `cuda_client_bench` passes the build's programs; a bundle
# made by tests/gpu/bundle.sh passes its own). Environment: CUDA_BENCH_STEPS
# (default 1000), CUDA_BENCH_COMPUTE_US (default 200), CUDA_BENCH_LAYER_MIB
# (default 64). Exits 77 without a usable GPU.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: run-cuda-client.sh CXLPOOLD ARENA_BENCH WEIGHTS_BENCH" >&2
  exit 2
fi
daemon_bin=$1 arena=$2 weights=$3
steps=${CUDA_BENCH_STEPS:-1000}
compute=${CUDA_BENCH_COMPUTE_US:-200}
layer_mib=${CUDA_BENCH_LAYER_MIB:-64}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no usable NVIDIA GPU (nvidia-smi -L fails)"
  exit 77
fi

work=$(mktemp -d -p "${TMPDIR:-/tmp}" cxlpool-cudabench.XXXXXX)
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
state="$work/state"
sock="$state/cxlpoold.sock"
mkdir -p "$state"
# The store as run-arena.sh's part 4: 1 MiB chunks, a 64 MiB put window,
# 256 MiB of DRAM.
printf '[daemon]\nlog_level = "warning"\n\n[tiering]\nenabled = false\n\n[kvstore]\nslot_bytes = 1048576\ndram_bytes = 268435456\ncxl_bytes = 0\nput_window_bytes = 67108864\n' \
  >"$work/cxlpoold.toml"
"$daemon_bin" --config "$work/cxlpoold.toml" --state-dir "$state" 2>>"$work/daemon.log" &
daemon=$!
for _ in $(seq 200); do
  [ -S "$sock" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.05
done
if [ ! -S "$sock" ]; then
  echo "run-cuda-client: cxlpoold did not start:" >&2
  cat "$work/daemon.log" >&2
  exit 1
fi

echo "== cuda client figures ($(nproc) cores, $(uname -r), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1))"
# 8 layers, 8 KV heads x 128, bf16: 2 KiB per token and tensor; 2048-token
# rows, as run-arena.sh's host figures.
shape=(--layers 8 --kv-heads 8 --head-dim 128 --dtype 2 --context 2048)
rc=0
echo "-- 1. step() at batch 256, cuda backend"
"$arena" "$sock" step "${shape[@]}" --cuda 1 --batch 256 --steps "$steps" --compute-us "$compute" || rc=1
echo "-- 2. cuda arena mapping bandwidth, 2 MiB pages"
"$arena" "$sock" mapbw "${shape[@]}" --cuda 1 --rows 16 --page 2097152 --grow 16 --compute-us "$compute" || rc=1
echo "-- 3. weight streaming to the GPU vs pinned H2D"
"$weights" --socket "$sock" --dir "$work" --layers 16 --layer-mib "$layer_mib" --passes 4 --target cuda || rc=1
echo "-- 4. KV offload/restore of a device row through the store (DRAM tier)"
"$arena" "$sock" offload "${shape[@]}" --cuda 1 --batch 32 --min-len 256 --steps 200 --compute-us "$compute" \
  --offload-len 2048 --chunk 32 --cycles 5 || rc=1
if [[ $rc -ne 0 ]]; then
  echo "run-cuda-client: a benchmark failed; daemon log:" >&2
  tail -n 40 "$work/daemon.log" >&2
fi
exit $rc
