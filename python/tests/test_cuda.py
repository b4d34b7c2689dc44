# SPDX-License-Identifier: Apache-2.0
"""CUDA cases: a cuda-backend KvArena as CUDA tensors (no copy), attention
over them, and the tiny decoder on the GPU. They skip without a usable GPU
(torch.cuda) and a build with the cuda backend. The GPU bundle
(tests/gpu/bundle.sh) does not carry the Python package yet: on a GPU host
run them from a checkout, as docs/python.md says."""
from __future__ import annotations

import os
import sys

import pytest

import cxlpool
from conftest import need


def _cuda():
    torch = need("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    return torch


def _cuda_arena(client):
    try:
        return cxlpool.KvArena(client, layers=2, kv_heads=2, head_dim=64, max_batch=2, max_context=512,
                               dtype="bfloat16", backend="cuda")
    except cxlpool.CxlpoolError as e:
        pytest.skip(f"the cuda arena backend is not available here: {e}")


def test_cuda_arena_tensors_are_zero_copy(client) -> None:
    torch = _cuda()
    with _cuda_arena(client) as arena:
        r = arena.alloc_reqid()
        arena.step({r: 256})
        k = arena.k(1)
        assert k.is_cuda and k.dtype == torch.bfloat16 and k.shape == (2, 512, 2, 64)
        assert k.data_ptr() == arena.tensor_info(1, 0).base
        src = torch.randn(256, 2, 64, device="cuda").to(torch.bfloat16)
        k[r, :256] = src
        assert torch.equal(k[r, :256], src)
        del k


def test_sdpa_over_the_arena_equals_plain_tensors(client) -> None:
    torch = _cuda()
    F = torch.nn.functional
    if not hasattr(F, "scaled_dot_product_attention"):
        pytest.skip("torch has no scaled_dot_product_attention (torch < 2.0)")
    with _cuda_arena(client) as arena:
        r = arena.alloc_reqid()
        arena.step({r: 256})
        k, v = arena.k(0)[r, :256], arena.v(0)[r, :256]
        k.copy_(torch.randn(256, 2, 64, device="cuda").to(torch.bfloat16))
        v.copy_(torch.randn(256, 2, 64, device="cuda").to(torch.bfloat16))
        q = torch.randn(2, 1, 64, device="cuda").to(torch.bfloat16)
        got = F.scaled_dot_product_attention(q, k.transpose(0, 1), v.transpose(0, 1))
        ref = F.scaled_dot_product_attention(q, k.transpose(0, 1).clone(), v.transpose(0, 1).clone())
        assert torch.equal(got, ref)
        del k, v


def test_tiny_decoder_on_cuda(daemon) -> None:
    _cuda()
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")
    sys.path.insert(0, examples)
    try:
        import tiny_decoder
    finally:
        sys.path.remove(examples)
    r = tiny_decoder.run(daemon.socket, decode=8, device="cuda", quiet=True)
    assert r["identical"]
