# SPDX-License-Identifier: Apache-2.0
"""Errors: a failed C call becomes a CxlpoolError carrying its errno."""
from __future__ import annotations

import errno as _errno
import os

from ._lib import lib


class CxlpoolError(OSError):
    """A libcxlpool call failed.

    ``errno`` is the positive errno value (``errno.EMSGSIZE``...), ``strerror``
    the library's static text and ``message`` the daemon's message for this
    failure (``cxlpool_last_error()``), possibly empty. It is an OSError, so
    ``except OSError`` and ``e.errno == errno.ENOENT`` work as usual.
    """

    def __init__(self, err: int, call: str, message: str = "") -> None:
        text = lib.cxlpool_strerror(-err).decode(errors="replace") or os.strerror(err)
        detail = f"{call}: {text}" + (f" ({message})" if message else "")
        super().__init__(err, detail)
        self.call = call
        self.message = message

    @property
    def name(self) -> str:
        return _errno.errorcode.get(self.errno or 0, str(self.errno))


def check(rc: int, call: str) -> int:
    """Returns rc when it is not negative; raises CxlpoolError otherwise."""
    if rc < 0:
        raw = lib.cxlpool_last_error()
        raise CxlpoolError(-rc, call, raw.decode(errors="replace") if raw else "")
    return rc
