"""NumPy adjoints of the framing pieces every short-time transform is built from.

Each function is the exact transpose (adjoint, for complex data) of one forward step of the CPU kernels:
centre padding, framing, the one-sided real FFT and its inverse. The overlap-add here is the deterministic
one: a fixed-order gather in which every output sample sums the frames that cover it in increasing frame-chunk
order, so the result does not depend on threads or scheduling (see :mod:`specux._determinism`).
"""

from __future__ import annotations

import numpy as np
import scipy.fft
from numpy.lib.stride_tricks import sliding_window_view

#: numpy.pad modes whose padding copies samples of the signal (an index map); "constant" pads zeros
INDEX_PAD_MODES = ("reflect", "edge", "symmetric", "wrap")


def overlap_add(frames: np.ndarray, hop: int, length: int) -> np.ndarray:
    """Sum frames (B, T, N) placed every ``hop`` samples into (B, length), as a fixed-order gather.

    The frames are cut into chunks of ``hop`` samples; output chunk ``r`` is the sum over ``j = 0, 1, ...``
    (in that order) of chunk ``j`` of frame ``r - j``. Samples past ``length`` are dropped and missing ones
    are zero.
    """
    B, T, N = frames.shape
    chunks = -(-N // hop)
    if chunks * hop != N:
        frames = np.concatenate([frames, np.zeros((B, T, chunks * hop - N), frames.dtype)], axis=-1)
    parts = frames.reshape(B, T, chunks, hop)
    out = np.zeros((B, T + chunks - 1, hop), dtype=frames.dtype)
    for j in range(chunks):
        out[:, j : j + T] += parts[:, :, j]
    flat = out.reshape(B, -1)
    if flat.shape[1] >= length:
        return np.ascontiguousarray(flat[:, :length])
    return np.concatenate([flat, np.zeros((B, length - flat.shape[1]), frames.dtype)], axis=1)


def frame(x: np.ndarray, n: int, hop: int, n_frames: int) -> np.ndarray:
    """Frames (B, n_frames, n) of (B, L), frame t starting at ``t * hop`` (zero past the end), a new array."""
    need = n + hop * (n_frames - 1)
    if x.shape[1] < need:
        x = np.concatenate([x, np.zeros((x.shape[0], need - x.shape[1]), x.dtype)], axis=1)
    return np.array(sliding_window_view(x, n, axis=-1)[:, ::hop][:, :n_frames])


def unpad(grad_padded: np.ndarray, length: int, pad: int, pad_mode: str) -> np.ndarray:
    """Adjoint of ``np.pad(y, ((0, 0), (pad, pad)), mode=pad_mode)`` for (B, length) signals.

    "constant" pads zeros, so the adjoint is a crop; the other modes copy samples of ``y`` and their adjoint
    adds each padded sample's gradient back onto the sample it copies (``np.add.at``: sequential,
    deterministic).
    """
    grad = np.array(grad_padded[:, pad : pad + length])
    if pad == 0 or pad_mode == "constant":
        return grad
    if pad_mode not in INDEX_PAD_MODES:
        raise ValueError(
            f"pad_mode={pad_mode!r} has no gradient in specux; use one of 'constant', "
            f"{', '.join(repr(m) for m in INDEX_PAD_MODES)}"
        )
    index = np.pad(np.arange(length), (pad, pad), mode=pad_mode)
    sides = np.r_[0:pad, pad + length : length + 2 * pad]
    np.add.at(grad, (slice(None), index[sides]), grad_padded[:, sides])
    return grad


def r2c_adjoint(g: np.ndarray, n: int, axis: int = -1, workers: int = -1) -> np.ndarray:
    """Adjoint of the unnormalised one-sided real DFT ``rfft(x, n)``: ``Re(F^H g)``, real of length ``n``.

    Bins other than 0 and (for even ``n``) ``n / 2`` stand for a conjugate pair, so they are halved before an
    unnormalised inverse real FFT, which counts them twice.
    """
    h = np.array(g)
    index = [slice(None)] * h.ndim
    last = n // 2 if n % 2 == 0 else None
    inner = slice(1, last)
    index[axis] = inner
    h[tuple(index)] *= 0.5
    return scipy.fft.irfft(h, n=n, axis=axis, norm="forward", workers=workers, overwrite_x=True)


def c2r_adjoint(g: np.ndarray, n_bins: int, axis: int = -1) -> np.ndarray:
    """Adjoint of the unnormalised inverse real DFT (``irfft(x, n) * n``, real ``g`` of length ``n``).

    ``w * rfft(g)`` with ``w = 2`` for the bins that stand for a conjugate pair and 1 for bin 0 and (even
    ``n``) bin ``n / 2``; the result has ``n_bins = n // 2 + 1`` bins.
    """
    n = g.shape[axis]
    out = scipy.fft.rfft(g, axis=axis, workers=-1)
    index = [slice(None)] * out.ndim
    index[axis] = slice(1, n // 2 if n % 2 == 0 else None)
    out[tuple(index)] *= 2.0
    assert out.shape[axis] == n_bins
    return out
