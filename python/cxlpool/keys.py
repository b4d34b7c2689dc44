# SPDX-License-Identifier: Apache-2.0
"""Chunk keys: 128-bit values, held in the C layout for calls."""
from __future__ import annotations

import ctypes
import hashlib
from typing import Any, Iterable, Iterator, Sequence, Union, overload

from ._lib import KvKey

_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1

EngineKey = Union[int, bytes, bytearray, str]


class Keys(Sequence[int]):
    """A sequence of 128-bit chunk keys (``int``), stored as ``cxlpool_kv_key``.

    Slicing gives ``Keys`` without copying the C array's contents twice.
    """

    __slots__ = ("array", "n")

    def __init__(self, array: Any, count: int) -> None:
        self.array = array
        self.n = count

    @staticmethod
    def from_ints(values: Iterable[int]) -> "Keys":
        vals = [int(v) & _MASK128 for v in values]
        arr = (KvKey * max(len(vals), 1))()
        for i, v in enumerate(vals):
            arr[i].lo = v & _MASK64
            arr[i].hi = v >> 64
        return Keys(arr, len(vals))

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> "Keys": ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self.n)
            if step == 1 and start == 0:
                return Keys(self.array, max(stop, 0))
            return Keys.from_ints(self[j] for j in range(start, stop, step))
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        k = self.array[i]
        return (int(k.hi) << 64) | int(k.lo)

    def __iter__(self) -> Iterator[int]:
        for i in range(self.n):
            k = self.array[i]
            yield (int(k.hi) << 64) | int(k.lo)

    def pointer(self) -> Any:
        return ctypes.cast(self.array, ctypes.POINTER(KvKey))

    def __repr__(self) -> str:
        return "Keys([" + ", ".join(f"{k:#034x}" for k in self) + "])"


def as_keys(keys: Union[Keys, Iterable[int]]) -> Keys:
    return keys if isinstance(keys, Keys) else Keys.from_ints(keys)


def engine_key(value: EngineKey, fingerprint: int = 0) -> int:
    """An engine's block or page hash as a cxlpool key.

    Engines name blocks with their own hashes (vLLM's per-block hashes: ints
    or bytes; SGLang's page hashes: hex strings). cxlpool treats them as
    opaque: the value's bytes and the namespace fingerprint go through
    BLAKE2b-128, so equal engine hashes of different namespaces (models,
    layouts, tensor-parallel ranks) never name the same chunk, and hashes of
    any width become the store's 128 bits.
    """
    if isinstance(value, int):
        data = (value & ((1 << 256) - 1)).to_bytes(32, "little")
    elif isinstance(value, str):
        data = value.encode()
    else:
        data = bytes(value)
    h = hashlib.blake2b(data, digest_size=16, key=(fingerprint & _MASK128).to_bytes(16, "little"))
    return int.from_bytes(h.digest(), "little")


def engine_keys(values: Iterable[EngineKey], fingerprint: int = 0) -> Keys:
    return Keys.from_ints(engine_key(v, fingerprint) for v in values)
