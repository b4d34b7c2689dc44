# SPDX-License-Identifier: Apache-2.0
"""cxlpool: Python access to the cxlpool daemon through libcxlpool (ctypes).

    import cxlpool
    with cxlpool.Client() as c:
        store = c.kv_store()
        ns = store.namespace("llama-3-8b", layout="raw", dtype="bf16")
        keys = ns.keys(token_ids)
        ns.put(keys, chunks)              # one copy, into the reserved slots
        with ns.get(keys) as lease:       # read-only zero-copy views
            t = lease.torch(0, "bfloat16")

docs/python.md describes the package.
"""
from __future__ import annotations

from ._lib import library_path
from .client import Client, Region, Tier, default_socket_path, version
from .errors import CxlpoolError
from .keys import Keys, engine_key, engine_keys
from .kv_arena import KvArena, TensorInfo, Transfer
from .kvstore import (Completion, KvStore, Lease, LoadDecision, Location, Namespace, PutCount, Reservation,
                      StoreInfo)
from .spanning import SpanningLease, SpanningNamespace
from .weights import Streamer, TensorMeta, Weights

__version__ = version()

__all__ = [
    "Client", "Region", "Tier", "default_socket_path", "version", "library_path", "CxlpoolError", "Keys",
    "engine_key", "engine_keys", "KvArena", "TensorInfo", "Transfer", "Completion", "KvStore", "Lease",
    "LoadDecision", "Location", "Namespace", "PutCount", "Reservation", "SpanningNamespace", "SpanningLease", "StoreInfo", "Streamer", "TensorMeta", "Weights",
]
