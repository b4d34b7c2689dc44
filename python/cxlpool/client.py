# SPDX-License-Identifier: Apache-2.0
"""Client: the connection to cxlpoold, its tiers, regions and counters."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _buffers
from ._lib import MigrateResult, Stat, TierInfo, lib
from ._handle import NativeHandle
from .errors import check

TIER_DRAM, TIER_CXL, TIER_EMULATED = 0, 1, 2
ALLOC_HUGETLB = 1 << 0
ALLOC_POPULATE = 1 << 1
ACCESS_WRITE = 1 << 0

TierLike = Union[None, int, str, "Tier"]


@dataclass(frozen=True)
class Tier:
    id: int
    kind: int          # TIER_DRAM, TIER_CXL or TIER_EMULATED
    name: str
    numa_node: int     # -1: none of its own
    page_size: int
    capacity: int
    used: int
    free: int
    latency_ns: int
    bandwidth_mbps: int

    @staticmethod
    def _from(info: TierInfo) -> "Tier":
        return Tier(info.id, info.kind, info.name.decode(), info.numa_node, info.page_size, info.capacity,
                    info.used, info.free, info.latency_ns, info.bandwidth_mbps)


def default_socket_path() -> str:
    buf = ctypes.create_string_buffer(4096)
    n = check(lib.cxlpool_default_socket_path(buf, len(buf)), "cxlpool_default_socket_path")
    return buf.raw[:n].decode()


def version() -> str:
    return lib.cxlpool_version().decode()


def _disconnect(handle: int) -> None:
    lib.cxlpool_disconnect(handle)


class Client(NativeHandle):
    """A connection to cxlpoold (``cxlpool_connect``).

    Usable as a context manager; ``close()`` (or garbage collection, or
    interpreter exit) disconnects. Regions, stores, arenas and weights made
    through it keep it alive while they are.
    """

    _kind = "client"

    def __init__(self, socket_path: Optional[str] = None, name: Optional[str] = "python") -> None:
        handle = ctypes.c_void_p()
        check(lib.cxlpool_connect(socket_path.encode() if socket_path else None,
                                  name.encode() if name else None, ctypes.byref(handle)), "cxlpool_connect")
        self._own(handle.value, _disconnect)
        self.socket_path = socket_path or default_socket_path()

    @property
    def protocol_version(self) -> int:
        return check(lib.cxlpool_protocol_version(self.handle), "cxlpool_protocol_version")

    # ---- tiers ----
    def tiers(self) -> List[Tier]:
        cap = 16
        while True:
            arr = (TierInfo * cap)()
            n = check(lib.cxlpool_tiers(self.handle, arr, cap), "cxlpool_tiers")
            if n <= cap:
                return [Tier._from(arr[i]) for i in range(n)]
            cap = n

    def tier(self, name: str) -> Tier:
        info = TierInfo()
        check(lib.cxlpool_tier_by_name(self.handle, name.encode(), ctypes.byref(info)), "cxlpool_tier_by_name")
        return Tier._from(info)

    def tier_id(self, tier: TierLike = None) -> int:
        """A tier id from an id, a name or a Tier; None: the first DRAM tier."""
        if isinstance(tier, Tier):
            return tier.id
        if isinstance(tier, int):
            return tier
        if isinstance(tier, str):
            return self.tier(tier).id
        for t in self.tiers():
            if t.kind == TIER_DRAM:
                return t.id
        return self.tiers()[0].id

    # ---- regions ----
    def alloc(self, size: int, tier: TierLike = None, hugetlb: bool = False, populate: bool = False) -> "Region":
        """A leased region, freed when closed, collected or when the process ends."""
        out = ctypes.c_void_p()
        flags = (ALLOC_HUGETLB if hugetlb else 0) | (ALLOC_POPULATE if populate else 0)
        check(lib.cxlpool_region_alloc(self.handle, self.tier_id(tier), size, flags, ctypes.byref(out)),
              "cxlpool_region_alloc")
        return Region(self, out.value)

    def create_named(self, name: str, size: int, tier: TierLike = None, mode: int = 0o600,
                     hugetlb: bool = False, populate: bool = False) -> "Region":
        out = ctypes.c_void_p()
        flags = (ALLOC_HUGETLB if hugetlb else 0) | (ALLOC_POPULATE if populate else 0)
        check(lib.cxlpool_named_create(self.handle, name.encode(), self.tier_id(tier), size, mode, flags,
                                       ctypes.byref(out)), "cxlpool_named_create")
        return Region(self, out.value)

    def open_named(self, name: str, writable: bool = False) -> "Region":
        out = ctypes.c_void_p()
        check(lib.cxlpool_named_open(self.handle, name.encode(), 1 if writable else 0, ctypes.byref(out)),
              "cxlpool_named_open")
        return Region(self, out.value)

    def unlink_named(self, name: str) -> None:
        check(lib.cxlpool_named_unlink(self.handle, name.encode()), "cxlpool_named_unlink")

    # ---- counters ----
    def stats(self) -> Dict[str, int]:
        cap = 256
        while True:
            arr = (Stat * cap)()
            n = check(lib.cxlpool_stats(self.handle, arr, cap), "cxlpool_stats")
            if n <= cap:
                return {arr[i].name.decode(): int(arr[i].value) for i in range(n)}
            cap = n

    def open_access_ring(self, entries: int = 0) -> None:
        """Opens the access-report ring now (else the first report does)."""
        check(lib.cxlpool_access_ring_open(self.handle, entries), "cxlpool_access_ring_open")

    def migrate(self, region_id: int, tier: TierLike) -> Dict[str, int]:
        """Moves a region's pages to another tier (admin only); the counts."""
        out = MigrateResult()
        check(lib.cxlpool_region_migrate(self.handle, region_id, self.tier_id(tier), ctypes.byref(out)),
              "cxlpool_region_migrate")
        return {name: int(getattr(out, name)) for name, _ in MigrateResult._fields_}

    def flush_access_reports(self) -> int:
        return check(lib.cxlpool_access_flush(self.handle), "cxlpool_access_flush")

    # ---- the other handles, for discoverability ----
    def kv_store(self, **kwargs: Any) -> Any:
        from .kvstore import KvStore
        return KvStore(self, **kwargs)

    def kv_arena(self, **kwargs: Any) -> Any:
        from .kv_arena import KvArena
        return KvArena(self, **kwargs)

    def load_weights(self, model: str, paths: Sequence[str], **kwargs: Any) -> Any:
        from .weights import Weights
        return Weights.load(self, model, paths, **kwargs)

    def open_weights(self, model: str) -> Any:
        from .weights import Weights
        return Weights.open(self, model)

    def unload_weights(self, model: str) -> None:
        check(lib.cxlpool_weights_unload(self.handle, model.encode()), "cxlpool_weights_unload")


