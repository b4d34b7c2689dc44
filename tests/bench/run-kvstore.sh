#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The KV store's measurements quoted in docs/perf.md, each against a
# baseline run by this script in the same run:
#   1. SSD tier: 2 MiB puts and gets at queue depth 32 through cxlpoold vs
#      fio (io_uring, direct=1, bs=2M, iodepth=32, registered files and
#      buffers) on the same target: a file on the root disk and a loop
#      device over /dev/shm; puts as a client copying into its window, as a
#      producer writing there in place, and committed to the SSD log only
#      (no copy into DRAM);
#   2. DRAM tier: lookup + get + release of a 16-chunk prefix, p50/p99;
#   3. 2 MiB put/get throughput vs redis-server on loopback (redis-benchmark
#      SET/GET -d 2097152), at the same concurrency, and the ceiling of a
#      plain one-thread 2 MiB memcpy (hot and cold source) against redis;
#      and the cost of handing a put's pages over instead of copying them
#      (kvstore_bench handover: a sealed fresh memfd per put, or one from a
#      pool of windows prepared by another thread) against it;
#   4. a multi-turn chat trace with the DRAM arena at 10% of its working set:
#      hit rate and recompute-or-load savings;
#   5. namespace views as memfds against files of a huge=always tmpfs
#      (kvstore.view_dir; the tmpfs is mounted in the temporary directory and
#      unmounted here, so this needs root): two tenants' puts, which take
#      each other's slots, and get+copy, each against the memfd views.
#   tests/bench/run-kvstore.sh [BUILD_DIR]
# Environment: KVBENCH_DIR (parent of the temporary directory: default
# /var/tmp; it must allow O_DIRECT, so not tmpfs), KVBENCH_SSD_MIB (SSD file,
# default 4096), KVBENCH_SSD_CHUNKS (2 MiB chunks put then read in the SSD
# test, default 1024: about half a second of puts at 4 GB/s),
# KVBENCH_PUT_CHUNKS (2 MiB chunks of each DRAM put run, default 4096: the
# first 512 + queue depth fill the arena untimed, about half a second of
# timed puts follows), KVBENCH_QDS (client queue depths against redis,
# default "1 8"),
# KVBENCH_SESSIONS (trace sessions, default 1000),
# KVBENCH_CONCURRENCY (trace sessions open at once, one run each, default
# "64 512"),
# KVBENCH_PREFILL (declared prefill tokens/s, default "20000,100000"),
# KVBENCH_REPEAT (interleaved runs of each throughput pair, default 3),
# KVBENCH_SSD_TARGETS (where the SSD test runs, default "file loop": a file
# in the temporary directory, and a loop device with direct I/O over a file
# in /dev/shm, created and removed here; the loop target is skipped, with
# the reason, without root, losetup or room in /dev/shm),
# KVBENCH_SSD_WORKERS (kvstore.ssd_workers values the SSD test runs the
# daemon with, default "1 2 4"; 0 is the event loop's own ring),
# KVBENCH_COMMIT_WORKERS (kvstore.commit_workers values the SSD test, and
# the DRAM put test, run the daemon with, default "default": the key left
# out, so the daemon's own default (a quarter of the CPUs, 1 to 4); 0: the
# event loop copies each commit; e.g. "0 1 2 4" compares them in one run; the
# other tests run with the daemon's default),
# KVBENCH_WRITERS (writer counts of the DRAM put test, each writer a
# connection of its own with 8 puts in flight, against each commit_workers
# value; default "1", the single writer only; e.g. "1 2 4"),
# KVBENCH_COPY_BEHIND_MIN (kvstore.copy_behind_min_bytes of the SSD test's
# daemons, e.g. 0 to compare; default: the key left out),
# KVBENCH_SSD_ONLY (1: run the SSD test only, then print its summary).
# Exits 77 when fio or redis is not installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ssd_mib=${KVBENCH_SSD_MIB:-4096}
ssd_chunks=${KVBENCH_SSD_CHUNKS:-1024}
put_chunks=${KVBENCH_PUT_CHUNKS:-4096}
qds=${KVBENCH_QDS:-"1 8"}
sessions=${KVBENCH_SESSIONS:-1000}
concurrency=${KVBENCH_CONCURRENCY:-"64 512"}
prefill=${KVBENCH_PREFILL:-20000,100000}
reps=${KVBENCH_REPEAT:-3}
ssd_targets=${KVBENCH_SSD_TARGETS:-"file loop"}
ssd_workers=${KVBENCH_SSD_WORKERS:-"1 2 4"}
commit_workers=${KVBENCH_COMMIT_WORKERS:-"default"}
writers=${KVBENCH_WRITERS:-"1"}
ssd_only=${KVBENCH_SSD_ONLY:-0}
copy_behind_line="# copy_behind_min_bytes: the default"
if [[ -n ${KVBENCH_COPY_BEHIND_MIN:-} ]]; then copy_behind_line="copy_behind_min_bytes = $KVBENCH_COPY_BEHIND_MIN"; fi

tools="fio redis-server redis-benchmark redis-cli python3"
if [[ $ssd_only == 1 ]]; then tools="fio python3"; fi
for tool in $tools; do
  if ! command -v "$tool" >/dev/null; then
    echo "run-kvstore: $tool is not installed (scripts/setup.sh installs it): skipped"
    exit 77
  fi
done
ninja -C "$build" daemon/cxlpoold tests/bench/kvstore_bench tests/bench/kvstore_trace_bench >/dev/null

. tests/bench/bench_daemon.sh
bench_make_workdir "${KVBENCH_DIR:-/var/tmp}" cxlpool-kvbench
if [ "$(stat -f -c %T "$work")" = tmpfs ]; then
  echo "run-kvstore: $work is on tmpfs, which has no O_DIRECT; set KVBENCH_DIR" >&2
  exit 1
fi
redis=""
loopdev="" loop_backing=""
views_mounted=""
# Detaches the loop device and removes its /dev/shm file, if there are any.
release_loop() {
  if [[ -n $loopdev ]]; then losetup -d "$loopdev" || true; fi
  if [[ -n $loop_backing ]]; then rm -f "$loop_backing"; fi
  loopdev="" loop_backing=""
}
cleanup() {
  [ -n "$redis" ] && kill -TERM "$redis" 2>/dev/null && wait "$redis" 2>/dev/null
  # The views' tmpfs goes after the daemon that holds files on it.
  if [ -n "${daemon:-}" ]; then bench_stop_daemon || true; fi
  if [ -n "$views_mounted" ]; then umount -l "$views_mounted" || true; fi
  bench_cleanup
  release_loop
}
trap cleanup EXIT
bench="$build/tests/bench/kvstore_bench"
trace="$build/tests/bench/kvstore_trace_bench"

# Writes a daemon config: the DRAM tier only (no emulated tier, tiering off)
# and a [kvstore] section made of the arguments, one "key = value" each. One
# benchmark client is the only user: no per-uid quota (the default, a quarter
# of the DRAM arena, is less than 32 puts of 2 MiB in flight).
write_config() {
  local file=$1
  shift
  {
    printf '[daemon]\nlog_level = "warning"\n\n[tiering]\nenabled = false\n\n[kvstore]\nenabled = true\nclient_quota_bytes = 0\n'
    printf '%s\n' "$@"
  } >"$file"
}

# The socket file appears at bind(), a moment before the daemon listens on
# it: a client that connects in between is refused, so wait for an answer.
start_daemon() {
  bench_start_daemon "$build/daemon/cxlpoold" "$1"
  for _ in $(seq 100); do
    "$build/tools/ctl/cxlpoolctl" --socket "$sock" status >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "run-kvstore: cxlpoold does not answer on $sock" >&2
  exit 1
}

# Runs a benchmark, its report to stdout, and keeps its RESULT lines in $result.
result=""
run() {
  "$@" | tee "$work/last.out"
  result=$(grep '^RESULT' "$work/last.out" || true)
}

