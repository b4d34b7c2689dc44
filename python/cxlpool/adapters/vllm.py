# SPDX-License-Identifier: Apache-2.0
"""A vLLM KV offloading backend over the cxlpool store.

vLLM's offloading connector asks a scheduler-side ``OffloadingManager``
which blocks are offloaded (``lookup``), to prepare and finish loads and
stores (``prepare_load``/``complete_load``, ``prepare_store``/
``complete_store``), and to note use (``touch``); worker-side handlers move
the blocks between GPU KV tensors and the offload medium. Here:

- the medium is a store namespace; a block's key is its vLLM block hash,
  taken as an opaque 128-bit key (``Namespace.engine_keys``);
- ``prepare_load`` leases the blocks (they cannot be evicted until
  ``complete_load``); ``prepare_store`` reserves put-window slots for the
  blocks not stored yet; ``complete_store`` commits them (or, on failure,
  commits nothing);
- ``CxlpoolTransferHandler`` copies blocks between the paged KV tensors and
  the leased or reserved chunks (``paged_kv.PagedKvLayout``).

vLLM itself is imported only by ``vllm_spec_class`` (and the spec's handler
wiring); the manager and handler work with any objects of vLLM's shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..kvstore import Lease, Namespace, Reservation
from .paged_kv import PagedKvLayout

MEDIUM = "CXLPOOL"


def block_hash_value(h: Any) -> Any:
    """A vLLM block hash as an engine key: bytes (vLLM >= 0.10), an int, or
    the older BlockHash tuple's hash_value."""
    return getattr(h, "hash_value", h)


@dataclass
class CxlpoolLoadStoreSpec:
    """Where blocks are in the store: their keys and the lease (load) or
    reservation (store) that holds their chunks."""
    block_hashes: List[Any]
    lease: Optional[Lease] = None
    reservation: Optional[Reservation] = None
    slots: List[int] = field(default_factory=list)   # reservation: chunk index of each block

    @staticmethod
    def medium() -> str:
        return MEDIUM


@dataclass
class PrepareStoreOutput:
    block_hashes_to_store: List[Any]
    store_spec: CxlpoolLoadStoreSpec
    block_hashes_evicted: List[Any]


@dataclass
class OffloadingEvent:
    block_hashes: List[Any]
    block_size: int
    medium: str
    removed: bool


class CxlpoolOffloadingManager:
    """vLLM's OffloadingManager interface over a store namespace."""

    def __init__(self, namespace: Namespace, block_bytes: int, block_size: int, enable_events: bool = False) -> None:
        self.ns = namespace
        self.block_bytes = block_bytes
        self.block_size = block_size
        self._loads: Dict[Tuple[Any, ...], Lease] = {}
        self._stores: Dict[Tuple[Any, ...], Tuple[Reservation, List[Any]]] = {}
        self._events: Optional[List[OffloadingEvent]] = [] if enable_events else None

    def _keys(self, block_hashes: Iterable[Any]) -> Any:
        return self.ns.engine_keys(block_hash_value(h) for h in block_hashes)

    def lookup(self, block_hashes: Iterable[Any]) -> int:
        """How many leading blocks are offloaded (and loadable)."""
        return self.ns.lookup(self._keys(block_hashes))

    def prepare_load(self, block_hashes: Iterable[Any]) -> CxlpoolLoadStoreSpec:
        hashes = list(block_hashes)
        lease = self.ns.get(self._keys(hashes))
        if len(lease) < len(hashes):
            lease.release()
            raise KeyError(f"{len(hashes) - len(lease)} of {len(hashes)} blocks are no longer offloaded")
        self._loads[tuple(hashes)] = lease
        return CxlpoolLoadStoreSpec(hashes, lease=lease)

    def touch(self, block_hashes: Iterable[Any]) -> None:
        """Marks blocks as recently used: a get and release refreshes them."""
        with self.ns.get(self._keys(block_hashes)):
            pass

    def complete_load(self, block_hashes: Iterable[Any]) -> None:
        lease = self._loads.pop(tuple(block_hashes), None)
        if lease is not None:
            lease.release()

    def prepare_store(self, block_hashes: Iterable[Any]) -> Optional[PrepareStoreOutput]:
        hashes = list(block_hashes)
        if not hashes:
            return PrepareStoreOutput([], CxlpoolLoadStoreSpec([]), [])
        res = self.ns.reserve(self._keys(hashes), self.block_bytes)
        fresh = [i for i in range(len(hashes)) if not res.cached(i)]
        to_store = [hashes[i] for i in fresh]
        self._stores[tuple(hashes)] = (res, to_store)
        return PrepareStoreOutput(to_store, CxlpoolLoadStoreSpec(to_store, reservation=res, slots=fresh), [])

    def complete_store(self, block_hashes: Iterable[Any], success: bool = True) -> None:
        hashes = tuple(block_hashes)
        entry = self._stores.pop(hashes, None)
        if entry is None:
            return
        res, stored = entry
        if success:
            res.commit()
            if self._events is not None and stored:
                self._events.append(OffloadingEvent(stored, self.block_size, MEDIUM, False))

    def take_events(self) -> Iterable[OffloadingEvent]:
        events, self._events = (self._events or []), ([] if self._events is not None else None)
        return events


@dataclass
class GpuBlocks:
    """vLLM's GPULoadStoreSpec shape: the engine's block ids."""
    block_ids: List[int]

    @staticmethod
    def medium() -> str:
        return "GPU"


