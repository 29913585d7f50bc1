"""The CPU kernel of the inverse constant-Q transform and its adjoint, on numpy arrays, with the validated
:class:`specux._validate.IcqtParams`.

``icqt`` computes what librosa 0.11's ``icqt`` computes, octave by octave from the bottom: the responses of
each octave's filters are projected back through the conjugate of its frequency-domain basis (each filter
weighted by the inverse of its spectral energy, times ``n_fft / length``, and by ``sqrt(length)`` when
``scale``), inverse-transformed frame by frame (the inverse STFT with a window of ones), brought back to the
full rate by the resampler, and summed. Every step is linear, so each octave is here one real matrix product
of the responses (real and imaginary parts side by side) with memoised time-domain synthesis weights, then an
overlap-add: no FFT per frame. :func:`icqt_adjoint` runs the same steps transposed. The public fronts are in
:mod:`specux.ops.inverse_cq`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from specux._filters import constant_q as cqf
from specux._threads import single_threaded_blas
from specux._upsample import upsample, upsample_adjoint
from specux._validate import IcqtParams

#: responses (complex values, all rows together) turned into frames per matrix product
_BLOCK_VALUES = 1 << 20


@dataclass(frozen=True)
class _InverseOctave:
    rows: slice
    sr: float
    hop: int
    factor: int  # upsampling factor back to the full rate


@dataclass(frozen=True)
class IcqtPlan:
    """The octaves of the inverse, lowest first (librosa's grouping: bins ``[bpo i, bpo (i + 1))``)."""

    freqs: np.ndarray
    alpha: np.ndarray
    lengths: np.ndarray  # filter lengths at the full rate
    octaves: tuple[_InverseOctave, ...]
    n_frames: int  # frames of C that the inverse reads (all of them unless ``length`` trims)


def icqt_plan(p: IcqtParams, n_frames: int) -> IcqtPlan:
    """Frequencies, lengths and per-octave rates for ``p``, and the frames of an ``n_frames``-frame C read."""
    bpo = p.bins_per_octave
    freqs = cqf.cq_frequencies(p.n_bins, fmin=p.fmin, bins_per_octave=bpo, intervals="equal")
    alpha = cqf.equal_temperament_alpha(bpo) if p.n_bins == 1 else cqf.relative_bandwidth(freqs)
    lengths, cutoff = cqf.wavelet_lengths(
        freqs=freqs, sr=p.sr, window=p.window, filter_scale=p.filter_scale, gamma=0.0, alpha=alpha
    )
    cqf.check_nyquist(cutoff, p.sr, float(freqs[-1]))
    n_octaves = math.ceil(p.n_bins / bpo)
    # the top octave runs at the full rate; going down, each octave halves rate and hop while the hop is even
    rates = [(p.sr, p.hop_length, 1)]
    for _ in range(n_octaves - 1):
        sr, hop, factor = rates[0]
        rates.insert(0, (sr * 0.5, hop // 2, factor * 2) if hop % 2 == 0 else (sr, hop, factor))
    octaves = tuple(
        _InverseOctave(slice(bpo * i, min(p.n_bins, bpo * (i + 1))), sr, hop, factor)
        for i, (sr, hop, factor) in enumerate(rates)
    )
    if p.length is not None:
        # librosa reads only the frames that reach the requested length
        n_frames = min(n_frames, int(np.ceil((p.length + float(np.max(lengths))) / p.hop_length)))
    return IcqtPlan(freqs, alpha, lengths, octaves, n_frames)


@functools.lru_cache(maxsize=128)
def _synthesis_weights_cached(
    sr: float,
    freqs: tuple[float, ...],
    alpha: tuple[float, ...],
    full_lengths: tuple[float, ...],
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: Any,
    scale: bool,
    dtype_name: str,
) -> tuple[np.ndarray, int]:
    basis, n_fft = cqf.vqt_fft_basis(
        sr=sr,
        freqs=np.asarray(freqs),
        alpha=np.asarray(alpha),
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=window.value if isinstance(window, cqf._Unhashable) else window,
        gamma=0.0,
        dtype=np.complex128,
    )
    lengths = np.asarray(full_lengths)
    # librosa: each filter over its spectral energy, times n_fft / length (undoing the forward's
    # length normalisation), times sqrt(length) when the forward divided by it
    weight = n_fft / lengths / np.sum(np.abs(basis) ** 2, axis=1)
    if scale:
        weight = weight * np.sqrt(lengths)
    inverse = np.conj(basis) * weight[:, None]  # (k, n_fft // 2 + 1)
    # a frame is irfft(sum_c inverse[c] C[c]); irfft is real-linear, so the frame is
    # sum_c Re C[c] irfft(inverse[c]) + Im C[c] irfft(1j inverse[c]): rows 2c and 2c + 1 of the weights
    G = np.empty((2 * basis.shape[0], n_fft))
    G[0::2] = np.fft.irfft(inverse, n=n_fft, axis=1)
    G[1::2] = np.fft.irfft(1j * inverse, n=n_fft, axis=1)
    G = np.ascontiguousarray(G, dtype=dtype_name)
    G.setflags(write=False)
    return G, n_fft


def synthesis_weights(p: IcqtParams, plan: IcqtPlan, octave: _InverseOctave) -> tuple[np.ndarray, int]:
    """(weights (2 k, n_fft) real of ``p.dtype``, n_fft) of one octave: responses with real and imaginary
    parts interleaved times these weights are the octave's inverse-transformed frames (memoised)."""
    window = p.window if isinstance(p.window, (str, tuple, float, int)) else cqf._Unhashable(p.window)
    rows = octave.rows
    alpha = plan.alpha[rows] if plan.alpha.size > 1 else plan.alpha
    return _synthesis_weights_cached(
        float(octave.sr),
        tuple(float(f) for f in plan.freqs[rows]),
        tuple(float(a) for a in np.atleast_1d(alpha)),
        tuple(float(n) for n in plan.lengths[rows]),
        float(p.filter_scale),
        p.norm,
        float(p.sparsity),
        window,
        bool(p.scale),
        p.dtype,
    )


@functools.lru_cache(maxsize=64)
def _divisor(n_fft: int, hop: int, n_frames: int, start: int, count: int, dtype_name: str) -> np.ndarray:
    """What librosa's inverse STFT with ``window="ones"`` divides samples ``start .. start + count`` of the
    overlap-added signal by: how many frames (n_fft samples, ``hop`` apart) cover each, where any do, and 1
    where none does (those samples are zero; librosa leaves them undivided). Read-only, memoised (Griffin-Lim
    inverts the same shape again and again)."""
    n = np.arange(start, start + count)
    last = np.minimum(n_frames - 1, n // hop)
    first = np.maximum(0, -(-(n - n_fft + 1) // hop))
    out = np.maximum(1, last - first + 1).astype(dtype_name)
    out.setflags(write=False)
    return out


def _octave_signal(C: np.ndarray, G: np.ndarray, n_fft: int, hop: int, rdtype: np.dtype) -> np.ndarray:
    """The inverse STFT (window of ones, centred) of one octave's responses ``C`` (B, k, T) complex given
    its synthesis weights: (B, hop * (T - 1)) of ``rdtype``."""
    B, k, T = C.shape
    chunks = -(-n_fft // hop)
    buf = np.zeros((B, T + chunks - 1, hop), rdtype)
    cdtype = np.result_type(rdtype, np.complex64)
    step = max(1, _BLOCK_VALUES // max(1, B * k))
    for t0 in range(0, T, step):
        t1 = min(T, t0 + step)
        # (B, t, k) complex viewed as (B, t, 2k) reals: Re, Im of each filter side by side, as G's rows
        resp = np.ascontiguousarray(C[:, :, t0:t1].transpose(0, 2, 1), dtype=cdtype).view(rdtype)
        frames = resp @ G  # (B, t, n_fft)
        if chunks * hop != n_fft:
            frames = np.concatenate(
                [frames, np.zeros((B, t1 - t0, chunks * hop - n_fft), rdtype)], axis=2
            )
        frames = frames.reshape(B, t1 - t0, chunks, hop)
        for j in range(chunks):
            buf[:, t0 + j : t1 + j] += frames[:, :, j]
    pad = n_fft // 2
    out_len = hop * (T - 1)
    y = buf.reshape(B, -1)[:, pad : pad + out_len]
    return np.divide(y, _divisor(n_fft, hop, T, pad, out_len, rdtype.name))


def icqt_cpu(C: np.ndarray, p: IcqtParams) -> np.ndarray:
    """The CPU implementation: ``C`` (..., n_bins, T) complex numpy -> (..., n) real of ``p.dtype``."""
    # one BLAS thread: the products are small, and OpenBLAS's threads spinning between them cost more than
    # they give (a 5 s clip's octaves took 2 to 45 ms each on two busy cores, against 0.3 to 23 ms)
    with single_threaded_blas():
        return _icqt_rows(C, p)


def _icqt_rows(C: np.ndarray, p: IcqtParams) -> np.ndarray:
    lead = C.shape[:-2]
    rdtype = np.dtype(p.dtype)
    plan = icqt_plan(p, C.shape[-1])
    rows = C.reshape(-1, *C.shape[-2:])[..., : plan.n_frames]
    y = None
    for octave in plan.octaves:
        G, n_fft = synthesis_weights(p, plan, octave)
        part = _octave_signal(rows[:, octave.rows], G, n_fft, octave.hop, rdtype)
        part = upsample(part, octave.factor, p.res_type)
        if y is None:
            y = part
        else:
            k = min(y.shape[-1], part.shape[-1])
            y[:, :k] += part[:, :k]
    assert y is not None
    if p.length:
        y = _fix_length(y, p.length)
    return y.reshape(*lead, y.shape[-1])


def _fix_length(y: np.ndarray, n: int) -> np.ndarray:
    if y.shape[-1] >= n:
        return y[..., :n]
    return np.concatenate([y, np.zeros((*y.shape[:-1], n - y.shape[-1]), y.dtype)], axis=-1)


def icqt_adjoint(g: np.ndarray, n_frames: int, p: IcqtParams) -> np.ndarray:
    """Adjoint of :func:`icqt_cpu` (a real-linear map of the real and imaginary parts of C): ``g`` (..., n)
    real -> (..., n_bins, n_frames) complex, whose real / imaginary parts are the gradients of the real /
    imaginary parts of C (torch's convention for complex inputs). Frames past ``length``'s reach get zero."""
    with single_threaded_blas():
        return _adjoint_rows(g, n_frames, p)


def _adjoint_rows(g: np.ndarray, n_frames: int, p: IcqtParams) -> np.ndarray:
    lead = g.shape[:-1]
    rdtype = np.dtype(p.dtype)
    cdtype = np.result_type(rdtype, np.complex64)
    plan = icqt_plan(p, n_frames)
    G2 = np.ascontiguousarray(g.reshape(-1, g.shape[-1]), dtype=rdtype)
    B, T = G2.shape[0], plan.n_frames
    out = np.zeros((B, p.n_bins, n_frames), cdtype)
    for octave in plan.octaves:
        W, n_fft = synthesis_weights(p, plan, octave)
        hop = octave.hop
        n_oct = hop * (T - 1)  # the octave's signal before upsampling
        n_full = n_oct * octave.factor
        # the forward adds the octave's upsampled signal to the first n_full samples (fixed to length after)
        up = np.zeros((B, n_full), rdtype)
        k = min(n_full, G2.shape[1])
        up[:, :k] = G2[:, :k]
        go = upsample_adjoint(up, n_oct, octave.factor, p.res_type)
        pad = n_fft // 2
        go /= _divisor(n_fft, hop, T, pad, n_oct, rdtype.name)
        chunks = -(-n_fft // hop)
        buf = np.zeros((B, (T + chunks - 1) * hop), rdtype)
        buf[:, pad : pad + n_oct] = go
        # the adjoint of the overlap-add: frame t reads samples t hop .. t hop + n_fft
        frames = np.lib.stride_tricks.as_strided(
            buf, shape=(B, T, n_fft), strides=(buf.strides[0], buf.strides[1] * hop, buf.strides[1]),
            writeable=False,
        )
        resp = (frames @ W.T).astype(rdtype, copy=False)  # (B, T, 2 k): Re, Im interleaved
        out[:, octave.rows, :T] = np.ascontiguousarray(resp).view(cdtype).transpose(0, 2, 1)
    return out.reshape(*lead, p.n_bins, n_frames)
