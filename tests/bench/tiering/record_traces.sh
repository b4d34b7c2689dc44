#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Records memory traces of real programs with valgrind's lackey tool (every
# load and store; time = instructions executed x --ns-per-instruction) and
# converts them with cxlpool-tracegen --from-lackey, through a model of a
# 1 MiB last-level cache (line fills and dirty write-backs: the traffic a
# memory tier sees). docs/tiering.md "Real traces".
#
#   tests/bench/tiering/record_traces.sh [BUILD_DIR] [OUT_DIR]
#
# Writes OUT_DIR/{infer,redis,sqlite}.llc.trace (and .raw.trace with RAW=1).
# Each program is cut at MAX_INSTRUCTIONS (default 60M, 3 s of trace time;
# 100k-500k records per filtered trace, one to five minutes per program
# under lackey on a loaded VM; 150M took 16 minutes for redis and sqlite). Programs: cxlpool-infer (decoding through a cxlpoold of its own:
# weights in the daemon's region, KV in an arena), redis-server under a
# Zipf(0.99) GET/SET load from redis-cli (one request at a time), sqlite3
# with a Zipf(0.99) point lookup / update script over a 40k-row table. Needs valgrind,
# redis-server, redis-tools, sqlite3 (scripts/setup.sh); exit 77 without.
# PROGRAMS="redis sqlite" records a subset.
set -euo pipefail
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-tiering-traces}")
max_instructions=${MAX_INSTRUCTIONS:-60M}
ns_per_instruction=${NS_PER_INSTRUCTION:-50}
llc=${LLC:-1M}
raw=${RAW:-0}
for tool in valgrind redis-server redis-cli sqlite3 python3; do
  command -v "$tool" >/dev/null || { echo "record_traces.sh: $tool is not installed (scripts/setup.sh)" >&2; exit 77; }
done
tracegen=$build/tools/tracegen/cxlpool-tracegen
programs=${PROGRAMS:-infer redis sqlite}
needed=(tools/tracegen/cxlpool-tracegen)
[[ " $programs " == *" infer "* ]] && needed+=(tools/infer/cxlpool-infer daemon/cxlpoold)
for p in "${needed[@]}"; do
  [[ -x $build/$p ]] || { echo "record_traces.sh: $build/$p is not built (ninja -C $build $p)" >&2; exit 1; }
