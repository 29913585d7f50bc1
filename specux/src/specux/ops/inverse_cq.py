"""Inverse constant-Q transform (``specux.icqt``) and constant-Q phase retrieval (``specux.griffinlim_cqt``).

The fronts validate (:func:`validate_icqt`) and dispatch; the CPU kernel, librosa 0.11's ``icqt`` as one
matrix product and an overlap-add per octave, is :func:`specux._backends.cpu.icqt.icqt_cpu` (its module says
how), the device backends' is :mod:`specux._runtime.icq_exec`. ``docs/specux/constant-q.md`` ("Inverse")
gives the measured agreement with librosa.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _arrays, _validate
from specux._backend_doc import backends_doc
from specux._backends.cpu.icqt import icqt_cpu
from specux._dispatch import cast_host, finish, prepare
from specux._spec.icqt import validate_icqt
from specux._torch_hook import torch_route

__all__ = ["griffinlim_cqt", "icqt"]


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
    from specux import _phase_retrieval
    from specux._backends.cpu.cqt import vqt_cpu
    from specux._spec.cqt import validate_vqt

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
