# SPDX-License-Identifier: Apache-2.0
"""Client, tiers, regions, named regions, counters, errors, lifetimes."""
from __future__ import annotations

import errno
import gc
import os
import subprocess
import sys

import pytest

import cxlpool
from conftest import need


def test_version_and_library() -> None:
    assert cxlpool.version().count(".") == 2
    assert cxlpool.__version__ == cxlpool.version()
    assert cxlpool.library_path


def test_connect_error_carries_errno_and_message(tmp_path) -> None:
    with pytest.raises(cxlpool.CxlpoolError) as e:
        cxlpool.Client(str(tmp_path / "nothing.sock"))
    assert e.value.errno == errno.ENOENT
    assert e.value.name == "ENOENT"
    assert "nothing.sock" in e.value.message
    assert isinstance(e.value, OSError)


def test_default_socket_path_follows_env(daemon) -> None:
    assert cxlpool.default_socket_path() == daemon.socket
    with cxlpool.Client() as c:
        assert c.protocol_version >= 1


def test_tiers(client) -> None:
    tiers = client.tiers()
    assert {t.name for t in tiers} >= {"emu"}
    emu = client.tier("emu")
    assert emu.capacity == 256 << 20 and emu.kind == 2
    assert client.tier_id("emu") == emu.id == client.tier_id(emu)
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.tier("no-such-tier")
    assert e.value.errno == errno.ENOENT


def test_region_views_are_zero_copy(client) -> None:
    need("numpy")
    with client.alloc(1 << 20, tier="emu") as r:
        assert r.size >= 1 << 20 and r.writable and r.fd >= 0
        mv = r.buffer()
        mv[0:4] = b"abcd"
        arr = r.numpy("uint32", shape=(16,))
        assert arr.ctypes.data == r.address
        assert arr[0] == int.from_bytes(b"abcd", "little")
        arr[1] = 7
        assert bytes(r.buffer(4, 4)) == (7).to_bytes(4, "little")
        assert r.report_access(0, 4096, write=True) >= 0
        del mv, arr
    assert client.flush_access_reports() >= 0


def test_region_torch_view(client) -> None:
    torch = need("torch")
    with client.alloc(1 << 20) as r:
        t = r.torch("bfloat16", shape=(64, 8))
        assert t.data_ptr() == r.address and t.dtype == torch.bfloat16
        t.fill_(1.5)
        assert r.numpy("uint16", shape=(1,))[0] == 0x3FC0
        del t


def test_region_range_checked(client) -> None:
    with client.alloc(65536) as r:
        with pytest.raises(ValueError):
            r.buffer(r.size - 8, 16)
    with pytest.raises(ValueError):
        r.buffer()


def test_named_region_shared_read_only(client, daemon) -> None:
    need("numpy")
    name = f"py-named-{os.getpid()}"
    w = client.create_named(name, 1 << 20, mode=0o644)
    w.numpy("int64", shape=(4,))[:] = [1, 2, 3, 4]
    with cxlpool.Client(daemon.socket) as other:
        ro = other.open_named(name)
        assert not ro.writable
        view = ro.numpy("int64", shape=(4,))
        assert not view.flags.writeable
        assert list(view) == [1, 2, 3, 4]
        with pytest.raises(TypeError):
            ro.buffer()[0] = 1
        del view
        ro.close()
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.create_named(name, 4096)
    assert e.value.errno == errno.EEXIST
    client.unlink_named(name)
    w.close()
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.open_named(name)
    assert e.value.errno == errno.ENOENT


def test_named_region_seen_by_another_process(client, daemon) -> None:
    name = f"py-xproc-{os.getpid()}"
    with client.create_named(name, 65536, mode=0o644) as r:
        r.buffer()[0:5] = b"hello"
        code = ("import cxlpool,sys; c=cxlpool.Client(sys.argv[1]); r=c.open_named(sys.argv[2]);"
                "sys.stdout.write(bytes(r.buffer(0,5)).decode())")
        out = subprocess.run([sys.executable, "-c", code, daemon.socket, name], capture_output=True, text=True,
                             timeout=30, check=True)
        assert out.stdout == "hello"
        client.unlink_named(name)


