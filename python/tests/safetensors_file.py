# SPDX-License-Identifier: Apache-2.0
"""Writes safetensors files for tests and examples (the format is an 8-byte
little-endian header length, a JSON header, then the tensors' bytes)."""
from __future__ import annotations

import json
import struct
from typing import Dict, Tuple

_NAMES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int8": "I8",
          "uint8": "U8", "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL"}


def write(path: str, tensors: Dict[str, object]) -> None:
    """tensors: name -> torch tensor (any dtype above) or numpy array."""
    header: Dict[str, object] = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        dtype, shape, raw = _raw(t)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def _raw(t: object) -> Tuple[str, Tuple[int, ...], bytes]:
    if hasattr(t, "element_size"):  # torch
        import torch
        name = str(t.dtype).replace("torch.", "")
        c = t.contiguous()
        raw = c.view(torch.uint8).numpy().tobytes() if c.numel() else b""
        return _NAMES[name], tuple(c.shape), raw
    import numpy as np
    a = np.ascontiguousarray(t)
    return _NAMES[str(a.dtype)], a.shape, a.tobytes()
