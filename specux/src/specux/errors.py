"""Exceptions and warnings raised by specux."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the caller of this function point at user code: the
    first frame outside the specux package."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class BackendUnavailableError(RuntimeError):
    """A backend named with ``backend=`` cannot run on this machine; the message says why."""

    def __init__(self, name: str, reason: str):
        self.backend = name
        self.reason = reason
        super().__init__(f"specux backend {name!r} is unavailable: {reason}")


class UnsupportedOperationError(ValueError):
    """The chosen backend does not serve the requested operation (or the input's array type / device)."""


class MemoryLimitError(MemoryError, ValueError):
    """A call would allocate more memory than is available (or than ``SPECUX_MEMORY_LIMIT`` allows); raised
    before anything is allocated. Also a ``ValueError``, since a parameter sets the size.

    Attributes: ``parameter`` (the name that sets the size), ``needed`` and ``available`` (bytes).
    """

    def __init__(self, message: str, *, parameter: str, needed: int, available: int):
        super().__init__(message)
        self.parameter = parameter
        self.needed = needed
        self.available = available


class NolaError(ValueError):
    """istft with ``nola="raise"``: the window's squared sum vanishes where output samples are requested."""


class EmptyFilterWarning(UserWarning):
    """A filter bank has filters that cover no frequency bin (too many filters for the FFT length)."""
