# SPDX-License-Identifier: Apache-2.0
"""The engine adapters against each engine's documented call sequence,
played by fake engine objects (the engines cannot be installed here)."""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from cxlpool.adapters import lmcache as lmc
from cxlpool.adapters import vllm as vad
from cxlpool.adapters.paged_kv import PagedKvLayout
from conftest import need


# ---- keys ----

def test_engine_keys_are_opaque_and_namespaced(store) -> None:
    a = store.namespace(f"py-ek-a-{os.getpid()}", chunk_tokens=16)
    b = store.namespace(f"py-ek-b-{os.getpid()}", chunk_tokens=16)
    h = 0x1234_5678_9ABC_DEF0_1122_3344_5566_7788
    assert a.engine_keys([h])[0] == a.engine_keys([h])[0]
    assert a.engine_keys([h])[0] != b.engine_keys([h])[0]
    # bytes (vLLM's sha256 block hashes), str (SGLang), negative Python hashes
    ks = a.engine_keys([b"\x01" * 32, "ab12cd", -5, 7])
    assert len(set(ks)) == 4 and all(0 <= k < 1 << 128 for k in ks)
    a.put(ks[:1], [b"x" * 4096])
    assert a.lookup(a.engine_keys([b"\x01" * 32])) == 1 and b.lookup(b.engine_keys([b"\x01" * 32])) == 0


# ---- LMCache ----

@dataclass(frozen=True)
class FakeCacheEngineKey:  # lmcache.utils.CacheEngineKey
    fmt: str
    model_name: str
    world_size: int
    worker_id: int
    chunk_hash: int

    def to_string(self) -> str:
        return f"{self.fmt}@{self.model_name}@{self.world_size}@{self.worker_id}@{self.chunk_hash:x}"


class FakeMemoryObj:  # lmcache.v1.memory_management.MemoryObj
    def __init__(self, tensor: Any, fmt: int) -> None:
        self.tensor = tensor
        self.metadata = SimpleNamespace(shape=tensor.shape, dtype=tensor.dtype, fmt=fmt)

    @property
    def byte_array(self) -> memoryview:
        import torch
        return memoryview(self.tensor.view(-1).view(torch.uint8).numpy())

    def get_size(self) -> int:
        return self.tensor.numel() * self.tensor.element_size()


class FakeLocalCpuBackend:
    def __init__(self) -> None:
        self.allocated = 0

    def allocate(self, shape: Any, dtype: Any, fmt: Any = None) -> FakeMemoryObj:
        import torch
        self.allocated += 1
        return FakeMemoryObj(torch.empty(shape, dtype=dtype), fmt)


def test_lmcache_connector_sequence(daemon) -> None:
    torch = need("torch")
    backend = FakeLocalCpuBackend()
    conn = lmc.CxlpoolConnector(f"cxlpool://{daemon.socket}", None, backend, chunk_tokens=256)
    model = f"py-lmcache-{os.getpid()}"
    keys = [FakeCacheEngineKey("vllm", model, 2, 1, 1000 + i) for i in range(3)]
    objs = [FakeMemoryObj(torch.randn(2, 4, 256, 64).to(torch.bfloat16), 1) for _ in range(3)]

    async def run() -> None:
        assert not await conn.exists(keys[0]) and not conn.exists_sync(keys[0])
        assert await conn.get(keys[0]) is None
        await conn.put(keys[0], objs[0])
        assert await conn.exists(keys[0])
        got = await conn.get(keys[0])
        assert got.tensor.dtype == torch.bfloat16 and tuple(got.tensor.shape) == (2, 4, 256, 64)
        assert torch.equal(got.tensor, objs[0].tensor) and got.metadata.fmt == 1
        await conn.batched_put(keys[1:], objs[1:])
        assert await conn.batched_async_contains("req", keys) == 3
        assert conn.support_batched_get()
        many = await conn.batched_get(keys + [FakeCacheEngineKey("vllm", model, 2, 1, 5)])
        assert many[3] is None and all(torch.equal(m.tensor, o.tensor) for m, o in zip(many, objs))
        assert sorted(await conn.list()) == sorted(k.to_string() for k in keys)
        assert await conn.ping() == 0
        # Another worker id is another namespace.
        assert not await conn.exists(FakeCacheEngineKey("vllm", model, 2, 0, 1000))
        await conn.close()

    asyncio.run(run())
    assert backend.allocated == 4


def test_lmcache_header_round_trip() -> None:
    raw = lmc.encode_header((2, 32, 256, 128), "torch.bfloat16", 3)
    assert len(raw) == lmc.HEADER_BYTES == 64
    assert lmc.decode_header(raw) == ((2, 32, 256, 128), "bfloat16", 3)
    with pytest.raises(ValueError):
        lmc.decode_header(b"\0" * 64)


