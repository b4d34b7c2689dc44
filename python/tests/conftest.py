# SPDX-License-Identifier: Apache-2.0
"""Fixtures: one cxlpoold per test session in a temporary state dir.

meson test sets CXLPOOL_LIBRARY (libcxlpool in the build tree), CXLPOOL_DAEMON
and PYTHONPATH (the package's source folder); run by hand, export the same.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator

import pytest

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
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def daemon_binary() -> str:
    binary = os.environ.get("CXLPOOL_DAEMON")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("CXLPOOL_DAEMON does not name a cxlpoold binary: run through `meson test`")
    return binary


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    d = Daemon(daemon_binary())
    os.environ["CXLPOOL_SOCKET"] = d.socket  # children and default-path clients find it
    yield d
    assert d.stop() == 0, "cxlpoold did not stop cleanly"


@pytest.fixture
def client(daemon: Daemon) -> Iterator["object"]:
    import cxlpool
    c = cxlpool.Client(daemon.socket, "pytest")
    yield c
    c.close()


@pytest.fixture
def store(client: "object") -> Iterator["object"]:
    s = client.kv_store()  # type: ignore[attr-defined]
    yield s
    s.close()


def need(module: str) -> object:
    """Imports module or skips the test with the reason."""
    return pytest.importorskip(module, reason=f"{module} is not installed (apt-get install python3-{module})")