# value KEY LINE: the value of KEY=... in a RESULT/PLAN line.
value() { grep -o "\b$1=[^ ]*" <<<"$2" | head -1 | cut -d= -f2; }
# The config line for a KVBENCH_COMMIT_WORKERS value.
commit_workers_line() {
  if [[ $1 == default ]]; then echo "# commit_workers: the daemon's default"; else echo "commit_workers = $1"; fi
}
# cpu_ticks PID: user + system CPU time of PID so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
clk_tck=$(getconf CLK_TCK)
# cpu_put KEY CMD...: runs CMD (an ssd-put of $ssd_chunks chunks) as run
# does, and adds to put_cpu_client[KEY] and put_cpu_daemon[KEY] the CPU time
# that CMD and the daemon spent meanwhile, in microseconds per chunk
# (warm-up puts included, as they are for every kind of put).
declare -A put_cpu_client put_cpu_daemon
cpu_put() {
  local key=$1 d0 d1 spent
  shift
  d0=$(cpu_ticks "$daemon")
  if ! { TIMEFORMAT='%U %S'; time run "$@"; } 2>"$work/cpu.time"; then
    cat "$work/cpu.time" >&2
    exit 1
  fi
  d1=$(cpu_ticks "$daemon")
  head -n -1 "$work/cpu.time" >&2  # what CMD wrote to stderr
  read -r -a spent < <(tail -1 "$work/cpu.time")
  put_cpu_client[$key]+=" $(python3 -c 'import sys; u, s, n = sys.argv[1:]; print("%.0f" % ((float(u) + float(s)) * 1e6 / int(n)))' "${spent[0]}" "${spent[1]}" "$ssd_chunks")"
  put_cpu_daemon[$key]+=" $(python3 -c 'import sys; a, b, hz, n = map(int, sys.argv[1:]); print("%.0f" % ((b - a) * 1e6 / hz / n))' "$d0" "$d1" "$clk_tck" "$ssd_chunks")"
}
median() { python3 -c 'import statistics, sys; print("%.1f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }
fio_mib() {
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print("%.1f" % (j["jobs"][0][sys.argv[2]]["bw_bytes"] / 2**20))' "$1" "$2"
}

echo "== KV store benchmarks ($(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "   temp dir $work ($(findmnt -n -o FSTYPE,SOURCE -T "$work"))"

# ---- 1. SSD tier vs fio on the same target -------------------------------
# Each target in $ssd_targets: "file", a file under $work on the root disk,
# and "loop", a loop device with direct I/O over a file in /dev/shm: a block
# device at memory speed, where the device is not the limit and the store's
# own costs show. fio and the store take turns, $reps times: the virtual
# disk's speed drifts, so each ratio is of the medians of interleaved runs.
io_mib=$((ssd_chunks * 2))
declare -A fio_write fio_read ssd_put ssd_put_inplace ssd_put_direct ssd_get ssd_verify ssd_skip
# Starts the daemon with $work/ssd-w.toml on an empty log on $1: the region
# heads are cleared (blank regions are free ones), so every run writes the
# same.
start_ssd_daemon() {
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for offset in range(0, int(sys.argv[2]), 16 << 20):
    os.pwrite(fd, bytes(4096), offset)
os.fsync(fd)' "$1" "$((ssd_mib << 20))"
  start_daemon "$work/ssd-w.toml"
}
ssd_bench() {
  local target=$1 dev=$2
  local fio_args=(--filename="$dev" --size="${ssd_mib}M" --ioengine=io_uring --direct=1 --bs=2M --iodepth=32
    --fixedbufs --registerfiles --output-format=json)
  # A first pass allocates the file's blocks, so fio and the store both
  # overwrite allocated blocks in the timed passes.
  fio --name=layout --rw=write "${fio_args[@]}" >/dev/null
  write_config "$work/ssd.toml" 'dram_bytes = 134217728' 'cxl_bytes = 0' 'slot_bytes = 2097152' \
    'admission_threshold = 1' 'ssd_workers = 1' 'commit_workers = 2' "ssd_path = \"$dev\"" \
    "ssd_bytes = $((ssd_mib << 20))" 'put_window_bytes = 268435456' \
    'ssd_sync = "per-region"' \
    'ssd_engine = "io_uring"' 'ssd_format_foreign = true' "$copy_behind_line"
  local rep workers cw
  for rep in $(seq "$reps"); do
    # fio overwrites the store's log, so the daemon is down while it runs; at
    # start it finds fio's bytes, not a log, and (ssd_format_foreign) begins
    # an empty log.
    local w r
    fio --name=write --rw=write --io_size="${io_mib}M" "${fio_args[@]}" >"$work/fio.json"
    w=$(fio_mib "$work/fio.json" write)
    fio --name=read --rw=randread --io_size="${io_mib}M" "${fio_args[@]}" >"$work/fio.json"
    r=$(fio_mib "$work/fio.json" read)
    fio_write[$target]+=" $w" fio_read[$target]+=" $r"
    echo "fio on $target: write $w MiB/s, randread $r MiB/s"
    for workers in $ssd_workers; do
      for cw in $commit_workers; do
        sed -e "s/^ssd_workers = .*/ssd_workers = $workers/" -e "s/^commit_workers = .*/$(commit_workers_line "$cw")/" \
          "$work/ssd.toml" >"$work/ssd-w.toml"
        start_ssd_daemon "$dev"
        # Written with memcpy, the daemon taking the CRCs (with 32 puts in
        # flight nothing is copied behind an answer, where declared
        # checksums pay).
        cpu_put "$target/$workers/$cw/copied" "$bench" "$sock" ssd-put --qd 32 --chunks "$ssd_chunks" --seed "$rep" \
          --checksums 0
        ssd_put[$target/$workers/$cw]+=" $(value mib_per_s "$result")"
        run "$bench" "$sock" ssd-get --qd 32 --chunks "$ssd_chunks" --seed "$rep"
        ssd_get[$target/$workers/$cw]+=" $(value mib_per_s "$result")"
        ssd_verify[$target/$workers/$cw]+=" $(value verify_pct "$result")"
        bench_stop_daemon
        # The same puts from a producer that wrote each chunk into the put
        # window itself (a DMA engine, a GPU kernel): the client copies no
        # bytes, so what is left is the store's and the device's work, as in
        # fio, which writes one buffer it never fills again. An empty log
        # again: after the gets above every chunk would be hot, and the log
        # would read them back to keep them as it wraps.
        start_ssd_daemon "$dev"
        cpu_put "$target/$workers/$cw/inplace" "$bench" "$sock" ssd-put --qd 32 --chunks "$ssd_chunks" \
          --seed "$((rep + 100))" --write 0
        ssd_put_inplace[$target/$workers/$cw]+=" $(value mib_per_s "$result")"
        bench_stop_daemon
        # The same puts as the first, committed to the SSD log only
        # (--to-ssd): the log writes each chunk from its put-window slot, with
        # no copy into DRAM. The window (put_window_bytes above) holds the 32
        # in flight and the chunks of the regions being written.
        start_ssd_daemon "$dev"
        cpu_put "$target/$workers/$cw/to-ssd" "$bench" "$sock" ssd-put --qd 32 --chunks "$ssd_chunks" \
          --seed "$((rep + 200))" --to-ssd 1 --checksums 0
        ssd_put_direct[$target/$workers/$cw]+=" $(value mib_per_s "$result")"
        bench_stop_daemon
      done
    done
  done
}
for target in $ssd_targets; do
  case $target in
    file)
      ssd_bench file "$work/kv-ssd.img"
      rm -f "$work/kv-ssd.img"
      ;;
    loop)
      if [[ $(id -u) != 0 ]] || ! command -v losetup >/dev/null; then
        ssd_skip[loop]="needs root and losetup"
      elif [[ $(df -k --output=avail /dev/shm | tail -1) -lt $(((ssd_mib + 256) * 1024)) ]]; then
        ssd_skip[loop]="/dev/shm has less than $((ssd_mib + 256)) MiB free"
      else
        loop_backing=$(mktemp /dev/shm/cxlpool-kvbench.XXXXXX)
        truncate -s "${ssd_mib}M" "$loop_backing"
        if ! loopdev=$(losetup --find --show --direct-io=on "$loop_backing" 2>"$work/losetup.err"); then
          loopdev=""
          ssd_skip[loop]="losetup failed: $(head -1 "$work/losetup.err")"
        elif [[ $(cat "/sys/block/${loopdev#/dev/}/loop/dio" 2>/dev/null) != 1 ]]; then
          ssd_skip[loop]="$loopdev did not take direct I/O"
        else
          ssd_bench loop "$loopdev"
        fi
        release_loop
      fi
      ;;
    *)
      echo "run-kvstore: unknown SSD target '$target' in KVBENCH_SSD_TARGETS (file, loop)" >&2
      exit 2
      ;;
  esac
  if [[ -n ${ssd_skip[$target]:-} ]]; then echo "run-kvstore: SSD target $target skipped: ${ssd_skip[$target]}"; fi