done
mkdir -p "$out"
work=$(mktemp -d -p /var/tmp cxlpool-traces.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# start_recording NAME: a FIFO for valgrind's log and the converter reading
# it in the background (pid in $converter). The caller runs valgrind with
# --log-file=$work/NAME.fifo.
start_recording() {
  local name=$1
  mkfifo "$work/$name.fifo"
  local extra=()
  [[ $raw == 1 ]] && extra=(--raw-output "$out/$name.raw.trace")
  "$tracegen" --from-lackey "$work/$name.fifo" --llc "$llc" --ns-per-instruction "$ns_per_instruction" \
    --max-instructions "$max_instructions" "${extra[@]}" -o "$out/$name.llc.trace" >"$work/$name.convert.log" 2>&1 &
  converter=$!
  pids+=("$converter")
}

# traced NAME CMD...: runs CMD under lackey in the background (pid in
# $traced_pid), its log going to NAME's converter.
traced() {
  local name=$1
  shift
  "${lackey[@]}" --log-file="$work/$name.fifo" "$@" &
  traced_pid=$!
  pids+=("$traced_pid")
}

# finish_recording NAME: waits for the converter; once it has read
# MAX_INSTRUCTIONS it stops reading, and the traced program (blocked on its
# log) is killed.
finish_recording() {
  local name=$1
  local ok=0
  wait "$converter" || ok=$?
  if kill -0 "$traced_pid" 2>/dev/null; then
    kill -KILL "$traced_pid" 2>/dev/null || true
  fi
  wait "$traced_pid" 2>/dev/null || true
  ((ok == 0)) || { echo "record_traces.sh: converting $name failed:" >&2; cat "$work/$name.convert.log" >&2; exit 1; }
  sed "s/^/  $name: /" "$work/$name.convert.log"
}

lackey=(valgrind --tool=lackey --trace-mem=yes)

# Zipf(s) ranks over n keys, rank 1 the hottest, shuffled over the key space
# so that hot keys do not sit next to each other.
zipf_py='
import bisect, random, sys
def zipf_keys(n, s, count, seed):
    rnd = random.Random(seed)
    cdf, acc = [], 0.0
    for r in range(1, n + 1):
        acc += r ** -s
        cdf.append(acc)
    perm = list(range(n))
    rnd.shuffle(perm)
    return [perm[min(bisect.bisect_left(cdf, rnd.random() * acc), n - 1)] for _ in range(count)]
'

record_infer() {
  echo "== cxlpool-infer (weights in cxlpoold's region, KV in an arena; a 1-layer model, both paths)"
  local state=$work/state
  mkdir -p "$state" "$work/model"
  "$build/daemon/cxlpoold" --state-dir "$state" 2>>"$work/daemon.log" &
  local daemon=$!
  pids+=("$daemon")
  for _ in $(seq 200); do [[ -S $state/cxlpoold.sock ]] && break; sleep 0.05; done
  [[ -S $state/cxlpoold.sock ]] || { echo "cxlpoold did not start:" >&2; cat "$work/daemon.log" >&2; exit 1; }
  start_recording infer
  traced infer "$build/tools/infer/cxlpool-infer" --socket "$state/cxlpoold.sock" \
    --model-dir "$work/model" --layers 1 --batch 2 --prompt-len 12 --shared-prefix 8 --decode-steps 8 \
    >"$work/infer.log" 2>&1
  finish_recording infer
  kill -TERM "$daemon"
  wait "$daemon" || true
}

# The data sets are built natively first; only the workload runs under lackey.
record_redis() {
  echo "== redis-server, Zipf(0.99) GET/SET (80/20) over 1500 keys of 4 KiB (loaded from an RDB file)"
  local port=$((20000 + RANDOM % 20000)) n=1500
  # No RDB checksum or compression: under lackey, verifying or decompressing
  # costs the load several instructions per byte.
  redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --dbfilename kv.rdb --appendonly no --rdbchecksum no --rdbcompression no \
    --daemonize no >"$work/redis-load.log" 2>&1 &
  local server=$!
  pids+=("$server")
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$port" eval "for i = 0, $n - 1 do redis.call('SET', string.format('key:%06d', i), string.rep('v', 4096)) end" 0 >/dev/null
  redis-cli -p "$port" save >/dev/null
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$server" || true
  start_recording redis
  traced redis redis-server --port "$port" --bind 127.0.0.1 --dir "$work" \
    --dbfilename kv.rdb --rdbchecksum no --save "" --appendonly no --daemonize no >"$work/redis.log" 2>&1
  for _ in $(seq 600); do timeout 2 redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  # One request at a time (redis-cli without --pipe waits for each reply):
  # a pipelined client would have the server buffer its whole input.
  python3 -c "$zipf_py"'
rnd = random.Random(2)
for i, k in enumerate(zipf_keys('"$n"', 0.99, 200000, 1)):
    if rnd.random() < 0.8:
        print("GET key:%06d" % k)
    else:
        print("SET key:%06d %08d%s" % (k, i, "w" * 4088))
' 2>/dev/null | timeout 1200 redis-cli -p "$port" >/dev/null 2>"$work/redis-client.log" &
  local client=$!
  finish_recording redis
  kill "$client" 2>/dev/null || true
  wait "$client" 2>/dev/null || true
}

record_sqlite() {
  echo "== sqlite3, Zipf(0.99) point lookups then updates by an indexed name over a 40k-row table (a database file)"
  local n=40000
  python3 -c "$zipf_py"'
n = '"$n"'
print("PRAGMA page_size = 4096;")
print("CREATE TABLE acct(id INTEGER PRIMARY KEY, name TEXT, balance INTEGER, note BLOB);")
print("WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
      "INSERT INTO acct SELECT x, printf(\"user%%08d\", (x * 7919) %% %d), x, randomblob(160) FROM c;" % (n - 1, n))
print("CREATE INDEX acct_name ON acct(name);")
print("CREATE TABLE q(seq INTEGER PRIMARY KEY, name TEXT);")
print("BEGIN;")
for i, k in enumerate(zipf_keys(n, 0.99, 100000, 1)):
    print("INSERT INTO q VALUES(%d, %r);" % (i, "user%08d" % ((k * 7919) % n)))
print("COMMIT;")
' | sqlite3 "$work/bank.db"
  start_recording sqlite
  # Lookups, then updates, each one index probe and one row per request.
  printf '%s\n' "PRAGMA cache_size = -65536;" \
    "SELECT sum(a.balance) FROM q JOIN acct a ON a.name = q.name WHERE q.seq < 60000;" \
    "UPDATE acct SET balance = balance + 1 WHERE name IN (SELECT name FROM q WHERE seq >= 60000);" >"$work/run.sql"
  # (a background job's stdin is /dev/null: the script goes by name)
  traced sqlite sqlite3 "$work/bank.db" ".read $work/run.sql" >/dev/null 2>"$work/sqlite.log"
  finish_recording sqlite
}

start=$SECONDS
for program in $programs; do "record_$program"; done
echo "recorded in $((SECONDS - start)) s into $out"
for f in "$out"/*.trace; do
  "$tracegen" --info "$f" | sed -n '1p;2p;5p;6p;7p'
done
