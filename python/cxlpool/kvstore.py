# SPDX-License-Identifier: Apache-2.0
"""KvStore: the host-wide KV-cache store (cxlpool/kv.h).

Names follow Mooncake Store's Python API where they overlap (``put``,
``get``, ``is_exist``/``exists``, ``remove``/``delete``); data moves without
copies: a put reserves slots in the connection's put window and the caller
writes into them (``reserve``), and a get returns read-only views of the
store's arenas held by a lease.
"""
from __future__ import annotations

import asyncio
import ctypes
import errno
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Union

from . import _buffers
from ._lib import (KvCompletion, KvInfo, KvKey, KvLoadDecision, KvLoadQuery, KvLocation, KvNamespaceC,
                   KvNamespaceSpec, KvOptions, KvRequest, lib)
from ._handle import NativeHandle
from .errors import CxlpoolError, check
from .keys import EngineKey, Keys, as_keys, engine_keys

OP_LOOKUP, OP_PUT_BEGIN, OP_PUT_COMMIT, OP_GET, OP_RELEASE, OP_PREFETCH, OP_DELETE = 1, 2, 3, 4, 5, 6, 7
LOOKUP_COST_CUTOFF = 1 << 0
PUT_COMMIT_TO_SSD = 1 << 1  # put_commit: the chunks go to the SSD log only; result1 = chunks stored so
TIER_DRAM, TIER_CXL, TIER_SSD, TIER_PUT_WINDOW = 0, 1, 2, 0xFF
LOC_SSD_COPY, LOC_CACHED = 1 << 0, 1 << 1

KeysLike = Union[Keys, Iterable[int]]
TokensLike = Any  # a sequence of ints, a numpy array or a CPU tensor of token ids


class Location(NamedTuple):
    """Where a chunk is: ``address`` 0 for SSD (not mapped)."""
    address: int
    offset: int
    length: int
    tier: int
    flags: int

    @staticmethod
    def _from(loc: KvLocation) -> "Location":
        return Location(loc.data or 0, loc.offset, loc.length, loc.tier, loc.flags)


class PutCount(int):
    """What a put or commit with ``to_ssd=True`` returns: the chunks stored
    (an int, as without it), and in ``on_ssd`` how many of them the commit
    stored on the SSD log only (0 from a daemon without an SSD log, which
    stores them as usual)."""
    on_ssd: int

    def __new__(cls, stored: int, on_ssd: int) -> "PutCount":
        self = super().__new__(cls, stored)
        self.on_ssd = on_ssd
        return self


@dataclass(frozen=True)
class StoreInfo:
    slot_bytes: int          # the largest chunk ([kvstore] slot_bytes)
    put_window_bytes: int
    quota_bytes: int         # 0: unlimited
    dram_arena_bytes: int
    cxl_arena_bytes: int
    tier_bandwidth_bps: tuple
    tier_latency_ns: tuple


@dataclass(frozen=True)
class LoadDecision:
    load_chunks: int
    should_load: bool
    recompute_tokens: int
    expected_s: float
    full_recompute_s: float
    load_all_s: float


@dataclass(frozen=True)
class Completion:
    user_data: int
    op: int
    status: int               # 0 or a negative errno
    result0: int
    result1: int
    result2: int
    locations: List[Location]

    def error(self) -> Optional[CxlpoolError]:
        return CxlpoolError(-self.status, f"kv op {self.op}") if self.status < 0 else None


def _token_array(tokens: TokensLike) -> Any:
    """(pointer, count, keepalive) for uint32 token ids without copying when
    they already are a contiguous uint32 array."""
    dt = getattr(tokens, "dtype", None)
    if dt is not None and str(dt) in ("uint32", "torch.int32", "int32") and hasattr(tokens, "ctypes"):
        if tokens.flags.c_contiguous:
            return tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), len(tokens), tokens
    if hasattr(tokens, "tolist"):
        tokens = tokens.tolist()
    n = len(tokens)
    arr = (ctypes.c_uint32 * max(n, 1))(*tokens)
    return arr, n, arr