done

ssd_summary() {
  for target in $ssd_targets; do
    if [[ -n ${ssd_skip[$target]:-} ]]; then
      echo "SSD on $target: skipped (${ssd_skip[$target]})"
      continue
    fi
    # shellcheck disable=SC2086 # word lists by design
    fw=$(median ${fio_write[$target]}) fr=$(median ${fio_read[$target]})
    for workers in $ssd_workers; do
      for cw in $commit_workers; do
        # shellcheck disable=SC2086
        sp=$(median ${ssd_put[$target/$workers/$cw]}) sg=$(median ${ssd_get[$target/$workers/$cw]})
        printf '%-44s %9s MiB/s %9s MiB/s %8s %s\n' "SSD ($target, $workers wk, $cw cw) put 2 MiB QD 32 vs fio" "$sp" \
          "$fw" "$(ratio "$sp" "$fw")" ">= 0.9"
        # shellcheck disable=SC2086
        si=$(median ${ssd_put_inplace[$target/$workers/$cw]})
        printf '%-44s %9s MiB/s %9s MiB/s %8s %s\n' "  the same put, written in place (no copy)" "$si" \
          "$fw" "$(ratio "$si" "$fw")" ""
        # shellcheck disable=SC2086
        sd=$(median ${ssd_put_direct[$target/$workers/$cw]})
        printf '%-44s %9s MiB/s %9s MiB/s %8s %s\n' "  the same put, to the SSD log only" "$sd" \
          "$fw" "$(ratio "$sd" "$fw")" "(--to-ssd: no DRAM copy)"
        local kind
        for kind in copied inplace to-ssd; do
          # shellcheck disable=SC2086
          printf '  CPU per 2 MiB put (%s): client %s us, daemon %s us (medians)\n' "$kind" \
            "$(median ${put_cpu_client[$target/$workers/$cw/$kind]})" "$(median ${put_cpu_daemon[$target/$workers/$cw/$kind]})"
        done
        printf '%-44s %9s MiB/s %9s MiB/s %8s %s\n' "SSD ($target, $workers wk, $cw cw) get 2 MiB QD 32 vs fio" "$sg" \
          "$fr" "$(ratio "$sg" "$fr")" ">= 0.9"
        # shellcheck disable=SC2086
        verify=$(median ${ssd_verify[$target/$workers/$cw]})
        where="on the event loop"
        [[ $workers == 0 ]] || where="on the I/O workers"
        echo "  (SSD gets on $target, $workers workers, $cw commit workers: CRC32C checks took a median $verify% of" \
          "the wall time, $where)"
      done
    done
  done
}
summary_header() {
  echo
  echo "== summary (every ratio against a baseline from this run; throughputs: medians of $reps interleaved runs)"
  printf '%-44s %12s %12s %8s %s\n' "measurement" "cxlpoold" "baseline" "ratio" "target"
}
if [[ $ssd_only == 1 ]]; then
  summary_header
  ssd_summary
  exit 0