def test_migrate_and_access_ring(client) -> None:
    tiers = [t for t in client.tiers() if t.name != "emu"]
    if not tiers:
        pytest.skip("only one tier: nothing to migrate to")
    with client.alloc(1 << 20, tier="emu", populate=True) as r:
        res = client.migrate(r.id, tiers[0])
        assert res["pages_total"] == (1 << 20) // r.page_size
        with pytest.raises(cxlpool.CxlpoolError) as e:
            client.migrate(1 << 60, "emu")
        assert e.value.errno == errno.ENOENT
    with cxlpool.Client(client.socket_path) as other:
        other.open_access_ring(1024)
        with pytest.raises(cxlpool.CxlpoolError) as e:
            other.open_access_ring(1024)
        assert e.value.errno == errno.EALREADY


def test_stats(client) -> None:
    stats = client.stats()
    assert stats and all(isinstance(v, int) for v in stats.values())


def test_quota_error(client) -> None:
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.alloc(1 << 40, tier="emu")
    assert e.value.errno in (errno.ENOSPC, errno.E2BIG, errno.EDQUOT)


def _settles(read, want, seconds: float = 10.0) -> bool:
    """A daemon releases a closed connection's memory on its own time."""
    import time
    deadline = time.monotonic() + seconds
    while read() != want:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_regions_released_on_gc(client, daemon) -> None:
    with cxlpool.Client(daemon.socket) as other:
        before = other.tier("emu").used
        r = client.alloc(4 << 20, tier="emu", populate=True)
        view = r.buffer()
        assert other.tier("emu").used >= before + (4 << 20)
        del r
        gc.collect()
        assert other.tier("emu").used >= before + (4 << 20), "a live view keeps its region"
        del view
        gc.collect()
        assert other.tier("emu").used == before


def test_client_gc_disconnects(daemon) -> None:
    with cxlpool.Client(daemon.socket) as other:
        before = other.tier("emu").used
        c = cxlpool.Client(daemon.socket)
        c.alloc(2 << 20, tier="emu", populate=True)  # dropped at once, freed by its finalizer
        keep = c.alloc(2 << 20, tier="emu", populate=True)
        del c
        gc.collect()
        assert other.tier("emu").used >= before + (2 << 20)
        del keep
        gc.collect()
        assert _settles(lambda: other.tier("emu").used, before)


def test_exit_releases_everything(daemon) -> None:
    code = ("import cxlpool,sys; c=cxlpool.Client(sys.argv[1]); r=c.alloc(1<<20, tier='emu', populate=True);"
            "s=c.kv_store(); v=r.buffer(); print('ok')")
    with cxlpool.Client(daemon.socket) as other:
        other.kv_store().close()  # the store's arenas exist from the first open on
        before = other.tier("emu").used
        out = subprocess.run([sys.executable, "-c", code, daemon.socket], capture_output=True, text=True,
                             timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "ok" and out.stderr == ""
        assert _settles(lambda: other.tier("emu").used, before)


def test_closed_handles_raise(daemon) -> None:
    c = cxlpool.Client(daemon.socket)
    c.close()
    c.close()
    with pytest.raises(ValueError):
        c.tiers()


def test_blocking_calls_release_the_gil(tmp_path) -> None:
    import socket as sk
    import threading
    import time
    # A listener that never answers: cxlpool_connect waits in the library
    # for the handshake until the socket is closed under it.
    path = str(tmp_path / "mute.sock")
    listener = sk.socket(sk.AF_UNIX, sk.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(4)
    done = threading.Event()
    errors = []

    def connect() -> None:
        try:
            cxlpool.Client(path)
        except cxlpool.CxlpoolError as e:
            errors.append(e)
        done.set()

    th = threading.Thread(target=connect)
    th.start()
    spins = 0
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        spins += 1
    assert not done.is_set(), "the connect should still wait for the handshake"
    conn, _ = listener.accept()  # the pending connection, then close both ends
    conn.close()
    listener.close()
    th.join(10)
    assert done.is_set() and errors, "the connect did not fail once the socket closed"
    # Had the call kept the GIL, this thread would have been stopped for the
    # 300 ms the other one waited in C.
    assert spins > 10000
