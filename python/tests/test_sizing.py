# SPDX-License-Identifier: Apache-2.0
"""Real model sizes: a 256-token Llama-3-8B bf16 chunk (32 MiB) in a store
whose slot_bytes is raised to fit it."""
from __future__ import annotations

import errno
import os

import pytest

import cxlpool
from cxlpool.sizing import MODELS, KvShape
from conftest import Daemon, daemon_binary, need

MIB = 1 << 20


def test_table_numbers() -> None:
    llama = MODELS["Llama-3-8B"]
    assert llama.bytes_per_token() == 128 * 1024 and llama.chunk_bytes(256) == 32 * MIB
    assert MODELS["Llama-3-70B"].chunk_bytes(256) == 80 * MIB
    assert MODELS["Qwen2.5-7B"].chunk_bytes(256) == 14 * MIB
    assert llama.bytes_per_token(tp_size=8) == 16 * 1024
    assert llama.chunk_tokens_for(2 * MIB) == 16
    assert llama.slot_bytes_for(256, header_bytes=64) == 32 * MIB + 4096
    cfg = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}
    assert KvShape.from_config(cfg) == llama


def test_llama3_8b_chunk_fits_a_raised_slot() -> None:
    need("numpy")
    d = Daemon(daemon_binary(), "slot_bytes = \"32M\"\ndram_bytes = \"96M\"\ncxl_bytes = 0\n"
                                "put_window_bytes = \"32M\"\n")
    try:
        with cxlpool.Client(d.socket) as c, c.kv_store() as store:
            assert store.info.slot_bytes == 32 * MIB
            ns = store.namespace(f"llama-3-8b-{os.getpid()}", layout="raw", dtype="bf16", chunk_tokens=256)
            keys = ns.keys(range(256))
            chunk_bytes = MODELS["Llama-3-8B"].chunk_bytes(256)
            with ns.reserve(keys, chunk_bytes) as r:
                slot = r.numpy(0, "uint16")
                slot[::4096] = 7
                assert r.commit() == 1
            with ns.get(keys) as lease:
                assert lease.locations[0].length == chunk_bytes
                assert lease.numpy(0, "uint16")[::4096].sum() == 7 * (chunk_bytes // 2 // 4096)
            with pytest.raises(cxlpool.CxlpoolError) as e:
                ns.reserve(ns.keys(range(512))[1:], chunk_bytes + 4096)
            assert e.value.errno == errno.EMSGSIZE
    finally:
        assert d.stop() == 0
