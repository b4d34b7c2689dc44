#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A warmed-up cxlpool-infer on its daemon path (docs/perf.md "Checkpoint
# restore"): shared weights in cxlpoold, the KV arena on leased regions,
# the KV store. It runs with --pause-warm (once the first requests are
# prefilled it closes its KV-store session, says "warm" and waits), is
# checkpointed by a cxlpoold of this script's own (`cxlpoolctl ckpt create
# --kill`: the connection, the model's named region and the arena's leases
# with their bytes) and restored through it under mow and moa; each clone
# reconnects, gets the leases back at their addresses under their ids,
# opens the KV store again and decodes the rest. Checks that every clone's
# logits and tokens equal an uninterrupted run's (and the reference's), and
# prints the time from the restore to the first decoded token against a
# cold start of the same model (connecting, loading the weights into the
# daemon, making the arena, prefilling, to the first decoded token).
# Needs root (exit 77 without). Exit 1 on a mismatch or a failed restore.
# Also the integration test integration_ckpt_infer_daemon.
#
#   tests/bench/ckpt_infer_daemon.sh [BUILD_DIR] [cxlpool-infer flags...]   (default: --short)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
shift || true
flags=("${@:---short}")
[[ $(id -u) == 0 ]] || { echo "ckpt_infer_daemon.sh: needs root (ptrace, clone3 set_tid)" >&2; exit 77; }
# CAP_SYS_PTRACE (bit 19) in the effective set: cxlpoold traces the target.
cap_eff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(( (16#$cap_eff >> 19) & 1 )) || { echo "ckpt_infer_daemon.sh: needs CAP_SYS_PTRACE (cxlpoold traces the target)" >&2; exit 77; }
for p in daemon/cxlpoold tools/ctl/cxlpoolctl tools/ckpt-restore/cxlpool-restore tools/infer/cxlpool-infer; do
  [[ -x $build/$p ]] || { echo "ckpt_infer_daemon.sh: $build/$p is not built (ninja -C $build)" >&2; exit 1; }
done
# A sanitized cxlpool-infer reserves terabytes of shadow with MAP_NORESERVE,
# which a checkpoint does not record (docs/ckpt.md "What is not restored").
# (grep reads all of ldd's output: with pipefail, grep -q's early exit
# could fail ldd with SIGPIPE and the check with it.)
if ldd "$build/tools/infer/cxlpool-infer" 2>/dev/null | grep libasan >/dev/null; then
  echo "ckpt_infer_daemon.sh: cxlpool-infer is built with AddressSanitizer: its shadow reservations cannot be checkpointed" >&2
  exit 77
fi
. "$here/bench_daemon.sh"
bench_make_workdir "${TMPDIR:-/tmp}" cxlpool-ckpt-infer
# A small KV store (256 KiB slots: a 32-token chunk of up to 16 layers of
# --short's heads) and no tiering moves while the timings run.
cat >"$work/cxlpoold.toml" <<'EOF'
[daemon]
log_level = "warning"

[tiering]
enabled = false

[kvstore]
slot_bytes = 262144
dram_bytes = 67108864
cxl_bytes = 0
put_window_bytes = 2097152
EOF
bench_start_daemon "$build/daemon/cxlpoold" "$work/cxlpoold.toml"
status=0
python3 - "$build" "$sock" "$work" "${flags[@]}" <<'PY' || status=$?
import json, os, signal, subprocess, sys, time
build, sock, work, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
signal.alarm(600)  # a clone that never answers fails the run instead of hanging it
ctl = [f"{build}/tools/ctl/cxlpoolctl", "--socket", sock]
infer = [f"{build}/tools/infer/cxlpool-infer", "--socket", sock, "--json"] + flags

def model_dir(name):
    path = f"{work}/{name}"
    os.makedirs(path, mode=0o755)
    return path

def read_reply(stream):
    """cxlpoolctl's JSON reply (indented over several lines), or None."""
    text = ""
    while line := stream.readline():
        text += line
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    return None

def summary(text, key):
    lines = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    found = [j for j in lines if key in j]
    return found[-1] if found else None

cold = []
for i in range(3):
    start = time.monotonic()
    r = subprocess.run(infer + ["--model-dir", model_dir(f"cold{i}")], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, close_fds=True)
    j = summary(r.stdout, "runtime_logits_crc32c")
    if r.returncode != 0 or j is None or not j["identical"]:
        sys.exit(f"an uninterrupted run failed (exit {r.returncode}): {r.stderr.strip()} {r.stdout.strip()}")
    cold.append((j, (time.monotonic() - start) * 1e3))
expected = cold[0][0]["runtime_logits_crc32c"]
assert all(c[0]["runtime_logits_crc32c"] == expected for c in cold), "uninterrupted runs disagree"

t = subprocess.Popen(infer + ["--model-dir", model_dir("warm"), "--pause-warm", "--keep-model"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True, text=True, bufsize=1)
line = t.stdout.readline().strip()
if line != "warm":
    t.kill()
    sys.exit(f"cxlpool-infer did not get warm: {line} {t.stderr.read().strip()}")
name = f"infer-{os.getpid()}"
start = time.monotonic()
made = subprocess.run(ctl + ["ckpt", "create", str(t.pid), name, "--kill"], capture_output=True, text=True)
dump_ms = (time.monotonic() - start) * 1e3
t.wait()
if made.returncode != 0:
    sys.exit(f"checkpoint refused: {made.stderr.strip()}")
listed = json.loads(subprocess.run(ctl + ["--json", "ckpt", "list"], capture_output=True, text=True,
                                   check=True).stdout)
image = next((c for c in listed if c.get("name") == name), {})
print(f"# cxlpool-infer {' '.join(flags)} (daemon path: weights in cxlpoold, KV arena on leased regions), "
      f"{time.strftime('%Y-%m-%d %H:%M:%S')}, kernel {os.uname().release}, {os.cpu_count()} CPUs; "
      f"image {image.get('bytes', 0) / 2**20:.1f} MiB, checkpoint {dump_ms:.0f} ms")
best_cold = min(c[0]["runtime_first_token_ms"] for c in cold)
print(f"cold start to the first token: {best_cold:.1f} ms in-process (best of 3: connect, load the weights into "
      f"cxlpoold, make the arena, prefill; the process itself, with the reference run, "
      f"{min(c[1] for c in cold):.0f} ms)")
print(f"{'policy':8} {'restore ms':>10} {'resume->token ms':>16} {'total ms':>9} {'x faster':>8}  logits")
bad = 0
for policy in ("mow", "moa"):
    # The clone's stdio is cxlpoolctl's: it prints the reply, exits, and the
    # clone (paused where the original was) resumes on the byte sent.
    r = subprocess.Popen(ctl + ["--json", "ckpt", "restore", name, "--policy", policy], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True, text=True, bufsize=1)
    reply = read_reply(r.stdout)
    if reply is None:
        r.kill()
        print(f"{policy:8} restore failed: {r.stderr.read().strip()}"); bad += 1; continue
    lat = reply["restore_ns"] / 1e6
    r.stdin.write("x")
    r.stdin.close()
    out, err = r.stdout.read(), r.stderr.read()
    r.wait()
    j = summary(out, "runtime_logits_crc32c")
    if j is None:
        print(f"{policy:8} the clone said nothing: {err.strip()}"); bad += 1; continue
    same = j["runtime_logits_crc32c"] == expected and j["identical"]
    bad += not same
    total = lat + j["runtime_first_token_ms"]
    print(f"{policy:8} {lat:10.2f} {j['runtime_first_token_ms']:16.2f} {total:9.2f} {best_cold / total:7.1f}x  "
          f"{'identical' if same else 'DIFFERENT'} ({j['runtime_logits_crc32c']:08x})")
subprocess.run(ctl + ["ckpt", "rm", name], capture_output=True)
sys.exit(1 if bad else 0)
PY
if [[ $status != 0 ]]; then
  echo "ckpt_infer_daemon.sh: failed; cxlpoold's log:" >&2
  cat "$work/daemon.log" >&2
fi
exit "$status"
