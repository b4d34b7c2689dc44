# SPDX-License-Identifier: Apache-2.0
"""Namespaces whose chunks span several store slots (cxlpool/spanning.py),
against the session daemon's 4 MiB slots."""
from __future__ import annotations

import os

import pytest

import cxlpool
from conftest import SLOT_BYTES
from cxlpool.spanning import split

CHUNK = 2 * SLOT_BYTES + SLOT_BYTES // 2 + 123  # three pieces, the last one shorter


def _ns(store, name: str, chunk_bytes: int = CHUNK):
    return store.namespace(f"py-span-{name}-{os.getpid()}", layout="raw", dtype="bf16", chunk_tokens=16,
                           chunk_bytes=chunk_bytes)


def test_split() -> None:
    assert split(10, 4) == (3, 4)
    assert split(8, 4) == (2, 4)
    assert split(3, 4) == (1, 3)
    with pytest.raises(ValueError):
        split(0, 4)


def test_chunks_larger_than_a_slot_round_trip(store) -> None:
    ns = _ns(store, "rt")
    assert isinstance(ns, cxlpool.SpanningNamespace)
    assert (ns.parts, ns.chunk_bytes) == (3, CHUNK)
    keys = ns.keys(list(range(3 * 16)))
    data = [os.urandom(CHUNK) for _ in range(3)]
    assert ns.put(keys, data) == 3
    assert ns.lookup(keys) == 3
    with ns.get(keys) as lease:
        assert len(lease) == 3
        for i in range(3):
            assert [len(p) for p in lease.pieces(i)] == [ns.part_bytes, ns.part_bytes, CHUNK - 2 * ns.part_bytes]
            assert bytes(lease.read(i)) == data[i]
            out = bytearray(CHUNK)
            lease.read(i, out)
            assert out == data[i]
        assert bytes(lease.part(1, 0)) == data[1][:ns.part_bytes]
        with pytest.raises(IndexError):
            lease.part(3, 0)
    assert lease.released


def test_put_to_ssd_without_an_ssd_log(store) -> None:
    """The session daemon has no SSD log: every piece is stored as usual."""
    ns = _ns(store, "to-ssd")
    keys = ns.keys(list(range(16)))
    data = [os.urandom(CHUNK)]
    n = ns.put(keys, data, to_ssd=True)
    assert n == 1 and isinstance(n, cxlpool.PutCount) and n.on_ssd == 0
    with ns.get(keys) as lease:
        assert len(lease) == 1 and bytes(lease.read(0)) == data[0]
    assert ns.delete(keys) == 1


def test_a_missing_piece_ends_the_prefix(store) -> None:
    ns = _ns(store, "evict")
    keys = ns.keys(list(range(3 * 16)))
    ns.put(keys, [os.urandom(CHUNK) for _ in range(3)])
    # The middle piece of chunk 1 goes (as an eviction would take it).
    middle = ns.part_keys(keys)[1 * ns.parts + 1]
    store_ns_delete = cxlpool.Namespace.delete(ns, [middle])
    assert store_ns_delete == 1
    assert ns.lookup(keys) == 1
    with ns.get(keys) as lease:
        assert len(lease) == 1
    assert ns.delete(keys[:1]) == 1
    assert ns.lookup(keys) == 0


def test_the_split_is_part_of_the_namespace(store) -> None:
    whole = store.namespace(f"py-span-fp-{os.getpid()}", layout="raw", dtype="bf16", chunk_tokens=16)
    spanning = _ns(store, "fp")
    other = _ns(store, "fp", chunk_bytes=CHUNK + 4 * SLOT_BYTES)
    assert spanning.fingerprint != whole.fingerprint
    assert spanning.fingerprint != other.fingerprint
    # Up to the slot, chunk_bytes changes nothing: a chunk takes one slot.
    same = store.namespace(f"py-span-fp-{os.getpid()}", layout="raw", dtype="bf16", chunk_tokens=16,
                           chunk_bytes=SLOT_BYTES)
    assert type(same) is cxlpool.Namespace and same.fingerprint == whole.fingerprint


def test_wrong_sizes_and_whole_chunk_calls_are_refused(store) -> None:
    ns = _ns(store, "bad")
    keys = ns.keys(list(range(16)))
    with pytest.raises(ValueError, match="this namespace's chunks have"):
        ns.put(keys, [bytes(CHUNK - 1)])
    with pytest.raises(ValueError):
        ns.put(keys, [])
    with pytest.raises(NotImplementedError):
        ns.reserve(keys, CHUNK)
