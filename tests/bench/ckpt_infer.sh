#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A warmed-up cxlpool-infer (docs/perf.md "Checkpoint restore"): the
# reference path (plain process memory, no daemon) paused once its prompts
# are prefilled, checkpointed into /dev/shm and restored under each policy.
# Checks that every restored clone decodes logits identical to an
# uninterrupted run, and prints the time from the restore to the first
# decoded token against a cold start (reading the model, building the
# weights, prefilling). hybrid copies the hot set the moa restore recorded.
# Needs root (exit 77 without). Exit 1 on a logits mismatch or a failed
# restore. Also the integration test integration_ckpt_infer.
#
#   tests/bench/ckpt_infer.sh [BUILD_DIR] [cxlpool-infer flags...]   (default: --short)
set -euo pipefail
build=${1:-build}
shift || true
flags=("${@:---short}")
[[ $(id -u) == 0 ]] || { echo "ckpt_infer.sh: needs root (ptrace, clone3 set_tid)" >&2; exit 77; }
for p in tools/ckpt/cxlpool-ckpt tools/ckpt-restore/cxlpool-restore tools/infer/cxlpool-infer; do
  [[ -x $build/$p ]] || { echo "ckpt_infer.sh: $build/$p is not built (ninja -C $build)" >&2; exit 1; }
done
# A sanitized cxlpool-infer reserves terabytes of shadow with MAP_NORESERVE,
# which a checkpoint does not record (docs/ckpt.md "What is not restored").
if ldd "$build/tools/infer/cxlpool-infer" 2>/dev/null | grep libasan >/dev/null; then
  echo "ckpt_infer.sh: cxlpool-infer is built with AddressSanitizer: its shadow reservations cannot be checkpointed" >&2
  exit 77
fi
exec python3 - "$(dirname "$0")" "$build" "${flags[@]}" <<'PY'
import json, os, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from ckpt_restore_lines import restored_ms
build, flags = sys.argv[2], sys.argv[3:]
ckpt = f"{build}/tools/ckpt/cxlpool-ckpt"
restore = f"{build}/tools/ckpt-restore/cxlpool-restore"
infer = [f"{build}/tools/infer/cxlpool-infer", "--reference-only", "--json"] + flags

def spawn(argv):
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            close_fds=True, text=True, bufsize=1)

def last_json(text):
    return json.loads([l for l in text.splitlines() if l.startswith("{")][-1])

cold = []
for _ in range(3):
    start = time.monotonic()
    r = subprocess.run(infer, stdin=subprocess.DEVNULL, capture_output=True, text=True, close_fds=True, check=True)
    cold.append((last_json(r.stdout), (time.monotonic() - start) * 1e3))
expected = cold[0][0]["logits_crc32c"]
assert all(c[0]["logits_crc32c"] == expected for c in cold), "uninterrupted runs disagree"

image = f"/dev/shm/cxlpool-ckpt-infer-{os.getpid()}.img"
t = spawn(infer + ["--pause-warm"])
assert t.stdout.readline().strip() == "warm"
start = time.monotonic()
subprocess.run([ckpt, "dump", str(t.pid), image, "--kill"], check=True, capture_output=True, close_fds=True)
dump_ms = (time.monotonic() - start) * 1e3
t.wait()

print(f"# cxlpool-infer {' '.join(flags)} (reference path, no daemon), {time.strftime('%Y-%m-%d %H:%M:%S')}, "
      f"kernel {os.uname().release}, {os.cpu_count()} CPUs; image {os.path.getsize(image) >> 20} MiB, "
      f"checkpoint {dump_ms:.0f} ms")
best_cold = min(c[0]["first_token_ms"] for c in cold)
print(f"cold start to the first token: {best_cold:.1f} ms in-process (best of 3; the process itself, with "
      f"generating and writing the model, {min(c[1] for c in cold):.0f} ms)")
print(f"{'policy':8} {'restore ms':>10} {'resume->token ms':>16} {'total ms':>9} {'x faster':>8}  logits")
bad = 0
# hybrid uses the hot set the moa restore recorded (the pages the resumed
# decoder faulted in: docs/ckpt.md "Hot sets").
hot = image + ".hot"
extra = {"moa": ["--record-hot", hot], "hybrid": ["--hot", hot]}
for policy in ("mow", "moa", "hybrid", "copy"):
    r = spawn([restore, image, "--policy", policy] + extra.get(policy, []))
    lat, why = restored_ms(r, image)
    if lat is None:
        print(f"{policy:8} {why}"); bad += 1; continue
    out, err = r.communicate("x")
    if r.returncode != 0:
        print(f"{policy:8} exit {r.returncode}: {err.strip()}"); bad += 1; continue
    j = last_json(out)
    same = j["logits_crc32c"] == expected
    bad += not same
    total = lat + j["first_token_ms"]
    print(f"{policy:8} {lat:10.2f} {j['first_token_ms']:16.2f} {total:9.2f} {best_cold / total:7.1f}x  "
          f"{'identical' if same else 'DIFFERENT'} ({j['logits_crc32c']:08x})")
os.unlink(image)
if os.path.exists(hot): os.unlink(hot)
sys.exit(1 if bad else 0)
PY