def _free_region(handle: int, client_keepalive: Any) -> None:
    # The client reference keeps the connection open until its regions are
    # gone, so the daemon hears of the free (it would release them anyway).
    lib.cxlpool_region_free(handle)


class Region(NativeHandle):
    """A pool region mapped into this process (leased or named).

    ``buffer()`` is a memoryview of the mapping, read-only for read-only
    opens; ``numpy()`` and ``torch()`` give typed views. Nothing is copied:
    every view addresses the shared pages and keeps the region alive.
    """

    _kind = "region"

    def __init__(self, client: Client, handle: Optional[int]) -> None:
        self._client = client
        self._own(handle, _free_region, client)
        self.id = int(lib.cxlpool_region_id(handle))
        self.size = int(lib.cxlpool_region_size(handle))
        self.tier = int(lib.cxlpool_region_tier(handle))
        self.page_size = int(lib.cxlpool_region_page_size(handle))
        self.writable = bool(lib.cxlpool_region_writable(handle))
        addr = ctypes.c_void_p()
        check(lib.cxlpool_region_map(handle, ctypes.byref(addr)), "cxlpool_region_map")
        self.address = int(addr.value or 0)

    @property
    def fd(self) -> int:
        """The memfd backing the region (owned by it; os.dup() to keep it)."""
        return int(lib.cxlpool_region_fd(self.handle))

    def close(self) -> None:
        """Unmaps and releases the region. Views made from it must be gone:
        they address the mapping (a view still alive keeps the region from
        garbage collection, never from an explicit close)."""
        super().close()

    free = close

    def _check_range(self, offset: int, nbytes: Optional[int]) -> int:
        self.handle  # noqa: B018  (raises when closed)
        n = self.size - offset if nbytes is None else nbytes
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ValueError(f"[{offset}, {offset + n}) is outside the region's {self.size} bytes")
        return n

    def buffer(self, offset: int = 0, nbytes: Optional[int] = None) -> memoryview:
        n = self._check_range(offset, nbytes)
        return _buffers.memory_view(self.address + offset, n, self, not self.writable)

    def numpy(self, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None, offset: int = 0) -> Any:
        size = _buffers.itemsize(dtype)
        n = self._check_range(offset, None if shape is None else size * _prod(shape))
        n -= n % size
        return _buffers.numpy_view(self.address + offset, n, self, not self.writable, dtype, shape)

    def torch(self, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None, offset: int = 0) -> Any:
        size = _buffers.itemsize(dtype)
        n = self._check_range(offset, None if shape is None else size * _prod(shape))
        n -= n % size
        return _buffers.torch_view(self.address + offset, n, self, not self.writable, dtype, shape)

    def report_access(self, offset: int, length: int, write: bool = False) -> int:
        """Tells the tiering engine these bytes were touched (best effort)."""
        return check(lib.cxlpool_access_report(self.handle, offset, length, ACCESS_WRITE if write else 0),
                     "cxlpool_access_report")


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
