#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's scaled_dot_product_attention on the decode shapes of
attention_bench, as the yardstick for cxlpool's decode kernels: the same
heads (32 query, 8 KV, GQA 4, head_dim 128), dtype, batch and context, one
query token per row, K/V read once per call. Prints GB/s of K+V read and the
fraction of the device's copy bandwidth measured in the same process (a
1 GiB device-to-device copy, bytes read + written), like attention_bench.

Rows here are all `seq` tokens long (SDPA has no per-row lengths without a
mask, and a mask changes which kernel runs); attention_bench's rows are
seq/2..seq tokens, so compare GB/s and fractions, not times.

  sdpa_compare.py [--reps N] [SHAPE ...]   SHAPE: dtype:batch:seq, e.g. bf16:8:2048
Exits 77 without torch or a CUDA device.
"""
import argparse
import statistics
import sys

DEFAULT_SHAPES = ["f32:16:2048", "f32:8:4096", "f32:32:8192",
                  "bf16:32:8192", "bf16:16:4096", "bf16:8:2048"]


def timed_ms(torch, fn, reps, inner=20):
    """Median over `reps` samples of `inner` back-to-back calls, per call."""
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / inner)
    return statistics.median(samples)


def copy_gbs(torch, reps):
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = timed_ms(torch, lambda: dst.copy_(src), reps, inner=1)
    return 2 * src.numel() / (ms / 1e3) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("shapes", nargs="*", default=DEFAULT_SHAPES)
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"SKIP: no PyTorch here ({e})")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: PyTorch sees no CUDA device")
        return 77
    dev = torch.cuda.get_device_name(0)
    ref = copy_gbs(torch, args.reps)
    print(f"scaled_dot_product_attention, torch {torch.__version__}, {dev}")
    print(f"  device copy bandwidth (1 GiB device-to-device, read + written): {ref:.1f} GB/s")
    q_heads, kv_heads, head_dim = 32, 8, 128
    status = 0
    for shape in args.shapes:
        try:
            name, batch, seq = shape.split(":")
            batch, seq = int(batch), int(seq)
            dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[name]
        except (ValueError, KeyError):
            print(f"sdpa_compare: bad shape {shape!r} (dtype:batch:seq, dtype f32 or bf16)", file=sys.stderr)
            return 2
        q = torch.randn(batch, q_heads, 1, head_dim, device="cuda", dtype=dtype)
        k = torch.randn(batch, kv_heads, seq, head_dim, device="cuda", dtype=dtype)
        v = torch.randn_like(k)
        kv_bytes = 2 * k.numel() * k.element_size()
        try:
            ms = timed_ms(torch, lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), args.reps)
        except (TypeError, RuntimeError) as e:
            print(f"  {shape}: scaled_dot_product_attention failed: {e}")
            status = 1
            continue
        gbs = kv_bytes / (ms / 1e3) / 1e9
        print(f"  {name} batch {batch} ctx {seq} ({kv_bytes / 2**20:.1f} MiB K+V): {ms * 1e3:.1f} us, "
              f"{gbs:.1f} GB/s, {100 * gbs / ref:.0f}% of copy")
        print(f"RESULT shape={shape} us={ms * 1e3:.1f} gbs={gbs:.1f} fraction={gbs / ref:.3f}")
        del q, k, v
    return status


if __name__ == "__main__":
    sys.exit(main())
