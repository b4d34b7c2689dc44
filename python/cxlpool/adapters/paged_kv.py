# SPDX-License-Identifier: Apache-2.0
"""Moves blocks between an engine's paged KV tensors and store chunks.

Paged engines (vLLM, SGLang) keep per layer K and V as ``[num_blocks,
block_size, kv_heads, head_dim]`` tensors (vLLM's FlashAttention layout
``[2, num_blocks, ...]`` is split into its K and V). One block of every
layer makes one store chunk, in the order layer, K/V, token, head, dim: the
order the KV arena's offload writes, so with chunk_tokens == block_size an
engine's blocks and an arena's rows can share the store's chunks.
"""
from __future__ import annotations

from typing import Any, List, Sequence

from .. import _buffers


class PagedKvLayout:
    """The engine's KV tensors (CPU or CUDA torch tensors) as block chunks."""

    def __init__(self, kv_caches: Sequence[Any]) -> None:
        tensors: List[Any] = []
        for t in kv_caches:
            if t.dim() == 5:  # [2, num_blocks, block_size, heads, dim]
                tensors.extend([t[0], t[1]])
            elif t.dim() == 4:
                tensors.append(t)
            else:
                raise ValueError(f"a paged KV tensor has 4 or 5 dimensions, not {t.dim()}")
        if not tensors:
            raise ValueError("no KV tensors")
        self.tensors = tensors
        self.num_blocks = int(tensors[0].shape[0])
        self.block_size = int(tensors[0].shape[1])
        self.piece_bytes = [int(t[0].numel() * t.element_size()) for t in tensors]
        self.block_bytes = sum(self.piece_bytes)

    def gather(self, block_id: int, address: int, owner: Any) -> None:
        """Copies block_id of every tensor into the chunk at address."""
        import torch
        dst = _buffers.torch_view(address, self.block_bytes, owner, False, torch.uint8)
        off = 0
        for t, n in zip(self.tensors, self.piece_bytes):
            src = t[block_id].contiguous().view(-1).view(torch.uint8)
            dst[off:off + n].copy_(src)
            off += n

    def scatter(self, block_id: int, address: int, owner: Any) -> None:
        """Copies the chunk at address into block_id of every tensor."""
        import torch
        src = _buffers.torch_view(address, self.block_bytes, owner, True, torch.uint8)
        off = 0
        for t, n in zip(self.tensors, self.piece_bytes):
            block = t[block_id]
            block.view(-1).view(torch.uint8).copy_(src[off:off + n], non_blocking=False)
            off += n