class KvStore(NativeHandle):
    """A connection's data path to the store (``cxlpool_kv_open``).

    One per Client. Closing (or collecting) it releases its leases.
    """

    def __init__(self, client: Any, sq_entries: int = 0, cq_entries: int = 0, put_window_bytes: int = 0) -> None:
        self.client = client
        opts = KvOptions(sq_entries, cq_entries, put_window_bytes)
        out = ctypes.c_void_p()
        check(lib.cxlpool_kv_open(client.handle, ctypes.byref(opts), ctypes.byref(out)), "cxlpool_kv_open")
        self._own(out.value, _close_kv, client)
        # Hot calls pass ready-made ctypes values: no conversion per call.
        self._c_handle: Optional[ctypes.c_void_p] = ctypes.c_void_p(out.value)
        info = KvInfo()
        check(lib.cxlpool_kv_get_info(out.value, ctypes.byref(info)), "cxlpool_kv_get_info")
        self.info = StoreInfo(int(info.slot_bytes), int(info.put_window_bytes), int(info.quota_bytes),
                              int(info.arena_bytes[0]), int(info.arena_bytes[1]),
                              tuple(int(x) for x in info.tier_bandwidth_bps),
                              tuple(int(x) for x in info.tier_latency_ns))
        self._waiters: Dict[int, Any] = {}
        self._unclaimed: List[Completion] = []
        self._next_user_data = 1 << 62
        self._loop: Any = None
        self._reap_buf = (KvCompletion * 64)()

    _kind = "KV store handle"

    def close(self) -> None:
        if self._loop is not None and self._handle is not None:
            try:
                self._loop.remove_reader(self.fileno())
            except Exception:  # the loop may be closed already
                pass
            self._loop = None
        self._c_handle = None
        super().close()

    def namespace(self, model_id: str, layout: str = "raw", dtype: str = "bf16", tp_rank: int = 0,
                  tp_size: int = 1, chunk_tokens: int = 256, mode: int = 0, chunk_bytes: int = 0) -> "Namespace":
        """Opens (or creates, with mode) a namespace. chunk_bytes above the
        store's slot makes its chunks span several slots (spanning.py: a
        SpanningNamespace); 0 or up to the slot, a chunk takes one slot."""
        span = chunk_bytes > self.info.slot_bytes
        if span:
            from .spanning import span_layout, split
            layout = span_layout(layout, *split(chunk_bytes, self.info.slot_bytes))
        spec = KvNamespaceSpec(model_id.encode(), layout.encode(), dtype.encode(), tp_rank, tp_size, chunk_tokens,
                               mode)
        out = KvNamespaceC()
        check(lib.cxlpool_kv_namespace_open(self.handle, ctypes.byref(spec), ctypes.byref(out)),
              "cxlpool_kv_namespace_open")
        if span:
            from .spanning import SpanningNamespace
            return SpanningNamespace(self, out, chunk_bytes)
        return Namespace(self, out)

    # ---- asynchronous requests ----
    def submit(self, requests: Sequence[KvRequest]) -> int:
        """Queues raw requests (cxlpool_kv_request); returns how many fit.
        Keep user_data below 2**62: larger values belong to the awaitables."""
        arr = (KvRequest * len(requests))(*requests)
        return check(lib.cxlpool_kv_submit(self.handle, arr, len(requests)), "cxlpool_kv_submit")

    def reap(self, max_completions: int = 64, timeout_ms: int = 0) -> List[Completion]:
        """Completions of submitted requests (waits up to timeout_ms for the
        first; -1 forever). Locations are copied out: they stay valid."""
        out = self._unclaimed[:max_completions]
        del self._unclaimed[:len(out)]
        if out:
            timeout_ms = 0
        while len(out) < max_completions:
            got = self._reap_raw(min(max_completions - len(out), 64), timeout_ms)
            if not got:
                break
            for c in got:
                if c.user_data in self._waiters:
                    self._resolve(c)
                else:
                    out.append(c)
            timeout_ms = 0
        return out

    def _reap_raw(self, n: int, timeout_ms: int) -> List[Completion]:
        buf = self._reap_buf
        got = check(lib.cxlpool_kv_reap(self.handle, buf, n, timeout_ms), "cxlpool_kv_reap")
        res = []
        for i in range(got):
            c = buf[i]
            locs = [Location._from(c.locations[j]) for j in range(c.n_locations)]
            res.append(Completion(int(c.user_data), int(c.op), int(c.status), int(c.result0), int(c.result1),
                                  int(c.result2), locs))
        return res

    def fileno(self) -> int:
        """The completion eventfd, for select/poll/epoll: arm() first."""
        return check(lib.cxlpool_kv_eventfd(self.handle), "cxlpool_kv_eventfd")

    def arm(self) -> bool:
        """True: sleep on fileno(); False: completions are there, reap now."""
        return check(lib.cxlpool_kv_arm(self.handle), "cxlpool_kv_arm") == 1

    @property
    def in_flight(self) -> int:
        return int(lib.cxlpool_kv_in_flight(self.handle))

    # ---- awaitables (asyncio) ----
    async def call_async(self, op: int, ns_id: int, keys: KeysLike, param0: int = 0, param1: int = 0,
                         flags: int = 0) -> Completion:
        """Submits one request and awaits its completion; the event loop
        watches the eventfd, so nothing blocks while it is in flight."""
        import asyncio
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._loop is not None:
                self._loop.remove_reader(self.fileno())
            self._loop = loop
            loop.add_reader(self.fileno(), self._on_ready)
        k = as_keys(keys)
        user_data = self._next_user_data
        self._next_user_data += 1
        fut = loop.create_future()
        self._waiters[user_data] = fut
        req = KvRequest(user_data, op, flags, ns_id, k.pointer(), len(k), param0, param1)
        try:
            if check(lib.cxlpool_kv_submit(self.handle, ctypes.byref(req), 1), "cxlpool_kv_submit") != 1:
                raise CxlpoolError(11, "cxlpool_kv_submit")  # EAGAIN
        except BaseException:
            del self._waiters[user_data]
            raise
        self._on_ready()
        return await fut

    def _resolve(self, c: Completion) -> None:
        fut = self._waiters.pop(c.user_data)
        if not fut.done():
            fut.set_result(c)

    def _on_ready(self) -> None:
        if self._handle is None:
            return
        while True:
            for c in self._reap_raw(64, 0):
                if c.user_data in self._waiters:
                    self._resolve(c)
                else:
                    self._unclaimed.append(c)
            if not self._waiters or self.arm():
                return


