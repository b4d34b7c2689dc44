# SPDX-License-Identifier: Apache-2.0
"""KvStore: namespaces, keys, put/get with leases, async, prefetch, delete, cost model."""
from __future__ import annotations

import asyncio
import errno
import gc
import os
import select
import subprocess
import sys
import weakref

import pytest

import cxlpool
from cxlpool.kvstore import OP_LOOKUP, TIER_DRAM
from conftest import SLOT_BYTES, need

CHUNK = 16


def _ns(store, name="py-kv", **kw):
    return store.namespace(f"{name}-{os.getpid()}", layout="raw", dtype="bf16", chunk_tokens=CHUNK, **kw)


def test_info(store) -> None:
    assert store.info.slot_bytes == SLOT_BYTES
    assert store.info.put_window_bytes >= SLOT_BYTES


def test_keys_chain_and_prefix(store) -> None:
    ns = _ns(store)
    tokens = list(range(100))
    keys = ns.keys(tokens)
    assert len(keys) == 100 // CHUNK
    assert list(ns.keys(tokens[:32])) == list(keys[:2])
    # A chunk's key depends on everything before it.
    other = ns.keys([1] + tokens[1:])
    assert other[0] != keys[0] and other[3] != keys[3]
    # Chained from a parent: the tail's keys continue the sequence.
    assert list(ns.keys(tokens[32:96], parent=keys[1])) == list(keys[2:6])
    np = pytest.importorskip("numpy")
    assert list(ns.keys(np.arange(100, dtype=np.uint32))) == list(keys)


def test_put_get_zero_copy(store) -> None:
    np = need("numpy")
    ns = _ns(store, "py-putget")
    keys = ns.keys(range(4 * CHUNK))
    chunks = [np.full(8192, i + 1, dtype=np.uint16) for i in range(4)]
    assert ns.lookup(keys) == 0
    assert ns.put(keys[:3], chunks[:3]) == 3
    assert ns.lookup(keys) == 3
    assert ns.exists(keys[2]) and not ns.exists(keys[3])
    locs = ns.lookup_locations(keys)
    assert [loc.length for loc in locs] == [16384] * 3
    with ns.get(keys) as lease:
        assert len(lease) == 3
        for i in range(3):
            arr = lease.numpy(i, "uint16")
            assert arr.ctypes.data == lease.address(i) == locs[i].address
            assert not arr.flags.writeable
            assert (arr == i + 1).all()
        mv = lease[0]
        assert mv.readonly and len(mv) == 16384
    assert lease.released


def test_reserve_writes_in_place(store) -> None:
    np = need("numpy")
    ns = _ns(store, "py-reserve")
    keys = ns.keys(range(2 * CHUNK))
    with ns.reserve(keys, 4096) as r:
        assert len(r) == 2 and not r.cached(0)
        for i in range(2):
            slot = r.numpy(i, "uint32")
            assert slot.ctypes.data == r.address(i) and slot.flags.writeable
            slot[:] = np.arange(1024, dtype=np.uint32) + i
        assert r.commit() == 2
    with ns.get(keys) as lease:
        assert (lease.numpy(1, "uint32") == np.arange(1024) + 1).all()
    # A second put of stored chunks finds them cached.
    with ns.reserve(keys, 4096) as r:
        assert r.cached(0) and r.cached(1)
        r.commit()


def test_torch_put_get(store) -> None:
    torch = need("torch")
    ns = _ns(store, "py-torch")
    keys = ns.keys(range(CHUNK))
    src = torch.randn(CHUNK, 2, 64).to(torch.bfloat16)
    assert ns.put(keys, [src]) == 1
    with ns.get(keys) as lease:
        t = lease.torch(0, torch.bfloat16, shape=(CHUNK, 2, 64))
        assert t.data_ptr() == lease.address(0)
        assert torch.equal(t, src)
        del t


def test_put_errors(store) -> None:
    ns = _ns(store, "py-err")
    keys = ns.keys(range(CHUNK))
    with pytest.raises(cxlpool.CxlpoolError) as e:
        ns.put(keys, [bytes(SLOT_BYTES + 4096)])
    assert e.value.errno == errno.EMSGSIZE and "slot_bytes" in e.value.message
    with pytest.raises(ValueError):
        ns.put(keys, [b"a", b"b"])
    with pytest.raises(cxlpool.CxlpoolError) as e:
        store.namespace("x", tp_rank=2, tp_size=1)
    assert e.value.errno == errno.EINVAL


