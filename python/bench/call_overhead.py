#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python call overhead against the C ABI, in one run against one daemon.

Starts cxlpoold (a temporary state dir), runs build/tests/bench/kv_call_bench
(the C calls) and then the same operations through the cxlpool package:
  lookup  Namespace.lookup of one stored key
  get     Namespace.get + Lease.release of that chunk
  put     Namespace.put of one 4 KiB chunk (reserve, one copy, commit), a new key each
  put2m   the same with 2 MiB chunks (throughput)
  get2m   get + a 2 MiB copy out of the lease + release (throughput)
and prints each pair, the added microseconds per call and the throughput
ratios Python/C. Each side runs --repeat times, interleaved; the best run of
each side and the medians are printed.

    python/bench/call_overhead.py [BUILD_DIR] [--iterations N] [--chunks N] [--repeat N]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def python_side(socket: str, iterations: int, chunks: int) -> dict:
    import cxlpool
    c = cxlpool.Client(socket, "kv-call-bench-py")
    store = c.kv_store()
    ns = store.namespace(f"call-bench-py-{os.getpid()}-{time.monotonic_ns()}", layout="raw", dtype="bf16",
                         chunk_tokens=16)
    small = bytearray(b"\1" * 4096)
    big = bytearray(b"\2" * (2 << 20))
    out = bytearray(2 << 20)
    out_addr = ctypes.addressof((ctypes.c_char * len(out)).from_buffer(out))
    k0 = cxlpool.Keys.from_ints([1 << 64])
    ns.put(k0, [small])

    t = time.perf_counter()
    for _ in range(iterations):
        ns.lookup(k0)
    lookup_ns = (time.perf_counter() - t) * 1e9 / iterations

    t = time.perf_counter()
    for _ in range(iterations):
        with ns.get(k0):
            pass
    get_ns = (time.perf_counter() - t) * 1e9 / iterations

    keys = [cxlpool.Keys.from_ints([(2 << 64) | i]) for i in range(iterations)]
    t = time.perf_counter()
    for k in keys:
        ns.put(k, [small])
    put_ns = (time.perf_counter() - t) * 1e9 / iterations

    big_keys = [cxlpool.Keys.from_ints([(3 << 64) | i]) for i in range(chunks)]
    t = time.perf_counter()
    for k in big_keys:
        ns.put(k, [big])
    put2m = chunks * len(big) / (time.perf_counter() - t) / 1e9

    resident = min(chunks, 8)
    got = 0
    t = time.perf_counter()
    for i in range(chunks):
        with ns.get(big_keys[chunks - 1 - i % resident]) as lease:
            if len(lease):
                ctypes.memmove(out_addr, lease.address(0), len(out))
                got += 1
    get2m = got * len(out) / (time.perf_counter() - t) / 1e9
    store.close()
    c.close()
    return {"lookup_ns": lookup_ns, "get_ns": get_ns, "put_ns": put_ns, "put2m_gbps": put2m, "get2m_gbps": get2m}


def c_side(binary: str, socket: str, iterations: int, chunks: int) -> dict:
    out = subprocess.run([binary, socket, str(iterations), str(chunks)], capture_output=True, text=True, check=True)
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ.setdefault("CXLPOOL_LIBRARY", os.path.join(build, "lib/client/libcxlpool.so"))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from conftest import Daemon  # the test suite's daemon launcher
    store = ('slot_bytes = "2M"\ndram_bytes = "256M"\ncxl_bytes = 0\nput_window_bytes = "64M"\n')
    d = Daemon(os.path.join(build, "daemon/cxlpoold"), store)
    try:
        runs_c, runs_py = [], []
        for _ in range(args.repeat):
            runs_c.append(c_side(os.path.join(build, "tests/bench/kv_call_bench"), d.socket, args.iterations,
                                 args.chunks))
            runs_py.append(python_side(d.socket, args.iterations, args.chunks))
    finally:
        d.stop()
    # The machine may be busy: the best run of each side is its own cost,
    # the median shows the spread.
    med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
    print(f"{'call':8} {'C best':>10} {'Py best':>10} {'added':>9}   {'C median':>10} {'Py median':>10} {'added':>9}")
    for k in ("lookup_ns", "get_ns", "put_ns"):
        cb, pb = min(r[k] for r in runs_c), min(r[k] for r in runs_py)
        cm, pm = med(runs_c, k), med(runs_py, k)
        print(f"{k[:-3]:8} {cb / 1000:8.2f}us {pb / 1000:8.2f}us {(pb - cb) / 1000:7.2f}us   "
              f"{cm / 1000:8.2f}us {pm / 1000:8.2f}us {(pm - cm) / 1000:7.2f}us")
    for k in ("put2m_gbps", "get2m_gbps"):
        cb, pb = max(r[k] for r in runs_c), max(r[k] for r in runs_py)
        cm, pm = med(runs_c, k), med(runs_py, k)
        print(f"{k[:-5]:8} {cb:6.2f}GB/s {pb:6.2f}GB/s ratio {pb / cb:.3f}   "
              f"{cm:6.2f}GB/s {pm:6.2f}GB/s ratio {pm / cm:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