class CxlpoolTransferHandler:
    """vLLM's OffloadingHandler interface: ``transfer_async(job_id, (src,
    dst))`` copies blocks between the engine's KV tensors and the store
    chunks of a prepared load or store; ``get_finished()`` reports jobs.
    Copies run at submit (torch's copies to and from CUDA tensors are
    synchronous here); the engine polls as it would for a device copy."""

    def __init__(self, layout: PagedKvLayout) -> None:
        self.layout = layout
        self._finished: List[Tuple[int, bool]] = []

    def transfer_async(self, job_id: int, spec: Tuple[Any, Any]) -> bool:
        src, dst = spec
        try:
            if isinstance(src, CxlpoolLoadStoreSpec):   # load: store -> engine blocks
                assert src.lease is not None
                for i, block in enumerate(_block_ids(dst)):
                    self.layout.scatter(block, src.lease.address(i), src.lease)
            else:                                        # store: engine blocks -> reserved slots
                assert dst.reservation is not None
                # src lists the engine blocks of block_hashes_to_store, in order.
                for block, slot in zip(_block_ids(src), dst.slots):
                    self.layout.gather(block, dst.reservation.address(slot), dst.reservation)
            ok = True
        except Exception:
            ok = False
        self._finished.append((job_id, ok))
        return True

    def get_finished(self) -> List[Tuple[int, bool]]:
        out, self._finished = self._finished, []
        return out


def _block_ids(spec: Any) -> List[int]:
    ids = spec.block_ids
    return [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]


class CxlpoolOffloadingSpec:
    """vLLM's OffloadingSpec shape. ``extra_config`` (vLLM's
    kv_connector_extra_config) may name ``cxlpool_socket`` and
    ``cxlpool_model`` (default: the served model name)."""

    def __init__(self, vllm_config: Any, kv_cache_config: Any = None, store: Any = None) -> None:
        self.vllm_config = vllm_config
        self.kv_cache_config = kv_cache_config
        extra = getattr(getattr(vllm_config, "kv_transfer_config", None), "kv_connector_extra_config", None) or {}
        self.extra = dict(extra)
        cache = getattr(vllm_config, "cache_config", None)
        self.block_size = int(self.extra.get("block_size", getattr(cache, "block_size", 16)))
        parallel = getattr(vllm_config, "parallel_config", None)
        self.tp_size = int(getattr(parallel, "tensor_parallel_size", 1) or 1)
        self.tp_rank = int(getattr(parallel, "rank", 0) or 0) % self.tp_size
        model = getattr(vllm_config, "model_config", None)
        self.model_id = str(self.extra.get("cxlpool_model", getattr(model, "model", "model")))
        self.dtype = str(getattr(model, "dtype", "bf16")).replace("torch.", "")
        self._store = store
        self._client: Any = None
        self._manager: Optional[CxlpoolOffloadingManager] = None
        self._layout: Optional[PagedKvLayout] = None

    def _namespace(self) -> Namespace:
        if self._store is None:
            from ..client import Client
            self._client = Client(self.extra.get("cxlpool_socket"), "vllm")
            self._store = self._client.kv_store()
        return self._store.namespace(self.model_id, layout="vllm-paged-nhd", dtype=self.dtype, tp_rank=self.tp_rank,
                                     tp_size=self.tp_size, chunk_tokens=self.block_size)

    def block_bytes(self) -> int:
        if self._layout is not None:
            return self._layout.block_bytes
        return int(self.extra["block_bytes"])

    def get_manager(self) -> CxlpoolOffloadingManager:
        if self._manager is None:
            self._manager = CxlpoolOffloadingManager(self._namespace(), self.block_bytes(), self.block_size,
                                                     bool(self.extra.get("enable_events", False)))
        return self._manager

    def get_handlers(self, kv_caches: Any, attn_backends: Any = None) -> Iterator[Tuple[type, type, Any]]:
        tensors = list(kv_caches.values()) if isinstance(kv_caches, dict) else list(kv_caches)
        self._layout = PagedKvLayout(tensors)
        handler = CxlpoolTransferHandler(self._layout)
        gpu_spec: type = GpuBlocks
        try:
            from vllm.v1.kv_offload.mediums import GPULoadStoreSpec  # type: ignore
            gpu_spec = GPULoadStoreSpec
        except ImportError:
            pass
        yield gpu_spec, CxlpoolLoadStoreSpec, handler
        yield CxlpoolLoadStoreSpec, gpu_spec, handler


_vllm_class: Optional[type] = None


def vllm_spec_class() -> type:
    """CxlpoolOffloadingSpec as a subclass of vLLM's OffloadingSpec,
    registered with vLLM's factory as "CxlpoolOffloadingSpec" (imports vLLM:
    ImportError when it is absent). The class is also this module's
    attribute ``VllmCxlpoolOffloadingSpec``, which the factory loads."""
    global _vllm_class
    if _vllm_class is None:
        from vllm.v1.kv_offload.spec import OffloadingSpec  # type: ignore

        class VllmCxlpoolOffloadingSpec(CxlpoolOffloadingSpec, OffloadingSpec):  # type: ignore[misc]
            def __init__(self, vllm_config: Any, kv_cache_config: Any = None) -> None:
                CxlpoolOffloadingSpec.__init__(self, vllm_config, kv_cache_config)

        _vllm_class = VllmCxlpoolOffloadingSpec
        try:
            from vllm.v1.kv_offload.factory import OffloadingSpecFactory  # type: ignore
            OffloadingSpecFactory.register_spec("CxlpoolOffloadingSpec", __name__, "VllmCxlpoolOffloadingSpec")
        except (ImportError, AttributeError, ValueError):
            pass
    return _vllm_class


def __getattr__(name: str) -> Any:
    if name == "VllmCxlpoolOffloadingSpec":
        return vllm_spec_class()
    raise AttributeError(name)
