# SPDX-License-Identifier: Apache-2.0
"""CUDA cases under pytest (the cases themselves are in cuda_cases.py, which
run_cuda.py also runs without pytest on GPU hosts). They skip without a
usable GPU, and fail instead under CXLPOOL_REQUIRE_GPU (tests/gpu/run.sh)."""
from __future__ import annotations

import os
from typing import Any, Callable

import pytest

import cuda_cases

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "tiny_decoder.py")


def _run(case: Callable[..., str], *args: Any) -> None:
    try:
        print(case(*args))
    except cuda_cases.Skip as e:
        if os.environ.get("CXLPOOL_REQUIRE_GPU") and not isinstance(e, cuda_cases.NoTorch):
            pytest.fail(f"CXLPOOL_REQUIRE_GPU is set: {e}")
        pytest.skip(str(e))


def test_cuda_arena_tensors_are_zero_copy(client) -> None:
    _run(cuda_cases.arena_tensors_are_zero_copy, client)


def test_sdpa_over_the_arena_equals_plain_tensors(client) -> None:
    _run(cuda_cases.sdpa_over_the_arena_equals_plain_tensors, client)


def test_tiny_decoder_on_cuda(daemon) -> None:
    _run(cuda_cases.tiny_decoder_on_cuda, daemon.socket, EXAMPLE)
