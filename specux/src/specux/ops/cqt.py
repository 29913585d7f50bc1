"""Constant-Q and variable-Q transforms (``specux.cqt``, ``specux.vqt``), librosa 0.11's multirate algorithm.

The fronts validate (:func:`validate_vqt`) and dispatch; the CPU kernel, the multirate algorithm, is
:func:`specux._backends.cpu.cqt.vqt_cpu` (its module says how it runs), the device backends' is
:mod:`specux._runtime.cq_exec`. ``docs/specux/constant-q.md`` lists the resamplers and the errors that result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _arrays
from specux._backend_doc import backends_doc
from specux._backends.cpu.cqt import vqt_cpu
from specux._dispatch import cast_host, finish, prepare
from specux._spec.cqt import validate_vqt, warn_if_short
from specux._torch_hook import torch_route

__all__ = ["cqt", "vqt"]


@backends_doc("vqt")
@torch_route("vqt")
def vqt(
    y: Any,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    n_bins: int = 84,
    intervals: str | Any = "equal",
    gamma: float | None = None,
    bins_per_octave: int = 12,
    tuning: float | None = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    res_type: str | None = "soxr_hq",
    dtype: Any = None,
    backend: str = "auto",
) -> Any:
    """Variable-Q transform: complex responses of log-spaced filters whose bandwidths follow the ERB scale.

    Filter k is a windowed complex exponential at ``f_k`` of length ``Q sr / (f_k + gamma / alpha)`` samples
    (``Q = filter_scale / alpha``), L1-normalised (``norm``); its response at frame t is taken at sample
    ``t * hop_length`` (centred frames). Computed octave by octave from the top on a signal downsampled by two
    per octave (librosa's multirate algorithm); see ``docs/specux/constant-q.md``.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), float32 or float64
        Audio signal(s); leading axes are batch axes.
    sr : float > 0
        Sampling rate in Hz.
    hop_length : int > 0
        Samples between frames. Each factor of two in it allows one more octave to run at half the rate; an
        odd hop keeps the remaining octaves at the current rate (more work, same result).
    fmin : float > 0 or None
        Lowest centre frequency in Hz (before tuning); None means C1 (about 32.70 Hz).
    n_bins : int > 0
        Number of frequency bins.
    intervals : "equal" or sequence of float in [1, 2)
        Equal temperament, or one octave of frequency ratios (its length replaces ``bins_per_octave``).
    gamma : float >= 0 or None
        Bandwidth offset in Hz; 0 gives the constant-Q transform; None uses the ERB scale
        (``gamma = 24.7 alpha / 0.108``).
    bins_per_octave : int > 0
        Bins per octave.
    tuning : float or None
        Tuning offset in fractions of a bin: ``fmin`` becomes ``fmin * 2 ** (tuning / bins_per_octave)``.
        None estimates it from ``y`` with :func:`specux.estimate_tuning`.
    filter_scale : float > 0
        Filter length multiplier (below 1: shorter filters, finer time resolution).
    norm : {1, 2, inf, -inf, 0, None}
        Normalisation of each time-domain filter.
    sparsity : float in [0, 1)
        Fraction of each frequency-domain filter's L1 mass discarded (0: exact, slower).
    window : window specification
        Filter window (see ``specux.filters.get_window``).
    scale : bool
        Divide each bin by the square root of its filter length (like ``norm="ortho"`` in an FFT).
    pad_mode : str
        numpy.pad mode for the centred frames ("constant": zeros).
    res_type : {"soxr_hq", "soxr_vhq", "soxr_mq", "soxr_lq", "soxr_qq", "polyphase", None}
        Resampler between octaves. "soxr_*" (librosa's default, needs the ``soxr`` package) matches librosa
        to float rounding; "polyphase" uses scipy's FIR resampler; None does not resample at all: every octave
        is computed at the full rate, which matches a direct (time-domain) computation of the filter responses
        closely and costs more for low octaves. (librosa maps None to "soxr_hq" with a deprecation warning.)
        On a device backend (cuda, metal, opencl; also ``backend="auto"`` with host input where cuda is
        available) libsoxr, a CPU library, does not run: "polyphase" and None are the CPU's computations
        (same result to float rounding), and each "soxr_*" quality except "soxr_qq" is a linear-phase FIR
        designed to that libsoxr quality's specification (passband end, stopband begin, attenuation; for
        "soxr_hq" 91.4 % of the output's Nyquist frequency, 100 %, 120.4 dB), which differs from libsoxr by
        about 2e-5 of the peak with the default parameters and at most 1e-3 (documented exceptions: the
        first frames after an early downsampling by 4 or more, "soxr_lq"); see "On a device" in
        ``docs/specux/constant-q.md``. "soxr_qq" is refused there. For libsoxr's exact numbers pass
        ``backend="cpu"``.
    dtype : complex dtype or None
        Output dtype; None gives complex64 for float32 input and complex128 for float64.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        Where to compute (see :func:`specux.backends`). On a device: one batch of generated kernels
        (resamplings, framing and FFT of every octave, the sparse basis products); ``tuning=None`` needs
        host input (the tuning is estimated on the host).

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n_bins, n_frames), complex
        ``n_frames`` is the frame count of the octave with the fewest frames (``1 + n // hop_length`` when no
        octave is downsampled). Same library as ``y``.

    Notes
    -----
    {backends} Autograd: yes for torch CPU tensors, with every
    res_type (the specux custom ops; see docs/specux/torch.md); on the device backends (a torch CPU tensor
    with ``backend="opencl"`` / ``"cuda"`` / ``"metal"``, or a torch CUDA tensor) the backward runs the
    device's adjoint kernels, for every device resampler (the signal's gradient only: trainable constant-Q
    weights are refused there).
    torch.compile: yes (one graph node).
    On a dask array the time axis is cut into slices of whole frames, each read with a halo of the filters'
    and resamplers' reach, so the result is the in-memory one within float rounding (1e-6 with the libsoxr
    qualities: libsoxr's own rounding); ``pad_mode="wrap"`` and a single input chunk keep one time chunk,
    batch chunks map independently, and ``tuning=None`` reads the whole array in one task. See docs/scale.md.

    NaN and inf stay in the frames whose support contains them: the frame's samples, widened in a downsampled
    octave by the reach of each resampler's filter (libsoxr alone would make a whole FFT block of its output
    NaN; specux resamples the non-finite samples as zeros and writes NaN where the filter reaches them, so
    after a libsoxr resampling an inf shows as NaN). A signal shorter than the longest filter warns
    (UserWarning, as :func:`specux.stft` for ``n_fft`` longer than the signal). See
    ``docs/specux/constant-q.md``.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(22050).astype(np.float32)
    >>> specux.vqt(y, sr=22050, n_bins=48, gamma=20.0).shape
    (48, 44)
    """
    return _vqt_frontend(
        y,
        "vqt",
        sr=sr,
        hop_length=hop_length,
        fmin=fmin,
        n_bins=n_bins,
        intervals=intervals,
        gamma=gamma,
        bins_per_octave=bins_per_octave,
        tuning=tuning,
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=window,
        scale=scale,
        pad_mode=pad_mode,
        res_type=res_type,
        dtype=dtype,
        backend=backend,
    )


@backends_doc("cqt")
@torch_route("cqt")
def cqt(
    y: Any,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    n_bins: int = 84,
    bins_per_octave: int = 12,
    tuning: float | None = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    res_type: str | None = "soxr_hq",
    dtype: Any = None,
    backend: str = "auto",
) -> Any:
    """Constant-Q transform: :func:`vqt` with ``gamma=0`` and equal-tempered bins.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), float32 or float64
        Audio signal(s); leading axes are batch axes.
    sr, hop_length, fmin, n_bins, bins_per_octave, tuning, filter_scale, norm, sparsity, window, scale,
    pad_mode, res_type, dtype, backend
        As :func:`vqt`: ``sr`` in Hz, ``fmin`` in Hz (None: C1 = 32.70 Hz), ``hop_length`` in samples.

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n_bins, n_frames), complex
        Same library as ``y``; complex64 for float32 input, complex128 for float64. On a device backend the
        default ``res_type="soxr_hq"`` is a filter designed to libsoxr's specification, not libsoxr itself
        (see :func:`vqt`'s ``res_type``); ``backend="cpu"`` gives libsoxr's exact result.

    Notes
    -----
    {backends} Autograd: yes for torch CPU tensors, with every
    res_type (the specux custom ops; see docs/specux/torch.md); on the device backends (a torch CPU tensor
    with ``backend="opencl"`` / ``"cuda"`` / ``"metal"``, or a torch CUDA tensor) the backward runs the
    device's adjoint kernels, for every device resampler (the signal's gradient only: trainable constant-Q
    weights are refused there).
    torch.compile: yes (one graph node).
    On a dask array the time axis is cut into slices of whole frames, each read with a halo of the filters'
    and resamplers' reach, so the result is the in-memory one within float rounding (1e-6 with the libsoxr
    qualities: libsoxr's own rounding); ``pad_mode="wrap"`` and a single input chunk keep one time chunk,
    batch chunks map independently, and ``tuning=None`` reads the whole array in one task. See docs/scale.md.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * np.arange(sr) / sr).astype(np.float32)
    >>> C = specux.cqt(y, sr=sr, n_bins=60)
    >>> C.shape, C.dtype
    ((60, 44), dtype('complex64'))
    >>> int(np.abs(C).mean(axis=1).argmax())   # bin 45 above C1 is A4
    45
    """
    return _vqt_frontend(
        y,
        "cqt",
        sr=sr,
        hop_length=hop_length,
        fmin=fmin,
        n_bins=n_bins,
        intervals="equal",
        gamma=0,
        bins_per_octave=bins_per_octave,
        tuning=tuning,
        filter_scale=filter_scale,
        norm=norm,
        sparsity=sparsity,
        window=window,
        scale=scale,
        pad_mode=pad_mode,
        res_type=res_type,
        dtype=dtype,
        backend=backend,
    )


def _vqt_frontend(y: Any, public: str, *, backend: str, **kw: Any) -> Any:
    chosen, x = prepare(y, backend, public, public)
    if chosen.name == "cpu":
        x, params = validate_vqt(y, public, **kw)
        warn_if_short(x.shape[-1], params, public)
        return _arrays.like(vqt_cpu(x, params), y)
    # a device backend (specux._runtime.cq_exec): the same parameters, the signal cast to the real precision
    # of the output as the CPU casts it
    x, params = validate_vqt(x, public, device=True, **kw)
    real = np.finfo(np.dtype(params.dtype)).dtype.name
    if real not in chosen.dtypes:
        raise TypeError(
            f"{public}: backend {chosen.name!r} computes in {', '.join(sorted(chosen.dtypes))}; a "
            f"{params.dtype} result needs {real} (this device lacks it): pass float32 input or backend='cpu'"
        )
    warn_if_short(x.shape[-1], params, public)
    return finish(getattr(chosen, public)(cast_host(x, real), params), y)