def test_put_to_ssd_waits_for_a_window_the_log_holds(tmp_path) -> None:
    """A daemon with an SSD log and a put window of four slots: puts to the
    log only hold their window slots until their region is written, and
    put and put_async of more chunks than are free wait for them instead of
    failing with EAGAIN; every chunk reads back, from SSD."""
    from conftest import STORE, Daemon, daemon_binary
    region = 3 * SLOT_BYTES + (8 << 10)  # three chunks: a region seals every third
    store_toml = (STORE.replace(f"put_window_bytes = {32 << 20}", f"put_window_bytes = {4 * SLOT_BYTES}") +
                  f'ssd_path = "{tmp_path}/kv-ssd.img"\nssd_bytes = {16 * region}\n'
                  f"ssd_region_bytes = {region}\nssd_sync = \"per-region\"\n")
    d = Daemon(daemon_binary(), store_toml)
    try:
        client = cxlpool.Client(d.socket)
        store = client.kv_store()
        ns = _ns(store, "py-to-ssd-wait")
        keys = ns.keys(range(16 * CHUNK))
        chunks = [bytes([i + 1]) * SLOT_BYTES for i in range(16)]
        n = ns.put(keys[:6], chunks[:6], to_ssd=True)
        assert n == 6 and n.on_ssd == 6  # type: ignore[attr-defined]

        async def main() -> None:
            for i in range(6, 16, 2):  # half the window each time
                m = await ns.put_async(keys[i:i + 2], chunks[i:i + 2], to_ssd=True)
                assert m == 2 and m.on_ssd == 2  # type: ignore[attr-defined]

        asyncio.run(main())
        assert [loc.tier for loc in ns.lookup_locations(keys)] == [2] * 16
        for i in range(16):
            with ns.get(keys[i:i + 1]) as lease:
                assert len(lease) == 1 and bytes(lease[0]) == chunks[i]
        store.close()
        client.close()
    finally:
        assert d.stop() == 0


def test_put_to_ssd_without_an_ssd_log(store) -> None:
    """The test daemon has no SSD tier: a put asking for the SSD log stores
    every chunk as usual (in DRAM) and reports none on SSD."""
    ns = _ns(store, "py-to-ssd")
    keys = ns.keys(range(6 * CHUNK))
    chunks = [bytes([i + 1]) * 8192 for i in range(6)]
    n = ns.put(keys[:2], chunks[:2], to_ssd=True)
    assert n == 2 and isinstance(n, cxlpool.PutCount) and n.on_ssd == 0
    assert ns.put(keys[2:3], chunks[2:3], to_ssd=True).on_ssd == 0  # type: ignore[attr-defined]
    with ns.reserve(keys[3:4], 8192) as r:
        r[0][:] = chunks[3]
        done = r.commit(to_ssd=True)
        assert done == 1 and r.committed == 1 and r.on_ssd == 0
        assert isinstance(done, cxlpool.PutCount) and done.on_ssd == 0

    async def main() -> None:
        n = await ns.put_async(keys[4:6], chunks[4:6], to_ssd=True)
        assert n == 2 and isinstance(n, cxlpool.PutCount) and n.on_ssd == 0

    asyncio.run(main())
    # Stored like any put: in DRAM, the bytes as written.
    locs = ns.lookup_locations(keys)
    assert [loc.tier for loc in locs] == [TIER_DRAM] * 6
    with ns.get(keys) as lease:
        assert len(lease) == 6
        assert [bytes(lease[i]) for i in range(6)] == chunks
    # Already stored: counted, none written.
    again = ns.put(keys, chunks, to_ssd=True)
    assert again == 6 and again.on_ssd == 0  # type: ignore[attr-defined]
    assert ns.put(keys[:0], [], to_ssd=True).on_ssd == 0  # type: ignore[attr-defined]
    # Without to_ssd nothing changes: a plain int.
    assert type(ns.put(keys[:1], chunks[:1])) is int
    with ns.reserve(ns.keys(range(100, 100 + CHUNK)), 64) as r:
        assert type(r.commit()) is int and r.on_ssd == 0


