#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python call overhead against the C ABI, in one run against one daemon.

Starts cxlpoold (a temporary state dir), runs build/tests/bench/kv_call_bench
(the C calls) and then the same operations through the cxlpool package:
  lookup  Namespace.lookup of one stored key
  get     Namespace.get + Lease.release of that chunk
  put     Namespace.put of one 4 KiB chunk (reserve, one copy, commit), a new key each
  put2m   the same with 2 MiB chunks (throughput of the median chunk)
  get2m   get + a 2 MiB copy out of the lease + release (the same)
and prints each pair, the added microseconds per call and the throughput
ratios Python/C. A second table splits the added time per call, immune to a
busy machine: the package's wrapper (package call minus the same bare ctypes
calls, timed back to back) plus the ctypes FFI cost of each C call it makes. Each side runs --repeat times, interleaved; the best run of
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
    run = int.from_bytes(os.urandom(8), "little") << 64  # keys of this run only (the index is global)
    k0 = cxlpool.Keys.from_ints([run + (1 << 64)])
    ns.put(k0, [small])

    pc = time.perf_counter

    def median_ns(call, count: int = iterations) -> float:  # as kv_call_bench: the median call
        times = []
        for i in range(count):
            t0 = pc()
            call(i)
            times.append(pc() - t0)
        return statistics.median(times) * 1e9

    def get(i: int) -> None:
        with ns.get(k0):
            pass

    keys = [cxlpool.Keys.from_ints([run + (2 << 64) + i]) for i in range(iterations)]
    lookup_ns = median_ns(lambda i: ns.lookup(k0))
    get_ns = median_ns(get)
    put_ns = median_ns(lambda i: ns.put(keys[i], [small]))

    big_keys = [cxlpool.Keys.from_ints([run + (3 << 64) + i]) for i in range(chunks)]
    # 2 MiB chunks: GB/s of the median chunk, as kv_call_bench.
    put2m = len(big) / (median_ns(lambda i: ns.put(big_keys[i], [big]), chunks) / 1e9) / 1e9
    resident = min(chunks, 8)

    def get_big(i: int) -> None:
        with ns.get(big_keys[chunks - 1 - i % resident]) as lease:
            ctypes.memmove(out_addr, lease.address(0), len(out))

    get2m = len(out) / (median_ns(get_big, chunks) / 1e9) / 1e9
    store.close()
    c.close()
    return {"lookup_ns": lookup_ns, "get_ns": get_ns, "put_ns": put_ns, "put2m_gbps": put2m, "get2m_gbps": get2m}


def decomposed(socket: str, iterations: int) -> dict:
    """The package's own cost per call, robust to a busy machine: each
    iteration times the bare ctypes call(s) and the package call back to
    back, and the medians of both are kept; the bare FFI cost is that of a
    call that does not reach the daemon (cxlpool_kv_in_flight)."""
    import cxlpool
    from cxlpool._lib import KvKey, KvLocation, lib
    c = cxlpool.Client(socket, "kv-call-bench-py")
    store = c.kv_store()
    ns = store.namespace(f"call-bench-dec-{os.getpid()}-{time.monotonic_ns()}", layout="raw", dtype="bf16",
                         chunk_tokens=16)
    small = bytearray(b"\1" * 4096)
    run = int.from_bytes(os.urandom(8), "little") << 64
    k0 = cxlpool.Keys.from_ints([run + (1 << 64)])
    ns.put(k0, [small])
    h, nsid, karr = store.handle, ns.id, k0.array
    loc = (KvLocation * 1)()
    lease = ctypes.c_uint64()
    src = (ctypes.c_void_p * 1)(ctypes.addressof((ctypes.c_char * 4096).from_buffer(small)))
    pc = time.perf_counter
    res = {}

    def pair(bare, wrapped):
        a, b = [], []
        for i in range(iterations):
            t0 = pc()
            bare(i)
            t1 = pc()
            wrapped(i)
            t2 = pc()
            a.append(t1 - t0)
            b.append(t2 - t1)
        return statistics.median(a) * 1e9, statistics.median(b) * 1e9

    def bare_get(i):
        lib.cxlpool_kv_get(h, nsid, karr, 1, ctypes.byref(lease), loc)
        lib.cxlpool_kv_release(h, lease.value)

    def wrapped_get(i):
        with ns.get(k0):
            pass

    keys_a = [KvKey(i, (run >> 64) + 5) for i in range(iterations)]
    keys_b = [cxlpool.Keys.from_ints([run + (6 << 64) + i]) for i in range(iterations)]
    res["lookup"] = pair(lambda i: lib.cxlpool_kv_lookup(h, nsid, karr, 1, None), lambda i: ns.lookup(k0))
    res["get"] = pair(bare_get, wrapped_get)
    res["put"] = pair(lambda i: lib.cxlpool_kv_put(h, nsid, ctypes.byref(keys_a[i]), 1, src, 4096),
                      lambda i: ns.put(keys_b[i], [small]))
    ffi = []
    for _ in range(iterations):
        t0 = pc()
        lib.cxlpool_kv_in_flight(h)
        ffi.append(pc() - t0)
    res["ffi"] = statistics.median(ffi) * 1e9
    store.close()
    c.close()
    return res


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
    store = ('slot_bytes = "2M"\ndram_bytes = "128M"\ncxl_bytes = 0\nput_window_bytes = "64M"\n')
    d = Daemon(os.path.join(build, "daemon/cxlpoold"), store)
    try:
        runs_c, runs_py = [], []
        for rep in range(args.repeat):
            # Alternate which side goes first, so neither always meets the
            # arena the other just filled.
            sides = [lambda: runs_c.append(c_side(os.path.join(build, "tests/bench/kv_call_bench"), d.socket,
                                                  args.iterations, args.chunks)),
                     lambda: runs_py.append(python_side(d.socket, args.iterations, args.chunks))]
            for side in (sides if rep % 2 == 0 else sides[::-1]):
                side()
        dec = decomposed(d.socket, args.iterations)
    finally:
        d.stop()
    # Per call: each run's median call; across runs the best run of each
    # side (its own cost on a busy machine) and the median run.
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
    print(f"\nper call, medians of back-to-back pairs (ctypes FFI alone: {dec['ffi'] / 1000:.2f}us a call)")
    print(f"{'call':8} {'bare ctypes':>12} {'package':>10} {'wrapper':>9} {'added vs C':>11}")
    calls = {"lookup": 1, "get": 2, "put": 1}
    for k, n in calls.items():
        bare, wrapped = dec[k]
        added = wrapped - bare + n * dec["ffi"]
        print(f"{k:8} {bare / 1000:10.2f}us {wrapped / 1000:8.2f}us {(wrapped - bare) / 1000:7.2f}us "
              f"{added / 1000:9.2f}us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
