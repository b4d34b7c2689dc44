# SPDX-License-Identifier: Apache-2.0
"""A cxlpoold in a temporary state dir, for the tests and the benchmarks.

No pytest here: the GPU bundle's runner (run_cuda.py) starts its daemon with
this on hosts whose Python may lack pytest.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

SLOT_BYTES = 4 << 20

CONFIG = """
[daemon]
socket_group = ""
log_level = "info"

[[emulated_tier]]
name = "emu"
capacity = 268435456
latency_ns = 300
bandwidth_mbps = 15000

[kvstore]
client_quota_bytes = 0
"""
STORE = f"slot_bytes = {SLOT_BYTES}\ndram_bytes = {64 << 20}\ncxl_bytes = {32 << 20}\nput_window_bytes = {32 << 20}\n"


class Daemon:
    def __init__(self, binary: str, store: str = STORE) -> None:
        self.dir = tempfile.mkdtemp(prefix="cxlpool-py-")
        os.chmod(self.dir, 0o755)
        self.config = os.path.join(self.dir, "cxlpoold.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG + store)
        self.socket = os.path.join(self.dir, "cxlpoold.sock")
        self.log_path = os.path.join(self.dir, "cxlpoold.log")
        self.log = open(self.log_path, "w")
        self.last_log = ""
        self.proc = subprocess.Popen([binary, "--config", self.config, "--state-dir", self.dir],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("cxlpoold exited early:\n" + open(self.log_path).read())
            if os.path.exists(self.socket):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    s.connect(self.socket)
                    return
                except OSError:
                    pass
                finally:
                    s.close()
            time.sleep(0.05)
        raise RuntimeError("cxlpoold did not start:\n" + open(self.log_path).read())

    def stop(self) -> int:
        self.proc.terminate()
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        with open(self.log_path, errors="replace") as f:
            self.last_log = f.read()  # for a caller reporting a failed stop
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc
