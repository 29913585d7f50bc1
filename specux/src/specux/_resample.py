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
``scale=True``) and return ``ceil(n / factor)`` samples.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.signal

SOXR_QUALITIES = ("soxr_vhq", "soxr_hq", "soxr_mq", "soxr_lq", "soxr_qq")
RES_TYPES = (*SOXR_QUALITIES, "polyphase")

#: libsoxr's limit on the number of channels of one stream
_SOXR_MAX_CHANNELS = 65536


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


def downsample(y: np.ndarray, factor: int, res_type: str, *, scale: bool = True) -> np.ndarray:
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

    Returns
    -------
    ndarray, shape (batch, ceil(n / factor)), same dtype as ``y``
    """
    n_out = math.ceil(y.shape[-1] / factor)
    if res_type == "polyphase":
        out = scipy.signal.resample_poly(y, 1, factor, axis=-1)
    else:
        import soxr

        # soxr takes (frames, channels) and filters every channel alike, so a batch is one call (per
        # _SOXR_MAX_CHANNELS rows)
        chunks = [
            soxr.resample(
                np.ascontiguousarray(y[i : i + _SOXR_MAX_CHANNELS].T), factor, 1, quality=res_type
            ).T
            for i in range(0, y.shape[0], _SOXR_MAX_CHANNELS)
        ]
        out = chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=0)
    if out.shape[-1] > n_out:
        out = out[..., :n_out]
    elif out.shape[-1] < n_out:
        out = np.pad(out, [(0, 0)] * (out.ndim - 1) + [(0, n_out - out.shape[-1])])
    out = np.ascontiguousarray(out, dtype=y.dtype)
    if scale:
        # as librosa: divide by sqrt(1 / factor), computed in double precision, in place
        np.divide(out, np.sqrt(1.0 / factor), out=out, casting="same_kind")
    return out