def _close_kv(handle: int, client_keepalive: Any) -> None:
    lib.cxlpool_kv_close(handle)


class Namespace:
    """A namespace of the store: model, layout, dtype, tensor-parallel rank."""

    def __init__(self, store: KvStore, c: KvNamespaceC) -> None:
        self.store = store
        self._c = c
        self.id = int(c.id)
        self._c_id = ctypes.c_uint64(c.id)
        self.fingerprint = (int(c.fingerprint_hi) << 64) | int(c.fingerprint_lo)
        self.chunk_tokens = int(c.chunk_tokens)
        self._slot_bytes = store.info.slot_bytes

    @property
    def c_struct(self) -> KvNamespaceC:
        return self._c

    # ---- keys ----
    def keys(self, tokens: TokensLike, parent: Optional[int] = None) -> Keys:
        """Keys of the full chunks of tokens (a trailing partial chunk has
        none), chained from parent (None: a sequence start)."""
        ptr, n, _keep = _token_array(tokens)
        count = n // self.chunk_tokens
        arr = (KvKey * max(count, 1))()
        par = None
        if parent is not None:
            par = KvKey(parent & ((1 << 64) - 1), parent >> 64)
        got = check(lib.cxlpool_kv_compute_keys(ctypes.byref(self._c), ptr, n,
                                                ctypes.byref(par) if par is not None else None, arr, count),
                    "cxlpool_kv_compute_keys")
        return Keys(arr, got)

    def engine_keys(self, hashes: Iterable[EngineKey]) -> Keys:
        """Opaque engine block/page hashes as keys of this namespace."""
        return engine_keys(hashes, self.fingerprint)

    # ---- blocking calls ----
    def lookup(self, keys: KeysLike) -> int:
        """Length (in chunks) of the longest cached prefix of keys."""
        k = keys if type(keys) is Keys else as_keys(keys)
        rc = _kv_lookup(self.store._c_handle or self.store.handle, self._c_id, k.array, k.n, None)
        return rc if rc >= 0 else check(rc, "cxlpool_kv_lookup")

    def lookup_locations(self, keys: KeysLike) -> List[Location]:
        k = as_keys(keys)
        locs = (KvLocation * max(k.n, 1))()
        n = check(lib.cxlpool_kv_lookup(self.store.handle, self.id, k.array, k.n, locs), "cxlpool_kv_lookup")
        return [Location._from(locs[i]) for i in range(n)]

    def exists(self, key: int) -> bool:
        return self.lookup(Keys.from_ints([key])) == 1

    is_exist = exists

    def reserve(self, keys: KeysLike, chunk_bytes: int) -> "Reservation":
        """Reserves put-window slots; write chunk i into ``reservation[i]``
        (skip those with ``cached(i)``), then ``commit()``."""
        k = as_keys(keys)
        self._check_size(chunk_bytes)
        slots = (KvLocation * max(k.n, 1))()
        res = ctypes.c_uint64()
        check(lib.cxlpool_kv_put_begin(self.store.handle, self.id, k.array, k.n, chunk_bytes,
                                       ctypes.byref(res), slots), "cxlpool_kv_put_begin")
        return Reservation(self, k, int(res.value), chunk_bytes, slots)

    def put(self, keys: KeysLike, chunks: Sequence[Any], to_ssd: bool = False) -> int:
        """Stores chunks (buffers or CPU tensors, one per key, all the same
        size): each is copied once, into its reserved put-window slot.
        Returns how many were committed (chunks already stored count).
        to_ssd: the commits ask for the chunks on the SSD log only (written
        from the put window, no DRAM slot); the count returned is then a
        PutCount whose ``on_ssd`` says how many went there."""
        k = keys if type(keys) is Keys else as_keys(keys)
        n = k.n
        if len(chunks) != n:
            raise ValueError(f"{len(chunks)} chunks for {n} keys")
        if n == 1:
            # The common call, one chunk, without the general path's lists:
            # a bytearray's address straight from ctypes, a one-pointer array
            # of a type made once.
            chunk = chunks[0]
            if type(chunk) is bytearray and chunk:
                size = len(chunk)
                ptrs = _VOID_P1(_addressof(_char_from_buffer(chunk)))
            else:
                address, size, _keep = _buffers.buffer_address(chunk)
                ptrs = _VOID_P1(address)
        elif n == 0:
            return PutCount(0, 0) if to_ssd else 0
        else:
            srcs = [_buffers.buffer_address(c) for c in chunks]
            size = srcs[0][1]
            if any(s[1] != size for s in srcs):
                raise ValueError("chunks of one put must have the same size")
            ptrs = (ctypes.c_void_p * n)(*[s[0] for s in srcs])
        if size > self._slot_bytes:
            self._check_size(size)
        # The library's put reserves, copies each chunk once into its slot
        # (skipping chunks already stored) and commits, without the GIL.
        if to_ssd:
            on_ssd = ctypes.c_uint64()
            rc = check(lib.cxlpool_kv_put_flags(self.store.handle, self._c_id, k.array, n, ptrs, size,
                                                PUT_COMMIT_TO_SSD, ctypes.byref(on_ssd)), "cxlpool_kv_put_flags")
            return PutCount(rc, int(on_ssd.value))
        rc = _kv_put(self.store._c_handle or self.store.handle, self._c_id, k.array, n, ptrs, size)
        return rc if rc >= 0 else check(rc, "cxlpool_kv_put")

    def get(self, keys: KeysLike) -> "Lease":
        """Leases the longest cached prefix of keys: ``len(lease)`` chunks,
        each a read-only zero-copy view until the lease is released."""
        k = keys if type(keys) is Keys else as_keys(keys)
        locs = (KvLocation * (k.n or 1))()
        lease = ctypes.c_uint64()
        n = _kv_get(self.store._c_handle or self.store.handle, self._c_id, k.array, k.n, lease, locs)
        if n < 0:
            check(n, "cxlpool_kv_get")
        return Lease(self.store, lease.value, locs, n)

    def prefetch(self, keys: KeysLike) -> int:
        """Queues SSD chunks for DRAM; returns how many were queued."""
        k = as_keys(keys)
        return check(lib.cxlpool_kv_prefetch(self.store.handle, self.id, k.array, k.n), "cxlpool_kv_prefetch")

    def delete(self, keys: KeysLike) -> int:
        k = as_keys(keys)
        return check(lib.cxlpool_kv_delete(self.store.handle, self.id, k.array, k.n), "cxlpool_kv_delete")

    remove = delete

    def should_load(self, prompt_tokens: int, prefill_tokens_per_s: float,
                    chunks: Optional[Sequence[Location]] = None, keys: Optional[KeysLike] = None,
                    overlap: bool = False, pipeline_stages: int = 0) -> LoadDecision:
        """Recompute or load: the cost model over the cached prefix (chunks
        from lookup_locations, or looked up here from keys)."""
        if chunks is None:
            chunks = self.lookup_locations(keys) if keys is not None else []
        arr = (KvLocation * max(len(chunks), 1))()
        for i, c in enumerate(chunks):
            arr[i] = KvLocation(c.address or None, c.offset, c.length, c.tier, c.flags)
        q = KvLoadQuery(prompt_tokens, self.chunk_tokens, prefill_tokens_per_s, 1 if overlap else 0,
                        pipeline_stages, arr, len(chunks))
        d = KvLoadDecision()
        check(lib.cxlpool_kv_should_load(self.store.handle, ctypes.byref(q), ctypes.byref(d)),
              "cxlpool_kv_should_load")
        return LoadDecision(int(d.load_chunks), bool(d.should_load), int(d.recompute_tokens), d.expected_s,
                            d.full_recompute_s, d.load_all_s)

    # ---- awaitables ----
    async def lookup_async(self, keys: KeysLike) -> int:
        c = await self.store.call_async(OP_LOOKUP, self.id, keys)
        _raise_status(c, "lookup")
        return c.result0

    async def get_async(self, keys: KeysLike) -> "Lease":
        c = await self.store.call_async(OP_GET, self.id, keys)
        _raise_status(c, "get")
        return Lease(self.store, c.result0, c.locations[:c.result1] if c.result0 else [])

    async def prefetch_async(self, keys: KeysLike) -> int:
        c = await self.store.call_async(OP_PREFETCH, self.id, keys)
        _raise_status(c, "prefetch")
        return c.result0

    async def delete_async(self, keys: KeysLike) -> int:
        c = await self.store.call_async(OP_DELETE, self.id, keys)
        _raise_status(c, "delete")
        return c.result0

    async def put_async(self, keys: KeysLike, chunks: Sequence[Any], to_ssd: bool = False) -> int:
        """put as two awaited requests; to_ssd as for put (a PutCount). With
        to_ssd and a store with an SSD log, a full put window (its slots
        still with the log until their region is written) is waited for, as
        by put: up to 10 s, then CxlpoolError(EAGAIN)."""
        k = as_keys(keys)
        srcs = [_buffers.buffer_address(c) for c in chunks]
        size = srcs[0][1] if srcs else 0
        self._check_size(size)
        wait = to_ssd and self.store.info.tier_bandwidth_bps[2] != 0
        deadline = asyncio.get_running_loop().time() + _WINDOW_WAIT_S
        pause = 50e-6
        while True:
            c = await self.store.call_async(OP_PUT_BEGIN, self.id, k, param0=size)
            if c.status != -errno.EAGAIN or not wait or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2e-3)
        _raise_status(c, "put_begin")
        for (addr, n, _keep), loc in zip(srcs, c.locations):
            if not loc.flags & LOC_CACHED:
                ctypes.memmove(loc.address, addr, n)
        done = await self.store.call_async(OP_PUT_COMMIT, self.id, k, param0=c.result0,
                                           flags=PUT_COMMIT_TO_SSD if to_ssd else 0)
        _raise_status(done, "put_commit")
        return PutCount(done.result0, done.result1) if to_ssd else done.result0

    def _check_size(self, chunk_bytes: int) -> None:
        slot = self.store.info.slot_bytes
        if chunk_bytes > slot:
            raise CxlpoolError(90, "cxlpool_kv_put_begin",  # EMSGSIZE
                               f"a chunk of {chunk_bytes} bytes is larger than the store's slot of {slot} "
                               f"bytes: raise [kvstore] slot_bytes (docs/python.md, sizing)")


