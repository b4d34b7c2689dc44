# SPDX-License-Identifier: Apache-2.0
"""KvArena: rows, steps, tensors over the arena, offload and restore."""
from __future__ import annotations

import errno
import os

import pytest

import cxlpool
from conftest import need

PAGE = 64 * 1024
CHUNK = 16


def _arena(client, **kw):
    args = dict(layers=2, kv_heads=2, head_dim=16, max_batch=4, max_context=1024, dtype="bfloat16",
                page_bytes=PAGE, region_bytes=1 << 20)
    args.update(kw)
    return cxlpool.KvArena(client, **args)


def test_tensors_are_views_of_the_arena(client) -> None:
    torch = need("torch")
    np = need("numpy")
    with _arena(client) as arena:
        r = arena.alloc_reqid()
        arena.step({r: 100})
        k = arena.k(1)
        info = arena.tensor_info(1, cxlpool.kv_arena.K)
        assert k.shape == (4, 1024, 2, 16) and k.dtype == torch.bfloat16
        assert k.data_ptr() == info.base
        assert k.stride(0) * 2 == info.row_stride and k.stride(1) * 2 == info.token_stride
        row = k[r, :100]
        assert row.data_ptr() == info.base + r * info.row_stride
        row.copy_(torch.randn(100, 2, 16).to(torch.bfloat16))
        arr = arena.numpy(1, cxlpool.kv_arena.K)
        assert arr.ctypes.data == info.base
        assert np.array_equal(arr[r, :100], row.view(torch.int16).numpy().view(np.uint16))
        assert arena.v(0).data_ptr() == arena.tensor_info(0, 1).base
        stats = arena.stats()
        assert stats["rows_active"] == 1 and stats["mapped_bytes"] > 0
        arena.free_reqid(r)
        del k, row, arr
        assert arena.trim(0) >= 0


def test_step_async_and_errors(client) -> None:
    with _arena(client) as arena:
        rows = [arena.alloc_reqid() for _ in range(4)]
        with pytest.raises(cxlpool.CxlpoolError) as e:
            arena.alloc_reqid()
        assert e.value.errno == errno.ENOSPC
        seq = [0] * 4
        for t in range(1, 40, 8):
            for r in rows:
                seq[r] = t
            arena.step_async(seq)
            arena.wait()
        with pytest.raises(cxlpool.CxlpoolError) as e:
            arena.step({rows[0]: 5000})
        assert e.value.errno == errno.ERANGE
        with pytest.raises(cxlpool.CxlpoolError) as e:
            arena.free_reqid(17)
        assert e.value.errno in (errno.ENOENT, errno.EINVAL)


def test_from_model_config(client) -> None:
    cfg = {"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 64,
           "torch_dtype": "float16"}
    with cxlpool.KvArena.from_model(client, cfg, max_batch=2, max_context=256, page_bytes=PAGE) as a:
        assert (a.layers, a.kv_heads, a.head_dim, a.dtype_bytes) == (3, 2, 16, 2)


def test_offload_restore_round_trip(client, store) -> None:
    torch = need("torch")
    ns = store.namespace(f"py-arena-{os.getpid()}", layout="arena", dtype="bf16", chunk_tokens=CHUNK)
    tokens = list(range(3 * CHUNK + 4))
    with _arena(client) as arena:
        r = arena.alloc_reqid()
        arena.step({r: len(tokens)})
        ref = []
        for layer in range(2):
            for t in (arena.k(layer), arena.v(layer)):
                t[r, :len(tokens)] = torch.randn(len(tokens), 2, 16).to(torch.bfloat16)
                ref.append(t[r, :len(tokens)].clone())
        off = arena.offload(r, ns, tokens)
        assert off.wait() >= 0
        arena.free_reqid(r)
        r2 = arena.alloc_reqid()
        arena.step({r2: len(tokens)})
        for layer in range(2):  # the row may reuse the offloaded row's pages: clear them
            arena.k(layer)[r2, :len(tokens)].zero_()
            arena.v(layer)[r2, :len(tokens)].zero_()
        back = arena.restore(r2, ns, tokens)
        assert back.wait() == len(tokens)
        got = [t[r2, :len(tokens)] for layer in range(2) for t in (arena.k(layer), arena.v(layer))]
        for a, b in zip(got, ref):
            assert torch.equal(a, b)
        assert ns.lookup(ns.keys(tokens)) == 3
        del got
