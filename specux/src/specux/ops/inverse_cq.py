"""Inverse constant-Q transform (``specux.icqt``) and constant-Q phase retrieval (``specux.griffinlim_cqt``).

``icqt`` computes what librosa 0.11's ``icqt`` computes, octave by octave from the bottom: the responses of
each octave's filters are projected back through the conjugate of its frequency-domain basis (each filter
weighted by the inverse of its spectral energy, times ``n_fft / length``, and by ``sqrt(length)`` when
``scale``), inverse-transformed frame by frame (the inverse STFT with a window of ones), brought back to the
full rate by the resampler, and summed. Every step is linear, so each octave is here one real matrix product
of the responses (real and imaginary parts side by side) with memoised time-domain synthesis weights, then an
overlap-add: no FFT per frame. ``docs/specux/constant-q.md`` ("Inverse") gives the measured agreement with
librosa.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from specux import _arrays, _validate
from specux._backend_doc import backends_doc
from specux._dispatch import cast_host, finish, prepare
from specux._filters import constant_q as cqf
from specux._resample import RES_TYPES, check_res_type
from specux._threads import single_threaded_blas
from specux._torch_hook import torch_route
from specux._upsample import upsample, upsample_adjoint

__all__ = ["IcqtParams", "griffinlim_cqt", "icqt", "icqt_adjoint", "icqt_cpu", "validate_icqt"]

#: responses (complex values, all rows together) turned into frames per matrix product
_BLOCK_VALUES = 1 << 20


@dataclass(frozen=True)
class IcqtParams:
    """Validated parameters of one ``icqt`` call (the tuning already applied to ``fmin``)."""

    sr: float
    hop_length: int
    fmin: float
    n_bins: int
    bins_per_octave: int
    filter_scale: float
    norm: float | None
    sparsity: float
    window: Any
    scale: bool
    length: int | None
    res_type: str
    dtype: str  # real output precision


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


def validate_icqt(C: Any, public: str, device: bool = False, **kw: Any) -> tuple[np.ndarray, IcqtParams]:
    """Check every argument of :func:`icqt` (see there); return C as numpy and an :class:`IcqtParams`.

    ``device``: for a device backend, where the soxr qualities need no ``soxr`` package (the device designs
    its own filter, see :mod:`specux._runtime.icq_exec`) and ``"soxr_qq"`` is refused."""
    x = _arrays.to_numpy(C) if _arrays.is_host(C) else C
    name = _arrays.real_dtype_name(x)
    if name not in ("complex64", "complex128", "float32", "float64"):
        raise TypeError(
            f"{public}: C must be complex64 or complex128 (or float32 / float64, read as zero phase); got "
            f"dtype {name}"
        )
    if len(x.shape) < 2 or x.shape[-2] == 0 or x.shape[-1] == 0:
        raise ValueError(
            f"{public}: C must have shape (..., n_bins, n_frames) with n_bins >= 1 and n_frames >= 1; got "
            f"shape {tuple(x.shape)}"
        )
    sr = _validate.positive_float(kw["sr"], "sr", public)
    hop = _validate.positive_int(kw["hop_length"], "hop_length", public)
    bpo = _validate.positive_int(kw["bins_per_octave"], "bins_per_octave", public)
    filter_scale = _validate.positive_float(kw["filter_scale"], "filter_scale", public)
    sparsity = _validate.real(kw["sparsity"], "sparsity", public)
    if not 0 <= sparsity < 1:
        raise ValueError(f"{public}: sparsity must be a number in [0, 1); got {kw['sparsity']!r}")
    norm = cqf.check_norm(kw["norm"], public)
    scale = _validate.flag(kw["scale"], "scale", public)
    length = kw["length"]
    if length is not None:
        length = _validate.positive_int(length, "length", public)
    res_type = kw["res_type"]
    if not isinstance(res_type, str) or res_type not in RES_TYPES:
        allowed = ", ".join(repr(r) for r in RES_TYPES)
        raise ValueError(f"{public}: res_type must be one of {allowed}; got {res_type!r}")
    if device:
        from specux._runtime.cq_exec import check_device_res_type

        check_device_res_type(res_type, public)
    else:
        check_res_type(res_type)
    fmin = cqf.c1_hz() if kw["fmin"] is None else _validate.real(kw["fmin"], "fmin", public)
    if not fmin > 0:
        raise ValueError(f"{public}: fmin must be a positive frequency in Hz; got {kw['fmin']!r}")
    tuning = _validate.real(kw["tuning"], "tuning", public)
    dtype = kw["dtype"]
    if dtype is None:
        out = "float32" if name in ("complex64", "float32") else "float64"
    else:
        out = _validate.numpy_dtype(dtype, "dtype", public, "None, float32 or float64").name
        if out not in ("float32", "float64"):
            raise TypeError(f"{public}: dtype must be None, float32 or float64; got {out}")
    params = IcqtParams(
        sr=sr,
        hop_length=hop,
        fmin=fmin * 2.0 ** (tuning / bpo),
        n_bins=int(x.shape[-2]),
        bins_per_octave=bpo,
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=kw["window"],
        scale=scale,
        length=length,
        res_type=res_type,
        dtype=out,
    )
    icqt_plan(params, int(x.shape[-1]))  # the bank must stay below Nyquist
    return x, params


@backends_doc("icqt")
@torch_route("icqt", inputs=("C",))
def icqt(
    C: Any,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    bins_per_octave: int = 12,
    tuning: float = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    length: int | None = None,
    res_type: str = "soxr_hq",
    dtype: Any = None,
    backend: str = "auto",
) -> Any:
    """Inverse constant-Q transform: an audio signal whose :func:`cqt` approximates ``C`` (librosa.icqt).

    Octave by octave from the bottom, each octave's responses are projected back through the conjugate of
    the forward's frequency-domain basis (each filter divided by its spectral energy), inverse-transformed
    frame by frame and overlap-added (the inverse STFT with a window of ones), upsampled to the full rate by
    ``res_type`` and summed. The parameters must be those of the :func:`cqt` that produced ``C``.

    Parameters
    ----------
    C : ndarray or torch.Tensor, shape (..., n_bins, n_frames), complex64 or complex128
        Constant-Q responses, as :func:`cqt` returns them; leading axes are batch axes (a real array is read
        as responses of zero phase).
    sr : float > 0
        Sampling rate in Hz.
    hop_length : int > 0
        Samples between frames.
    fmin : float > 0 or None
        Lowest centre frequency in Hz (before tuning); None means C1 (about 32.70 Hz).
    bins_per_octave : int > 0
        Bins per octave.
    tuning : float
        Tuning offset in fractions of a bin (``fmin * 2 ** (tuning / bins_per_octave)``).
    filter_scale : float > 0
        Filter length multiplier.
    norm : {1, 2, inf, -inf, 0, None}
        Normalisation of each time-domain filter.
    sparsity : float in [0, 1)
        Fraction of each frequency-domain filter's L1 mass discarded.
    window : window specification
        Filter window (see ``specux.filters.get_window``).
    scale : bool
        Whether ``C`` was divided by the square root of each filter's length (``cqt(..., scale=True)``).
    length : int > 0 or None
        Length of the output in samples (zero-padded or cut); only the frames that reach it are read.
        None: ``hop_length * (n_frames - 1)`` samples.
    res_type : {"soxr_hq", "soxr_vhq", "soxr_mq", "soxr_lq", "soxr_qq", "polyphase"}
        Upsampler from each octave's rate to the full rate (the resampler of the forward transform). The soxr
        qualities (``soxr.resample``) and "polyphase" (``scipy.signal.resample_poly``) are librosa's own, so
        each matches ``librosa.icqt`` to float rounding.
    dtype : real dtype or None
        Output dtype; None gives float32 for complex64 ``C`` and float64 for complex128.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        Where to compute (see :func:`specux.backends`). On a device backend (also ``backend="auto"`` with
        host input where cuda is available): one batch of generated kernels per call, per octave one gather
        of the frames through the synthesis weights with their overlap-add, then an interpolating FIR into
        the sum. "polyphase" is scipy's upsampler itself (the CPU's result to float rounding); each "soxr_*"
        quality except "soxr_qq" (refused there) is the device cqt's filter designed to that libsoxr
        quality's specification, used as an interpolator: within 1e-3 relative (L2) of libsoxr, the
        differences in the first ~100 samples (see "Inverse" in ``docs/specux/constant-q.md``);
        ``backend="cpu"`` gives libsoxr's exact result.

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n), real
        Same library as ``C``.

    See Also
    --------
    cqt : the forward transform.
    griffinlim_cqt : a signal from constant-Q magnitudes alone.

    Notes
    -----
    {backends} Autograd: yes for torch CPU tensors, with every
    res_type (an analytic adjoint), and on a device backend (a torch CPU tensor with backend "opencl", "cuda"
    or "metal", or a torch CUDA tensor) with every device res_type, by the device's adjoint kernels (see
    docs/specux/constant-q.md). torch.compile: yes (one graph node).

    librosa computes this inverse with a basis rounded to complex64 whatever the precision of ``C`` and
    returns float64 for complex64 input with ``scale=True``; specux computes in the precision of ``C``, so
    complex128 results are closer to exact and complex64 ones are float32.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * np.arange(sr) / sr)
    >>> kw = dict(sr=sr, fmin=110.0, bins_per_octave=36)
    >>> C = specux.cqt(y, n_bins=5 * 36, **kw)
    >>> y_hat = specux.icqt(C, length=y.size, **kw)
    >>> y_hat.shape, y_hat.dtype
    ((22050,), dtype('float64'))
    >>> mid = slice(4096, -4096)   # away from the ends, the error is a fraction of a percent
    >>> bool(np.linalg.norm(y_hat[mid] - y[mid]) < 0.01 * np.linalg.norm(y[mid]))
    True
    """
    chosen, x = prepare(C, backend, "icqt", "icqt")
    if chosen.name == "cpu":
        x, params = validate_icqt(x, "icqt", **_named(locals()))
        if not np.iscomplexobj(x):
            x = x.astype(np.result_type(x.dtype, np.complex64))
        return finish(icqt_cpu(x, params), C)
    # a device backend (specux._runtime.icq_exec): the responses cast to the complex type of the output's
    # precision, as the CPU computes in it
    x, params = validate_icqt(x, "icqt", device=True, **_named(locals()))
    _device_precision(chosen, params.dtype, "icqt")
    return finish(chosen.icqt(cast_host(x, _COMPLEX_OF[params.dtype]), params), C)


_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def _device_precision(chosen: Any, real: str, public: str) -> None:
    if real not in chosen.dtypes:
        raise TypeError(
            f"{public}: backend {chosen.name!r} computes in {', '.join(sorted(chosen.dtypes))}; a {real} "
            f"result needs {real} (this device lacks it): pass complex64 / float32 input or backend='cpu'"
        )


def _named(scope: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`icqt` from its local scope, for :func:`validate_icqt`."""
    names = ("sr", "hop_length", "fmin", "bins_per_octave", "tuning", "filter_scale", "norm", "sparsity",
             "window", "scale", "length", "res_type", "dtype")
    return {n: scope[n] for n in names}


@backends_doc("griffinlim_cqt")
def griffinlim_cqt(
    C: Any,
    *,
    n_iter: int = 32,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    bins_per_octave: int = 12,
    tuning: float = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    res_type: str = "soxr_hq",
    dtype: Any = None,
    length: int | None = None,
    momentum: float = 0.99,
    init: str | None = "random",
    random_state: Any = None,
    backend: str = "auto",
) -> Any:
    """A signal from constant-Q magnitudes by fast Griffin-Lim (librosa.griffinlim_cqt).

    Starting from random (or zero) phases, each iteration inverts the current estimate with :func:`icqt`,
    transforms the signal again with :func:`cqt`, and keeps the new phases with the given magnitudes (with
    fast Griffin-Lim's momentum); the result is the :func:`icqt` of the last estimate. With the same
    ``random_state`` the iterates are librosa's (same seeding, start phases rounded to complex64 as librosa
    keeps them, same order of operations).

    Parameters
    ----------
    C : ndarray or torch.Tensor, shape (..., n_bins, n_frames), real, non-negative
        Constant-Q magnitudes (``abs(cqt(...))``); leading axes are batch axes.
    n_iter : int > 0
        Iterations.
    sr, hop_length, fmin, bins_per_octave, tuning, filter_scale, norm, sparsity, window, scale, res_type
        As :func:`cqt` / :func:`icqt`; they must be those that produced ``C``.
    pad_mode : str
        numpy.pad mode of the forward :func:`cqt`'s frames.
    dtype : real dtype or None
        Output dtype (None: float32 for float32 ``C``, float64 for float64).
    length : int > 0 or None
        Output length in samples (as :func:`icqt`).
    momentum : float >= 0
        Fast Griffin-Lim's momentum (0: plain Griffin-Lim; above 1 warns).
    init : {"random", None}
        Start phases: random (``exp(2 pi i u)``, ``u`` uniform from ``random_state``) or zero.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seeding as librosa's: an int seeds a ``RandomState``.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        Where to compute. On a device backend each iteration runs the device's :func:`icqt` and :func:`cqt`
        (the signal stays on the device) and projects the responses on the host (one upload and one
        download of the responses per iteration); its resamplers are those of :func:`icqt` on a device.

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n), real
        Same library as ``C``.

    See Also
    --------
    icqt : the inverse with known phases.
    griffinlim : the same iteration on an STFT.

    Notes
    -----
    {backends} Torch tensors are computed on their numpy view (no autograd: a tensor that requires grad is
    refused).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * np.arange(sr // 2) / sr).astype(np.float32)
    >>> S = np.abs(specux.cqt(y, sr=sr, n_bins=72, fmin=65.0))
    >>> y_hat = specux.griffinlim_cqt(S, sr=sr, n_iter=4, fmin=65.0, random_state=0)
    >>> y_hat.shape, y_hat.dtype
    ((10752,), dtype('float32'))
    """
    from specux.ops import _phase_retrieval
    from specux.ops.cqt import validate_vqt, vqt_cpu

    public = "griffinlim_cqt"
    chosen, S = prepare(C, backend, public, public)
    device = chosen.name != "cpu"
    # a device array (cupy, torch CUDA) goes to its backend as it is; host input is a numpy view
    S = S if device and not _arrays.is_host(S) else np.asarray(S)
    name = _arrays.real_dtype_name(S)
    if name not in ("float32", "float64"):
        raise TypeError(f"{public}: C must be real magnitudes (float32 or float64); got dtype {name}")
    n_iter = _validate.positive_int(n_iter, "n_iter", public)
    momentum = _phase_retrieval.momentum_value(momentum, public)
    if not (init is None or (isinstance(init, str) and init == "random")):
        raise ValueError(f"{public}: init must be 'random' or None; got {init!r}")
    rng = _phase_retrieval.resolve_rng(random_state, public)
    common = dict(
        sr=sr, hop_length=hop_length, fmin=fmin, bins_per_octave=bins_per_octave, tuning=tuning,
        filter_scale=filter_scale, norm=norm, sparsity=sparsity, window=window, scale=scale,
    )
    _, ip = validate_icqt(S, public, device, **common, length=length, res_type=res_type, dtype=dtype)
    n_frames = S.shape[-1]
    # the forward takes the signal in the precision icqt returns
    probe = np.zeros(1, dtype=ip.dtype)
    _, vp = validate_vqt(
        probe, public, device, **common, n_bins=S.shape[-2], intervals="equal", gamma=0, pad_mode=pad_mode,
        res_type=res_type, dtype=None,
    )
    # librosa keeps the phases in complex64 whatever the precision (and so does this loop)
    angles = _phase_retrieval.initial_angles(tuple(S.shape), np.complex64, init, rng, public)
    if device:
        # the loop over the device's icqt and vqt (specux._runtime.icq_exec.griffinlim_cqt): the signal
        # stays on the device, the responses come to the host once per iteration for the projection
        from specux._runtime.icq_exec import GriffinLimCqtParams

        _device_precision(chosen, ip.dtype, public)
        gp = GriffinLimCqtParams(ip, vp, angles, n_iter, momentum)
        return finish(getattr(chosen, public)(S, gp), C)
    eps = float(np.finfo(np.float32).tiny)

    def invert(X: np.ndarray) -> np.ndarray:
        return icqt_cpu(X, ip)

    def rebuild(X: np.ndarray) -> np.ndarray:
        R = vqt_cpu(invert(X), vp)
        if R.shape[-1] != n_frames:  # a length that gives another frame count: fit C's frames
            fixed = np.zeros((*R.shape[:-1], n_frames), R.dtype)
            k = min(n_frames, R.shape[-1])
            fixed[..., :k] = R[..., :k]
            R = fixed
        return R

    def project(a: np.ndarray) -> np.ndarray:
        phase = a.astype(np.complex64)
        phase /= np.abs(phase) + np.float32(eps)
        return S * phase

    X = _phase_retrieval.fast_griffin_lim(
        S, angles, n_iter=n_iter, momentum=momentum, rebuild=rebuild, eps=eps, project=project
    )
    return finish(invert(X), C)
