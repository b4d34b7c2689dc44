#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The storage engine against direct io_uring on the same file, in the same
# run: cxlpool-io runs each case with ioengine=io_uring on the file
# (O_DIRECT) and with ioengine=devpool through a cxlpool-devpool-blk
# backend serving that file (io_uring, O_DIRECT, into the link's shared
# buffers), DEVPOOLBLK_REPEAT times interleaved (the order alternates every
# repetition so drift hits both); prints the medians and devpool/io_uring.
#   4 KiB randread QD32 (IOPS; target ratio >= 0.7)
#   1 MiB sequential read QD32 (bandwidth; target ratio >= 0.8)
#   tests/bench/run-devpool-blk.sh [BUILD_DIR]
# Environment: DEVPOOLBLK_DIR (the data file's directory: default /var/tmp;
# it must allow O_DIRECT, so not tmpfs), DEVPOOLBLK_FILE_MIB (default 1024),
# DEVPOOLBLK_RUNTIME (seconds per run, default 5), DEVPOOLBLK_REPEAT
# (default 3), DEVPOOLBLK_KEEP (keep the JSON reports; their directory is
# printed). The link file lives in /dev/shm.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
dir=${DEVPOOLBLK_DIR:-/var/tmp}
file_mib=${DEVPOOLBLK_FILE_MIB:-1024}
runtime=${DEVPOOLBLK_RUNTIME:-5}
reps=${DEVPOOLBLK_REPEAT:-3}

tool=$build/tools/io/cxlpool-io
backend=$build/tools/devpool/blk/cxlpool-devpool-blk
for f in "$tool" "$backend"; do
  if [[ ! -x $f ]]; then
    echo "run-devpool-blk: $f is not built (ninja -C $build)" >&2
    exit 1
  fi
done

work=$(mktemp -d "$dir/cxlpool-devpool-blk.XXXXXX")
data=$work/data.bin
link=$(mktemp /dev/shm/cxlpool-devpool-blk-link.XXXXXX)
backend_pid=
cleanup() {
  if [[ -n $backend_pid ]]; then kill "$backend_pid" 2>/dev/null || true; wait "$backend_pid" 2>/dev/null || true; fi
  rm -f "$link" "$data"
  if [[ -z ${DEVPOOLBLK_KEEP:-} ]]; then rm -rf "$work"; else echo "reports kept in $work"; fi
}
trap cleanup EXIT

# Written once, fully, so reads hit allocated blocks rather than holes.
"$tool" --name=fill --filename="$data" --size="${file_mib}m" --rw=write --bs=1m --ioengine=io_uring \
  --iodepth=8 --direct=1 --output=/dev/null

# 64 MiB of shared buffers: QD32 of 1 MiB reads.
"$backend" --link-file "$link" --ssd "$data" --buffer-mib 64 --slots 256 --queue-depth 64 \
  >"$work/backend.out" 2>"$work/backend.err" &
backend_pid=$!
for _ in $(seq 100); do
  grep -qx ready "$work/backend.out" 2>/dev/null && break
  sleep 0.1
done
if ! grep -qx ready "$work/backend.out"; then
  echo "run-devpool-blk: the backend did not start:" >&2
  cat "$work/backend.err" >&2
  exit 1
fi

job_file() {  # engine filename rw bs
  cat <<JOB
[global]
filename=$2
size=${file_mib}m
direct=1
ioengine=$1
iodepth=32
runtime=$runtime
time_based

[$3-$4-$1]
rw=$3
bs=$4
JOB
}

cases=("randread-4k:randread:4k" "read-1m:read:1m")
manifest=$work/manifest
: >"$manifest"
for ((rep = 1; rep <= reps; rep++)); do
  for c in "${cases[@]}"; do
    IFS=: read -r name rw bs <<<"$c"
    order=(io_uring devpool)
    if ((rep % 2 == 0)); then order=(devpool io_uring); fi
    for engine in "${order[@]}"; do
      target=$data
      [[ $engine == devpool ]] && target=$link
      job_file "$engine" "$target" "$rw" "$bs" >"$work/$name-$engine.fio"
      out=$work/$name-$engine.$rep.json
      "$tool" --output-format=json "$work/$name-$engine.fio" >"$out"
      echo "$name $engine $out" >>"$manifest"
    done
  done
done

echo "# storage engine vs direct io_uring, $(uname -r), $(nproc) CPUs, $data (${file_mib} MiB), ${runtime}s per run, median of $reps"
python3 - "$manifest" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, engine, path = line.split()
    read = json.load(open(path))["jobs"][0]["read"]
    runs.setdefault(name, {}).setdefault(engine, []).append((read["iops"], read["bw_bytes"], read["clat_ns"]["mean"]))
targets = {"randread-4k": ("IOPS", 0, 0.7), "read-1m": ("MiB/s", 1, 0.8)}
print(f"{'case':<14}{'metric':<8}{'io_uring':>12}{'devpool':>12}{'ratio':>8}{'target':>8}  {'clat us (uring/devpool)':>24}")
for name, (unit, col, target) in targets.items():
    med = {e: statistics.median(r[col] for r in runs[name][e]) for e in ("io_uring", "devpool")}
    lat = {e: statistics.median(r[2] for r in runs[name][e]) / 1000 for e in ("io_uring", "devpool")}
    scale = 1 if col == 0 else 1 / (1 << 20)
    ratio = med["devpool"] / med["io_uring"] if med["io_uring"] else 0
    print(f"{name:<14}{unit:<8}{med['io_uring'] * scale:>12.0f}{med['devpool'] * scale:>12.0f}{ratio:>8.2f}"
          f"{'>= ' + str(target):>8}  {lat['io_uring']:>11.1f} / {lat['devpool']:.1f}")
PY
