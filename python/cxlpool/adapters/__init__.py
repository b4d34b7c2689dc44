# SPDX-License-Identifier: Apache-2.0
"""Adapters that let inference engines use cxlpool's KV store.

Each module imports its engine only when a call needs it, so
``import cxlpool.adapters.lmcache`` works where the engine is absent:

- ``lmcache``: a remote connector with LMCache's remote-backend shape;
- ``vllm``: a KV offloading backend with vLLM's OffloadingSpec /
  OffloadingManager shape, and the worker-side transfer between vLLM's
  paged KV tensors and store chunks (``paged_kv``).

Engine block and page hashes are opaque 128-bit keys: see
``cxlpool.keys.engine_key``.
"""
