"""libsoxr's C API called through ctypes, for resampling many short rows from several threads.

The ``soxr`` package wraps libsoxr, and its stream resets with ``clear()``, which holds the GIL for about
20 us (libsoxr rebuilds its per-channel state). A batch of the constant-Q transform resets once per row and
octave (96 times for 16 rows and 7 octaves), and with two threads those resets, and the hand-offs of the GIL
around them, made the rows' resampling take three times as long as on one thread. ctypes releases the GIL
for every foreign call, so calling the same libsoxr functions directly lets the threads reset and resample
at the same time.

The library is the copy that the ``soxr`` package carries (its extension module exports libsoxr's public C
functions), so the numbers are the package's own: :func:`resampler` checks that on first use, bit for bit,
against ``soxr.resample``, and returns None (the caller then uses the package's stream) when the symbols are
missing or the check fails.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from specux._threads import per_thread


class _IoSpec(ctypes.Structure):
    # soxr.h: struct soxr_io_spec
    _fields_ = [
        ("itype", ctypes.c_int),
        ("otype", ctypes.c_int),
        ("scale", ctypes.c_double),
        ("e", ctypes.c_void_p),
        ("flags", ctypes.c_ulong),
    ]


class _QualitySpec(ctypes.Structure):
    # soxr.h: struct soxr_quality_spec
    _fields_ = [
        ("precision", ctypes.c_double),
        ("phase_response", ctypes.c_double),
        ("passband_end", ctypes.c_double),
        ("stopband_begin", ctypes.c_double),
        ("e", ctypes.c_void_p),
        ("flags", ctypes.c_ulong),
    ]


_size_p = ctypes.POINTER(ctypes.c_size_t)


@functools.cache
def _library() -> Any:
    """The libsoxr functions of the ``soxr`` package's extension module, or None."""
    try:
        from soxr import soxr_ext

        lib = ctypes.CDLL(soxr_ext.__file__)
        lib.soxr_io_spec.restype = _IoSpec
        lib.soxr_io_spec.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.soxr_quality_spec.restype = _QualitySpec
        lib.soxr_quality_spec.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
        lib.soxr_create.restype = ctypes.c_void_p
        lib.soxr_create.argtypes = [
            ctypes.c_double,
            ctypes.c_double,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(_IoSpec),
            ctypes.POINTER(_QualitySpec),
            ctypes.c_void_p,
        ]
        lib.soxr_process.restype = ctypes.c_char_p
        lib.soxr_process.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            _size_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            _size_p,
        ]
        lib.soxr_clear.restype = ctypes.c_char_p
        lib.soxr_clear.argtypes = [ctypes.c_void_p]
        lib.soxr_delete.restype = None
        lib.soxr_delete.argtypes = [ctypes.c_void_p]
    except (ImportError, OSError, AttributeError):
        return None
    return lib


#: soxr.h's SOXR_SPLIT: added to a datatype, the channels come as one buffer each instead of interleaved
_SOXR_SPLIT = 4
#: channels of one libsoxr call at most; a batch goes through in runs of this many rows
MAX_CHANNELS = 8
#: input samples per channel given to libsoxr at a time
PIECE = 1 << 17


class DirectResampler:
    """One libsoxr resampler of ``channels`` channels (one buffer per channel), used by one thread at a time;
    see :func:`resampler`."""

    def __init__(
        self, lib: Any, factor: int, quality: int, datatype: int, dtype: np.dtype, channels: int = 1
    ) -> None:
        self._lib = lib
        self.dtype = dtype
        self.channels = channels
        error = ctypes.c_char_p()
        if channels > 1:
            datatype += _SOXR_SPLIT
        io_spec = lib.soxr_io_spec(datatype, datatype)
        quality_spec = lib.soxr_quality_spec(quality, 0)
        specs = (ctypes.byref(io_spec), ctypes.byref(quality_spec), None)
        handle = lib.soxr_create(float(factor), 1.0, channels, ctypes.byref(error), *specs)
        if error.value is not None or not handle:
            raise RuntimeError(f"libsoxr: {(error.value or b'soxr_create failed').decode()}")
        self._handle = ctypes.c_void_p(handle)
        self._done = ctypes.c_size_t()

    def __del__(self) -> None:
        lib, handle = getattr(self, "_lib", None), getattr(self, "_handle", None)
        if lib is not None and handle is not None:
            lib.soxr_delete(handle)

    def push_into(self, piece: np.ndarray | None, out: np.ndarray) -> int:
        """Feed ``piece`` (contiguous, this resampler's dtype; None: the end of the signal, which flushes
        what libsoxr's filter still holds) and write what libsoxr returns into ``out``; return its count.
        One channel only."""
        lib, done = self._lib, self._done
        data, size = (None, 0) if piece is None else (piece.ctypes.data, piece.shape[0])
        self._check(lib.soxr_process(self._handle, data, size, None, out.ctypes.data, out.shape[0], done))
        return done.value

    def resample_into(self, rows: np.ndarray, out: np.ndarray) -> int:
        """Resample each row of ``rows`` as one signal into the same row of ``out``, all channels in one
        libsoxr call: ``rows`` (n,) with one channel, else (channels, n), and ``out`` likewise, each row
        contiguous and of this resampler's dtype.

        Returns the number of samples written per row: libsoxr's count, ``round(n / factor)``, at most the
        length of ``out``'s rows.
        """
        lib, done = self._lib, self._done
        self._check(lib.soxr_clear(self._handle))
        n, room = rows.shape[-1], out.shape[-1]
        written = 0
        # a long input goes in pieces (same numbers): libsoxr copies all it is given into its own buffer
        # first, which for a 3-minute clip cost half as much again as the filtering
        for a in range(0, n, PIECE):
            size, into = min(PIECE, n - a), self._buffers(out, written)
            piece = self._buffers(rows, a)
            self._check(lib.soxr_process(self._handle, piece, size, None, into, room - written, done))
            written += done.value
        # the end of the input: libsoxr flushes what its filter still holds
        tail = self._buffers(out, written)
        self._check(lib.soxr_process(self._handle, None, 0, None, tail, room - written, done))
        return written + done.value

    def _buffers(self, a: np.ndarray, offset: int = 0) -> Any:
        """libsoxr's buffer argument for ``a`` from sample ``offset`` of each row: the address itself for one
        channel, an array of one address per row for several."""
        step = a.dtype.itemsize
        if self.channels == 1:
            return a.ctypes.data + offset * step
        base, row = a.ctypes.data + offset * step, a.strides[0]
        return ctypes.cast(
            (ctypes.c_void_p * self.channels)(*(base + i * row for i in range(self.channels))),
            ctypes.c_void_p,
        )

    @staticmethod
    def _check(error: bytes | None) -> None:
        if error is not None:
            raise RuntimeError(f"libsoxr: {error.decode()}")


