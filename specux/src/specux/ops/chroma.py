"""Chroma features: energy per pitch class, from an STFT (``chroma_stft``) or a constant-Q transform
(``chroma_cqt``), with librosa 0.11's definitions and defaults."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _arrays, _dispatch, _validate
from specux._backend_doc import backends_doc
from specux._backends.cpu.chroma import chroma_from_cq, chroma_from_power
from specux._dispatch import prepare
from specux._filters.chroma import chroma as chroma_filter
from specux._filters.constant_q import check_chroma_window, cq_to_chroma
from specux._spec.stft import stft_validate
from specux._torch_hook import torch_route
from specux.ops.cqt import cqt
from specux.ops.tuning import estimate_tuning, magnitude_spectrogram

__all__ = ["chroma_cqt", "chroma_stft"]


@backends_doc("chroma_stft")
@torch_route("chroma_stft", inputs=("y",))
def chroma_stft(
    y: Any = None,
    *,
    sr: float = 22050,
    S: Any = None,
    norm: float | None = np.inf,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    tuning: float | None = None,
    n_chroma: int = 12,
    ctroct: float = 5.0,
    octwidth: float | None = 2,
    base_c: bool = True,
    backend: str = "auto",
) -> Any:
    """Chromagram from a power spectrogram: the chroma filter bank (:func:`specux.filters.chroma`) times
    ``|STFT(y)|**2``, each frame then normalised by ``norm``.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), float32 or float64, or None
        Signal; used when ``S`` is None.
    sr : float > 0
        Sampling rate in Hz.
    S : ndarray or torch.Tensor, shape (..., 1 + n_fft // 2, n_frames), or None
        Power spectrogram; ``n_fft`` is inferred from it when they disagree.
    norm : {inf, -inf, 0, float > 0, None}
        Per-frame normalisation over the pitch classes (inf: maximum becomes 1; frames whose norm is below the
        smallest normal number are left as they are).
    n_fft, hop_length, win_length, window, center, pad_mode
        STFT parameters (see :func:`specux.stft`); ``n_fft`` and ``hop_length`` in samples.
    tuning : float or None
        Tuning deviation in fractions of a chroma bin; None estimates it (:func:`specux.estimate_tuning` with
        ``bins_per_octave=n_chroma``).
    n_chroma : int > 0
        Number of pitch classes.
    ctroct, octwidth, base_c
        Chroma filter bank shape: centre (octaves above 27.5 Hz) and width (octaves; None: flat) of the octave
        weighting; row 0 is C when ``base_c``, else A.
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        See :func:`specux.backends`. On a device backend the power spectrogram, the bank and the per-frame
        norm run as generated kernels; with ``tuning=None`` the tuning is estimated on the host from the
        device's spectrogram.

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n_chroma, n_frames)
        Real, the precision of the spectrogram. Same library as the input. Non-finite input values propagate
        to the frames that contain them.

    Notes
    -----
    {backends} Autograd: yes for a torch signal ``y`` (not for a given
    spectrogram): a CPU tensor with ``backend`` "auto" / "cpu" (NumPy adjoints), a CPU tensor with a device
    backend or a CUDA tensor with "cuda" (the device's adjoint kernels: the norm's, the bank's transpose, the
    stft's); ``tuning=None`` is estimated and held constant by the gradient, as on the CPU.
    torch.compile: yes (one graph node). See docs/specux/torch.md.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * np.arange(sr) / sr).astype(np.float32)
    >>> chroma = specux.chroma_stft(y=y, sr=sr, tuning=0.0)
    >>> chroma.shape, int(chroma.mean(axis=1).argmax())   # pitch class 9 is A
    ((12, 44), 9)
    """
    src = y if S is None else S
    chosen, x = prepare(src, backend, "chroma_stft", "chroma_stft")
    # every parameter before any work, so that messages name chroma_stft's own (the tuning estimate's
    # bins_per_octave is n_chroma here)
    sr = _validate.positive_float(sr, "sr", "chroma_stft")
    n_chroma = _validate.positive_int(n_chroma, "n_chroma", "chroma_stft")
    tuning = _validate.optional_real(tuning, "tuning", "chroma_stft")
    ctroct = _validate.real(ctroct, "ctroct", "chroma_stft")
    octwidth = _validate.optional_real(octwidth, "octwidth", "chroma_stft")
    if octwidth is not None and not octwidth > 0:
        raise ValueError(f"chroma_stft: octwidth must be > 0 or None; got {octwidth}")
    base_c = _validate.flag(base_c, "base_c", "chroma_stft")
    _validate.frame_norm(norm, "chroma_stft")
    if y is not None and S is None:
        _check_real_signal(y, "chroma_stft")
    if S is not None:
        _validate.spectrogram_shape(S, "chroma_stft")
    def bank_for(n: int, tuning: float) -> np.ndarray:
        return chroma_filter(
            sr=sr, n_fft=n, tuning=tuning, n_chroma=n_chroma, ctroct=ctroct, octwidth=octwidth, base_c=base_c
        )

    if chosen.name != "cpu":  # the generated kernels: power, bank and per-frame norm on the device
        return _dispatch.finish(
            _chroma_device(
                chosen, x, S is not None, sr, norm, n_fft, hop_length, win_length, window, center, pad_mode,
                tuning, n_chroma, bank_for,
            ),
            src,
        )
    power, n_fft = magnitude_spectrogram(
        y, S, n_fft, hop_length, win_length, window, center, pad_mode, 2.0, "chroma_stft"
    )
    if tuning is None:
        tuning = estimate_tuning(S=power, sr=sr, bins_per_octave=n_chroma)
    return _arrays.like(chroma_from_power(power, bank_for(n_fft, tuning), norm), src)


def _host_copy(a: Any) -> np.ndarray:
    """A numpy copy of a numpy, cupy or torch (any device) array."""
    if _arrays.is_cupy(a):
        return a.get()
    if _arrays.is_torch(a):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _chroma_device(
    chosen: Any,
    x: Any,
    given_s: bool,
    sr: float,
    norm: Any,
    n_fft: int,
    hop_length: int,
    win_length: int | None,
    window: Any,
    center: bool,
    pad_mode: str,
    tuning: float | None,
    n_chroma: int,
    bank_for: Any,
) -> Any:
    """chroma_stft on a device backend. The tuning estimate (tuning=None) runs on the host, from the power
    spectrogram the device computed; everything else stays on the device."""
    accepted = tuple(sorted(chosen.dtypes & {"float32", "float64"}))
    if given_s:
        dtype = _validate.real_dtype(x, "chroma_stft", "S", accepted)
        if n_fft is None or n_fft // 2 + 1 != x.shape[-2]:
            n_fft = 2 * (x.shape[-2] - 1)
        x = _dispatch.cast_host(x, dtype)
        stft_p = None
    else:
        stft_p = stft_validate(
            x, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, center=center,
            pad_mode=pad_mode, output="power", accepted=accepted, public="chroma_stft",
        )
        dtype, n_fft = stft_p.dtype, stft_p.n_fft
        x = _dispatch.cast_host(x, dtype)
        if tuning is None:  # the estimate needs the spectrogram on the host: computed once, reused
            x, stft_p = chosen.stft(x, stft_p), None
    if tuning is None:  # the estimate (piptrack) is host code: it reads a host copy of the spectrogram
        tuning = estimate_tuning(S=_host_copy(x), sr=sr, bins_per_octave=n_chroma)
    params = _validate.ChromaParams(stft_p, bank_for(n_fft, tuning), norm, dtype)
    return chosen.chroma_stft(x, params)


@backends_doc("chroma_cqt")
@torch_route("chroma_cqt", inputs=("y",))
def chroma_cqt(
    y: Any = None,
    *,
    sr: float = 22050,
    C: Any = None,
    hop_length: int = 512,
    fmin: float | None = None,
    norm: float | None = np.inf,
    threshold: float = 0.0,
    tuning: float | None = None,
    n_chroma: int = 12,
    n_octaves: int = 7,
    window: Any = None,
    bins_per_octave: int | None = 36,
    cqt_mode: str = "full",
    res_type: str | None = "soxr_hq",
    backend: str = "auto",
) -> Any:
    """Chromagram from a constant-Q transform: ``|cqt(y)|`` with ``bins_per_octave`` bins per octave over
    ``n_octaves`` octaves from ``fmin``, folded onto ``n_chroma`` pitch classes, thresholded and normalised.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), float32 or float64, or None
        Signal; used when ``C`` is None.
    sr : float > 0
        Sampling rate in Hz.
    C : ndarray or torch.Tensor, shape (..., n_bins, n_frames), or None
        A constant-Q magnitude spectrogram to fold instead of computing one.
    hop_length : int > 0
        Samples between frames.
    fmin : float or None
        Lowest frequency in Hz; None means C1 (32.70 Hz).
    norm : {inf, -inf, 0, float > 0, None}
        Per-frame normalisation over the pitch classes.
    threshold : float
        Chroma values below this are set to 0 before normalising.
    tuning : float or None
        Tuning in fractions of a constant-Q bin; None estimates it from ``y`` (with ``bins_per_octave`` bins).
    n_chroma : int > 0
        Number of pitch classes.
    n_octaves : int > 0
        Octaves analysed.
    window : ndarray or None
        Optional window convolved across the constant-Q bins of each pitch class.
    bins_per_octave : int or None
        Constant-Q resolution, a multiple of ``n_chroma``; None means ``n_chroma``.
    cqt_mode : {"full"}
        librosa's "hybrid" mode is not offered.
    res_type : str or None
        Resampler of the constant-Q transform (see :func:`specux.vqt`).
    backend : {"auto", "cpu", "cuda", "metal", "opencl"}
        See :func:`specux.backends`. On a device backend the constant-Q transform (as :func:`specux.cqt`
        computes it there: see its ``res_type``), the fold, the threshold and the per-frame norm run as one
        batch of generated kernels; ``tuning=None`` is estimated on the host from host input (a device array
        needs ``tuning`` given).

    Returns
    -------
    ndarray or torch.Tensor, shape (..., n_chroma, n_frames), real
        Same library as the input.

    Notes
    -----
    {backends} Autograd: yes for a torch signal ``y`` (not for a given
    spectrogram): a CPU tensor with ``backend`` "auto" / "cpu" (NumPy adjoints), a CPU tensor with a device
    backend or a CUDA tensor with "cuda" (the device's adjoint kernels: the threshold's and norm's, the
    fold's transpose, the modulus', the vqt's; every device ``res_type``). torch.compile: yes (one graph
    node). See docs/specux/torch.md.
    On a dask array the time axis is cut into slices of whole frames, each read with a halo of the filters'
    and resamplers' reach, so the result is the in-memory one within float rounding (1e-6 with the libsoxr
    qualities: libsoxr's own rounding); ``pad_mode="wrap"`` and a single input chunk keep one time chunk,
    batch chunks map independently, and ``tuning=None`` reads the whole array in one task. A constant-Q
    input ``C`` maps frame by frame. See docs/scale.md.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * np.arange(2 * sr) / sr).astype(np.float32)
    >>> chroma = specux.chroma_cqt(y=y, sr=sr, tuning=0.0)
    >>> chroma.shape, int(chroma.mean(axis=1).argmax())   # pitch class 9 is A
    ((12, 87), 9)
    """
    src = y if C is None else C
    chosen, x = prepare(src, backend, "chroma_cqt", "chroma_cqt")
    if cqt_mode != "full":
        raise ValueError(
            f"chroma_cqt: cqt_mode must be 'full' (the hybrid transform is not offered); got {cqt_mode!r}"
        )
    sr = _validate.positive_float(sr, "sr", "chroma_cqt")
    n_chroma = _validate.positive_int(n_chroma, "n_chroma", "chroma_cqt")
    fmin = _validate.optional_real(fmin, "fmin", "chroma_cqt")
    threshold = _validate.optional_real(threshold, "threshold", "chroma_cqt", finite=False)
    tuning = _validate.optional_real(tuning, "tuning", "chroma_cqt")
    _validate.frame_norm(norm, "chroma_cqt")
    window = check_chroma_window(window, "chroma_cqt")
    if bins_per_octave is None:
        bins_per_octave = n_chroma
    elif _validate.positive_int(bins_per_octave, "bins_per_octave", "chroma_cqt") % n_chroma != 0:
        raise ValueError(
            f"chroma_cqt: bins_per_octave={bins_per_octave} must be an integer multiple of "
            f"n_chroma={n_chroma}"
        )
    if C is None:
        if y is None:
            raise ValueError("chroma_cqt: pass either y (a signal) or C (a constant-Q magnitude spectrogram)")
        n_octaves = _validate.positive_int(n_octaves, "n_octaves", "chroma_cqt")
    if chosen.name != "cpu":  # the transform, the fold, the threshold and the norm in one device batch
        return _dispatch.finish(
            _chroma_cqt_device(
                chosen, x, C is None, sr, hop_length, fmin,
                n_octaves * bins_per_octave if C is None else None, bins_per_octave, n_chroma, tuning,
                res_type, window, threshold, norm,
            ),
            src,
        )
    if C is None:
        mag = np.abs(
            _arrays.to_numpy(
                cqt(
                    _arrays.to_numpy(y),
                    sr=sr,
                    hop_length=hop_length,
                    fmin=fmin,
                    n_bins=n_octaves * bins_per_octave,
                    bins_per_octave=bins_per_octave,
                    tuning=tuning,
                    res_type=res_type,
                )
            )
        )
    else:
        mag = _arrays.to_numpy(C)
    fold = cq_to_chroma(
        mag.shape[-2], bins_per_octave=bins_per_octave, n_chroma=n_chroma, fmin=fmin, window=window
    )
    return _arrays.like(chroma_from_cq(mag, fold, threshold, norm), src)


def _chroma_cqt_device(
    chosen: Any,
    x: Any,
    from_signal: bool,
    sr: float,
    hop_length: int,
    fmin: float | None,
    n_bins: int | None,
    bins_per_octave: int,
    n_chroma: int,
    tuning: float | None,
    res_type: str | None,
    window: Any,
    threshold: float | None,
    norm: Any,
) -> Any:
    """chroma_cqt on a device backend (:func:`specux._runtime.cq_exec.chroma_cqt`): ``|cqt(y)|`` with the
    parameters the cpu path gives :func:`specux.cqt`, or a given magnitude ``C``, folded, thresholded and
    normalised on the device. ``tuning=None`` is estimated on the host from host input, as cqt does."""
    from specux._runtime.cq_exec import ChromaCqtParams
    from specux._spec.cqt import validate_vqt, warn_if_short

    accepted = tuple(sorted(chosen.dtypes & {"float32", "float64"}))
    if from_signal:
        x, vp = validate_vqt(
            x, "chroma_cqt", device=True, sr=sr, hop_length=hop_length, fmin=fmin, n_bins=n_bins,
            intervals="equal", gamma=0, bins_per_octave=bins_per_octave, tuning=tuning, filter_scale=1,
            norm=1, sparsity=0.01, window="hann", scale=True, pad_mode="constant", res_type=res_type,
            dtype=None,
        )
        real = np.finfo(np.dtype(vp.dtype)).dtype.name
        if real not in accepted:
            raise TypeError(
                f"chroma_cqt: backend {chosen.name!r} computes in {', '.join(accepted)}; a {real} signal "
                "needs a device with that precision: pass float32 input or backend='cpu'"
            )
        warn_if_short(x.shape[-1], vp, "chroma_cqt")
    else:
        real = _validate.real_dtype(x, "chroma_cqt", "C", accepted)
        vp, n_bins = None, x.shape[-2]
    fold = cq_to_chroma(n_bins, bins_per_octave=bins_per_octave, n_chroma=n_chroma, fmin=fmin, window=window)
    params = ChromaCqtParams(vp, fold, threshold, None if norm is None else float(norm))
    out = chosen.chroma_cqt(_dispatch.cast_host(x, real), params)
    # the cpu (and librosa) promote to the fold's precision: a float64 window gives a float64 chromagram
    return _dispatch.cast_host(out, np.result_type(fold.dtype, real).name)


def _check_real_signal(y: Any, public: str) -> None:
    dtype = np.dtype(_arrays.real_dtype_name(y)) if hasattr(y, "dtype") else np.asarray(y).dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"{public}: y must be float32 or float64; got dtype {dtype}")
