# SPDX-License-Identifier: Apache-2.0
"""Namespaces whose chunks are larger than the store's slot.

The store cuts its arenas into slots of one size ([kvstore] slot_bytes); a
namespace opened with ``chunk_bytes`` above it keeps each chunk as ``parts``
slot-sized pieces, stored under keys derived from the chunk's key. Nothing
changes on the wire or in the daemon: the pieces are ordinary chunks, and
the namespace's layout string names the split (``<layout>/span<P>x<B>``), so
its fingerprint differs from the same model stored whole or split another
way. Prefix lookups stay exact: keys are looked up piece by piece in order,
and a chunk counts only when all its pieces are there (an evicted piece
ends the prefix at its chunk).

What a split costs: a chunk is no longer one contiguous view; ``Lease.part``
gives each piece without a copy, ``Lease.read`` copies a chunk into one
buffer.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, NoReturn, Optional, Sequence, Tuple

from . import _buffers
from ._lib import KvKey, KvLocation, KvNamespaceC, lib
from .errors import check
from .keys import Keys, as_keys
from .kvstore import (PUT_COMMIT_TO_SSD, KeysLike, KvStore, Lease, LoadDecision, Location, Namespace, PutCount,
                      Reservation)

_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    # splitmix64's finalizer: a bijection of 64-bit words.
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def split(chunk_bytes: int, slot_bytes: int) -> Tuple[int, int]:
    """(parts, part_bytes) for chunks of chunk_bytes in slots of slot_bytes:
    the fewest pieces, of equal size but the last (which is not larger)."""
    if chunk_bytes <= 0 or slot_bytes <= 0:
        raise ValueError("chunk_bytes and slot_bytes must be positive")
    parts = -(-chunk_bytes // slot_bytes)
    return parts, -(-chunk_bytes // parts)


def span_layout(layout: str, parts: int, part_bytes: int) -> str:
    return f"{layout}/span{parts}x{part_bytes}"


class SpanningNamespace(Namespace):
    """A namespace whose chunks (chunk_bytes) are larger than the store's
    slot: each is kept as ``parts`` pieces of ``part_bytes`` (the last one
    may be shorter). ``KvStore.namespace(..., chunk_bytes=N)`` opens one."""

    def __init__(self, store: KvStore, c: KvNamespaceC, chunk_bytes: int) -> None:
        super().__init__(store, c)
        self.chunk_bytes = chunk_bytes
        self.parts, self.part_bytes = split(chunk_bytes, store.info.slot_bytes)
        self._last_bytes = chunk_bytes - (self.parts - 1) * self.part_bytes

    def part_keys(self, keys: KeysLike) -> Keys:
        """The store keys of keys' pieces, chunk by chunk: piece 0 under the
        chunk's own key, piece j under a mix of it and j."""
        k = as_keys(keys)
        p = self.parts
        arr = (KvKey * max(k.n * p, 1))()
        for i in range(k.n):
            lo, hi = k.array[i].lo, k.array[i].hi
            arr[i * p] = KvKey(lo, hi)
            for j in range(1, p):
                arr[i * p + j] = KvKey(_mix(lo ^ j), _mix(hi ^ (j << 32) ^ lo))
        return Keys(arr, k.n * p)

    def lookup(self, keys: KeysLike) -> int:
        """Length (in chunks) of the longest prefix of keys whose every
        piece is cached."""
        pk = self.part_keys(keys)
        n = check(lib.cxlpool_kv_lookup(self.store.handle, self.id, pk.array, pk.n, None), "cxlpool_kv_lookup")
        return n // self.parts

    def put(self, keys: KeysLike, chunks: Sequence[Any], to_ssd: bool = False) -> int:
        """Stores chunks of exactly chunk_bytes each, piece by piece (one
        copy each, into the reserved slots). Returns how many chunks have
        every piece committed. to_ssd: the pieces go to the SSD log only;
        the count is then a PutCount whose ``on_ssd`` counts the chunks
        every piece of which this put stored there."""
        k = as_keys(keys)
        if len(chunks) != k.n:
            raise ValueError(f"{len(chunks)} chunks for {k.n} keys")
        p, size, last = self.parts, self.part_bytes, self._last_bytes
        pk = self.part_keys(k)
        key_bytes = ctypes.sizeof(KvKey)
        full = p if last == size else p - 1  # equal pieces in one put, a shorter last one in another
        flags = PUT_COMMIT_TO_SSD if to_ssd else 0
        on_ssd = ctypes.c_uint64()
        done = 0
        chunks_on_ssd = 0
        for i, chunk in enumerate(chunks):
            address, nbytes, keep = _buffers.buffer_address(chunk)
            if nbytes != self.chunk_bytes:
                raise ValueError(f"chunk {i} has {nbytes} bytes; this namespace's chunks have {self.chunk_bytes}")
            srcs = (ctypes.c_void_p * p)(*[address + j * size for j in range(p)])
            mine = (KvKey * p).from_buffer(pk.array, i * p * key_bytes)
            got = check(lib.cxlpool_kv_put_flags(self.store.handle, self.id, mine, full, srcs, size, flags,
                                                 ctypes.byref(on_ssd)), "cxlpool_kv_put_flags")
            pieces_on_ssd = int(on_ssd.value)
            if full < p:
                tail = (KvKey * 1).from_buffer(pk.array, (i * p + p - 1) * key_bytes)
                got += check(lib.cxlpool_kv_put_flags(self.store.handle, self.id, tail, 1,
                                                      (ctypes.c_void_p * 1)(srcs[p - 1]), last, flags,
                                                      ctypes.byref(on_ssd)), "cxlpool_kv_put_flags")
                pieces_on_ssd += int(on_ssd.value)
            del keep
            done += got == p
            chunks_on_ssd += pieces_on_ssd == p
        return PutCount(done, chunks_on_ssd) if to_ssd else done

    def get(self, keys: KeysLike) -> "SpanningLease":  # type: ignore[override]
        """Leases every piece of the longest fully cached prefix."""
        pk = self.part_keys(keys)
        locs = (KvLocation * max(pk.n, 1))()
        lease = ctypes.c_uint64()
        n = check(lib.cxlpool_kv_get(self.store.handle, self.id, pk.array, pk.n, ctypes.byref(lease), locs),
                  "cxlpool_kv_get")
        return SpanningLease(Lease(self.store, lease.value, locs, n), self.parts)

    def delete(self, keys: KeysLike) -> int:
        pk = self.part_keys(keys)
        return check(lib.cxlpool_kv_delete(self.store.handle, self.id, pk.array, pk.n),
                     "cxlpool_kv_delete") // self.parts

    remove = delete

    def prefetch(self, keys: KeysLike) -> int:
        pk = self.part_keys(keys)
        return check(lib.cxlpool_kv_prefetch(self.store.handle, self.id, pk.array, pk.n), "cxlpool_kv_prefetch")

    # Calls on whole chunks in one slot each: refused, saying what to use.
    def _whole_chunks_only(self) -> NoReturn:
        raise NotImplementedError("this namespace's chunks span several slots: use put, get, lookup, delete, "
                                  "prefetch")

    def reserve(self, keys: KeysLike, chunk_bytes: int) -> Reservation:
        self._whole_chunks_only()

    def lookup_locations(self, keys: KeysLike) -> List[Location]:
        self._whole_chunks_only()

    def should_load(self, prompt_tokens: int, prefill_tokens_per_s: float,
                    chunks: Optional[Sequence[Location]] = None, keys: Optional[KeysLike] = None,
                    overlap: bool = False, pipeline_stages: int = 0) -> LoadDecision:
        self._whole_chunks_only()

    async def lookup_async(self, keys: KeysLike) -> int:
        self._whole_chunks_only()

    async def get_async(self, keys: KeysLike) -> Lease:
        self._whole_chunks_only()

    async def put_async(self, keys: KeysLike, chunks: Sequence[Any], to_ssd: bool = False) -> int:
        self._whole_chunks_only()