fi

# ---- 2 and 3. DRAM tier: latency, put/get throughput vs redis ------------
write_config "$work/dram.toml" 'dram_bytes = 1073741824' 'cxl_bytes = 0' 'slot_bytes = 2097152'
start_daemon "$work/dram.toml"
run "$bench" "$sock" latency --iterations 20000
latency=$result
mkdir -p "$work/redis"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/redis" \
  --logfile "$work/redis/redis.log" --daemonize no &
redis=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
if ! redis-cli -p "$port" ping >/dev/null 2>&1; then
  echo "run-kvstore: redis-server did not start on port $port:" >&2
  cat "$work/redis/redis.log" >&2
  exit 1
fi
declare -A put put_other get redis_set redis_get
memcpy_hot=() memcpy_cold=() copy_crc_hot=() handover=() handover_huge=() pooled=() pooled_core=()
for rep in $(seq "$reps"); do
  # The ceiling of a put/get that moves its bytes through one core.
  run "$bench" - memcpy
  memcpy_hot+=("$(value hot_ops_per_s "$result")")
  memcpy_cold+=("$(value cold_ops_per_s "$result")")
  copy_crc_hot+=("$(value copy_crc_hot_ops_per_s "$result")")
  # What a put that hands its pages over (a sealed fresh memfd, or one from
  # a pool prepared by another thread) would cost its writer, next to the
  # same run's memcpy.
  run "$bench" - handover
  handover+=("$(value ops_per_s "$result")")
  handover_huge+=("$(value hugetlb_ops_per_s "$result")")
  pooled+=("$(value pooled_ops_per_s "$result")")
  pooled_core+=("$(value pooled_one_core_ops_per_s "$result")")
  for qd in $qds; do
    # Distinct seeds: every put stores new chunks.
    run "$bench" "$sock" put --qd "$qd" --chunks "$put_chunks" --seed "$((1000 * rep + qd))"
    put[$qd]+=" $(value ops_per_s "$result")"
    # The puts above write as cxlpool_kv_put does (with one in flight: a
    # copy taking the CRC, declared with the commit; else memcpy); the
    # same puts the other way round.
    other=0
    [[ $qd == 1 ]] || other=1
    run "$bench" "$sock" put --qd "$qd" --chunks "$put_chunks" --checksums "$other" --seed "$((1000 * rep + 250 + qd))"
    put_other[$qd]+=" $(value ops_per_s "$result")"
    run "$bench" "$sock" get --qd "$qd" --seed "$((1000 * rep + 500 + qd))"
    get[$qd]+=" $(value ops_per_s "$result")"
    # 128 keys (256 MiB): the GETs find values the SETs stored.
    out=$(redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -n 2000 -d 2097152 -c "$qd" -r 128 --csv)
    redis_set[$qd]+=" $(grep '^"SET"' <<<"$out" | cut -d'"' -f4)"
    redis_get[$qd]+=" $(grep '^"GET"' <<<"$out" | cut -d'"' -f4)"
    echo "redis-benchmark -c $qd: SET $(grep '^"SET"' <<<"$out" | cut -d'"' -f4) ops/s," \
      "GET $(grep '^"GET"' <<<"$out" | cut -d'"' -f4) ops/s"
  done
