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
    """A backend named with ``backend=`` cannot run on this machine; the message says why.

    Parameters
    ----------
    name : str
        The backend (kept as ``backend``).
    reason : str
        Why it cannot run here (kept as ``reason``), e.g. the probe's failure and the package to install.

    Examples
    --------
    >>> import specux
    >>> err = specux.BackendUnavailableError("cuda", "libcuda not found: no NVIDIA driver on this machine")
    >>> print(err)
    specux backend 'cuda' is unavailable: libcuda not found: no NVIDIA driver on this machine
    >>> err.backend, isinstance(err, RuntimeError)
    ('cuda', True)
    """

    def __init__(self, name: str, reason: str):
        self.backend = name
        self.reason = reason
        super().__init__(f"specux backend {name!r} is unavailable: {reason}")


class UnsupportedOperationError(ValueError):
    """The chosen backend does not serve the requested operation (or the input's array type / device).

    Examples
    --------
    >>> import specux
    >>> err = specux.UnsupportedOperationError(   # as the registry words it for a named backend
    ...     "specux.estimate_tuning: backend 'opencl' does not provide this operation; it is served by: cpu")
    >>> isinstance(err, ValueError)   # the backend argument asked for it
    True
    """


class MemoryLimitError(MemoryError, ValueError):
    """A call would allocate more memory than is available (or than ``SPECUX_MEMORY_LIMIT`` allows); raised
    before anything is allocated. Also a ``ValueError``, since a parameter sets the size.

    Parameters
    ----------
    message : str
        What was asked, the bytes it needs and how to change the limit.
    parameter : str
        The parameter that sets the size (kept as ``parameter``).
    needed, available : int
        Bytes the call needs, and bytes available or allowed (kept as ``needed`` and ``available``).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> try:
    ...     specux.stft(np.zeros(4096, dtype=np.float32), n_fft=2**40)
    ... except specux.MemoryLimitError as err:
    ...     print(err.parameter, err.needed > err.available)
    n_fft True
    """

    def __init__(self, message: str, *, parameter: str, needed: int, available: int):
        super().__init__(message)
        self.parameter = parameter
        self.needed = needed
        self.available = available


class NolaError(ValueError):
    """istft with ``nola="raise"``: the window's squared sum vanishes where output samples are requested.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> D = specux.stft(np.ones(64), n_fft=8, hop_length=4, win_length=2, window="boxcar", center=False)
    >>> try:   # a 2-sample window every 4 samples leaves gaps no frame covers
    ...     specux.istft(D, hop_length=4, win_length=2, n_fft=8, window="boxcar", center=False, nola="raise")
    ... except specux.NolaError as err:
    ...     print(str(err)[:44])
    istft: the window does not satisfy NOLA here
    """


class EmptyFilterWarning(UserWarning):
    """A filter bank has filters that cover no frequency bin (too many filters for the FFT length).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import specux
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     bank = specux.filters.mel_torchaudio(sr=16000, n_fft=400, n_mels=128)   # 128 filters, 201 bins
    >>> any(issubclass(w.category, specux.EmptyFilterWarning) for w in caught)
    True
    """
