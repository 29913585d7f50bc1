"""How the C heap holds a frame's temporaries during a bounded-memory run on the host (torch on the CPU).

A torch CPU tensor is a ``posix_memalign`` block of the C library's malloc. glibc maps a block at least its
*mmap threshold* large on its own and unmaps it when freed, and takes a smaller one from its heap, whose freed
space stays in the process. The threshold starts at 128 KiB and rises, up to 32 MiB, to the size of each
mapped block freed. After the first frame every temporary of a frame (2 MiB float32 planes and 4 MiB complex
spectra at 960 x 544) therefore comes from the heap, which grows by what their sizes leave between them.
Measured on 20 frames of baby.mp4 with the torch phase routes (``docs/vidmag/memory.md``): the heap held
80 to 160 MB more than the live blocks; with a fixed threshold of 1 MiB the peak fell by about 50 MB
(riesz_ideal) and 80 MB (steerable_ideal), for about 40 % more processor time (the pages of each mapped block
are zeroed again by the kernel).

:func:`bounded_heap` fixes the threshold for the duration of such a run and gives the heap's free pages back
to the system at its start and its end. It acts only on glibc (found through ``ctypes``); elsewhere it
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

__all__ = ["MMAP_THRESHOLD", "bounded_heap", "glibc"]

#: ``mallopt``'s parameter number of the mmap threshold (glibc's malloc.h).
M_MMAP_THRESHOLD = -3

#: The threshold during a bounded run: a frame's planes (2 MiB at 960 x 544) are mapped and unmapped, the
#: small blocks of the interpreter and the tables stay in the heap.
MMAP_THRESHOLD = 2**20

#: glibc's initial threshold, set again at the end: glibc has no call that turns its rising threshold back on,
#: so the process goes on with the documented default, fixed.
GLIBC_DEFAULT_THRESHOLD = 128 * 2**10


@lru_cache(maxsize=1)  # find_library may run ldconfig: once per process
def glibc() -> Any:
    """The C library as a ``ctypes`` object when it is glibc (it has ``mallopt`` and ``malloc_trim``), else
    None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
    except (OSError, TypeError):  # no C library by that name (TypeError: None on Windows)
        return None
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None
    return libc


@contextmanager
def bounded_heap(active: bool = True, libc: Any = None) -> Iterator[None]:
    """Map the blocks of at least :data:`MMAP_THRESHOLD` bytes on their own while the context lasts, and give
    the heap's free pages back at its start and end.

    Parameters
    ----------
    active : bool
        False: nothing is changed (a device whose tensors are not the process's malloc blocks).
    libc : object, optional
        The C library (for tests); :func:`glibc` when omitted. Without glibc nothing is changed.

    Notes
    -----
    The threshold is the process's: a thread allocating meanwhile (the video decoder, the encoder) maps its
    large blocks too. At the end it is set to :data:`GLIBC_DEFAULT_THRESHOLD`.
    """
    lib = (libc if libc is not None else glibc()) if active else None
    if lib is None:
        yield
        return
    lib.malloc_trim(0)  # what the run's setup freed (the steerable filters' float64 bank) goes first
    lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    try:
        yield
    finally:
        lib.mallopt(M_MMAP_THRESHOLD, GLIBC_DEFAULT_THRESHOLD)
        lib.malloc_trim(0)
