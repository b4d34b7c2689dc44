#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Restore of a checkpointed process (docs/perf.md "Checkpoint restore"):
# for processes of 64 MiB, 512 MiB and 2 GiB, the restore latency, the
# clone's local (anonymous) memory after the restore and after it wrote 10%
# of its pages, and the time of a full read pass, under mow and moa against
# a copy-based restore of the same checkpoint (every page read into fresh
# anonymous memory, as CRIU restores), and mow with --prefault (page tables
# filled during the restore); then ten mow clones of the 512 MiB
# checkpoint at once; then a workload that writes 30% of the pages, timed
# from the restore to its end under mow, moa and hybrid with the hot set a
# recording moa restore of the same workload saved (the "write 30%" rows),
# once with the written pages spread (one in three) and once in runs of 64.
# Where `criu check` passes (the QEMU guest's kernel: ckpt_restore_vm.sh;
# CRIU 3.17 refuses kernels with [vvar_vclock]), CRIU checkpoints and
# restores the same program at the same size in the same run, and the
# restore latencies are put against CRIU's; elsewhere that row says why it
# is missing. Needs root.
#
#   tests/bench/ckpt_restore.sh [BUILD_DIR] [SIZES_MIB...]
#
# The image lies in /dev/shm (memory, as a checkpoint on a memory tier does),
# CRIU's image directory too.
set -euo pipefail
build=${1:-build}
shift || true
sizes=("${@:-64 512 2048}")
[[ $(id -u) == 0 ]] || { echo "ckpt_restore.sh: needs root (ptrace, clone3 set_tid)" >&2; exit 77; }
for p in tools/ckpt/cxlpool-ckpt tools/ckpt-restore/cxlpool-restore tests/bench/ckpt_bench_target; do
  [[ -x $build/$p ]] || { echo "ckpt_restore.sh: $build/$p is not built (ninja -C $build)" >&2; exit 1; }
done
exec python3 -u - "$(dirname "$0")" "$build" ${sizes[*]} <<'PY'
import os, re, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from ckpt_restore_lines import restored_ms
from ckpt_criu import Criu
build, sizes = sys.argv[2], [int(s) for s in sys.argv[3:]]
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

def available_mib():
    with open("/proc/meminfo") as f:
        return next(int(l.split()[1]) >> 10 for l in f if l.startswith("MemAvailable:"))

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
        talk(r, res)
    else:
        r.stdin.write("stat\n" * count); r.stdin.flush()
        anon = 0
        for _ in range(count):
            f = r.stdout.readline().split(); anon += int(f[1])
        res["anon_total_kib"] = anon
        r.stdin.write("quit\n" * count); r.stdin.flush()
    r.stdin.close(); r.wait()
    return res

# A restored clone's stat, two read passes, a 10% write: into res.
def talk(r, res):
    s0 = stat(r)
    res["read_ms"] = float(ask(r, "read")[1])
    res["read2_ms"] = float(ask(r, "read")[1])
    s1 = stat(r)
    ask(r, "write 10")
    s2 = stat(r)
    res.update(anon_after_restore_kib=s0["rss_anon_kib"], anon_after_read_kib=s1["rss_anon_kib"],
               anon_after_write10_kib=s2["rss_anon_kib"])
    r.stdin.write("quit\n"); r.stdin.flush()
    return res

def run30(image, policy, run, extra=()):
    r = spawn([restore, image, "--policy", policy] + list(extra))
    lat, why = restored_ms(r, image)
    if lat is None: return {"error": why}
    f = ask(r, f"write 30 {run}")
    write_ms, pages = float(f[1]), int(f[3])
    anon = stat(r)["rss_anon_kib"]
    r.stdin.write("quit\n"); r.stdin.flush(); r.stdin.close()
    err = r.stderr.read()
    if r.wait() != 0: return {"error": err.strip()}
    return {"latency_ms": lat, "write_ms": write_ms, "total_ms": lat + write_ms, "anon_kib": anon, "pages": pages}

def hot_pages(path):
    with open(path, "rb") as f:
        return int.from_bytes(f.read(24)[20:24], "little")  # docs/ckpt.md "Hot sets": page count at 20