def resampler(factor: int, res_type: str, dtype: np.dtype, channels: int = 1) -> DirectResampler | None:
    """This thread's direct libsoxr resampler for ``res_type`` (a soxr quality), ``dtype`` and ``channels``
    (1 to :data:`MAX_CHANNELS`), or None when libsoxr's functions cannot be reached or do not reproduce
    ``soxr.resample`` bit for bit."""
    dtype = np.dtype(dtype)
    if not 1 <= channels <= MAX_CHANNELS or not _verified(factor, res_type, dtype.str):
        return None
    return per_thread(
        ("soxr-direct", factor, res_type, dtype.str, channels),
        lambda: _create(factor, res_type, dtype, channels),
    )


def new_resampler(factor: int, res_type: str, dtype: np.dtype) -> DirectResampler | None:
    """A fresh one-channel direct resampler of the caller's own (for a signal fed in pieces), or None as
    :func:`resampler`."""
    dtype = np.dtype(dtype)
    return _create(factor, res_type, dtype) if _verified(factor, res_type, dtype.str) else None


def _create(factor: int, res_type: str, dtype: np.dtype, channels: int = 1) -> DirectResampler:
    import soxr
    from soxr import soxr_ext

    datatype = soxr_ext.SOXR_FLOAT32_I if dtype == np.float32 else soxr_ext.SOXR_FLOAT64_I
    quality = soxr._quality_to_enum(res_type)
    # nanobind enums carry their C value in .value
    datatype = int(getattr(datatype, "value", datatype))
    return DirectResampler(_library(), factor, int(quality), datatype, dtype, channels)


@functools.cache
def _verified(factor: int, res_type: str, dtype_str: str) -> bool:
    """Whether the direct path gives ``soxr.resample``'s numbers here (checked once per process and case)."""
    dtype = np.dtype(dtype_str)
    if _library() is None or dtype not in (np.float32, np.float64):
        return False
    import soxr

    try:
        direct = _create(factor, res_type, dtype)
        rng = np.random.default_rng(0)
        for n in (1, 2, 3, 1000, 1001, 200_003):
            row = rng.standard_normal(n).astype(dtype)
            expected = soxr.resample(row, factor, 1, quality=res_type)
            out = np.zeros(n // factor + 2, dtype)
            written = direct.resample_into(row, out)
            if written != expected.shape[0] or not np.array_equal(out[:written], expected):
                return False
        # several channels in one call: each row's numbers as on its own
        rows = rng.standard_normal((3, 20_001)).astype(dtype)
        out = np.zeros((3, rows.shape[1] // factor + 2), dtype)
        written = _create(factor, res_type, dtype, channels=3).resample_into(rows, out)
        for row, got in zip(rows, out):
            expected = soxr.resample(row, factor, 1, quality=res_type)
            if written != expected.shape[0] or not np.array_equal(got[:written], expected):
                return False
        # fed in pieces of any size, then flushed, a fresh resampler gives the same numbers
        row = rng.standard_normal(70_001).astype(dtype)
        expected = soxr.resample(row, factor, 1, quality=res_type)
        pieces, out, written = _create(factor, res_type, dtype), np.zeros(row.size // factor + 2, dtype), 0
        for a, b in ((0, 0), (0, 1), (1, 4097), (4097, 70_001)):
            written += pieces.push_into(row[a:b], out[written:])
        written += pieces.push_into(None, out[written:])
        if written != expected.shape[0] or not np.array_equal(out[:written], expected):
            return False
    except (RuntimeError, ValueError, TypeError, ctypes.ArgumentError):
        return False
    return True
