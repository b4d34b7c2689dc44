#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small decoder in PyTorch whose KV cache lives in a cxlpool KvArena and
whose weights are tensors over the daemon's shared read-only region.

What it shows, end to end:
  1. the model's weights are written as safetensors, loaded once by the
     daemon and seen here as torch tensors over the shared region (no copy);
  2. another Python process (this file with --role producer) opens the same
     weights, prefills the prompt's prefix into its arena and offloads it to
     the KV store; this process restores that prefix into its own arena row
     instead of computing it;
  3. it decodes greedily, preempts the request half way (offload, free the
     row), restores it into a new row and goes on;
  4. every step's logits are compared with the same model run on plain torch
     tensors (weights in process memory, KV in torch.zeros): they must be
     identical, bit for bit;
  5. decode tokens/s of both are printed, and their ratio.

On a CUDA host (--device cuda) the arena is the cuda backend and attention
is scaled_dot_product_attention over the arena's tensors.

    python3 examples/python/tiny_decoder.py [--socket PATH] [--decode N] [--device cpu|cuda]
"""
from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F

import cxlpool

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, MAX_CTX = 2, 64, 4, 2, 16, 128, 96, 256
CHUNK = 16        # tokens per store chunk
PREFIX = 2 * CHUNK  # the part of the prompt the producer process stores
PROMPT = list(range(3, 3 + PREFIX + 8))


def make_weights(seed: int = 7) -> Dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) / math.sqrt(shape[-1])

    t = {"model.embed_tokens.weight": torch.randn(VOCAB, HIDDEN, generator=g),
         "model.embed_positions.weight": torch.randn(MAX_CTX, HIDDEN, generator=g) * 0.1,
         "model.norm.weight": torch.ones(HIDDEN), "lm_head.weight": w(VOCAB, HIDDEN)}
    for layer in range(LAYERS):
        p = f"model.layers.{layer}."
        t.update({p + "input_layernorm.weight": 1 + 0.1 * torch.randn(HIDDEN, generator=g),
                  p + "self_attn.q_proj.weight": w(HEADS * HEAD_DIM, HIDDEN),
                  p + "self_attn.k_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
                  p + "self_attn.v_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
                  p + "self_attn.o_proj.weight": w(HIDDEN, HEADS * HEAD_DIM),
                  p + "post_attention_layernorm.weight": 1 + 0.1 * torch.randn(HIDDEN, generator=g),
                  p + "mlp.up_proj.weight": w(FFN, HIDDEN), p + "mlp.down_proj.weight": w(HIDDEN, FFN)})
    return t


def write_safetensors(path: str, tensors: Dict[str, torch.Tensor]) -> None:
    import json
    import struct
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def _torch_at_least(major: int, minor: int) -> bool:
    got = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    return got >= (major, minor)


# On CUDA, attention is PyTorch's scaled_dot_product_attention reading K and
# V where they are (the arena's rows); enable_gqa (torch 2.5+) lets it take
# the KV heads as they are stored instead of a repeated copy.
SDPA = hasattr(F, "scaled_dot_product_attention")
SDPA_GQA = SDPA and _torch_at_least(2, 5)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int) -> torch.Tensor:
    """q [n, heads, d] over k, v [start + n, kv_heads, d], causal."""
    n, m = q.shape[0], k.shape[0]
    if SDPA and q.is_cuda:
        if not SDPA_GQA:
            k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
            v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        # [1, heads, tokens, d] views; one new token sees every cached one.
        mask = None if n == 1 else (torch.arange(m, device=q.device)[None, :] <=
                                    (start + torch.arange(n, device=q.device))[:, None])
        out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                             v.transpose(0, 1)[None], attn_mask=mask,
                                             **({"enable_gqa": True} if SDPA_GQA else {}))
        return out[0].transpose(0, 1).reshape(n, HEADS * HEAD_DIM)
    k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
    v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
    mask = torch.arange(m, device=q.device)[None, :] <= (start + torch.arange(n, device=q.device))[:, None]
    scores = torch.einsum("nhd,mhd->hnm", q, k) / math.sqrt(HEAD_DIM)
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.einsum("hnm,mhd->nhd", scores.softmax(-1), v).reshape(n, HEADS * HEAD_DIM)


KvRow = Callable[[int], Tuple[torch.Tensor, torch.Tensor]]  # layer -> (K [ctx, kv, d], V) of one row


def forward(w: Dict[str, torch.Tensor], tokens: List[int], start: int, kv: KvRow) -> torch.Tensor:
    """Logits of tokens at positions start.., writing their K and V into kv."""
    dev = w["lm_head.weight"].device
    ids = torch.tensor(tokens, device=dev)
    n = len(tokens)
    x = w["model.embed_tokens.weight"][ids] + w["model.embed_positions.weight"][start:start + n]
    for layer in range(LAYERS):
        p = f"model.layers.{layer}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(n, HEADS, HEAD_DIM)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(n, KV_HEADS, HEAD_DIM)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, KV_HEADS, HEAD_DIM)
        kc, vc = kv(layer)
        kc[start:start + n] = k
        vc[start:start + n] = v
        x = x + attention(q, kc[:start + n], vc[:start + n], start) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        x = x + F.silu(h @ w[p + "mlp.up_proj.weight"].T) @ w[p + "mlp.down_proj.weight"].T
    return rms(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


class ArenaModel:
    """The model over cxlpool: weights from the shared region, KV in an arena row."""

    def __init__(self, client: cxlpool.Client, model: str, device: str) -> None:
        self.weights = client.open_weights(model)
        self.w = {k: (t.to(device) if device != "cpu" else t) for k, t in self.weights.tensors().items()}
        self.device = device
        # Host rows in 64 KiB pages of a 1 MiB daemon region; device rows in
        # pages of the driver's mapping granularity (the default, 2 MiB).
        sizes: Dict[str, Any] = {"page_bytes": 64 * 1024, "region_bytes": 1 << 20} if device == "cpu" else {}
        self.arena = cxlpool.KvArena(client, layers=LAYERS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, max_batch=4,
                                     max_context=MAX_CTX, dtype="float32",
                                     backend="cuda" if device != "cpu" else "host", **sizes)
        self.store = client.kv_store()
        self.ns = self.store.namespace(f"tiny-decoder:{model}", layout="arena", dtype="f32", chunk_tokens=CHUNK,
                                       mode=0o666)
        self.row = self.arena.alloc_reqid()
        self.n = 0  # tokens whose KV the row holds

    @property
    def row(self) -> int:
        return self._row

    @row.setter
    def row(self, reqid: int) -> None:
        # The row's K/V views, made once per row: the arena's tensors stay
        # where they are (step maps pages under them), so a decode step
        # indexes no tensor to find its cache.
        self._row = reqid
        self._views = [(self.arena.k(layer)[reqid], self.arena.v(layer)[reqid]) for layer in range(LAYERS)]

    def kv(self, layer: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return self._views[layer]

    def feed(self, tokens: List[int]) -> torch.Tensor:
        self.arena.step({self.row: self.n + len(tokens)})
        logits = forward(self.w, tokens, self.n, self.kv)
        self.n += len(tokens)
        return logits

    def sync(self) -> None:
        """On CUDA, lets torch's queued kernels finish: the arena's offload
        and restore copy on a stream of their own, which does not wait for
        torch's (a restore would be overwritten by a zero_ still queued)."""
        if self.device != "cpu":
            torch.cuda.synchronize()

    def offload(self, tokens: List[int]) -> None:
        tokens = tokens[:self.n]
        if self.device != "cpu":
            # A device arena has no daemon tier to keep a partial chunk in:
            # it stores whole chunks, and a restore recomputes the rest.
            tokens = tokens[:len(tokens) // CHUNK * CHUNK]
        self.sync()
        self.arena.offload(self.row, self.ns, tokens).wait()

    def restore(self, tokens: List[int]) -> int:
        """Brings tokens' KV into a fresh row; returns how many were restored."""
        self.arena.step({self.row: len(tokens)})
        for layer in range(LAYERS):  # the row may reuse old pages: show that restore fills them
            k, v = self.kv(layer)
            k[:len(tokens)].zero_()
            v[:len(tokens)].zero_()
        self.sync()
        got = self.arena.restore(self.row, self.ns, tokens).wait()
        self.n = got
        return got


class PlainModel:
    def __init__(self, w: Dict[str, torch.Tensor], device: str) -> None:
        self.w = {k: t.to(device) for k, t in w.items()}
        self.k = [torch.zeros(MAX_CTX, KV_HEADS, HEAD_DIM, device=device) for _ in range(LAYERS)]
        self.v = [torch.zeros(MAX_CTX, KV_HEADS, HEAD_DIM, device=device) for _ in range(LAYERS)]
        self.n = 0

    def feed(self, tokens: List[int]) -> torch.Tensor:
        logits = forward(self.w, tokens, self.n, lambda layer: (self.k[layer], self.v[layer]))
        self.n += len(tokens)
        return logits


def producer(socket: str, model: str, device: str) -> None:
    """The other process: prefills the prompt's prefix and stores its KV."""
    with cxlpool.Client(socket, "tiny-decoder-producer") as c:
        m = ArenaModel(c, model, device)
        m.feed(PROMPT[:PREFIX])
        m.offload(PROMPT[:PREFIX])
        print(f"producer: stored {PREFIX} prompt tokens ({PREFIX // CHUNK} chunks)")


def run(socket: str, decode: int = 48, device: str = "cpu", quiet: bool = False) -> Dict[str, Any]:
    say = (lambda *a: None) if quiet else print
    ref_w = make_weights()
    model = f"tiny-decoder-{os.getpid()}"
    with tempfile.TemporaryDirectory() as d, cxlpool.Client(socket, "tiny-decoder") as c:
        os.chmod(d, 0o755)
        path = os.path.join(d, "model.safetensors")
        write_safetensors(path, ref_w)
        os.chmod(path, 0o644)
        c.load_weights(model, [path]).close()  # the daemon keeps it; the models open it
        try:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
            subprocess.run([sys.executable, os.path.abspath(__file__), "--role", "producer", "--socket", socket,
                            "--model", model, "--device", device], check=True, env=env)
            a = ArenaModel(c, model, device)
            p = PlainModel(ref_w, device)
            zero_copy = all(t.data_ptr() == a.weights.find(k).address for k, t in a.weights.tensors().items())
            keys = a.ns.keys(PROMPT)
            cached = a.ns.lookup(keys)
            restored = a.restore(PROMPT[:cached * CHUNK])
            say(f"prefix: {cached} chunks cached by the producer; {restored} tokens restored instead of prefilled")
            p.feed(PROMPT[:PREFIX])
            if restored < PREFIX:  # evicted meanwhile: compute it as the producer did
                a.n = 0
                a.feed(PROMPT[:PREFIX])
            tokens = list(PROMPT)
            identical = True
            logits_a = logits_p = None
            for t in PROMPT[PREFIX:]:  # the rest of the prompt, a token at a time
                logits_a, logits_p = a.feed([t]), p.feed([t])
                identical &= torch.equal(logits_a, logits_p)
            times: Dict[str, List[float]] = {"arena": [], "plain": []}
            preempted_at = decode // 2
            restored_after = None
            for step in range(decode):
                assert logits_a is not None and logits_p is not None
                nxt = int(logits_a[-1].argmax())
                tokens.append(nxt)
                if step == preempted_at:
                    a.offload(tokens)
                    a.arena.free_reqid(a.row)
                    a.row = a.arena.alloc_reqid()
                    restored_after = a.restore(tokens[:-1])
                    for t in tokens[restored_after:-1]:  # what the store did not keep
                        a.feed([t])
                # Alternate which model runs first: the second finds caches warm.
                for name in (("arena", "plain") if step % 2 == 0 else ("plain", "arena")):
                    t0 = time.perf_counter()
                    if name == "arena":
                        logits_a = a.feed([nxt])
                    else:
                        logits_p = p.feed([nxt])
                    if device != "cpu":
                        torch.cuda.synchronize()  # a step ends when its kernels do
                    times[name].append(time.perf_counter() - t0)
                identical &= torch.equal(logits_a, logits_p)
            # The median step: a busy machine's preemptions hit either side at random.
            rate_a, rate_p = 1 / statistics.median(times["arena"]), 1 / statistics.median(times["plain"])
            say(f"preempted after {preempted_at} decode steps; restored {restored_after} tokens into row {a.row}")
            say(f"weights zero copy: {zero_copy}; logits identical to plain torch over {len(tokens)} tokens: "
                f"{identical}")
            say(f"decode tokens/s: arena {rate_a:.0f}, plain torch {rate_p:.0f}, ratio {rate_a / rate_p:.3f}")
            del a
            return {"identical": identical, "zero_copy": zero_copy, "cached_chunks": cached, "restored": restored,
                    "restored_after": restored_after, "tokens": tokens, "ratio": rate_a / rate_p,
                    "rate_arena": rate_a, "rate_plain": rate_p}
        finally:
            import gc
            gc.collect()
            c.unload_weights(model)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--socket", default=None)
    ap.add_argument("--decode", type=int, default=48)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: the arena's cuda backend, attention by scaled_dot_product_attention over it")
    ap.add_argument("--role", default="main", choices=["main", "producer"])
    ap.add_argument("--model", default="")
    args = ap.parse_args()
    socket = args.socket or cxlpool.default_socket_path()
    if args.role == "producer":
        producer(socket, args.model, args.device)
        return 0
    r = run(socket, args.decode, args.device)
    return 0 if r["identical"] and r["zero_copy"] and r["cached_chunks"] == PREFIX // CHUNK else 1


if __name__ == "__main__":
    sys.exit(main())