def test_delete_and_prefetch(store) -> None:
    ns = _ns(store, "py-del")
    keys = ns.keys(range(3 * CHUNK))
    ns.put(keys, [bytes([i]) * 4096 for i in range(3)])
    assert ns.prefetch(keys) == 0  # all in DRAM: nothing to queue
    assert ns.delete(keys[1:2]) == 1
    assert ns.lookup(keys) == 1
    assert ns.remove(keys) == 2


def test_should_load(store) -> None:
    ns = _ns(store, "py-cost")
    keys = ns.keys(range(8 * CHUNK))
    ns.put(keys, [bytes(65536)] * 8)
    slow = ns.should_load(8 * CHUNK, 100.0, keys=keys)
    assert slow.should_load and slow.load_chunks == 8 and slow.expected_s < slow.full_recompute_s
    with pytest.raises(cxlpool.CxlpoolError) as e:
        ns.should_load(8 * CHUNK, -1.0, keys=keys)
    assert e.value.errno == errno.EINVAL


def test_lease_released_on_gc(client, store) -> None:
    need("numpy")
    ns = _ns(store, "py-gc")
    keys = ns.keys(range(CHUNK))
    ns.put(keys, [bytes(4096)])
    before = client.stats()["kv.leases"]
    lease = ns.get(keys)
    view = lease.numpy(0)
    ref = weakref.ref(lease)
    del lease
    gc.collect()
    assert ref() is not None, "a view keeps its lease"
    assert client.stats()["kv.leases"] == before + 1
    assert view.sum() == 0
    del view
    gc.collect()
    assert ref() is None
    assert client.stats()["kv.leases"] == before
    with ns.get(keys) as lease:
        assert client.stats()["kv.leases"] == before + 1
    assert lease.released and client.stats()["kv.leases"] == before


def test_raw_submit_reap_and_eventfd(store) -> None:
    ns = _ns(store, "py-raw")
    keys = ns.keys(range(2 * CHUNK))
    ns.put(keys, [bytes(4096)] * 2)
    from cxlpool._lib import KvRequest
    req = KvRequest(7, OP_LOOKUP, 0, ns.id, keys.pointer(), len(keys), 0, 0)
    assert store.submit([req]) == 1
    assert store.in_flight == 1
    got = []
    while not got:
        if store.arm():
            r, _, _ = select.select([store.fileno()], [], [], 5)
            assert r, "the eventfd never became readable"
        got = store.reap(8, 0)
    assert got[0].user_data == 7 and got[0].status == 0 and got[0].result0 == 2
    assert store.in_flight == 0


def test_async_calls(store) -> None:
    np = need("numpy")
    ns = _ns(store, "py-async")
    keys = ns.keys(range(4 * CHUNK))

    async def main():
        assert await ns.lookup_async(keys) == 0
        n = await ns.put_async(keys, [np.full(1024, i, dtype=np.uint8) for i in range(4)])
        assert n == 4
        results = await asyncio.gather(*(ns.lookup_async(keys[:i]) for i in range(1, 5)))
        assert results == [1, 2, 3, 4]
        lease = await ns.get_async(keys)
        with lease:
            assert len(lease) == 4 and lease.numpy(3)[0] == 3
        assert await ns.prefetch_async(keys) == 0
        assert await ns.delete_async(keys[3:]) == 1

    asyncio.run(main())


def test_prefix_shared_between_processes(store, daemon) -> None:
    need("numpy")
    ns = _ns(store, "py-xproc", mode=0o666)
    tokens = list(range(3 * CHUNK + 5))
    code = """
import cxlpool, numpy as np, sys
c = cxlpool.Client(sys.argv[1]); s = c.kv_store()
ns = s.namespace(sys.argv[2], layout="raw", dtype="bf16", chunk_tokens=int(sys.argv[3]))
keys = ns.keys(list(range(int(sys.argv[4]))))
print(ns.put(keys, [np.full(2048, i + 7, dtype=np.int16) for i in range(len(keys))]))
"""
    args = [f"py-xproc-{os.getpid()}", str(CHUNK), str(len(tokens))]
    out = subprocess.run([sys.executable, "-c", code, daemon.socket, *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"
    keys = ns.keys(tokens)
    with ns.get(keys) as lease:
        assert len(lease) == 3
        assert [int(lease.numpy(i, "int16")[0]) for i in range(3)] == [7, 8, 9]
