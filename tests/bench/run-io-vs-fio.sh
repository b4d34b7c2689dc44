#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cxlpool-io against fio on the same file, in the same run: the same job
# file goes to both tools, each case run IOVSFIO_REPEAT times interleaved
# (the order alternates every repetition so drift hits both), medians
# compared by io_compare (one JSON reader for both tools' output):
#   4 KiB randread QD32, 128 KiB and 1 MiB sequential read (QD32), 4 KiB
#   randwrite QD32, each with psync (QD1: it has no queue), libaio and
#   io_uring, direct=1. psync read cases also run tests/bench/pread_loop, a
#   bare pread() loop, as a control: where cxlpool-io and fio differ, it
#   shows whether a plain reader lands with fio or with cxlpool-io.
#   tests/bench/run-io-vs-fio.sh [BUILD_DIR]
# Environment: IOVSFIO_TARGET ("file": a file under IOVSFIO_DIR, the
# default; "loop": a loop device over a file in /dev/shm, root only, a
# block device at memory speed whose timing does not depend on a shared
# disk, so the tools' own costs show), IOVSFIO_DIR (where the data file
# lives: default /var/tmp; it must allow O_DIRECT, so not tmpfs),
# IOVSFIO_FILE_MIB (default 2048),
# IOVSFIO_RUNTIME (seconds per run, default 5), IOVSFIO_REPEAT (default 3),
# IOVSFIO_ENGINES (default "psync libaio io_uring"), IOVSFIO_CASES
# (space-separated name:rw:bs, default the four above), IOVSFIO_KEEP (keep the
# JSON reports, their directory is printed).
# Exits 77 when fio is not installed (or, for "loop", without root or
# losetup).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
dir=${IOVSFIO_DIR:-/var/tmp}
file_mib=${IOVSFIO_FILE_MIB:-2048}
runtime=${IOVSFIO_RUNTIME:-5}
reps=${IOVSFIO_REPEAT:-3}
engines=${IOVSFIO_ENGINES:-"psync libaio io_uring"}
target=${IOVSFIO_TARGET:-file}

if ! command -v fio >/dev/null; then
  echo "run-io-vs-fio: fio is not installed (scripts/setup.sh installs it): skipped"
  exit 77
fi
tool=$build/tools/io/cxlpool-io
compare=$build/tests/bench/io_compare
bare=$build/tests/bench/pread_loop
for f in "$tool" "$compare" "$bare"; do
  if [[ ! -x $f ]]; then
    echo "run-io-vs-fio: $f is not built (ninja -C $build)" >&2
    exit 1
  fi
done

if [[ $target == loop ]] && { [[ $(id -u) != 0 ]] || ! command -v losetup >/dev/null; }; then
  echo "run-io-vs-fio: IOVSFIO_TARGET=loop needs root and losetup: skipped"
  exit 77
fi

work=$(mktemp -d "$dir/cxlpool-io-vs-fio.XXXXXX")
data=$work/data.bin
backing=
loopdev=
cleanup() {
  if [[ -n $loopdev ]]; then losetup -d "$loopdev" || true; fi
  if [[ -n $backing ]]; then rm -f "$backing"; fi
  # With a loop target $data is the device node: only the file is ours to remove.
  if [[ -z $loopdev ]]; then rm -f "$data"; fi
  if [[ -z ${IOVSFIO_KEEP:-} ]]; then rm -rf "$work"; else echo "reports kept in $work"; fi
}
trap cleanup EXIT
if [[ $target == loop ]]; then
  backing=$(mktemp /dev/shm/cxlpool-io-vs-fio.XXXXXX)
  truncate -s "${file_mib}M" "$backing"
  # The first free loop device that has a node (losetup --find may name
  # one whose node is missing in a container's /dev).
  for dev in /dev/loop[0-9]*; do
    if losetup "$dev" "$backing" 2>/dev/null; then
      loopdev=$dev
      break
    fi
  done
  if [[ -z $loopdev ]]; then
    echo "run-io-vs-fio: no free loop device" >&2
    exit 1
  fi
  data=$loopdev
fi

# Written once, fully, so reads hit allocated blocks rather than holes.
fio --name=fill --filename="$data" --size="${file_mib}m" --rw=write --bs=1m \
  --ioengine=libaio --iodepth=8 --direct=1 --output=/dev/null

# case name, rw, bs
# (IOVSFIO_CASES replaces the list, e.g. "read-128k:read:128k")
read -r -a cases <<<"${IOVSFIO_CASES:-randread-4k:randread:4k read-128k:read:128k read-1m:read:1m randwrite-4k:randwrite:4k}"

bytes_of() {  # 4k, 128k, 1m -> bytes
  local v=${1,,}
  case $v in
    *k) echo $((${v%k} * 1024)) ;;
    *m) echo $((${v%m} * 1024 * 1024)) ;;
    *) echo "$v" ;;
  esac
}

job_file() {  # engine rw bs
  local engine=$1 rw=$2 bs=$3 depth=32
  [[ $engine == psync ]] && depth=1
  cat <<JOB
[global]
filename=$data
size=${file_mib}m
direct=1
ioengine=$engine
iodepth=$depth
runtime=$runtime
time_based
percentile_list=50:99

[$rw-$bs-$engine]
rw=$rw
bs=$bs
JOB
}

manifest=$work/manifest
: >"$manifest"
for ((rep = 1; rep <= reps; rep++)); do
  for c in "${cases[@]}"; do
    IFS=: read -r name rw bs <<<"$c"
    for engine in $engines; do
      id=$name-$engine
      job_file "$engine" "$rw" "$bs" >"$work/$id.fio"
      tools=(fio ours)
      if [[ $engine == psync && ($rw == read || $rw == randread) ]]; then tools+=(bare); fi
      # Each repetition starts with the next tool, so drift hits all alike.
      order=()
      for ((k = 0; k < ${#tools[@]}; k++)); do order+=("${tools[(k + rep - 1) % ${#tools[@]}]}"); done
      for who in "${order[@]}"; do
        out=$work/$id.$who.$rep.json
        if [[ $who == fio ]]; then
          fio --output-format=json --output="$out" "$work/$id.fio"
        elif [[ $who == bare ]]; then
          "$bare" "$data" "$(bytes_of "$bs")" "$runtime" $([[ $rw == randread ]] && echo random) >"$out"
        else
          "$tool" --output-format=json "$work/$id.fio" >"$out"
        fi
        echo "$id $who $out" >>"$manifest"
      done
    done
  done
done

echo "# cxlpool-io vs $(fio --version), $(uname -r), $target $data (${file_mib} MiB), ${runtime}s per run, median of $reps"
"$compare" "$manifest"
