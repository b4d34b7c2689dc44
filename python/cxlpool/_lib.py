# SPDX-License-Identifier: Apache-2.0
"""Loads libcxlpool.so and declares the C ABI for ctypes.

The package is a ctypes layer over the shared library rather than a compiled
extension: nothing here is built per interpreter, so the same files import
under any CPython 3.9+ (a GPU host's newer Python and PyTorch included) that
can load the library. ctypes releases the GIL around every foreign call.

Where the library comes from, first match wins:
  1. $CXLPOOL_LIBRARY: a path to libcxlpool.so (meson test sets it to the
     build tree's copy);
  2. the libdir recorded by `meson install` (_install_paths.py, absent in a
     source checkout);
  3. the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache) for the
     soname libcxlpool.so.0.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32, c_size_t,
                    c_uint16, c_uint32, c_uint64, c_void_p)
from typing import Any, List, Optional

SONAME = "libcxlpool.so.0"
ENV_LIBRARY = "CXLPOOL_LIBRARY"


class TierInfo(Structure):
    _fields_ = [("id", c_uint32), ("kind", c_uint32), ("numa_node", c_int32), ("page_size", c_uint32),
                ("capacity", c_uint64), ("used", c_uint64), ("free", c_uint64),
                ("latency_ns", c_uint32), ("bandwidth_mbps", c_uint32), ("name", c_char * 64)]


class MigrateResult(Structure):
    _fields_ = [("pages_total", c_uint64), ("pages_moved", c_uint64), ("pages_already", c_uint64),
                ("pages_absent", c_uint64), ("pages_failed", c_uint64), ("bytes_moved", c_uint64),
                ("elapsed_ns", c_uint64)]


class Stat(Structure):
    _fields_ = [("name", c_char * 96), ("value", c_uint64)]


class KvKey(Structure):
    _fields_ = [("lo", c_uint64), ("hi", c_uint64)]


class KvLocation(Structure):
    _fields_ = [("data", c_void_p), ("offset", c_uint64), ("length", c_uint32), ("tier", c_uint16),
                ("flags", c_uint16)]


class KvOptions(Structure):
    _fields_ = [("sq_entries", c_uint32), ("cq_entries", c_uint32), ("put_window_bytes", c_uint64)]


class KvInfo(Structure):
    _fields_ = [("slot_bytes", c_uint64), ("put_window_bytes", c_uint64), ("quota_bytes", c_uint64),
                ("arena_bytes", c_uint64 * 2), ("tier_bandwidth_bps", c_uint64 * 3),
                ("tier_latency_ns", c_uint64 * 3)]


class KvNamespaceSpec(Structure):
    _fields_ = [("model_id", c_char_p), ("layout", c_char_p), ("dtype", c_char_p), ("tp_rank", c_uint32),
                ("tp_size", c_uint32), ("chunk_tokens", c_uint32), ("mode", c_uint32)]


class KvNamespaceC(Structure):
    _fields_ = [("id", c_uint64), ("fingerprint_hi", c_uint64), ("fingerprint_lo", c_uint64),
                ("chunk_tokens", c_uint32)]


class KvRequest(Structure):
    _fields_ = [("user_data", c_uint64), ("op", c_uint32), ("flags", c_uint32), ("namespace_id", c_uint64),
                ("keys", POINTER(KvKey)), ("n_keys", c_uint32), ("param0", c_uint64), ("param1", c_uint64)]


class KvCompletion(Structure):
    _fields_ = [("user_data", c_uint64), ("status", c_int32), ("op", c_uint32), ("result0", c_uint64),
                ("result1", c_uint64), ("result2", c_uint64), ("locations", POINTER(KvLocation)),
                ("n_locations", c_uint32)]


class KvLoadQuery(Structure):
    _fields_ = [("prompt_tokens", c_uint64), ("chunk_tokens", c_uint32), ("prefill_tokens_per_s", c_double),
                ("overlap", c_int), ("pipeline_stages", c_uint32), ("chunks", POINTER(KvLocation)),
                ("n_chunks", c_uint32)]


class KvLoadDecision(Structure):
    _fields_ = [("load_chunks", c_uint32), ("should_load", c_int), ("recompute_tokens", c_uint64),
                ("expected_s", c_double), ("full_recompute_s", c_double), ("load_all_s", c_double)]


class ArenaConfig(Structure):
    _fields_ = [("layers", c_uint32), ("kv_heads", c_uint32), ("head_dim", c_uint32), ("dtype_bytes", c_uint32),
                ("max_batch", c_uint32), ("max_context", c_uint32), ("page_bytes", c_uint64),
                ("layout", c_uint32), ("backend", c_uint32), ("device", c_int32), ("tier_id", c_uint32),
                ("region_bytes", c_uint64), ("memory_limit_bytes", c_uint64), ("async_", c_uint32),
                ("reserved", c_uint32)]


class ArenaTensor(Structure):
    _fields_ = [("base", c_uint64), ("row_stride", c_uint64), ("token_stride", c_uint64), ("bytes", c_uint64)]


class ArenaStats(Structure):
    _fields_ = [("reserved_bytes", c_uint64), ("mapped_bytes", c_uint64), ("pages_in_use", c_uint64),
                ("pages_deferred", c_uint64), ("region_bytes", c_uint64), ("maps", c_uint64),
                ("unmaps", c_uint64), ("reuses", c_uint64), ("map_ns_total", c_uint64),
                ("unmap_ns_total", c_uint64), ("map_ns_max", c_uint64), ("steps", c_uint64),
                ("async_steps", c_uint64), ("step_ns_total", c_uint64), ("step_ns_max", c_uint64),
                ("rows_active", c_uint32), ("backend", c_uint32)]


MAX_DIMS = 8


class WeightsLoadOptions(Structure):
    _fields_ = [("tier_id", c_uint32), ("reserved", c_uint32), ("max_resident_bytes", c_uint64)]


class WeightTensorC(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_uint32), ("ndim", c_uint32), ("shape", c_uint64 * MAX_DIMS),
                ("bytes", c_uint64), ("data", c_void_p), ("layer", c_int32), ("file_index", c_uint32),
                ("file_offset", c_uint64)]


class StreamerConfig(Structure):
    _fields_ = [("target", c_uint32), ("device", c_int32), ("buffers", c_uint32), ("prefetch_depth", c_uint32),
                ("pinned_budget_bytes", c_uint64), ("compute_ns_per_byte", c_double)]


class StreamedLayer(Structure):
    _fields_ = [("layer", c_uint32), ("n_tensors", c_uint32), ("data", POINTER(c_uint64)),
                ("tensor_index", POINTER(c_uint32))]


class StreamerStats(Structure):
    _fields_ = [("layers_copied", c_uint64), ("bytes_copied", c_uint64), ("layers_read", c_uint64),
                ("bytes_read", c_uint64), ("copy_ns_total", c_uint64), ("read_ns_total", c_uint64),
                ("wait_ns_total", c_uint64), ("acquires", c_uint64), ("hits_resident", c_uint64),
                ("pinned_layers", c_uint32), ("region_registered", c_uint32), ("layers_direct", c_uint64),
                ("bytes_direct", c_uint64), ("layers_staged", c_uint64), ("bytes_staged", c_uint64)]


VP = c_void_p
PKEY = POINTER(KvKey)
PLOC = POINTER(KvLocation)
PU64 = POINTER(c_uint64)
PU32 = POINTER(c_uint32)

# name: (restype, argtypes). Handles are opaque pointers (c_void_p).
_PROTOTYPES = {
    "cxlpool_version": (c_char_p, []),
    "cxlpool_strerror": (c_char_p, [c_int]),
    "cxlpool_last_error": (c_char_p, []),
    "cxlpool_default_socket_path": (c_int, [c_char_p, c_size_t]),
    "cxlpool_connect": (c_int, [c_char_p, c_char_p, POINTER(VP)]),
    "cxlpool_disconnect": (None, [VP]),
    "cxlpool_protocol_version": (c_int, [VP]),
    "cxlpool_tiers": (c_int, [VP, POINTER(TierInfo), c_size_t]),
    "cxlpool_tier_by_name": (c_int, [VP, c_char_p, POINTER(TierInfo)]),
    "cxlpool_region_alloc": (c_int, [VP, c_uint32, c_uint64, c_uint32, POINTER(VP)]),
    "cxlpool_named_create": (c_int, [VP, c_char_p, c_uint32, c_uint64, c_uint32, c_uint32, POINTER(VP)]),
    "cxlpool_named_open": (c_int, [VP, c_char_p, c_uint32, POINTER(VP)]),
    "cxlpool_named_unlink": (c_int, [VP, c_char_p]),
    "cxlpool_region_map": (c_int, [VP, POINTER(VP)]),
    "cxlpool_region_free": (c_int, [VP]),
    "cxlpool_region_id": (c_uint64, [VP]),
    "cxlpool_region_size": (c_uint64, [VP]),
    "cxlpool_region_tier": (c_uint32, [VP]),
    "cxlpool_region_page_size": (c_uint32, [VP]),
    "cxlpool_region_writable": (c_int, [VP]),
    "cxlpool_region_fd": (c_int, [VP]),
    "cxlpool_stats": (c_int, [VP, POINTER(Stat), c_size_t]),
    "cxlpool_access_ring_open": (c_int, [VP, c_uint32]),
    "cxlpool_access_report": (c_int, [VP, c_uint64, c_uint64, c_uint32]),
    "cxlpool_region_migrate": (c_int, [VP, c_uint64, c_uint32, POINTER(MigrateResult)]),
    "cxlpool_access_flush": (c_int, [VP]),
    "cxlpool_kv_open": (c_int, [VP, POINTER(KvOptions), POINTER(VP)]),
    "cxlpool_kv_close": (None, [VP]),
    "cxlpool_kv_get_info": (c_int, [VP, POINTER(KvInfo)]),
    "cxlpool_kv_namespace_open": (c_int, [VP, POINTER(KvNamespaceSpec), POINTER(KvNamespaceC)]),
    "cxlpool_kv_compute_keys": (c_int, [POINTER(KvNamespaceC), PU32, c_size_t, PKEY, PKEY, c_size_t]),
    "cxlpool_kv_submit": (c_int, [VP, POINTER(KvRequest), c_size_t]),
    "cxlpool_kv_reap": (c_int, [VP, POINTER(KvCompletion), c_size_t, c_int]),
    "cxlpool_kv_eventfd": (c_int, [VP]),
    "cxlpool_kv_arm": (c_int, [VP]),
    "cxlpool_kv_in_flight": (c_uint64, [VP]),
    "cxlpool_kv_lookup": (c_int, [VP, c_uint64, PKEY, c_uint32, PLOC]),
    "cxlpool_kv_put_begin": (c_int, [VP, c_uint64, PKEY, c_uint32, c_uint64, PU64, PLOC]),
    "cxlpool_kv_put_commit": (c_int, [VP, c_uint64, c_uint64, PKEY, c_uint32]),
    "cxlpool_kv_put_commit_flags": (c_int, [VP, c_uint64, c_uint64, PKEY, c_uint32, c_uint32, PU64]),
    "cxlpool_kv_put_commit_checksums": (c_int, [VP, c_uint64, c_uint64, PKEY, c_uint32, POINTER(c_uint32), c_uint32,
                                                PU64]),
    "cxlpool_kv_copy_chunk": (c_uint32, [VP, VP, c_size_t]),
    "cxlpool_kv_put": (c_int, [VP, c_uint64, PKEY, c_uint32, POINTER(c_void_p), c_uint64]),
    "cxlpool_kv_put_flags": (c_int, [VP, c_uint64, PKEY, c_uint32, POINTER(c_void_p), c_uint64, c_uint32, PU64]),
    "cxlpool_kv_get": (c_int, [VP, c_uint64, PKEY, c_uint32, PU64, PLOC]),
    "cxlpool_kv_release": (c_int, [VP, c_uint64]),
    "cxlpool_kv_release_nowait": (c_int, [VP, c_uint64]),
    "cxlpool_kv_prefetch": (c_int, [VP, c_uint64, PKEY, c_uint32]),
    "cxlpool_kv_delete": (c_int, [VP, c_uint64, PKEY, c_uint32]),
    "cxlpool_kv_should_load": (c_int, [VP, POINTER(KvLoadQuery), POINTER(KvLoadDecision)]),
    "cxlpool_kv_arena_create": (c_int, [VP, POINTER(ArenaConfig), POINTER(VP)]),
    "cxlpool_kv_arena_destroy": (None, [VP]),
    "cxlpool_kv_arena_get_tensor": (c_int, [VP, c_uint32, c_uint32, POINTER(ArenaTensor)]),
    "cxlpool_kv_arena_alloc_reqid": (c_int, [VP, PU32]),
    "cxlpool_kv_arena_free_reqid": (c_int, [VP, c_uint32]),
    "cxlpool_kv_arena_step": (c_int, [VP, PU32, c_size_t]),
    "cxlpool_kv_arena_step_async": (c_int, [VP, PU32, c_size_t]),
    "cxlpool_kv_arena_wait": (c_int, [VP]),
    "cxlpool_kv_arena_trim": (c_int, [VP, c_uint64]),
    "cxlpool_kv_arena_get_stats": (c_int, [VP, POINTER(ArenaStats)]),
    "cxlpool_kv_arena_offload_begin": (c_int, [VP, VP, POINTER(KvNamespaceC), c_uint32, PU32, c_size_t, PU64]),
    "cxlpool_kv_arena_restore_begin": (c_int, [VP, VP, POINTER(KvNamespaceC), c_uint32, PU32, c_size_t, PU64]),
    "cxlpool_kv_arena_offload_poll": (c_int, [VP, c_uint64, c_int, PU64]),
    "cxlpool_weights_load": (c_int, [VP, c_char_p, POINTER(c_char_p), c_size_t, POINTER(WeightsLoadOptions),
                                     POINTER(VP)]),
    "cxlpool_weights_open": (c_int, [VP, c_char_p, POINTER(VP)]),
    "cxlpool_weights_close": (None, [VP]),
    "cxlpool_weights_unload": (c_int, [VP, c_char_p]),
    "cxlpool_weights_count": (c_int, [VP]),
    "cxlpool_weights_layers": (c_int, [VP]),
    "cxlpool_weights_tensor": (c_int, [VP, c_size_t, POINTER(WeightTensorC)]),
    "cxlpool_weights_find": (c_int, [VP, c_char_p, POINTER(WeightTensorC)]),
    "cxlpool_weight_streamer_create": (c_int, [VP, POINTER(StreamerConfig), POINTER(VP)]),
    "cxlpool_weight_streamer_destroy": (None, [VP]),
    "cxlpool_weight_streamer_acquire": (c_int, [VP, c_uint32, POINTER(StreamedLayer)]),
    "cxlpool_weight_streamer_release": (c_int, [VP, c_uint32]),
    "cxlpool_weight_streamer_stats": (c_int, [VP, POINTER(StreamerStats)]),
}


def _candidates() -> List[str]:
    out: List[str] = []
    explicit = os.environ.get(ENV_LIBRARY)
    if explicit:
        return [explicit]
    try:
        from . import _install_paths  # type: ignore[attr-defined]  # written by `meson install`
        out.append(os.path.join(_install_paths.LIBDIR, SONAME))
    except ImportError:
        pass
    out.append(SONAME)
    return out


def _load() -> ctypes.CDLL:
    errors: List[str] = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f"{path}: {e}")
    else:
        raise ImportError("cxlpool: cannot load libcxlpool (set $" + ENV_LIBRARY + " to its path): " +
                          "; ".join(errors))
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib: Any = _load()
library_path: Optional[str] = getattr(lib, "_name", None)