class SpanningLease:
    """A lease on the pieces of whole chunks: ``len()`` chunks, ``part(i, j)``
    piece j of chunk i (a read-only view, no copy), ``read(i)`` chunk i
    copied into one buffer."""

    def __init__(self, lease: Any, parts: int) -> None:
        self.lease = lease
        self.parts = parts
        self._n = len(lease) // parts

    def __len__(self) -> int:
        return self._n

    def part(self, i: int, j: int) -> memoryview:
        if not 0 <= i < self._n or not 0 <= j < self.parts:
            raise IndexError(f"piece {j} of chunk {i}: {self._n} chunks of {self.parts} pieces")
        return self.lease[i * self.parts + j]

    def pieces(self, i: int) -> List[memoryview]:
        return [self.part(i, j) for j in range(self.parts)]

    def read(self, i: int, out: Optional[Any] = None) -> Any:
        """Chunk i in one buffer: out (a writable buffer of the chunk's
        size) or a new bytearray."""
        pieces = self.pieces(i)
        total = sum(len(p) for p in pieces)
        if out is None:
            out = bytearray(total)
        address, nbytes, keep = _buffers.buffer_address(out, writable=True)
        if nbytes != total:
            raise ValueError(f"out has {nbytes} bytes; the chunk has {total}")
        offset = 0
        for j, p in enumerate(pieces):
            ctypes.memmove(address + offset, self.lease.address(i * self.parts + j), len(p))
            offset += len(p)
        del keep
        return out

    def release(self) -> None:
        self.lease.release()

    @property
    def released(self) -> bool:
        return bool(self.lease.released)

    def __enter__(self) -> "SpanningLease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


__all__ = ["SpanningNamespace", "SpanningLease", "split", "span_layout"]