# How long a put to the SSD log waits for its put window (as the C library).
_WINDOW_WAIT_S = 10.0


def _raise_status(c: Completion, what: str) -> None:
    if c.status < 0:
        raise CxlpoolError(-c.status, f"kv {what}")


class Reservation:
    """Put-window slots reserved by ``Namespace.reserve``: ``self[i]`` is a
    writable view of slot i, ``commit()`` publishes them. Leaving the
    ``with`` block without a commit commits nothing (the slots return to the
    window when the connection closes)."""

    def __init__(self, ns: Namespace, keys: Keys, reservation: int, chunk_bytes: int, slots: Any) -> None:
        self.ns = ns
        self.keys = keys
        self.id = reservation
        self.chunk_bytes = chunk_bytes
        self._slots = slots
        self.committed: Optional[int] = None
        self.on_ssd: Optional[int] = None  # after commit(): chunks stored on the SSD log only

    def __len__(self) -> int:
        return self.keys.n

    def cached(self, i: int) -> bool:
        return bool(self._slots[i].flags & LOC_CACHED)

    def address(self, i: int) -> int:
        return int(self._slots[i].data or 0)

    def __getitem__(self, i: int) -> memoryview:
        return _buffers.memory_view(self.address(i), self.chunk_bytes, self, False)

    def numpy(self, i: int, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None) -> Any:
        return _buffers.numpy_view(self.address(i), self.chunk_bytes, self, False, dtype, shape)

    def torch(self, i: int, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None) -> Any:
        return _buffers.torch_view(self.address(i), self.chunk_bytes, self, False, dtype, shape)

    def commit(self, which: Optional[Iterable[int]] = None, to_ssd: bool = False) -> int:
        """Commits the slots (``which``: their indices; None: all). to_ssd:
        the chunks go to the SSD log only, written from the put window; the
        count returned is then a PutCount (``on_ssd``, also ``self.on_ssd``).
        The views of the slots must not be written after the commit: the
        daemon may still be copying from them, and drops a chunk whose slot
        changed meanwhile."""
        keys = self.keys if which is None else Keys.from_ints(self.keys[i] for i in which)
        on_ssd = ctypes.c_uint64()
        committed = check(lib.cxlpool_kv_put_commit_flags(self.ns.store.handle, self.ns.id, self.id, keys.array,
                                                          keys.n, PUT_COMMIT_TO_SSD if to_ssd else 0,
                                                          ctypes.byref(on_ssd)), "cxlpool_kv_put_commit_flags")
        self.committed = committed
        self.on_ssd = int(on_ssd.value)
        return PutCount(committed, self.on_ssd) if to_ssd else committed

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