done
kill -TERM "$redis"
wait "$redis" || true
redis=""
# For reference, not compared: the store's own cost without the client's
# copies (the producer writes in place, the consumer reads in place).
run "$bench" "$sock" put --qd 8 --seed 90000 --write 0
put_nowrite=$result
run "$bench" "$sock" get --qd 8 --seed 90001 --copy 0 --passes 200
get_nocopy=$result
bench_stop_daemon

# Puts against daemons with each kvstore.commit_workers value, interleaved
# (the runs above use the default), each with copies behind the commit's
# answer (the default) and without (copy_behind_min_bytes = 0).
declare -A put_cw put_writers
for rep in $(seq "$reps"); do
  cw_index=0
  for cw in $commit_workers; do
    cw_index=$((cw_index + 1))
    for behind in on off; do
      behind_line="# copy_behind_min_bytes: the default"
      [[ $behind == off ]] && behind_line="copy_behind_min_bytes = 0"
      write_config "$work/dram-cw.toml" 'dram_bytes = 1073741824' 'cxl_bytes = 0' 'slot_bytes = 2097152' \
        "$(commit_workers_line "$cw")" "$behind_line"
      start_daemon "$work/dram-cw.toml"
      for qd in $qds; do
        run "$bench" "$sock" put --qd "$qd" --chunks "$put_chunks" \
          --seed "$((2000 * rep + 100 * qd + 10 * cw_index + ${#behind}))"
        put_cw[$qd/$cw/$behind]+=" $(value ops_per_s "$result")"
      done
      # Several writers at once, each with 8 puts in flight (seeds apart by
      # more than the most writers, so no two runs share a key).
      for n in $writers; do
        [[ $n == 1 || $behind == off ]] && continue
        run "$bench" "$sock" put --clients "$n" --qd 8 --seed "$((100000 * rep + 1000 * n + 100 * cw_index))"
        put_writers[$n/$cw]+=" $(value ops_per_s "$result")"
      done
      bench_stop_daemon
    done
  done
done

# ---- 5. namespace views: memfds vs a huge=always tmpfs (kvstore.view_dir) --
views_note=""
declare -A views_rate
if [[ $(id -u) != 0 ]]; then
  views_note="skipped (needs root to mount a tmpfs)"
elif ! mkdir -p "$work/views" ||
  ! mount -t tmpfs -o huge=always,mode=0700,size=0 cxlpool-kvbench "$work/views" 2>"$work/views.err"; then
  views_note="skipped (no tmpfs with huge= here: $(tail -n1 "$work/views.err"))"
else
  views_mounted="$work/views"
  for rep in $(seq "$reps"); do
    for v in memfd tmpfs; do
      view_line="# view_dir: memfds"
      [[ $v == tmpfs ]] && view_line="view_dir = \"$work/views\""
      write_config "$work/views.toml" 'dram_bytes = 536870912' 'cxl_bytes = 0' 'slot_bytes = 2097152' "$view_line"
      # Two writers, a namespace each, three arenas' worth of puts: most
      # commits take a slot the other namespace held.
      start_daemon "$work/views.toml"
      run "$bench" "$sock" put --qd 1 --clients 2 --tenants 1 --chunks 768
      views_rate[tenants/$v]+=" $(value ops_per_s "$result")"
      bench_stop_daemon
      start_daemon "$work/views.toml"
      run "$bench" "$sock" get --qd 1
      views_rate[get/$v]+=" $(value ops_per_s "$result")"
      bench_stop_daemon
    done
  done
