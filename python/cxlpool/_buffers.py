# SPDX-License-Identifier: Apache-2.0
"""Zero-copy views of foreign memory as memoryview, numpy and torch objects.

Every view is built over a ctypes array placed at the memory's address. That
array carries a reference to the object owning the memory (a region, a lease,
an arena, a model's weights), so the owner, and with it the mapping, lives as
long as any view of it does; numpy and torch keep the array alive in turn.
"""
from __future__ import annotations

import ctypes
import warnings
from typing import Any, Dict, Optional, Sequence, Tuple

_array_types: Dict[int, Any] = {}


def _owned_type(nbytes: int) -> Any:
    # A Python subclass of a ctypes array accepts attributes (the owner);
    # one class per size, cached, since creating classes is slow.
    t = _array_types.get(nbytes)
    if t is None:
        t = type("ForeignBytes", (ctypes.c_ubyte * nbytes,), {"__slots__": ("owner",)})
        if len(_array_types) < 4096:
            _array_types[nbytes] = t
    return t


def raw_array(address: int, nbytes: int, owner: Any) -> Any:
    """A ctypes byte array at address (no copy) that keeps owner alive."""
    arr = _owned_type(nbytes).from_address(address)
    arr.owner = owner
    return arr


def memory_view(address: int, nbytes: int, owner: Any, readonly: bool) -> memoryview:
    view = memoryview(raw_array(address, nbytes, owner)).cast("B")
    return view.toreadonly() if readonly else view


def buffer_address(obj: Any, writable: bool = False) -> Tuple[int, int, Any]:
    """(address, nbytes, keepalive) of a C-contiguous buffer or CPU tensor."""
    t = type(obj)
    if t is bytearray and not writable or t is bytes:
        n = len(obj)
        if n == 0:
            return 0, 0, obj
        if t is bytearray:  # the first byte's address: no array type per size
            return ctypes.addressof(ctypes.c_char.from_buffer(obj)), n, obj
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value or 0, n, obj
    iface = getattr(obj, "__array_interface__", None)
    if iface is not None and iface.get("strides") is None and not (writable and iface["data"][1]):
        return iface["data"][0], obj.nbytes, obj
    data_ptr = getattr(obj, "data_ptr", None)
    if data_ptr is not None and hasattr(obj, "is_contiguous"):
        if getattr(obj, "is_cuda", False):
            raise ValueError("a CUDA tensor: copy it to host memory first")
        if not obj.is_contiguous():
            raise ValueError("tensor is not contiguous")
        return int(data_ptr()), int(obj.numel() * obj.element_size()), obj
    view = memoryview(obj)
    if not view.c_contiguous:
        raise ValueError("buffer is not C-contiguous")
    if writable and view.readonly:
        raise ValueError("buffer is read-only")
    if view.nbytes == 0:
        return 0, 0, view
    if view.readonly:
        # ctypes will not wrap a read-only buffer; numpy reads its address.
        import numpy as np
        arr = np.frombuffer(view, dtype=np.uint8)
        return int(arr.ctypes.data), view.nbytes, (view, arr)
    carr = (ctypes.c_char * view.nbytes).from_buffer(view)
    return ctypes.addressof(carr), view.nbytes, (view, carr)


# ---- dtypes ----

# safetensors / cxlpool dtype codes: (name, itemsize, numpy name, torch attr)
DTYPES: Dict[int, Tuple[str, int, str, str]] = {
    0: ("F32", 4, "float32", "float32"),
    1: ("F16", 2, "float16", "float16"),
    2: ("BF16", 2, "uint16", "bfloat16"),   # numpy has no bf16: raw 16-bit words
    3: ("F64", 8, "float64", "float64"),
    4: ("I8", 1, "int8", "int8"),
    5: ("U8", 1, "uint8", "uint8"),
    6: ("I16", 2, "int16", "int16"),
    7: ("I32", 4, "int32", "int32"),
    8: ("I64", 8, "int64", "int64"),
    9: ("F8_E4M3", 1, "uint8", "float8_e4m3fn"),
    10: ("F8_E5M2", 1, "uint8", "float8_e5m2"),
    11: ("BOOL", 1, "bool", "bool"),
}