# ---- vLLM ----

def _vllm_config(model: str, block_size: int) -> Any:
    return SimpleNamespace(
        model_config=SimpleNamespace(model=model, dtype="bfloat16"),
        cache_config=SimpleNamespace(block_size=block_size),
        parallel_config=SimpleNamespace(tensor_parallel_size=1, rank=0),
        kv_transfer_config=SimpleNamespace(kv_connector_extra_config={"enable_events": True}))


def test_vllm_offloading_sequence(store) -> None:
    torch = need("torch")
    layers, blocks, block_size, heads, dim = 3, 8, 16, 2, 32
    # FlashAttention's per-layer [2, num_blocks, block_size, heads, dim]
    gpu = [torch.randn(2, blocks, block_size, heads, dim).to(torch.bfloat16) for _ in range(layers)]
    spec = vad.CxlpoolOffloadingSpec(_vllm_config(f"py-vllm-{os.getpid()}", block_size), None, store=store)
    handlers = list(spec.get_handlers({f"layer.{i}": t for i, t in enumerate(gpu)}, None))
    assert [(a.medium(), b.medium()) for a, b, _ in handlers] == [("GPU", "CXLPOOL"), ("CXLPOOL", "GPU")]
    handler = handlers[0][2]
    mgr = spec.get_manager()
    assert spec.block_bytes() == layers * 2 * block_size * heads * dim * 2

    hashes = [bytes([i]) * 32 for i in range(4)]
    # Scheduler: nothing offloaded yet; store blocks 0..3 from GPU blocks 4..7.
    assert mgr.lookup(hashes) == 0
    out = mgr.prepare_store(hashes)
    assert out.block_hashes_to_store == hashes and out.block_hashes_evicted == []
    GpuSpec = handlers[0][0]
    assert handler.transfer_async(1, (GpuSpec([4, 5, 6, 7]), out.store_spec))
    assert handler.get_finished() == [(1, True)]
    mgr.complete_store(hashes, success=True)
    assert mgr.lookup(hashes) == 4
    events = list(mgr.take_events())
    assert len(events) == 1 and events[0].block_hashes == hashes and not events[0].removed
    # Storing again: everything is there already.
    assert mgr.prepare_store(hashes[:2]).block_hashes_to_store == []
    mgr.complete_store(hashes[:2])
    # A failed store commits nothing.
    extra = [b"\xee" * 32]
    mgr.prepare_store(extra)
    mgr.complete_store(extra, success=False)
    assert mgr.lookup(extra) == 0

    # Load blocks 0..2 into GPU blocks 0..2 (after wiping them).
    ref = [t[:, 4:7].clone() for t in gpu]
    for t in gpu:
        t[:, 0:3].zero_()
    load = mgr.prepare_load(hashes[:3])
    mgr.touch(hashes[:3])
    assert handler.transfer_async(2, (load, GpuSpec([0, 1, 2])))
    assert handler.get_finished() == [(2, True)]
    mgr.complete_load(hashes[:3])
    assert load.lease.released
    for t, r in zip(gpu, ref):
        assert torch.equal(t[:, 0:3], r)
    with pytest.raises(KeyError):
        mgr.prepare_load([b"\x99" * 32])


def test_paged_layout_chunk_order_matches_the_arena() -> None:
    torch = need("torch")
    k = torch.arange(2 * 4 * 1 * 2, dtype=torch.int16).view(2, 4, 1, 2)
    v = k + 100
    layout = PagedKvLayout([k, v])
    assert layout.block_bytes == 2 * 4 * 2 * 2
    buf = torch.zeros(layout.block_bytes, dtype=torch.uint8)
    layout.gather(1, buf.data_ptr(), buf)
    flat = buf.view(torch.int16)
    assert torch.equal(flat[:8], k[1].reshape(-1)) and torch.equal(flat[8:], v[1].reshape(-1))
    layout.scatter(0, buf.data_ptr(), buf)
    assert torch.equal(k[0], k[1]) and torch.equal(v[0], v[1])


# ---- the real engines, when present ----

def test_real_lmcache_connector_class() -> None:
    pytest.importorskip("lmcache", reason="LMCache is not installed (pip install lmcache; not packaged for Debian)")
    cls = lmc.lmcache_connector_class()
    assert issubclass(cls, lmc.CxlpoolConnector)


def test_real_vllm_offloading_spec() -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install vllm; needs a CUDA host)")
    cls = vad.vllm_spec_class()
    assert issubclass(cls, vad.CxlpoolOffloadingSpec)
    from vllm.v1.kv_offload.spec import OffloadingSpec  # type: ignore
    assert issubclass(cls, OffloadingSpec)