_VOID_P1 = ctypes.c_void_p * 1
_addressof = ctypes.addressof
_char_from_buffer = ctypes.c_char.from_buffer
_kv_lookup = lib.cxlpool_kv_lookup
_kv_get = lib.cxlpool_kv_get
_kv_put = lib.cxlpool_kv_put
_kv_release = lib.cxlpool_kv_release


class Lease:
    """A get's lease on the chunks of a cached prefix.

    ``lease[i]`` is chunk i as a read-only memoryview of the store's arena;
    ``numpy(i, ...)`` and ``torch(i, ...)`` are typed views. They stay valid
    and unchanged until ``release()`` (or the end of the ``with`` block, or
    collection of the lease and every view of it).
    """

    __slots__ = ("store", "id", "_raw", "_n", "_list", "_held", "__weakref__")

    def __init__(self, store: KvStore, lease: int, locations: Any, n: Optional[int] = None) -> None:
        """locations: a list of Location, or the C array a get filled (read
        lazily: most callers want an address or two, not the list)."""
        self.store = store
        self.id = lease
        self._list: Optional[List[Location]]
        if isinstance(locations, list):
            self._raw, self._list, self._n = None, locations, len(locations)
        else:
            self._raw, self._list, self._n = locations, None, int(n or 0)
        self._held = lease != 0

    @property
    def locations(self) -> List[Location]:
        if self._list is None:
            raw = self._raw
            self._list = [Location._from(raw[i]) for i in range(self._n)] if raw is not None else []
        return self._list

    def __len__(self) -> int:
        return self._n

    def _span(self, i: int) -> Any:
        if self._raw is not None and 0 <= i < self._n:
            loc = self._raw[i]
            return loc.data or 0, loc.length
        loc = self.locations[i]
        return loc.address, loc.length

    def address(self, i: int) -> int:
        return int(self._span(i)[0])

    def __getitem__(self, i: int) -> memoryview:
        address, length = self._span(i)
        return _buffers.memory_view(address, length, self, True)

    def numpy(self, i: int, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None) -> Any:
        address, length = self._span(i)
        return _buffers.numpy_view(address, length, self, True, dtype, shape)

    def torch(self, i: int, dtype: Any = "uint8", shape: Optional[Sequence[int]] = None) -> Any:
        """A CPU tensor over chunk i. torch has no read-only tensors: the
        pages are mapped read-only, so a write through it faults."""
        address, length = self._span(i)
        return _buffers.torch_view(address, length, self, True, dtype, shape)

    def release(self, _release: Any = _kv_release) -> None:
        if self._held:
            self._held = False
            h = self.store._c_handle
            if h is not None:  # a closed store released every lease
                _release(h, self.id)

    # A lease is small and short-lived: __del__ (run once no view holds it)
    # is far cheaper than a weakref finalizer per get.
    __del__ = release

    @property
    def released(self) -> bool:
        return not self._held

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
