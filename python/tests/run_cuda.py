#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the CUDA cases of cuda_cases.py against a cxlpoold it starts, with
no pytest: the gpu suite's `python_cuda` (and, with --bench, the tiny
decoder's CUDA figures). Made for GPU hosts that receive the build as a
bundle (tests/gpu/bundle.sh): their Python is their own (newer, with its
own PyTorch) and may lack pytest.

  run_cuda.py --example PATH/tiny_decoder.py [--decode N] [--bench] [--only REGEX]

Environment: CXLPOOL_DAEMON (the cxlpoold to start), CXLPOOL_LIBRARY (the
libcxlpool the package loads), PYTHONPATH (the package and this folder).
Exit: 0 every case passed, 77 every case skipped (no usable GPU; the reasons
are printed), 1 a case failed. Under CXLPOOL_REQUIRE_GPU a case that skips
for want of a GPU fails.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback
from typing import Any, Callable, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SKIP = 77


def describe_host() -> None:
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    try:
        import torch
        dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
        print(f"torch {torch.__version__}, CUDA {torch.version.cuda}: {dev}")
    except ImportError as e:
        print(f"torch: not importable ({e})")
    except RuntimeError as e:  # a driver torch cannot use
        print(f"torch: CUDA query failed ({e})")
    try:
        import pytest
        print(f"pytest {pytest.__version__}: present (not needed here)")
    except ImportError:
        print("pytest: absent (not needed here)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--example", required=True, help="examples/python/tiny_decoder.py")
    ap.add_argument("--decode", type=int, default=16, help="decode steps of the tiny decoder")
    ap.add_argument("--bench", action="store_true", help="only the tiny decoder, printing its figures")
    ap.add_argument("--only", default="", help="run the cases whose name matches this regular expression")
    args = ap.parse_args()
    describe_host()
    try:
        import cxlpool
        import cuda_cases
        from daemon_process import Daemon
    except ImportError as e:
        print(f"FAIL: the cxlpool package does not import here: {e}")
        return 1
    print(f"libcxlpool: {cxlpool.library_path}")

    binary = os.environ.get("CXLPOOL_DAEMON", "")
    if not os.access(binary, os.X_OK):
        print(f"FAIL: CXLPOOL_DAEMON={binary!r} is not an executable cxlpoold")
        return 1
    require_gpu = bool(os.environ.get("CXLPOOL_REQUIRE_GPU"))
    try:
        daemon = Daemon(binary)
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    os.environ["CXLPOOL_SOCKET"] = daemon.socket
    results: List[Tuple[str, str, str]] = []

    def run(name: str, case: Callable[..., str], *case_args: Any) -> None:
        if args.only and not re.search(args.only, name):
            return
        start = time.monotonic()
        try:
            note = case(*case_args)
            status = "ok"
        except cuda_cases.Skip as e:
            note = str(e)
            status = "FAIL" if require_gpu and not isinstance(e, cuda_cases.NoTorch) else "SKIP"
            if status == "FAIL":
                note = "CXLPOOL_REQUIRE_GPU is set: " + note
        except Exception as e:  # noqa: BLE001  (any error is this case's failure)
            traceback.print_exc()
            note = f"{type(e).__name__}: {e}"
            status = "FAIL"
        results.append((name, status, note))
        print(f"{status:4} {name} ({time.monotonic() - start:.1f}s): {note}", flush=True)

    try:
        if not args.bench:
            with cxlpool.Client(daemon.socket, "run-cuda") as client:
                for name, case in cuda_cases.CLIENT_CASES.items():
                    run(name, case, client)
        run("tiny_decoder_on_cuda", cuda_cases.tiny_decoder_on_cuda, daemon.socket, args.example, args.decode,
            False)
    finally:
        rc = daemon.stop()
        if rc != 0:
            print(f"FAIL: cxlpoold exited with {rc}; its log:\n" + daemon.last_log[-4000:])
            results.append(("daemon", "FAIL", f"exit {rc}"))
    failed = [n for n, s, _ in results if s == "FAIL"]
    passed = [n for n, s, _ in results if s == "ok"]
    print(f"{len(passed)} passed, {len(failed)} failed, {len(results) - len(passed) - len(failed)} skipped")
    if failed:
        return 1
    if not passed:
        print("SKIP: " + "; ".join(note for _, _, note in results))
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
