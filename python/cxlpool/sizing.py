# SPDX-License-Identifier: Apache-2.0
"""KV sizes of a model, for choosing the store's slot_bytes and chunk_tokens.

The store has one slot size ([kvstore] slot_bytes, store-wide: every arena
is cut into slots of it); each namespace has its own chunk_tokens. A chunk
of a namespace fits a slot when
``chunk_tokens * bytes_per_token(...) <= slot_bytes``; a namespace opened
with a larger ``chunk_bytes`` keeps each chunk across several slots
(spanning.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict

MIB = 1 << 20


@dataclass(frozen=True)
class KvShape:
    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int = 2

    def bytes_per_token(self, tp_size: int = 1) -> int:
        """K and V of every layer for one token (per tensor-parallel rank:
        the KV heads are split across ranks)."""
        heads = max(self.kv_heads // tp_size, 1)
        return 2 * self.layers * heads * self.head_dim * self.dtype_bytes

    def bytes_per_layer_token(self, tp_size: int = 1) -> int:
        return self.bytes_per_token(tp_size) // self.layers

    def chunk_bytes(self, chunk_tokens: int = 256, tp_size: int = 1) -> int:
        return chunk_tokens * self.bytes_per_token(tp_size)

    def slot_bytes_for(self, chunk_tokens: int = 256, tp_size: int = 1, header_bytes: int = 0) -> int:
        """The smallest valid slot_bytes (a multiple of 4096) for such chunks."""
        n = self.chunk_bytes(chunk_tokens, tp_size) + header_bytes
        return (n + 4095) // 4096 * 4096

    def chunk_tokens_for(self, slot_bytes: int, tp_size: int = 1, header_bytes: int = 0) -> int:
        """The most tokens per chunk a slot of slot_bytes holds."""
        return max((slot_bytes - header_bytes) // self.bytes_per_token(tp_size), 0)

    @staticmethod
    def from_config(config: Any, dtype_bytes: int = 2) -> "KvShape":
        """From a Hugging Face style config (dict or object)."""
        get: Callable[[str], Any] = ((lambda k: config.get(k)) if isinstance(config, dict)
                                     else (lambda k: getattr(config, k, None)))
        heads = get("num_attention_heads")
        return KvShape(get("num_hidden_layers"), get("num_key_value_heads") or heads,
                       get("head_dim") or get("hidden_size") // heads, dtype_bytes)


# Published shapes (config.json of each model), bf16.
MODELS: Dict[str, KvShape] = {
    "Llama-3-8B": KvShape(32, 8, 128),
    "Llama-3-70B": KvShape(80, 8, 128),
    "Qwen2.5-7B": KvShape(28, 4, 128),
    "Mixtral-8x7B": KvShape(32, 8, 128),
}


def table(chunk_tokens: int = 256) -> str:
    """The sizing table of docs/python.md (markdown)."""
    rows = ["| model | layers x kv heads x head dim | bytes/token | per layer, per token | per 256-token chunk "
            "| per layer, per chunk | slot_bytes for 256-token chunks |",
            "|---|---|---|---|---|---|---|"]
    for name, s in MODELS.items():
        rows.append(f"| {name} | {s.layers} x {s.kv_heads} x {s.head_dim} | {s.bytes_per_token() // 1024} KiB "
                    f"| {s.bytes_per_layer_token() // 1024} KiB | {s.chunk_bytes(chunk_tokens) // MIB} MiB "
                    f"| {s.chunk_bytes(chunk_tokens) // s.layers // 1024} KiB "
                    f"| \"{s.slot_bytes_for(chunk_tokens) // MIB}M\" |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
