# SPDX-License-Identifier: Apache-2.0
"""The package's inline type hints check with mypy (py.typed ships them)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
PACKAGE = os.path.join(ROOT, "cxlpool")


def test_mypy() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (apt-get install python3-mypy)")
    out = subprocess.run([sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "mypy.ini"),
                          "--cache-dir", os.devnull, PACKAGE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_py_typed_marker() -> None:
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))
