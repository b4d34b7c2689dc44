# SPDX-License-Identifier: Apache-2.0
"""The end-to-end example: a tiny decoder over a KvArena and shared weights,
a prefix stored by another process, a preemption; logits equal plain torch."""
from __future__ import annotations

import os
import sys

from conftest import need

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def test_tiny_decoder(daemon) -> None:
    need("torch")
    sys.path.insert(0, EXAMPLES)
    try:
        import tiny_decoder
    finally:
        sys.path.remove(EXAMPLES)
    r = tiny_decoder.run(daemon.socket, decode=12, quiet=True)
    assert r["zero_copy"], "weights must be views of the shared region"
    assert r["cached_chunks"] == 2 and r["restored"] == tiny_decoder.PREFIX
    assert r["restored_after"] == len(tiny_decoder.PROMPT) + 12 // 2  # every token, the partial tail too
    assert r["identical"], "logits differ from the same model on plain torch tensors"
