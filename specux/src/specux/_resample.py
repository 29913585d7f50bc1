"""Integer-factor downsampling for the multirate constant-Q transform.

Two resamplers:

``"soxr_hq"`` (and the other ``"soxr_*"`` qualities)
    libsoxr through the ``soxr`` package, the resampler librosa uses by default; with it ``specux.vqt`` agrees
    with ``librosa.vqt`` to float rounding. Optional: install ``soxr``.
``"polyphase"``
    ``scipy.signal.resample_poly`` (a Kaiser-windowed FIR, applied polyphase); needs only scipy. Its
    anti-aliasing filter differs from soxr's, so results differ from librosa's slightly (see
    ``docs/specux/constant-q.md`` for measured errors).

Both keep the signal's energy per unit time (the output is multiplied by ``sqrt(factor)``, librosa's
``scale=True``) and return ``ceil(n / factor)`` samples. Both are linear: :mod:`specux._resample_linear`
writes them out as filters and gives their adjoints, which gradients need.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.signal

from specux import _soxr_direct
from specux._threads import per_thread

SOXR_QUALITIES = ("soxr_vhq", "soxr_hq", "soxr_mq", "soxr_lq", "soxr_qq")
RES_TYPES = (*SOXR_QUALITIES, "polyphase")


def check_res_type(res_type: str) -> None:
    """Raise a clear error for an unknown resampler, or for a soxr quality when soxr is not installed."""
    if res_type not in RES_TYPES:
        allowed = ", ".join(repr(r) for r in (*RES_TYPES, None))
        raise ValueError(f"res_type must be one of {allowed}; got {res_type!r}")
    if res_type.startswith("soxr"):
        try:
            import soxr  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                f"res_type={res_type!r} needs the 'soxr' package (pip install soxr); "
                "pass res_type='polyphase' for a scipy-only resampler or res_type=None for no resampling"
            ) from exc


def downsample(
    y: np.ndarray, factor: int, res_type: str, *, scale: bool = True, local_nonfinite: bool = False
) -> np.ndarray:
    """Resample ``y`` along its last axis from rate ``factor`` to rate 1.

    Parameters
    ----------
    y : ndarray, shape (batch, n), float32 or float64
        Signals, one per row.
    factor : int >= 2
        Decimation factor.
    res_type : str
        One of :data:`RES_TYPES`.
    scale : bool
        Multiply by ``sqrt(factor)`` (librosa's ``scale=True``), which keeps the energy per unit time. Callers
        that fold this factor into later weights pass False and save a pass over the signal.
    local_nonfinite : bool
        Keep NaN and inf local with libsoxr: libsoxr filters block by block through FFTs, so one non-finite
        input makes a whole block of outputs NaN (about 830 outputs for ``"soxr_hq"`` halving, the whole
        signal when it is shorter). With this flag the non-finite inputs are resampled as zeros and NaN is
        written into just the outputs whose filter reaches them
        (:func:`specux._resample_linear.nonfinite_reach`); the other outputs are then those of the signal
        with zeros in place of the non-finite values. Costs a pass over the signal; ``"polyphase"`` (a direct
        FIR) is local without it.

    Returns
    -------
    ndarray, shape (batch, ceil(n / factor)), same dtype as ``y``
    """
    if local_nonfinite and res_type != "polyphase":
        bad = ~np.isfinite(y)
        if bad.any():
            from specux._resample_linear import nonfinite_reach

            out = downsample(np.where(bad, y.dtype.type(0), y), factor, res_type, scale=scale)
            reach = nonfinite_reach(bad.reshape(-1, y.shape[-1]), factor, res_type)
            out.reshape(reach.shape)[reach] = np.nan
            return out
    n_out = math.ceil(y.shape[-1] / factor)
    rows = y.reshape(-1, y.shape[-1])
    out = np.zeros((rows.shape[0], n_out), dtype=y.dtype)
    # as librosa: divided by sqrt(1 / factor), computed in double precision
    divisor = np.sqrt(1.0 / factor) if scale else 1.0
    if res_type == "polyphase":
        r = _fix_length(scipy.signal.resample_poly(rows, 1, factor, axis=-1), n_out)
        np.divide(r.astype(y.dtype, copy=False), divisor, out=out, casting="same_kind")
    else:
        # libsoxr called without the GIL, straight into the output rows, several rows per call, each from
        # its own buffer (one reset and two calls for up to MAX_CHANNELS rows: each call takes the GIL on
        # its way back, which the threads of a batch share), then scaled in one pass. (Interleaved channels
        # need transposes on both sides, which took twice the time of the filtering itself.)
        rows = rows if rows.strides[-1] == rows.itemsize else np.ascontiguousarray(rows)
        run = _soxr_direct.MAX_CHANNELS
        starts = range(0, rows.shape[0], run)
        direct = [
            _soxr_direct.resampler(factor, res_type, y.dtype, min(run, rows.shape[0] - a)) for a in starts
        ]
        if all(d is not None for d in direct):
            for a, d in zip(starts, direct):
                d.resample_into(rows[a : a + run], out[a : a + run])
            np.divide(out, divisor, out=out, casting="same_kind")
        else:
            stream = _soxr_stream(factor, res_type, y.dtype)
            for row, dest in zip(rows, out):
                r = stream.resample_chunk(np.ascontiguousarray(row), last=True)
                stream.clear()
                k = min(n_out, r.shape[-1])
                np.divide(r[:k], divisor, out=dest[:k], casting="same_kind")
    return out.reshape(*y.shape[:-1], n_out)


class StreamDownsampler:
    """libsoxr downsampling of one signal that arrives in pieces, written into a preallocated row.

    The pieces may have any lengths: libsoxr buffers its input, so the output is bitwise that of one
    :func:`downsample` call on the whole signal (``scale=True``). This lets a chain of halvings run as a
    pipeline, each stage consuming what the one before it has written so far.

    Parameters
    ----------
    factor : int >= 2
        Decimation factor.
    res_type : str
        One of :data:`SOXR_QUALITIES`.
    dest : ndarray, shape (ceil(n / factor),)
        Where the output goes, in order. Its samples past libsoxr's output (libsoxr gives ``round(n /
        factor)``) are set to zero at the end, as :func:`downsample` leaves them.
    """

    def __init__(self, factor: int, res_type: str, dest: np.ndarray) -> None:
        # libsoxr's C functions when they can be reached (written straight into dest, without the GIL), else
        # the soxr package's stream
        self._direct = _soxr_direct.new_resampler(factor, res_type, dest.dtype)
        if self._direct is None:
            import soxr

            self._stream = soxr.ResampleStream(factor, 1, 1, dtype=dest.dtype.name, quality=res_type)
        self._dest = dest
        self._written = 0
        self._divisor = np.sqrt(1.0 / factor)

    @property
    def written(self) -> int:
        """Samples of ``dest`` written so far (all of it after the last piece)."""
        return self._written

    def push(self, piece: np.ndarray, last: bool = False) -> np.ndarray:
        """Feed the next ``piece`` of the input (``last``: the end of the signal); return the view of
        ``dest`` that it completed (possibly empty; after the last piece, up to the end of ``dest``)."""
        start = self._written
        piece = np.ascontiguousarray(piece, dtype=self._dest.dtype)
        if self._direct is not None:
            self._written += self._direct.push_into(piece, self._dest[start:])
            if last:
                self._written += self._direct.push_into(None, self._dest[self._written :])
            done = self._dest[start : self._written]
            np.divide(done, self._divisor, out=done, casting="same_kind")
        else:
            r = self._stream.resample_chunk(piece, last=last)
            k = min(self._dest.shape[0] - start, r.shape[-1])
            np.divide(r[:k], self._divisor, out=self._dest[start : start + k], casting="same_kind")
            self._written += k
        if last:
            self._dest[self._written :] = 0
            self._written = self._dest.shape[0]
        return self._dest[start : self._written]


def _soxr_stream(factor: int, res_type: str, dtype: np.dtype) -> Any:
    """A cleared one-channel ``soxr.ResampleStream`` for this thread.

    A stream run to its end and cleared gives the numbers of ``soxr.resample``, without designing the filter
    again on every call (about 40 us each, which added up to 4 ms over the rows and octaves of one batch).
    """

    def make() -> Any:
        import soxr

        return soxr.ResampleStream(factor, 1, 1, dtype=np.dtype(dtype).name, quality=res_type)

    return per_thread(("soxr-stream", factor, res_type, np.dtype(dtype).str), make)


def _fix_length(out: np.ndarray, n_out: int) -> np.ndarray:
    """Cut or zero-pad the last axis to ``n_out`` samples (librosa's ``fix_length``)."""
    if out.shape[-1] > n_out:
        return out[..., :n_out]
    if out.shape[-1] < n_out:
        return np.pad(out, [(0, 0)] * (out.ndim - 1) + [(0, n_out - out.shape[-1])])
    return out
