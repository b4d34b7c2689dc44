# SPDX-License-Identifier: Apache-2.0
"""Weights: safetensors models loaded once per host into a shared read-only
region (cxlpool/weights.h), seen here as tensors over that region."""
from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import _buffers
from ._lib import StreamedLayer, StreamerConfig, StreamerStats, WeightsLoadOptions, WeightTensorC, lib
from ._handle import NativeHandle
from .errors import check

_NO_TIER = 0xFFFFFFFF
TARGET_HOST, TARGET_CUDA = 0, 1


@dataclass(frozen=True)
class TensorMeta:
    index: int
    name: str
    dtype: str                # safetensors name: "BF16", "F32", ...
    dtype_code: int
    shape: Tuple[int, ...]
    bytes: int
    address: int              # 0: not resident (stays in its file)
    layer: int                # -1: global
    file_index: int
    file_offset: int


class Weights(NativeHandle):
    """An open model: ``tensors()`` is a dict of torch tensors over the
    shared region in their safetensors dtypes (bf16 included), ``arrays()``
    the numpy equivalent. Both are zero copy and keep the model open."""

    def __init__(self, client: Any, handle: Optional[int], model: str) -> None:
        self.client = client
        self.model = model
        self._streamers: "weakref.WeakSet[Streamer]" = weakref.WeakSet()
        self._own(handle, _close_weights, client, self._streamers)
        self.meta: List[TensorMeta] = [self._meta(i) for i in range(self.count)]
        self._by_name = {m.name: m for m in self.meta}

    @classmethod
    def load(cls, client: Any, model: str, paths: Sequence[str], tier: Any = None,
             max_resident_bytes: int = 0) -> "Weights":
        arr = (ctypes.c_char_p * max(len(paths), 1))(*[str(p).encode() for p in paths])
        opts = WeightsLoadOptions(_NO_TIER if tier is None else client.tier_id(tier), 0, max_resident_bytes)
        out = ctypes.c_void_p()
        check(lib.cxlpool_weights_load(client.handle, model.encode(), arr, len(paths), ctypes.byref(opts),
                                       ctypes.byref(out)), "cxlpool_weights_load")
        return cls(client, out.value, model)

    @classmethod
    def open(cls, client: Any, model: str) -> "Weights":
        out = ctypes.c_void_p()
        check(lib.cxlpool_weights_open(client.handle, model.encode(), ctypes.byref(out)), "cxlpool_weights_open")
        return cls(client, out.value, model)

    @staticmethod
    def unload(client: Any, model: str) -> None:
        check(lib.cxlpool_weights_unload(client.handle, model.encode()), "cxlpool_weights_unload")

    _kind = "model"

    def close(self) -> None:
        """Closes the model (after its streamers); tensors from it must be gone."""
        super().close()

    @property
    def count(self) -> int:
        return check(lib.cxlpool_weights_count(self.handle), "cxlpool_weights_count")

    @property
    def layers(self) -> int:
        return check(lib.cxlpool_weights_layers(self.handle), "cxlpool_weights_layers")

    def _meta(self, index: int) -> TensorMeta:
        t = WeightTensorC()
        check(lib.cxlpool_weights_tensor(self.handle, index, ctypes.byref(t)), "cxlpool_weights_tensor")
        return TensorMeta(index, t.name.decode(), _buffers.DTYPES[t.dtype][0], int(t.dtype),
                          tuple(int(t.shape[i]) for i in range(t.ndim)), int(t.bytes), int(t.data or 0),
                          int(t.layer), int(t.file_index), int(t.file_offset))

    def find(self, name: str) -> TensorMeta:
        m = self._by_name.get(name)
        if m is None:
            t = WeightTensorC()
            check(lib.cxlpool_weights_find(self.handle, name.encode(), ctypes.byref(t)), "cxlpool_weights_find")
        assert m is not None
        return m

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self.meta)

    def tensor(self, name: str) -> Any:
        m = self.find(name)
        if not m.address:
            raise ValueError(f"{name} is not resident (it stays in its file: stream it)")
        return _buffers.torch_view(m.address, m.bytes, self, True, m.dtype_code, m.shape)

    def array(self, name: str) -> Any:
        """numpy view (bf16 as uint16 words, float8 as uint8)."""
        m = self.find(name)
        if not m.address:
            raise ValueError(f"{name} is not resident (it stays in its file: stream it)")
        return _buffers.numpy_view(m.address, m.bytes, self, True, m.dtype_code, m.shape)

    def tensors(self) -> Dict[str, Any]:
        return {m.name: self.tensor(m.name) for m in self.meta if m.address}

    def arrays(self) -> Dict[str, Any]:
        return {m.name: self.array(m.name) for m in self.meta if m.address}

    def streamer(self, target: str = "host", device: int = 0, buffers: int = 2, prefetch_depth: int = 1,
                 pinned_budget_bytes: int = 0, compute_ns_per_byte: float = 0.0) -> "Streamer":
        s = Streamer(self, {"host": TARGET_HOST, "cuda": TARGET_CUDA}[target], device, buffers, prefetch_depth,
                     pinned_budget_bytes, compute_ns_per_byte)
        self._streamers.add(s)
        return s