def numpy_dtype(dtype: Any) -> Any:
    import numpy as np
    if isinstance(dtype, int):
        return np.dtype(DTYPES[dtype][2])
    return np.dtype(dtype)


def torch_dtype(dtype: Any) -> Any:
    import torch
    if isinstance(dtype, int):
        name = DTYPES[dtype][3]
        # Older torch has no float8 types: give the raw bytes.
        return getattr(torch, name, torch.uint8)
    if isinstance(dtype, str):
        return getattr(torch, dtype)
    return dtype


def itemsize(dtype: Any) -> int:
    if isinstance(dtype, int):
        return DTYPES[dtype][1]
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        return 2
    if hasattr(dtype, "itemsize"):
        return int(dtype.itemsize)
    try:
        import torch
        if isinstance(dtype, torch.dtype):
            return torch.empty((), dtype=dtype).element_size()
    except ImportError:
        pass
    import numpy as np
    return np.dtype(dtype).itemsize


def numpy_view(address: int, nbytes: int, owner: Any, readonly: bool, dtype: Any,
               shape: Optional[Sequence[int]] = None, strides: Optional[Sequence[int]] = None) -> Any:
    import numpy as np
    dt = numpy_dtype(dtype)
    mv = memory_view(address, nbytes, owner, readonly)
    flat = np.frombuffer(mv, dtype=np.uint8)
    if strides is not None:
        assert shape is not None
        arr = np.lib.stride_tricks.as_strided(flat.view(dt) if nbytes % dt.itemsize == 0 else flat,
                                              shape=tuple(shape), strides=tuple(strides),
                                              writeable=not readonly)
        return arr
    arr = flat.view(dt)
    return arr.reshape(tuple(shape)) if shape is not None else arr


def torch_view(address: int, nbytes: int, owner: Any, readonly: bool, dtype: Any,
               shape: Optional[Sequence[int]] = None, strides: Optional[Sequence[int]] = None) -> Any:
    """A CPU tensor over the memory. torch has no read-only tensors: writing
    through one made from a read-only mapping faults, as in C."""
    import torch
    td = torch_dtype(dtype)
    if nbytes == 0:
        return torch.empty(tuple(shape) if shape is not None else (0,), dtype=td)
    arr = raw_array(address, nbytes, owner)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "non-writable buffer": the mapping itself enforces it
        flat = torch.frombuffer(arr, dtype=torch.uint8)
    t = flat.view(td)
    if strides is not None:
        assert shape is not None
        size = t.element_size()
        return t.as_strided(tuple(shape), tuple(s // size for s in strides))
    return t.view(tuple(shape)) if shape is not None else t


class CudaArray:
    """__cuda_array_interface__ (version 3) over device memory: torch, cupy
    and numba take it without a copy. bf16 has no typestr: such memory is
    described as int16 and viewed as bfloat16 by torch_cuda_view."""

    def __init__(self, address: int, shape: Sequence[int], typestr: str, strides: Optional[Sequence[int]],
                 readonly: bool, owner: Any) -> None:
        self.owner = owner
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (address, readonly),
            "strides": tuple(strides) if strides is not None else None, "version": 3, "stream": None,
        }


_TYPESTR = {"float32": "<f4", "float16": "<f2", "bfloat16": "<i2", "float64": "<f8", "int8": "|i1",
            "uint8": "|u1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "bool": "|b1"}


def torch_cuda_view(address: int, owner: Any, dtype: Any, shape: Sequence[int], strides: Sequence[int],
                    device: int, readonly: bool = False) -> Any:
    import torch
    td = torch_dtype(dtype)
    name = str(td).replace("torch.", "")
    typestr = _TYPESTR.get(name, "|u1")
    obj = CudaArray(address, shape, typestr, strides, readonly, owner)
    t = torch.as_tensor(obj, device=f"cuda:{device}")
    if name == "bfloat16":
        t = t.view(torch.bfloat16)
    return t
