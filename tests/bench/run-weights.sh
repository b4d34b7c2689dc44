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
# The machine is shared: each figure is taken WBENCH_ROUNDS times, the
# streamer and its baseline alternating, and the medians are reported.
# Environment: WBENCH_DIR (parent of the temp dir, default /var/tmp; must
# allow O_DIRECT), WBENCH_LAYERS (default 16), WBENCH_LAYER_MIB (default 32),
# WBENCH_PASSES (default 4), WBENCH_ROUNDS (default 3). Exits 77 without fio.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
layers=${WBENCH_LAYERS:-16}
layer_mib=${WBENCH_LAYER_MIB:-32}
passes=${WBENCH_PASSES:-4}
rounds=${WBENCH_ROUNDS:-3}
if ! command -v fio >/dev/null; then
  echo "run-weights: fio is not installed: skipped"
  exit 77
fi
ninja -C "$build" daemon/cxlpoold tests/bench/weights_bench >/dev/null
. tests/bench/bench_daemon.sh
bench_make_workdir "${WBENCH_DIR:-/var/tmp}" cxlpool-wbench
printf '[daemon]\nlog_level = "warning"\n\n[tiering]\nenabled = false\n\n[kvstore]\nenabled = false\n' >"$work/cxlpoold.toml"
bench_start_daemon "$build/daemon/cxlpoold" "$work/cxlpoold.toml"
bench=("$build/tests/bench/weights_bench" --socket "$sock" --dir "$work"
       --layers "$layers" --layer-mib "$layer_mib" --passes "$passes")
median() { python3 -c 'import statistics,sys; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
field() { grep -o "$1=[^ ]*" "$2" | cut -d= -f2; }
echo "== weight streaming ($(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds)"
region=() memcpy=() region_ratio=() ssd=() fio=() ssd_ratio=()
for r in $(seq "$rounds"); do
  reuse=0
  [ "$r" -gt 1 ] && reuse=1
  "${bench[@]}" --mode region --reuse-file "$reuse" | tee "$work/region.out"
  region+=("$(field stream_gbps "$work/region.out")")
  memcpy+=("$(field memcpy_gbps "$work/region.out")")
  region_ratio+=("$(field ratio "$work/region.out")")
  "${bench[@]}" --mode ssd --reuse-file 1 | tee "$work/ssd.out"
  stream=$(field stream_gbps "$work/ssd.out")
  # fio reads the very file the streamer read, right after it.
  fio --name=seqread --filename="$work/bench-model.safetensors" --readonly --rw=read --bs=1M --iodepth=16 \
      --ioengine=io_uring --direct=1 --loops="$passes" --output-format=json >"$work/fio.json"
  fio_gbs=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.2f" % (j["jobs"][0]["read"]["bw_bytes"]/1e9))' "$work/fio.json")
  ratio=$(python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$stream" "$fio_gbs")
  echo "RESULT mode=fio fio_gbps=$fio_gbs stream_vs_fio=$ratio"
  ssd+=("$stream") fio+=("$fio_gbs") ssd_ratio+=("$ratio")
done
echo "MEDIAN region stream_gbps=$(median "${region[@]}") memcpy_gbps=$(median "${memcpy[@]}") ratio=$(median "${region_ratio[@]}")"
echo "MEDIAN ssd stream_gbps=$(median "${ssd[@]}") fio_gbps=$(median "${fio[@]}") ratio=$(median "${ssd_ratio[@]}")"