def _close_weights(handle: int, client_keepalive: Any, streamers: Any) -> None:
    for s in list(streamers):
        s.close()
    lib.cxlpool_weights_close(handle)


def _destroy_streamer(handle: int) -> None:
    lib.cxlpool_weight_streamer_destroy(handle)


class Streamer(NativeHandle):
    """Streams a model's layers into a compute window (host or CUDA)."""

    def __init__(self, weights: Weights, target: int, device: int, buffers: int, prefetch_depth: int,
                 pinned_budget_bytes: int, compute_ns_per_byte: float) -> None:
        self.weights = weights
        self.target = target
        self.device = device
        cfg = StreamerConfig(target, device, buffers, prefetch_depth, pinned_budget_bytes, compute_ns_per_byte)
        out = ctypes.c_void_p()
        check(lib.cxlpool_weight_streamer_create(weights.handle, ctypes.byref(cfg), ctypes.byref(out)),
              "cxlpool_weight_streamer_create")
        self._own(out.value, _destroy_streamer)

    _kind = "streamer"

    def acquire(self, layer: int) -> Dict[str, Any]:
        """The layer's tensors in the window, by name (torch tensors; CUDA
        tensors for a cuda target). Valid until release(layer)."""
        out = StreamedLayer()
        check(lib.cxlpool_weight_streamer_acquire(self.handle, layer, ctypes.byref(out)),
              "cxlpool_weight_streamer_acquire")
        res: Dict[str, Any] = {}
        for i in range(out.n_tensors):
            m = self.weights.meta[out.tensor_index[i]]
            addr = int(out.data[i])
            if self.target == TARGET_CUDA:
                strides = _contiguous_strides(m.shape, _buffers.DTYPES[m.dtype_code][1])
                res[m.name] = _buffers.torch_cuda_view(addr, self, m.dtype_code, m.shape, strides, self.device, True)
            else:
                res[m.name] = _buffers.torch_view(addr, m.bytes, self, True, m.dtype_code, m.shape)
        return res

    def release(self, layer: int) -> None:
        check(lib.cxlpool_weight_streamer_release(self.handle, layer), "cxlpool_weight_streamer_release")

    def stats(self) -> Dict[str, int]:
        s = StreamerStats()
        check(lib.cxlpool_weight_streamer_stats(self.handle, ctypes.byref(s)), "cxlpool_weight_streamer_stats")
        return {name: int(getattr(s, name)) for name, _ in StreamerStats._fields_}


def _contiguous_strides(shape: Sequence[int], size: int) -> List[int]:
    strides = []
    acc = size
    for d in reversed(shape):
        strides.append(acc)
        acc *= int(d)
    return list(reversed(strides))
