# SPDX-License-Identifier: Apache-2.0
"""A cxlpool connector with LMCache's remote-backend shape.

LMCache calls a remote connector with ``CacheEngineKey`` objects (model
name, world size, worker id, format, chunk hash) and ``MemoryObj`` buffers
it allocates from its local CPU backend. This connector keeps each key's
chunk in the host-wide store: every engine process on the host that opens
the same namespace (model, format, world size, worker id) shares it.

Stored chunk = a 64-byte header (shape, dtype, memory format) + the memory
object's bytes, written straight into the reserved put-window slot (one
copy). A get copies the leased chunk once into a memory object LMCache
allocated, then releases the lease at once: LMCache owns its buffers.

``list()`` answers the keys this connector stored (the store is indexed by
hash and has no listing call).
"""
from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..client import Client
from ..kvstore import KvStore, Namespace

_HEADER = struct.Struct("<4sIIi4q16s")  # magic, version, ndim, fmt, shape[4], dtype name; 64 bytes
_MAGIC = b"CXLM"
HEADER_BYTES = _HEADER.size


def _fmt_value(fmt: Any) -> int:
    return int(getattr(fmt, "value", fmt or 0))


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def encode_header(shape: Sequence[int], dtype: Any, fmt: Any) -> bytes:
    dims = list(shape)[:4] + [0] * (4 - min(len(shape), 4))
    if len(shape) > 4:
        raise ValueError("at most 4 dimensions")
    return _HEADER.pack(_MAGIC, 1, len(shape), _fmt_value(fmt), *dims, _dtype_name(dtype).encode())


def decode_header(raw: bytes) -> Tuple[Tuple[int, ...], str, int]:
    magic, version, ndim, fmt, d0, d1, d2, d3, dtype = _HEADER.unpack(raw[:HEADER_BYTES])
    if magic != _MAGIC or version != 1:
        raise ValueError("not a chunk this connector stored")
    return (d0, d1, d2, d3)[:ndim], dtype.rstrip(b"\0").decode(), fmt


class CxlpoolConnector:
    """LMCache remote connector over a cxlpool KV store.

    url: ``cxlpool://`` (default socket) or ``cxlpool:///path/to/cxlpoold.sock``.
    local_cpu_backend: LMCache's allocator (``allocate(shape, dtype, fmt)``).
    """

    def __init__(self, url: str = "cxlpool://", loop: Any = None, local_cpu_backend: Any = None,
                 store: Optional[KvStore] = None, chunk_tokens: int = 256) -> None:
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
        self.chunk_tokens = chunk_tokens
        if store is None:
            path = url[len("cxlpool://"):] if url.startswith("cxlpool://") else url
            self._client: Optional[Client] = Client(path or None, "lmcache")
            store = self._client.kv_store()
        else:
            self._client = None
        self.store = store
        self._namespaces: Dict[Tuple[Any, ...], Namespace] = {}
        self._stored: Dict[str, None] = {}

    # ---- keys ----
    def _namespace(self, key: Any) -> Namespace:
        # The key's fmt names the engine's KV layout ("vllm", "huggingface").
        ident = (str(key.model_name), str(getattr(key, "fmt", "")), int(key.world_size), int(key.worker_id))
        ns = self._namespaces.get(ident)
        if ns is None:
            ns = self.store.namespace(ident[0], layout=f"lmcache-{ident[1]}",
                                      dtype=str(getattr(key, "dtype", "any")), tp_rank=ident[3],
                                      tp_size=max(ident[2], ident[3] + 1), chunk_tokens=self.chunk_tokens)
            self._namespaces[ident] = ns
        return ns

    def _keys(self, key: Any) -> Tuple[Namespace, Any]:
        ns = self._namespace(key)
        return ns, ns.engine_keys([key.chunk_hash])

    @staticmethod
    def _name(key: Any) -> str:
        to_string = getattr(key, "to_string", None)
        return to_string() if to_string else str(key)

    # ---- the remote-connector interface ----
    def exists_sync(self, key: Any) -> bool:
        ns, k = self._keys(key)
        return ns.lookup(k) == 1

    async def exists(self, key: Any) -> bool:
        ns, k = self._keys(key)
        return await ns.lookup_async(k) == 1

    async def batched_async_contains(self, lookup_id: str, keys: List[Any], pin: bool = False) -> int:
        """How many leading keys are stored."""
        n = 0
        for key in keys:
            if not await self.exists(key):
                break
            n += 1
        return n

    def _put_one(self, key: Any, memory_obj: Any) -> None:
        ns, k = self._keys(key)
        meta = memory_obj.metadata
        payload = memoryview(memory_obj.byte_array).cast("B")
        header = encode_header(tuple(meta.shape), meta.dtype, getattr(meta, "fmt", 0))
        with ns.reserve(k, HEADER_BYTES + payload.nbytes) as r:
            if not r.cached(0):
                slot = r[0]
                slot[:HEADER_BYTES] = header
                slot[HEADER_BYTES:] = payload
            r.commit()
        self._stored[self._name(key)] = None

    async def put(self, key: Any, memory_obj: Any) -> None:
        self._put_one(key, memory_obj)

    async def batched_put(self, keys: List[Any], memory_objs: List[Any]) -> None:
        for key, obj in zip(keys, memory_objs):
            self._put_one(key, obj)

    def _get_one(self, key: Any) -> Optional[Any]:
        ns, k = self._keys(key)
        with ns.get(k) as lease:
            if len(lease) == 0:
                return None
            view = lease[0]
            shape, dtype, fmt = decode_header(bytes(view[:HEADER_BYTES]))
            obj = self._allocate(shape, dtype, fmt)
            if obj is None:
                return None
            dst = memoryview(obj.byte_array).cast("B")
            n = view.nbytes - HEADER_BYTES
            if dst.nbytes < n:
                raise ValueError(f"the allocated memory object has {dst.nbytes} bytes for a {n}-byte chunk")
            dst[:n] = view[HEADER_BYTES:]
            del view, dst
            return obj

    def _allocate(self, shape: Tuple[int, ...], dtype: str, fmt: int) -> Any:
        import torch
        td = getattr(torch, dtype)
        try:
            from lmcache.v1.memory_management import MemoryFormat  # type: ignore
            fmt_obj: Any = MemoryFormat(fmt)
        except ImportError:
            fmt_obj = fmt
        return self.local_cpu_backend.allocate(torch.Size(shape), td, fmt_obj)

    async def get(self, key: Any) -> Optional[Any]:
        return self._get_one(key)

    def support_batched_get(self) -> bool:
        return True

    async def batched_get(self, keys: List[Any]) -> List[Optional[Any]]:
        return [self._get_one(k) for k in keys]

    def support_ping(self) -> bool:
        return True

    async def ping(self) -> int:
        return 0 if self.store._handle is not None else 1

    async def list(self) -> List[str]:
        return list(self._stored)

    async def close(self) -> None:
        self.store.close()
        if self._client is not None:
            self._client.close()


def lmcache_connector_class() -> type:
    """CxlpoolConnector as a subclass of LMCache's RemoteConnector (imports
    LMCache; ImportError when it is absent)."""
    from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector  # type: ignore

    class LMCacheCxlpoolConnector(CxlpoolConnector, RemoteConnector):  # type: ignore[misc]
        pass

    return LMCacheCxlpoolConnector


