# SPDX-License-Identifier: Apache-2.0
"""Fixtures: one cxlpoold per test session in a temporary state dir.

meson test sets CXLPOOL_LIBRARY (libcxlpool in the build tree), CXLPOOL_DAEMON
and PYTHONPATH (the package's source folder); run by hand, export the same.
"""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from daemon_process import CONFIG, SLOT_BYTES, STORE, Daemon  # noqa: F401  (tests import them from here)


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