fi

# ---- 4. multi-turn trace, DRAM at 10% of the working set -----------------
plan=$("$trace" plan --sessions "$sessions" | grep '^PLAN')
ws=$(value working_set_bytes "$plan")
mib=$((1 << 20))
dram=$(((ws / 10 + mib - 1) / mib * mib))
write_config "$work/trace.toml" "dram_bytes = $dram" 'cxl_bytes = 0' 'slot_bytes = 16384' \
  "ssd_path = \"$work/kv-trace.img\"" "ssd_bytes = $(((ws * 2 / mib + 64) * mib))"
declare -A trace_out
for c in $concurrency; do
  rm -f "$work/kv-trace.img"
  start_daemon "$work/trace.toml"
  run "$trace" run "$sock" --sessions "$sessions" --concurrency "$c" --prefill-tokens-per-s "$prefill"
  trace_out[$c]=$result
  bench_stop_daemon
done

summary_header
ssd_summary
printf '%-44s %12s %12s %8s %s\n' "DRAM lookup+get+release, 16 chunks, p50" "$(value p50_us "$latency") us" \
  "$(value rtt_p50_us "$latency") us" "" "(baseline: 1-key lookup miss)"
printf '%-44s %12s %12s %8s %s\n' "DRAM lookup+get+release, 16 chunks, p99" "$(value p99_us "$latency") us" \
  "$(value rtt_p99_us "$latency") us" "" "<= 20 us"
printf '%-44s %12s %12s %8s %s\n' "  the same batched in one submit, p50" "$(value batched_p50_us "$latency") us" \
  "$(value rtt_p50_us "$latency") us" "" ""
printf '%-44s %12s %12s %8s %s\n' "  the same batched in one submit, p99" "$(value batched_p99_us "$latency") us" \
  "$(value rtt_p99_us "$latency") us" "" "<= 8 us"
printf '%-44s %12s %12s %8s %s\n' "  get + release_nowait (1 round trip), p50" "$(value steered_p50_us "$latency") us" \
  "$(value rtt_p50_us "$latency") us" "" ""
printf '%-44s %12s %12s %8s %s\n' "  get + release_nowait (1 round trip), p99" "$(value steered_p99_us "$latency") us" \
  "$(value rtt_p99_us "$latency") us" "" "<= 20 us"
for qd in $qds; do
  # shellcheck disable=SC2086 # word lists by design
  p=$(median ${put[$qd]}) g=$(median ${get[$qd]}) rs=$(median ${redis_set[$qd]}) rg=$(median ${redis_get[$qd]})
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "2 MiB put vs redis SET, $qd in flight" "$p" "$rs" "$(ratio "$p" "$rs")" ">= 10"
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "2 MiB get+copy vs redis GET, $qd in flight" "$g" "$rg" \
    "$(ratio "$g" "$rg")" ">= 10"
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "  ceiling: memcpy hot source vs redis SET" "$(median "${memcpy_hot[@]}")" \
    "$rs" "$(ratio "$(median "${memcpy_hot[@]}")" "$rs")" "(one core's copy)"
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "  ceiling: memcpy cold source vs redis GET" "$(median "${memcpy_cold[@]}")" \
    "$rg" "$(ratio "$(median "${memcpy_cold[@]}")" "$rg")" "(one core's copy)"
  # The client's own copy is the floor of a put (hot source: the producer's
  # fresh chunk) and of a get+copy (cold source: a chunk not read lately).
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "2 MiB put vs memcpy hot source, $qd in flight" "$p" \
    "$(median "${memcpy_hot[@]}")" "$(ratio "$p" "$(median "${memcpy_hot[@]}")")" ">= 0.7"
  # shellcheck disable=SC2086 # a word list by design
  po=$(median ${put_other[$qd]})
  other_label="  same, memcpy + the daemon's CRC" other_note="(no declared checksums)"
  if [[ $qd != 1 ]]; then other_label="  same, declaring each CRC" other_note="(cxlpool_kv_copy_chunk)"; fi
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "$other_label" "$po" \
    "$(median "${memcpy_hot[@]}")" "$(ratio "$po" "$(median "${memcpy_hot[@]}")")" "$other_note"
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "2 MiB get+copy vs memcpy cold source, $qd in flight" "$g" \
    "$(median "${memcpy_cold[@]}")" "$(ratio "$g" "$(median "${memcpy_cold[@]}")")" ">= 0.8"
