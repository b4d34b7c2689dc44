# SPDX-License-Identifier: Apache-2.0
"""The lifetime every wrapper of a C handle shares."""
from __future__ import annotations

import weakref
from typing import Any, Callable, Optional


class NativeHandle:
    """Owns one C handle: ``close()`` (or the end of a ``with`` block, or
    garbage collection, or interpreter exit) frees it once, through a
    weakref finalizer, so nothing leaks whichever comes first."""

    _kind = "handle"
    _handle: Optional[int]

    def _own(self, handle: Optional[int], free: Callable[..., Any], *keepalive: Any) -> None:
        # keepalive: objects the free must outlive (the client of a region),
        # held by the finalizer so they are collected after this handle.
        self._handle = handle
        self._finalizer = weakref.finalize(self, free, handle, *keepalive)

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise ValueError(f"the {self._kind} is closed")
        return self._handle

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        self._handle = None
        self._finalizer()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
