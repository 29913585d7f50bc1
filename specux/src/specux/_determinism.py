"""The deterministic-mode switch shared by every backend (``specux.deterministic``).

Deterministic mode asks every backend for results that are bitwise identical from run to run on the same
machine, same inputs and same library versions. A backend consults :func:`is_deterministic`, which is true
when specux's own switch is on or when torch's ``torch.use_deterministic_algorithms(True)`` is in force (torch
is only looked at when it is already imported: this module never imports it).

The CPU backend is deterministic whether or not the switch is on: its overlap-adds (istft, and the backward of
stft and of every transform built on it) are fixed-order gathers, each output sample summing the frames that
cover it in increasing frame order, and its FFTs and matrix products assign each output to one thread. GPU
backends use the switch to choose a gather formulation over atomic scatters.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

_state = threading.local()


def _flag() -> bool:
    return getattr(_state, "on", _default[0])


#: the process-wide setting, used by threads that never set their own
_default = [False]


class deterministic:  # noqa: N801 - used like a function, as torch.no_grad is
    """Turn specux's deterministic mode on or off, for the process or, as a context manager, for a block.

    ``specux.deterministic(True)`` sets the mode immediately (for the calling thread and as the default of
    threads that have not set it); used in a ``with`` statement, the previous setting comes back at the end of
    the block.

    Parameters
    ----------
    mode : bool
        True: every operation on every backend returns bitwise-reproducible results (on GPU backends, the
        overlap-add scatters of istft and of stft's backward become gathers). False: backends may use faster
        non-deterministic kernels (atomics). ``torch.use_deterministic_algorithms(True)`` also turns it on.

    Examples
    --------
    >>> import specux
    >>> with specux.deterministic(True):
    ...     assert specux.is_deterministic()
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"deterministic: mode must be True or False; got {mode!r}")
        self._previous = _flag()
        self._had_local = hasattr(_state, "on")
        _state.on = mode
        _default[0] = mode

    def __enter__(self) -> deterministic:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _default[0] = self._previous
        if self._had_local:
            _state.on = self._previous
        else:
            del _state.on


def is_deterministic() -> bool:
    """True when specux's deterministic mode is on, or torch's deterministic algorithms are enforced.

    Returns
    -------
    bool

    Examples
    --------
    >>> import specux
    >>> with specux.deterministic(True):
    ...     specux.is_deterministic()
    True
    """
    if _flag():
        return True
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "are_deterministic_algorithms_enabled"):
        return bool(torch.are_deterministic_algorithms_enabled())
    return False