done
mh=$(median "${memcpy_hot[@]}") ho=$(median "${handover[@]}") hh=$(median "${handover_huge[@]}")
cc=$(median "${copy_crc_hot[@]}")
printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "cxlpool_kv_copy_chunk (copy + CRC) vs memcpy" "$cc" "$mh" "$(ratio "$cc" "$mh")" \
  "(a put's own copy, hot source)"
# put_row LABEL RATES NOTE: the median of the word list RATES against one
# core's hot memcpy.
put_row() {
  local p
  # shellcheck disable=SC2086 # a word list by design
  p=$(median $2)
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "$1" "$p" "$mh" "$(ratio "$p" "$mh")" "$3"
}
for qd in $qds; do
  for cw in $commit_workers; do
    put_row "2 MiB put ($cw cw) vs memcpy hot, $qd in flight" "${put_cw[$qd/$cw/on]}" ">= 0.7"
    put_row "  same, copy before the answer" "${put_cw[$qd/$cw/off]}" "(copy_behind_min_bytes = 0)"
  done
done
for n in $writers; do
  [[ $n == 1 ]] && continue
  for cw in $commit_workers; do
    put_row "2 MiB put, $n writers x 8 ($cw cw) vs memcpy hot" "${put_writers[$n/$cw]}" "(all writers' puts)"
  done
done
printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "sealed memfd handover, 4 KiB pages, vs memcpy" "$ho" "$mh" "$(ratio "$ho" "$mh")" \
  "(a put without the commit's copy: its floor)"
po=$(median "${pooled[@]}") pc=$(median "${pooled_core[@]}")
printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "pooled prepared windows, writer, vs memcpy" "$po" "$mh" "$(ratio "$po" "$mh")" \
  "(windows made + fallocated by another thread)"
printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "pooled windows, writer + preparer on one core" "$pc" "$mh" \
  "$(ratio "$pc" "$mh")" ""
if [[ $hh == 0.0 ]]; then
  echo "sealed memfd handover, hugetlb pages: skipped (no free hugetlb pages)"
else
  printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "sealed memfd handover, hugetlb pages, vs memcpy" "$hh" "$mh" \
    "$(ratio "$hh" "$mh")" ""
fi
echo "reference: put without the client's write $(value ops_per_s "$put_nowrite") ops/s," \
  "get without the client's copy $(value ops_per_s "$get_nocopy") ops/s (8 in flight)"
if [[ -n $views_note ]]; then
  echo "namespace views on a huge=always tmpfs: $views_note"
else
  for row in "tenants/2 tenants' puts, 1 in flight each" "get/get+copy, 1 in flight"; do
    # shellcheck disable=SC2086 # word lists by design
    t=$(median ${views_rate[${row%%/*}/tmpfs]}) m=$(median ${views_rate[${row%%/*}/memfd]})
    printf '%-44s %7s ops/s %7s ops/s %8s %s\n' "views on huge tmpfs: ${row#*/}" "$t" "$m" "$(ratio "$t" "$m")" \
      "(baseline: memfd views)"
  done
fi
for c in $concurrency; do
  t=$(grep '^RESULT mode=trace ' <<<"${trace_out[$c]}")
  echo "trace, $c sessions open, DRAM $((dram / mib)) MiB = 10% of the $((ws / mib)) MiB working set:" \
    "chunk hit rate $(value chunk_hit_rate "$t") (from DRAM $(value dram_share "$t"), SSD $(value ssd_share "$t"))," \
    "token hit rate $(value token_hit_rate "$t"), unbounded cache $(value unbounded_chunk_hit_rate "$t")"
  grep '^RESULT mode=trace-savings' <<<"${trace_out[$c]}" | while read -r line; do
    echo "  prefill $(value prefill_tokens_per_s "$line") tokens/s: saves $(value saving "$line") of full recompute" \
      "(full $(value full_s "$line") s, with the cut-off $(value decided_s "$line") s," \
      "loading all $(value load_all_s "$line") s, unbounded cache $(value unbounded_s "$line") s)"
  done
done
