#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Restore of a checkpointed process (docs/perf.md "Checkpoint restore"):
# for processes of 64 MiB, 512 MiB and 2 GiB, the restore latency, the
# clone's local (anonymous) memory after the restore and after it wrote 10%
# of its pages, and the time of a full read pass, under mow and moa against
# a copy-based restore of the same checkpoint (every page read into fresh
# anonymous memory, as CRIU restores), and mow with --prefault (page tables
# filled during the restore); then ten mow clones of the 512 MiB
# checkpoint at once. Needs root.
#
#   tests/bench/ckpt_restore.sh [BUILD_DIR] [SIZES_MIB...]
#
# The image lies in /dev/shm (memory, as a checkpoint on a memory tier does).
set -euo pipefail
build=${1:-build}
shift || true
sizes=("${@:-64 512 2048}")
[[ $(id -u) == 0 ]] || { echo "ckpt_restore.sh: needs root (ptrace, clone3 set_tid)" >&2; exit 77; }
for p in tools/ckpt/cxlpool-ckpt tools/ckpt-restore/cxlpool-restore tests/bench/ckpt_bench_target; do
  [[ -x $build/$p ]] || { echo "ckpt_restore.sh: $build/$p is not built (ninja -C $build)" >&2; exit 1; }
done
exec python3 - "$build" ${sizes[*]} <<'PY'
import os, re, subprocess, sys, time
build, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
ckpt = f"{build}/tools/ckpt/cxlpool-ckpt"
restore = f"{build}/tools/ckpt-restore/cxlpool-restore"
target = f"{build}/tests/bench/ckpt_bench_target"

def spawn(argv):
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            close_fds=True, text=True, bufsize=1)

def ask(p, cmd):
    p.stdin.write(cmd + "\n"); p.stdin.flush()
    return p.stdout.readline().split()

def stat(p):
    f = ask(p, "stat")
    return {f[i]: int(f[i + 1]) for i in range(0, len(f), 2)}

def checkpoint(mib):
    image = f"/dev/shm/cxlpool-ckpt-bench-{mib}.img"
    if os.path.exists(image): os.unlink(image)
    t = spawn([target, str(mib)])
    assert t.stdout.readline().strip() == "checkpoint"
    start = time.monotonic()
    subprocess.run([ckpt, "dump", str(t.pid), image, "--kill"], check=True, capture_output=True)
    dump_ms = (time.monotonic() - start) * 1e3
    t.wait()
    return image, dump_ms

def one(image, policy, count=1):
    start = time.monotonic()
    extra = ["--prefault"] if policy.endswith("+prefault") else []
    r = spawn([restore, image, "--policy", policy.split("+")[0], "--count", str(count)] + extra)
    lat = []
    while len(lat) < count:
        line = r.stderr.readline()
        m = re.search(r"restored in ([0-9.]+) ms", line)
        if m: lat.append(float(m.group(1)))
        elif not line or "cannot restore" in line or "of " + image in line:
            r.kill(); return {"error": line.strip()}
    wall = (time.monotonic() - start) * 1e3
    res = {"latency_ms": max(lat), "wall_ms": wall}
    if count == 1:
        s0 = stat(r)
        res["read_ms"] = float(ask(r, "read")[1])
        res["read2_ms"] = float(ask(r, "read")[1])
        s1 = stat(r)
        ask(r, "write 10")
        s2 = stat(r)
        res.update(anon_after_restore_kib=s0["rss_anon_kib"], anon_after_read_kib=s1["rss_anon_kib"],
                   anon_after_write10_kib=s2["rss_anon_kib"])
        r.stdin.write("quit\n"); r.stdin.flush()
    else:
        r.stdin.write("stat\n" * count); r.stdin.flush()
        anon = 0
        for _ in range(count):
            f = r.stdout.readline().split(); anon += int(f[1])
        res["anon_total_kib"] = anon
        r.stdin.write("quit\n" * count); r.stdin.flush()
    r.stdin.close(); r.wait()
    return res

print(f"# cxlpool checkpoint restore, {time.strftime('%Y-%m-%d %H:%M:%S')}, kernel {os.uname().release}, {os.cpu_count()} CPUs")
for mib in sizes:
    image, dump_ms = checkpoint(mib)
    print(f"\n## {mib} MiB process (checkpoint {dump_ms:.0f} ms, image {os.path.getsize(image) >> 20} MiB in /dev/shm)")
    rows = {p: one(image, p) for p in ("copy", "mow", "mow+prefault", "moa")}
    base = rows["copy"]
    print(f"{'policy':12} {'restore ms':>10} {'x copy':>7} {'local MiB':>9} {'ratio':>6} {'+10% w MiB':>10} {'ratio':>6} "
          f"{'read ms':>8} {'x copy':>7} {'2nd read':>8}")
    for p, r in rows.items():
        if "error" in r:
            print(f"{p:12} {r['error']}"); continue
        print(f"{p:12} {r['latency_ms']:10.2f} {base['latency_ms'] / r['latency_ms']:6.1f}x "
              f"{r['anon_after_restore_kib'] / 1024:9.1f} {r['anon_after_restore_kib'] / max(base['anon_after_restore_kib'], 1):6.3f} "
              f"{r['anon_after_write10_kib'] / 1024:10.1f} {r['anon_after_write10_kib'] / max(base['anon_after_write10_kib'], 1):6.3f} "
              f"{r['read_ms']:8.1f} {r['read_ms'] / base['read_ms']:6.2f}x {r['read2_ms']:8.1f}")
    if mib == 512 or len(sizes) == 1:
        ten_copy, ten_mow = one(image, "copy", 10), one(image, "mow", 10)
        if "error" not in ten_copy and "error" not in ten_mow:
            print(f"ten clones at once: mow {ten_mow['wall_ms']:.0f} ms (slowest {ten_mow['latency_ms']:.1f} ms), "
                  f"local {ten_mow['anon_total_kib'] / 1024:.1f} MiB; copy {ten_copy['wall_ms']:.0f} ms, local "
                  f"{ten_copy['anon_total_kib'] / 1024:.1f} MiB; ratio {ten_mow['anon_total_kib'] / max(ten_copy['anon_total_kib'], 1):.3f}")
    os.unlink(image)
PY
