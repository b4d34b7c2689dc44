# SPDX-License-Identifier: Apache-2.0
"""KvArena: vAttention-style KV tensors backed by pool memory (cxlpool/kv_arena.h).

Per layer a K and a V tensor ``[max_batch, max_context, kv_heads, head_dim]``
(``row_stride`` between rows): virtually contiguous, physically mapped only
as far as each row has grown (``step``). ``k(layer)``/``v(layer)`` are torch
tensors over the arena itself (CPU tensors for the host backend, CUDA
tensors through ``__cuda_array_interface__`` for the cuda backend); touching
a token beyond what ``step`` mapped faults, as in C.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _buffers
from ._lib import ArenaConfig, ArenaStats, ArenaTensor, lib
from ._handle import NativeHandle
from .errors import CxlpoolError, check

BACKEND_HOST, BACKEND_CUDA = 0, 1
LAYOUT_PER_LAYER, LAYOUT_FUSED = 0, 1
K, V = 0, 1
_NO_TIER = 0xFFFFFFFF
EINPROGRESS = 115


@dataclass(frozen=True)
class TensorInfo:
    base: int
    row_stride: int
    token_stride: int
    bytes: int


def _dtype_name(dtype: Any) -> str:
    name = str(dtype).replace("torch.", "")
    return {"bf16": "bfloat16", "fp16": "float16", "f16": "float16", "fp32": "float32"}.get(name, name)


class KvArena(NativeHandle):
    """A KV arena (``cxlpool_kv_arena_create``); ``from_model`` sizes one
    from a Hugging Face style config."""

    def __init__(self, client: Any, layers: int, kv_heads: int, head_dim: int, max_batch: int, max_context: int,
                 dtype: Any = "bfloat16", page_bytes: int = 0, backend: str = "host", device: int = 0,
                 tier: Any = None, region_bytes: int = 0, memory_limit_bytes: int = 0, async_steps: bool = True,
                 fused: bool = False) -> None:
        self.client = client
        self.dtype = _dtype_name(dtype)
        self.dtype_bytes = _buffers.itemsize(self.dtype)
        self.layers, self.kv_heads, self.head_dim = layers, kv_heads, head_dim
        self.max_batch, self.max_context = max_batch, max_context
        self.backend = {"host": BACKEND_HOST, "cuda": BACKEND_CUDA}[backend]
        self.device = device
        tier_id = _NO_TIER if tier is None else client.tier_id(tier)
        c = ArenaConfig(layers, kv_heads, head_dim, self.dtype_bytes, max_batch, max_context, page_bytes,
                        LAYOUT_FUSED if fused else LAYOUT_PER_LAYER, self.backend, device, tier_id, region_bytes,
                        memory_limit_bytes, 1 if async_steps else 0, 0)
        out = ctypes.c_void_p()
        check(lib.cxlpool_kv_arena_create(client.handle, ctypes.byref(c), ctypes.byref(out)),
              "cxlpool_kv_arena_create")
        self._own(out.value, _destroy, client)
        self._seq = (ctypes.c_uint32 * max_batch)()
        self._tensors: Dict[Tuple[int, int, str], Any] = {}

    @classmethod
    def from_model(cls, client: Any, config: Any, max_batch: int, max_context: int, **kwargs: Any) -> "KvArena":
        """Shape from a config with num_hidden_layers, num_key_value_heads
        (else num_attention_heads) and head_dim (else hidden_size / heads);
        a dict or an object with those attributes."""
        get: Callable[[str], Any] = ((lambda k: config.get(k)) if isinstance(config, dict)
                                     else (lambda k: getattr(config, k, None)))
        heads = get("num_attention_heads")
        kv_heads = get("num_key_value_heads") or heads
        head_dim = get("head_dim") or get("hidden_size") // heads
        kwargs.setdefault("dtype", get("torch_dtype") or "bfloat16")
        return cls(client, get("num_hidden_layers"), kv_heads, head_dim, max_batch, max_context, **kwargs)

    _kind = "arena"

    def close(self) -> None:
        """Unmaps the arena: tensors made from it must be gone."""
        self._tensors.clear()
        super().close()

    destroy = close

    # ---- rows ----
    def alloc_reqid(self) -> int:
        r = ctypes.c_uint32()
        check(lib.cxlpool_kv_arena_alloc_reqid(self.handle, ctypes.byref(r)), "cxlpool_kv_arena_alloc_reqid")
        self._seq[r.value] = 0
        return int(r.value)

    def free_reqid(self, reqid: int) -> None:
        check(lib.cxlpool_kv_arena_free_reqid(self.handle, reqid), "cxlpool_kv_arena_free_reqid")
        self._seq[reqid] = 0

    def _fill(self, seq_lens: Any) -> int:
        if isinstance(seq_lens, dict):
            for r, n in seq_lens.items():
                self._seq[r] = n
            return self.max_batch
        n = len(seq_lens)
        for i in range(n):
            self._seq[i] = int(seq_lens[i])
        return n

    def step(self, seq_lens: Any) -> None:
        """Maps memory for seq_lens[r] tokens of each row (a sequence over
        rows 0..n-1, or a dict reqid -> tokens that updates those rows)."""
        n = self._fill(seq_lens)
        check(lib.cxlpool_kv_arena_step(self.handle, self._seq, n), "cxlpool_kv_arena_step")

    def step_async(self, seq_lens: Any) -> None:
        n = self._fill(seq_lens)
        check(lib.cxlpool_kv_arena_step_async(self.handle, self._seq, n), "cxlpool_kv_arena_step_async")

    def wait(self) -> None:
        check(lib.cxlpool_kv_arena_wait(self.handle), "cxlpool_kv_arena_wait")

    def trim(self, keep_bytes: int = 0) -> int:
        return check(lib.cxlpool_kv_arena_trim(self.handle, keep_bytes), "cxlpool_kv_arena_trim")

    def stats(self) -> Dict[str, int]:
        s = ArenaStats()
        check(lib.cxlpool_kv_arena_get_stats(self.handle, ctypes.byref(s)), "cxlpool_kv_arena_get_stats")
        return {name: int(getattr(s, name)) for name, _ in ArenaStats._fields_}

    # ---- tensors ----
    def tensor_info(self, layer: int, kind: int) -> TensorInfo:
        t = ArenaTensor()
        check(lib.cxlpool_kv_arena_get_tensor(self.handle, layer, kind, ctypes.byref(t)),
              "cxlpool_kv_arena_get_tensor")
        return TensorInfo(int(t.base), int(t.row_stride), int(t.token_stride), int(t.bytes))

    def _geometry(self, layer: int, kind: int) -> Tuple[TensorInfo, List[int], List[int]]:
        info = self.tensor_info(layer, kind)
        shape = [self.max_batch, self.max_context, self.kv_heads, self.head_dim]
        strides = [info.row_stride, info.token_stride, self.head_dim * self.dtype_bytes, self.dtype_bytes]
        return info, shape, strides

    def tensor(self, layer: int, kind: int) -> Any:
        """Layer's K (kind 0) or V (kind 1) as a torch tensor over the arena."""
        key = (layer, kind, "torch")
        t = self._tensors.get(key)
        if t is None:
            info, shape, strides = self._geometry(layer, kind)
            if self.backend == BACKEND_CUDA:
                t = _buffers.torch_cuda_view(info.base, self, self.dtype, shape, strides, self.device)
            else:
                t = _buffers.torch_view(info.base, info.bytes, self, False, self.dtype, shape, strides)
            self._tensors[key] = t
        return t

    def k(self, layer: int) -> Any:
        return self.tensor(layer, K)

    def v(self, layer: int) -> Any:
        return self.tensor(layer, V)

    def numpy(self, layer: int, kind: int) -> Any:
        """Host backend: a numpy view (bf16 as raw uint16 words)."""
        if self.backend != BACKEND_HOST:
            raise ValueError("numpy views need the host backend")
        info, shape, strides = self._geometry(layer, kind)
        dt = "uint16" if self.dtype == "bfloat16" else self.dtype
        return _buffers.numpy_view(info.base, info.bytes, self, False, dt, shape, strides)

    def cuda_array(self, layer: int, kind: int) -> Any:
        """Cuda backend: an object with ``__cuda_array_interface__`` (for
        cupy, numba, torch.as_tensor); bf16 is described as int16."""
        info, shape, strides = self._geometry(layer, kind)
        name = self.dtype
        return _buffers.CudaArray(info.base, shape, _buffers._TYPESTR.get(name, "|u1"), strides, False, self)

    # ---- offload / restore ----
    def offload(self, reqid: int, namespace: Any, tokens: Sequence[int]) -> "Transfer":
        """Starts writing row reqid's KV to the store under tokens' keys."""
        return self._begin(lib.cxlpool_kv_arena_offload_begin, "cxlpool_kv_arena_offload_begin", reqid,
                           namespace, tokens)

    def restore(self, reqid: int, namespace: Any, tokens: Sequence[int]) -> "Transfer":
        """Starts bringing row reqid's KV back; ``wait()`` says how many
        leading tokens were restored (recompute the rest)."""
        return self._begin(lib.cxlpool_kv_arena_restore_begin, "cxlpool_kv_arena_restore_begin", reqid,
                           namespace, tokens)

    def _begin(self, fn: Any, name: str, reqid: int, namespace: Any, tokens: Sequence[int]) -> "Transfer":
        from .kvstore import _token_array
        ptr, n, keep = _token_array(tokens)
        ticket = ctypes.c_uint64()
        check(fn(self.handle, namespace.store.handle, ctypes.byref(namespace.c_struct), reqid, ptr, n,
                 ctypes.byref(ticket)), name)
        return Transfer(self, int(ticket.value), keep)


def _destroy(handle: int, client_keepalive: Any) -> None:
    lib.cxlpool_kv_arena_destroy(handle)


class Transfer:
    """An offload or restore under way."""

    def __init__(self, arena: KvArena, ticket: int, keepalive: Any) -> None:
        self.arena = arena
        self.ticket = ticket
        self._keep = keepalive
        self.restored_tokens: Optional[int] = None

    def poll(self, timeout_ms: int = 0) -> bool:
        """True when done; False while it runs. Raises when it failed."""
        if self.restored_tokens is not None:
            return True
        out = ctypes.c_uint64()
        rc = lib.cxlpool_kv_arena_offload_poll(self.arena.handle, self.ticket, timeout_ms, ctypes.byref(out))
        if rc == -EINPROGRESS:
            return False
        check(rc, "cxlpool_kv_arena_offload_poll")
        self.restored_tokens = int(out.value)
        return True

    def wait(self) -> int:
        """Blocks until done; returns the tokens that hold their KV."""
        while not self.poll(-1):
            pass
        assert self.restored_tokens is not None
        return self.restored_tokens


__all__ = ["KvArena", "Transfer", "TensorInfo", "K", "V", "CxlpoolError"]
