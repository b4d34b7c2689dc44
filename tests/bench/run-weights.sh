#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Weight streaming figures for docs/perf.md, each with its baseline in the
# same run:
#   1. from the shared region into the compute window vs a plain memcpy of
#      the same bytes into the same window (target ratio >= 0.9);
#   2. from the file with O_DIRECT (every layer past the budget) vs fio
#      sequential read of the same file with the streamer's block size and
#      depth (bs=1M, iodepth=16, io_uring, direct=1) (target >= 0.9).
#   tests/bench/run-weights.sh [BUILD_DIR]
# Environment: WBENCH_DIR (parent of the temp dir, default /var/tmp; must
# allow O_DIRECT), WBENCH_LAYERS (default 16), WBENCH_LAYER_MIB (default 32),
# WBENCH_PASSES (default 4). Exits 77 without fio.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
layers=${WBENCH_LAYERS:-16}
layer_mib=${WBENCH_LAYER_MIB:-32}
passes=${WBENCH_PASSES:-4}
if ! command -v fio >/dev/null; then
  echo "run-weights: fio is not installed: skipped"
  exit 77
fi
ninja -C "$build" daemon/cxlpoold tests/bench/weights_bench >/dev/null
work=$(mktemp -d -p "${WBENCH_DIR:-/var/tmp}" cxlpool-wbench.XXXXXX)
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
state="$work/state"
mkdir -p "$state"
printf '[daemon]\nlog_level = "warning"\n\n[tiering]\nenabled = false\n\n[kvstore]\nenabled = false\n' >"$work/cxlpoold.toml"
"$build/daemon/cxlpoold" --config "$work/cxlpoold.toml" --state-dir "$state" 2>>"$work/daemon.log" &
daemon=$!
for _ in $(seq 200); do
  [ -S "$state/cxlpoold.sock" ] && break
  sleep 0.05
done
bench=("$build/tests/bench/weights_bench" --socket "$state/cxlpoold.sock" --dir "$work"
       --layers "$layers" --layer-mib "$layer_mib" --passes "$passes")
echo "== weight streaming ($(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
"${bench[@]}" --mode region
"${bench[@]}" --mode ssd | tee "$work/ssd.out"
stream=$(grep -o 'stream_gbps=[^ ]*' "$work/ssd.out" | cut -d= -f2)
# fio reads the very file the streamer read.
fio --name=seqread --filename="$work/bench-model.safetensors" --readonly --rw=read --bs=1M --iodepth=16 \
    --ioengine=io_uring --direct=1 --loops="$passes" --output-format=json >"$work/fio.json"
fio_gbs=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.2f" % (j["jobs"][0]["read"]["bw_bytes"]/1e9))' "$work/fio.json")
ratio=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$stream" "$fio_gbs")
echo "RESULT mode=fio fio_gbps=$fio_gbs stream_vs_fio=$ratio"
