# SPDX-License-Identifier: Apache-2.0
"""Weights: load/open/unload, tensors over the shared region, streaming."""
from __future__ import annotations

import errno
import gc
import os

import pytest

import cxlpool
import safetensors_file
from conftest import need


@pytest.fixture
def model_file(tmp_path):
    torch = need("torch")
    g = torch.Generator().manual_seed(1)
    tensors = {
        "model.embed_tokens.weight": torch.randn(32, 16, generator=g).to(torch.bfloat16),
        "model.layers.0.mlp.weight": torch.randn(16, 16, generator=g),
        "model.layers.1.mlp.weight": torch.randn(16, 16, generator=g).to(torch.float16),
        "model.layers.1.ids": torch.arange(10, dtype=torch.int64),
        "model.norm.weight": torch.ones(16, dtype=torch.bfloat16),
    }
    path = tmp_path / "model.safetensors"
    safetensors_file.write(str(path), tensors)
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o644)
    return str(path), tensors


def test_load_tensors_zero_copy(client, model_file) -> None:
    torch = need("torch")
    path, ref = model_file
    name = f"py-model-{os.getpid()}"
    with client.load_weights(name, [path]) as w:
        assert len(w) == 5 and w.layers == 2
        tensors = w.tensors()
        for k, t in ref.items():
            assert tensors[k].dtype == t.dtype and torch.equal(tensors[k], t), k
            m = w.find(k)
            assert tensors[k].data_ptr() == m.address
        assert w.find("model.layers.1.ids").layer == 1 and w.find("model.norm.weight").layer == -1
        assert w.find("model.embed_tokens.weight").dtype == "BF16"
        arrays = w.arrays()
        assert not arrays["model.layers.0.mlp.weight"].flags.writeable
        assert arrays["model.embed_tokens.weight"].dtype.name == "uint16"
        with pytest.raises(cxlpool.CxlpoolError) as e:
            w.find("nope")
        assert e.value.errno == errno.ENOENT
        del tensors, arrays
        # Another handle on the same model maps the same pages.
        with client.open_weights(name) as w2:
            assert torch.equal(w2.tensor("model.layers.0.mlp.weight"), ref["model.layers.0.mlp.weight"])
    client.unload_weights(name)
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.open_weights(name)
    assert e.value.errno == errno.ENOENT


def test_bad_file_raises_ebadmsg(client, tmp_path) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o644)
    with pytest.raises(cxlpool.CxlpoolError) as e:
        client.load_weights(f"py-bad-{os.getpid()}", [str(path)])
    assert e.value.errno == errno.EBADMSG and e.value.message


def test_streamer(client, model_file) -> None:
    torch = need("torch")
    path, ref = model_file
    name = f"py-stream-{os.getpid()}"
    w = client.load_weights(name, [path])
    s = w.streamer(buffers=2, prefetch_depth=1)
    for layer in (0, 1, 0):
        got = s.acquire(layer)
        for k, t in got.items():
            assert torch.equal(t, ref[k])
        assert all(f".layers.{layer}." in k for k in got)
        del got
        s.release(layer)
    assert s.stats()["acquires"] == 3
    del s
    w.close()  # closes the streamer first
    client.unload_weights(name)
    gc.collect()
