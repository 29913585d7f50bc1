"""Normalising slices of an array to unit norm along one axis (librosa.util.normalize's rules)."""

from __future__ import annotations

import numpy as np


def normalize(
    S: np.ndarray, *, norm: float | None = np.inf, axis: int = 0, threshold: float | None = None
) -> np.ndarray:
    """Divide each slice of ``S`` along ``axis`` by its ``norm``; slices below ``threshold`` stay as they are.

    Parameters
    ----------
    S : ndarray
        Real or complex array. Non-finite values propagate to the slices that hold them (librosa raises).
    norm : {inf, -inf, 0, float > 0, None}
        inf: maximum magnitude; -inf: minimum magnitude; 0: number of non-zero entries; p > 0: the p-norm;
        None: no normalisation.
    axis : int
        Axis along which each slice is normalised.
    threshold : float > 0 or None
        Slices with a norm below this are left unchanged; None means the smallest positive normal number of
        ``S``'s precision.

    Returns
    -------
    ndarray, same shape and dtype as ``S``
    """
    if threshold is None:
        threshold = np.finfo(S.real.dtype if np.iscomplexobj(S) else np.result_type(S.dtype, np.float32)).tiny
    elif threshold <= 0:
        raise ValueError(f"threshold must be > 0; got {threshold}")
    if norm is None:
        return S
    mag = np.abs(S).astype(np.float64)
    if norm == np.inf:
        length = np.max(mag, axis=axis, keepdims=True)
    elif norm == -np.inf:
        length = np.min(mag, axis=axis, keepdims=True)
    elif norm == 0:
        length = np.sum(mag > 0, axis=axis, keepdims=True, dtype=np.float64)
    elif np.isscalar(norm) and norm > 0:
        length = np.sum(mag**norm, axis=axis, keepdims=True) ** (1.0 / norm)
    else:
        raise ValueError(f"norm must be None, inf, -inf, 0 or a positive number; got {norm!r}")
    length[length < threshold] = 1.0
    return (S / length).astype(S.dtype, copy=False)
