#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tiny decoder's decode tokens/s, arena against plain torch, over
several runs against one daemon: each run's ratio and their median.

Starts cxlpoold (a temporary state dir) and runs tiny_decoder.run() --runs
times (CPU). With several --example files (e.g. an older copy of
examples/python/tiny_decoder.py), their runs alternate, which compares them
under the same load.

    python/bench/decoder_ratio.py [BUILD_DIR] [--runs N] [--decode N] [--example PATH ...]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--example", action="append", default=[])
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ.setdefault("CXLPOOL_LIBRARY", os.path.join(build, "lib/client/libcxlpool.so"))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    from daemon_process import Daemon
    paths = args.example or [os.path.join(ROOT, "examples", "python", "tiny_decoder.py")]
    examples = [load(p, f"tiny_decoder_{i}") for i, p in enumerate(paths)]
    ratios: Dict[str, List[float]] = {p: [] for p in paths}
    d = Daemon(os.path.join(build, "daemon/cxlpoold"))
    try:
        for run in range(args.runs):
            order = list(zip(paths, examples))
            for path, example in (order if run % 2 == 0 else order[::-1]):
                r = example.run(d.socket, decode=args.decode, device="cpu", quiet=True)
                if not r["identical"]:
                    print(f"{path}: logits differ from plain torch")
                    return 1
                ratios[path].append(r["ratio"])
                print(f"run {run} {path}: ratio {r['ratio']:.3f}", flush=True)
    finally:
        d.stop()
    for path, rs in ratios.items():
        print(f"{path}: median ratio {statistics.median(rs):.3f} over {len(rs)} runs "
              f"({', '.join(f'{x:.3f}' for x in rs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
