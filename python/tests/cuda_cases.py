# SPDX-License-Identifier: Apache-2.0
"""The CUDA cases, free of pytest: a cuda-backend KvArena seen as CUDA
tensors with no copy, attention over them, and the tiny decoder on the GPU.

test_cuda.py runs them under pytest; run_cuda.py runs them on a GPU host
whose Python may lack pytest (the gpu suite, the GPU bundle). A case raises
Skip with the reason when the host cannot run it.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable, Dict, List

import cxlpool
from cxlpool.kv_arena import K, V

CHUNK = 16


class Skip(Exception):
    """The case cannot run here; the message says why."""


class NoTorch(Skip):
    """No PyTorch: a skip even on a GPU host (there is nothing to check)."""


def cuda_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise NoTorch(f"PyTorch is not installed ({e})") from None
    if not torch.cuda.is_available():
        raise Skip(f"no CUDA device visible to torch {torch.__version__} (built for CUDA {torch.version.cuda})")
    return torch


def cuda_arena(client: Any, **shape: Any) -> Any:
    try:
        return cxlpool.KvArena(client, backend="cuda", **shape)
    except cxlpool.CxlpoolError as e:
        raise Skip(f"the cuda arena backend is not available here: {e}") from None


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def arena_tensors_are_zero_copy(client: Any) -> str:
    """Every K/V tensor of a cuda arena is a CUDA tensor at the arena's own
    address with the arena's strides; what torch writes there is what the
    library offloads to the store and restores into another row."""
    torch = cuda_torch()
    layers, kv_heads, head_dim, ctx = 2, 2, 64, 512
    with cuda_arena(client, layers=layers, kv_heads=kv_heads, head_dim=head_dim, max_batch=2, max_context=ctx,
                    dtype="bfloat16") as arena:
        r = arena.alloc_reqid()
        n = 4 * CHUNK
        arena.step({r: n})
        src: Dict[Any, Any] = {}
        for layer in range(layers):
            for kind in (K, V):
                t = arena.tensor(layer, kind)
                info = arena.tensor_info(layer, kind)
                _check(t.is_cuda and t.device.index == arena.device, f"not on cuda:{arena.device}: {t.device}")
                _check(t.dtype == torch.bfloat16 and tuple(t.shape) == (2, ctx, kv_heads, head_dim),
                       f"dtype/shape {t.dtype} {tuple(t.shape)}")
                _check(t.data_ptr() == info.base, f"data_ptr {t.data_ptr():#x} != arena {info.base:#x}")
                _check(tuple(t.stride()) == (info.row_stride // 2, info.token_stride // 2, head_dim, 1),
                       f"strides {t.stride()} against {info}")
                # The raw interface gives the same memory to any consumer.
                raw = torch.as_tensor(arena.cuda_array(layer, kind), device=t.device)
                _check(raw.data_ptr() == info.base, "__cuda_array_interface__ view is a copy")
                src[layer, kind] = torch.randn(n, kv_heads, head_dim, device=t.device).to(torch.bfloat16)
                t[r, :n] = src[layer, kind]
        for (layer, kind), s in src.items():  # no two tensors overlap
            _check(torch.equal(arena.tensor(layer, kind)[r, :n], s), f"layer {layer} kind {kind} read back")

        # The library reads and writes the same bytes: offload, restore
        # into a cleared row, compare.
        store = client.kv_store()
        try:
            ns = store.namespace(f"py-cuda-{os.getpid()}", layout="arena", dtype="bf16", chunk_tokens=CHUNK)
            tokens = list(range(100, 100 + n))
            # The library copies on a stream of its own: torch's writes
            # must be done first (and the clearing below before a restore).
            torch.cuda.synchronize()
            _check(arena.offload(r, ns, tokens).wait() >= 0, "offload")
            arena.free_reqid(r)
            r2 = arena.alloc_reqid()
            arena.step({r2: n})
            for layer in range(layers):
                for kind in (K, V):
                    arena.tensor(layer, kind)[r2, :n].zero_()
            torch.cuda.synchronize()
            got = arena.restore(r2, ns, tokens).wait()
            _check(got == n, f"restored {got} of {n} tokens")
            for (layer, kind), s in src.items():
                _check(torch.equal(arena.tensor(layer, kind)[r2, :n], s), f"layer {layer} kind {kind} after restore")
        finally:
            store.close()
        return f"{2 * layers} tensors at the arena's addresses; {n} tokens round-tripped through the store"


def _sdpa_options(torch: Any) -> Dict[str, Any]:
    # enable_gqa arrived in torch 2.5: before it, as many KV heads as query
    # heads.
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return {"enable_gqa": True} if (major, minor) >= (2, 5) else {}


def sdpa_over_the_arena_equals_plain_tensors(client: Any) -> str:
    """scaled_dot_product_attention reads K/V straight from the arena
    (bf16, GQA where torch has it, a batch of rows, decode and causal
    prefill) and gives the same bits as over plain torch CUDA tensors."""
    torch = cuda_torch()
    F = torch.nn.functional
    if not hasattr(F, "scaled_dot_product_attention"):
        raise Skip(f"torch {torch.__version__} has no scaled_dot_product_attention (torch < 2.0)")
    gqa = _sdpa_options(torch)
    batch, kv_heads, head_dim, seq = 2, 2, 64, 256
    heads = 4 * kv_heads if gqa else kv_heads
    notes: List[str] = []
    with cuda_arena(client, layers=1, kv_heads=kv_heads, head_dim=head_dim, max_batch=batch, max_context=512,
                    dtype="bfloat16") as arena:
        rows = [arena.alloc_reqid() for _ in range(batch)]
        _check(rows == list(range(batch)), f"a fresh arena gave rows {rows}")  # so [:batch] are they
        arena.step([seq] * batch)
        dev = arena.k(0).device
        k_plain = torch.randn(batch, seq, kv_heads, head_dim, device=dev).to(torch.bfloat16)
        v_plain = torch.randn(batch, seq, kv_heads, head_dim, device=dev).to(torch.bfloat16)
        arena.k(0)[:batch, :seq] = k_plain
        arena.v(0)[:batch, :seq] = v_plain
        k_arena, v_arena = arena.k(0)[:batch, :seq], arena.v(0)[:batch, :seq]  # views, no copy
        _check(k_arena.data_ptr() == arena.tensor_info(0, K).base, "the arena slice is a copy")
        # [batch, heads, tokens, head_dim] as SDPA takes them: transposes, still views.
        kt_a, vt_a = k_arena.transpose(1, 2), v_arena.transpose(1, 2)
        kt_p, vt_p = k_plain.transpose(1, 2), v_plain.transpose(1, 2)
        for name, q_len, causal in (("decode", 1, False), ("prefill", seq, True)):
            q = torch.randn(batch, heads, q_len, head_dim, device=dev).to(torch.bfloat16)
            got = F.scaled_dot_product_attention(q, kt_a, vt_a, is_causal=causal, **gqa)
            ref = F.scaled_dot_product_attention(q, kt_p, vt_p, is_causal=causal, **gqa)
            diff = float((got.float() - ref.float()).abs().max())
            _check(torch.equal(got, ref), f"{name}: SDPA over the arena differs from plain tensors (max |diff| {diff})")
            notes.append(name)
        # FlashAttention itself, where this torch can be told to use only it.
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel  # torch 2.3+
        except ImportError:
            sdpa_kernel = None
        if sdpa_kernel is not None:
            q = torch.randn(batch, heads, 1, head_dim, device=dev).to(torch.bfloat16)
            try:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    got = F.scaled_dot_product_attention(q, kt_a, vt_a, **gqa)
                    ref = F.scaled_dot_product_attention(q, kt_p, vt_p, **gqa)
            except RuntimeError as e:  # this device or build has no flash kernel for the shape
                notes.append(f"flash-only not run ({str(e).splitlines()[0][:120]})")
            else:
                _check(torch.equal(got, ref), "flash-only: SDPA over the arena differs from plain tensors")
                notes.append("flash-only")
        del k_arena, v_arena, kt_a, vt_a
    return (f"bf16 batch {batch}, {heads} query / {kv_heads} KV heads, {seq} tokens: identical "
            f"({', '.join(notes)})")


def load_example(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("tiny_decoder", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_decoder_on_cuda(socket: str, example: str, decode: int = 16, quiet: bool = True) -> str:
    """examples/python/tiny_decoder.py --device cuda: arena K/V on the GPU,
    SDPA over them, a prefix restored from another process, a preempted
    request restored; logits bit-identical to plain torch CUDA tensors."""
    cuda_torch()
    try:
        tiny = load_example(example)
    except ImportError as e:
        raise Skip(f"the example cannot import here: {e}") from None
    r = tiny.run(socket, decode=decode, device="cuda", quiet=quiet)
    _check(r["zero_copy"], "the weights are not tensors over the shared region")
    _check(r["cached_chunks"] == tiny.PREFIX // tiny.CHUNK, f"prefix chunks cached: {r['cached_chunks']}")
    _check(r["identical"], "logits differ from plain torch on CUDA")
    return (f"{len(r['tokens'])} tokens, logits identical; decode tokens/s arena {r['rate_arena']:.0f}, "
            f"plain {r['rate_plain']:.0f}, ratio {r['ratio']:.3f}")


# The cases that take a Client; tiny_decoder_on_cuda takes the socket.
CLIENT_CASES: Dict[str, Callable[[Any], str]] = {
    "arena_tensors_are_zero_copy": arena_tensors_are_zero_copy,
    "sdpa_over_the_arena_equals_plain_tensors": sdpa_over_the_arena_equals_plain_tensors,
}