# Hybrid against the better of mow and moa on a workload that writes 30% of
# the pages, spread one page in three or in runs of RUN pages: the hot set is
# what a moa restore running the same workload faulted in (REAP's record
# run), saved at its exit. Per written page: what mow's copy-on-write faults
# cost in the run, and what hybrid's up-front copy of the hot set added to
# the restore (its restore less mow's, over the hot pages).
def write30(image, run):
    hot = image + ".hot"
    rec = run30(image, "moa", run, ["--record-hot", hot])
    n_hot = hot_pages(hot) if "error" not in rec else 0
    rows = {"mow": run30(image, "mow", run), "moa": run30(image, "moa", run),
            "hybrid": run30(image, "hybrid", run, ["--hot", hot]) if "error" not in rec else rec}
    if os.path.exists(hot): os.unlink(hot)
    ok = [rows[p]["total_ms"] for p in ("mow", "moa") if "error" not in rows[p]]
    best = min(ok) if ok else float("nan")
    how = "one page in three" if run == 1 else f"in runs of {run} pages"
    print(f"write 30% of the pages after the restore, {how}:")
    print(f"{'policy':12} {'restore ms':>10} {'write ms':>9} {'total ms':>9} {'x best':>7} {'local MiB':>9}")
    for p, r in rows.items():
        if "error" in r:
            print(f"{p:12} {r['error']}"); continue
        print(f"{p:12} {r['latency_ms']:10.2f} {r['write_ms']:9.1f} {r['total_ms']:9.1f} {r['total_ms'] / best:6.2f}x "
              f"{r['anon_kib'] / 1024:9.1f}")
    mow, hyb = rows["mow"], rows["hybrid"]
    if "error" not in mow and "error" not in hyb and n_hot:
        print(f"per page: mow's fault {mow['write_ms'] * 1e3 / mow['pages']:.2f} us ({mow['pages']} written); hybrid's "
              f"up-front copy {(hyb['latency_ms'] - mow['latency_ms']) * 1e3 / n_hot:.2f} us ({n_hot} hot pages), "
              f"its remaining faults {hyb['write_ms'] * 1e3 / hyb['pages']:.2f} us")

print(f"# cxlpool checkpoint restore, {time.strftime('%Y-%m-%d %H:%M:%S')}, kernel {os.uname().release}, {os.cpu_count()} CPUs")
criu = Criu(target)
if criu.why_not: print(f"CRIU: not measured: {criu.why_not}")
for mib in sizes:
    image, dump_ms = checkpoint(mib)
    print(f"\n## {mib} MiB process (checkpoint {dump_ms:.0f} ms, image {os.path.getsize(image) >> 20} MiB in /dev/shm)")
    rows = {p: one(image, p) for p in ("copy", "mow", "mow+prefault", "moa")}
    if not criu.why_not:
        rows["criu"] = criu.run(mib, talk)
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
    c = rows.get("criu")
    if c and "error" not in c:
        ours = "; ".join(f"{p} {c['latency_ms'] / rows[p]['latency_ms']:.1f}x (wall {c['wall_ms'] / rows[p]['wall_ms']:.1f}x)"
                         for p in ("mow", "moa", "copy") if "error" not in rows[p])
        print(f"CRIU restore {c['latency_ms']:.1f} ms (its restore_time; `criu restore -d` wall {c['wall_ms']:.0f} ms, "
              f"dump {c['dump_ms']:.0f} ms); faster than CRIU: {ours}")
    for run in (1, 64):
        write30(image, run)
    if (mib == 512 or len(sizes) == 1) and available_mib() < 12 * mib:
        print(f"ten clones at once: not measured: {available_mib()} MiB available, ten copies need {10 * mib}")
    elif mib == 512 or len(sizes) == 1:
        ten_copy, ten_mow = one(image, "copy", 10), one(image, "mow", 10)
        if "error" not in ten_copy and "error" not in ten_mow:
            print(f"ten clones at once: mow {ten_mow['wall_ms']:.0f} ms (slowest {ten_mow['latency_ms']:.1f} ms), "
                  f"local {ten_mow['anon_total_kib'] / 1024:.1f} MiB; copy {ten_copy['wall_ms']:.0f} ms, local "
                  f"{ten_copy['anon_total_kib'] / 1024:.1f} MiB; ratio {ten_mow['anon_total_kib'] / max(ten_copy['anon_total_kib'], 1):.3f}")
    os.unlink(image)
PY
