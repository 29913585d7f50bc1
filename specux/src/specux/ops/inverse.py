"""Phase retrieval and the feature inversions: griffinlim (librosa.griffinlim) and librosa.feature.inverse's
mel_to_stft, mel_to_audio, mfcc_to_mel and mfcc_to_audio."""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any

import numpy as np
import scipy.fft
import scipy.optimize

from specux import _arrays, _phase_retrieval, _validate
from specux._backends import registry
from specux.errors import UnsupportedOperationError, user_stacklevel
from specux.ops.stft import istft, stft

__all__ = ["griffinlim", "mel_to_audio", "mel_to_stft", "mfcc_to_audio", "mfcc_to_mel"]

_BACKENDS_LINE = (
    "Backends: ``cpu``, and every backend that serves :func:`specux.stft` and :func:`specux.istft` "
    "(``cuda``, ``metal``, ``opencl``), through them."
)


def _magnitudes(S: Any, public: str, name: str = "S") -> str:
    """Check a real (..., bins, frames) input and return its precision."""
    if not (_arrays.is_torch(S) or _arrays.is_cupy(S) or isinstance(S, np.ndarray)):
        raise TypeError(f"{public}: {name} must be a numpy array or a torch tensor; got {type(S).__name__}")
    precision = _validate.real_dtype(S, public, name)
    _validate.nonempty(tuple(S.shape), public, name, min_ndim=2)
    return precision


def _refuse_grad(x: Any, public: str, why: str) -> None:
    if _arrays.is_torch(x) and x.requires_grad and sys.modules["torch"].is_grad_enabled():
        raise UnsupportedOperationError(
            f"specux.{public}: no gradient ({why}); pass x.detach() or call it under torch.no_grad()"
        )


# --- griffinlim
# ------------------------------------------------------------------------------------------------


def _fast_cpu_loop(
    S: np.ndarray, angles: np.ndarray, ip: Any, sp: Any, n_iter: int, momentum: float, eps: float
) -> np.ndarray:
    """:func:`specux._phase_retrieval.fast_griffin_lim` on the cpu backend's own stft / istft, with the
    momentum and the projection fused into the stft.

    Both transforms run with parameters resolved once (no validation or dispatch per iteration), and the
    spectra stay in the layout the stft writes, (frames, bins) contiguous, which the istft reads through a
    transposed view without a copy. The stft hands over each block of spectra while it is in cache
    (:func:`specux._backends.cpu.stft.spectrum_blocks`), and the update ``X = S * A / (|A| + eps)``,
    ``A = R - c R_prev`` is done there, on the pool's threads: done as whole-array passes after the stft it
    cost about as much as the stft and istft together (5.5 ms of 11.6 per iteration for 5 s at 22.05 kHz in
    float32 on a 2-core Zen 3).
    The operations and their order are those of the loop, so the numbers are the same.
    """
    from specux._backends.cpu.stft import _istft_numpy, spectrum_blocks

    F, T = S.shape[-2:]
    S_tf = np.ascontiguousarray(S.reshape(-1, F, T).swapaxes(-1, -2))
    X = np.ascontiguousarray(angles.reshape(-1, F, T).swapaxes(-1, -2))
    X *= S_tf
    c = momentum / (1 + momentum)
    rdtype = np.result_type(sp.dtype, np.complex64)
    rebuilt = np.empty(X.shape, dtype=rdtype)
    tprev = np.empty(X.shape, dtype=rdtype)
    for i in range(n_iter):
        y = _istft_numpy(X.swapaxes(-1, -2), ip)
        first = i == 0

        def update(b: int, t0: int, R: np.ndarray, first: bool = first, tprev: np.ndarray = tprev) -> None:
            t1 = t0 + R.shape[0]
            x = X[b, t0:t1]
            if first:
                x[...] = R
            else:
                np.multiply(tprev[b, t0:t1], -c, out=x)
                x += R
            mag = np.abs(x)
            mag += eps
            x /= mag
            x *= S_tf[b, t0:t1]

        spectrum_blocks(y, sp, update, out=rebuilt)
        rebuilt, tprev = tprev, rebuilt
    return _istft_numpy(X.swapaxes(-1, -2), ip).reshape((*S.shape[:-2], ip.out_length))


def griffinlim(
    S: Any,
    *,
    n_iter: int = 32,
    hop_length: int | None = None,
    win_length: int | None = None,
    n_fft: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    length: int | None = None,
    pad_mode: str = "constant",
    momentum: float = 0.99,
    init: str | None = "random",
    random_state: Any = None,
    backend: str = "auto",
) -> Any:
    """Signal from a magnitude spectrogram by fast Griffin-Lim (librosa.griffinlim).

    Starting from ``S`` with random (or zero) phases, each iteration inverts the current estimate with
    :func:`istft`, transforms the signal back with :func:`stft`, extrapolates with ``momentum``
    (Perraudin et al., 2013) and puts the magnitudes ``S`` back; the last estimate is inverted. The loop is
    librosa's, step for step, so the same ``random_state`` gives librosa's result: within 1e-12 relative in
    float64; float32 rounding grows over the iterations (about 1e-4 of the peak after 32).

    Parameters
    ----------
    S : array, shape (..., 1 + n_fft // 2, n_frames), float32 or float64
        Magnitudes (not power) of an stft. numpy array or torch tensor.
    n_iter : int
        Iterations (>= 0).
    hop_length, win_length, window, center, pad_mode
        As in :func:`stft` / :func:`istft` (``hop_length=None``: ``win_length // 4``; ``win_length=None``:
        ``n_fft``).
    n_fft : int or None
        ``None``: ``2 * (S.shape[-2] - 1)``.
    dtype : numpy dtype or None
        Real dtype of the signal; ``None``: ``S``'s.
    length : int or None
        Samples of the signal (zero-padded or cut), also inside the loop as librosa does. ``None``: what the
        frames cover minus the centre padding.
    momentum : float
        >= 0; 0 is the original Griffin-Lim; above 1 warns (may diverge).
    init : {"random", None}
        Start phases: uniform random, or zero (``None``).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Seed of the random start, as librosa reads it (an int seeds a ``RandomState``).
    backend : str
        The backend of every stft / istft: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"``, ``"opencl"``.

    Returns
    -------
    array, shape (..., length)
        Real, the library of ``S``.

    See Also
    --------
    specux.mel_to_audio : mel spectrogram to signal (NNLS, then this).
    specux.torch.GriffinLim : torchaudio's module.

    Notes
    -----
    {backends} Autograd / torch.compile: yes for torch CPU tensors (through the stft / istft ops; the random
    start is a constant).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.sin(2 * np.pi * 440 * np.arange(8000) / 8000).astype(np.float32)
    >>> S = np.abs(specux.stft(y, n_fft=512))
    >>> y_hat = specux.griffinlim(S, n_fft=512, length=8000, random_state=0)
    >>> y_hat.shape, y_hat.dtype
    ((8000,), dtype('float32'))
    """
    public = "griffinlim"
    precision = _magnitudes(S, public)
    n_iter = _validate.positive_int(n_iter, "n_iter", public, minimum=0)
    momentum = _phase_retrieval.momentum_value(momentum, public)
    if not (init is None or (isinstance(init, str) and init == "random")):
        raise ValueError(f"{public}: init must be 'random' or None; got {init!r}")
    rng = _phase_retrieval.resolve_rng(random_state, public)
    out_precision = _validate.real_dtype(S, public, "S", override=dtype)
    ip = _validate.istft_params(
        tuple(S.shape),
        out_precision,
        hop_length=hop_length,
        win_length=win_length,
        n_fft=n_fft,
        window=window,
        center=center,
        length=length,
        nola="ignore",
        public=public,
    )
    # the stft of the signal must give S's frames back (librosa fails inside its loop otherwise)
    padded = ip.out_length + 2 * (ip.n_fft // 2) if ip.center else ip.out_length
    frames = 1 + (padded - ip.n_fft) // ip.hop_length if padded >= ip.n_fft else 0
    if frames != S.shape[-1]:
        raise ValueError(
            f"{public}: length={length} gives {frames} frames, but S has {S.shape[-1]}; give the length "
            "of the signal S came from, or None"
        )
    sp = _validate.stft_params(
        (*tuple(S.shape[:-2]), ip.out_length),
        out_precision,
        n_fft=ip.n_fft,
        hop_length=ip.hop_length,
        win_length=ip.win_length,
        window=window,
        center=ip.center,
        pad_mode=pad_mode,
        output="complex",
        public=public,
    )
    cdtype = np.result_type(precision, np.complex64)
    angles = _phase_retrieval.initial_angles(tuple(S.shape), cdtype, init, rng, public)
    eps = float(np.finfo(precision).tiny)  # librosa's util.tiny of the complex angles
    stft_kw = {
        "n_fft": ip.n_fft,
        "hop_length": ip.hop_length,
        "win_length": ip.win_length,
        "window": window,
        "center": ip.center,
    }
    if isinstance(S, np.ndarray) and backend in ("auto", "cpu"):
        chosen = registry.select(S, backend, "istft", f"specux.{public}")
        if chosen.name == "cpu":
            return _fast_cpu_loop(np.asarray(S), angles, ip, sp, n_iter, momentum, eps)
    if _arrays.is_torch(S):
        torch = sys.modules["torch"]
        angles = torch.from_numpy(angles).to(S.device)
    elif _arrays.is_cupy(S):
        angles = sys.modules["cupy"].asarray(angles)
    out_dtype = None if dtype is None else out_precision

    def inverse(X: Any) -> Any:
        return istft(X, **stft_kw, length=length, dtype=out_dtype, backend=backend)

    def rebuild(X: Any) -> Any:
        return stft(inverse(X), **stft_kw, pad_mode=pad_mode, backend=backend)

    X = _phase_retrieval.fast_griffin_lim(
        S, angles, n_iter=n_iter, momentum=momentum, rebuild=rebuild, eps=eps
    )
    return inverse(X)


griffinlim.__doc__ = (griffinlim.__doc__ or "").replace("{backends}", _BACKENDS_LINE)


# --- librosa.feature.inverse
# ------------------------------------------------------------------------------------

#: librosa.util.MAX_MEM_BLOCK: the bytes of one block of columns that librosa's NNLS solves at a time
_NNLS_BLOCK_BYTES = 2**8 * 2**10
_MEL_KWARGS = ("fmin", "fmax", "htk", "norm")


def _mel_kwargs(mel_kwargs: dict[str, Any], public: str) -> dict[str, Any]:
    unknown = sorted(set(mel_kwargs) - set(_MEL_KWARGS))
    if unknown:
        raise TypeError(
            f"{public}: unknown mel filter bank argument(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(_MEL_KWARGS)}"
        )
    return mel_kwargs


def _nnls_objective(x: np.ndarray, shape: tuple[int, ...], A: np.ndarray, B: np.ndarray) -> tuple:
    """librosa's objective: ``0.5 / B.size * ||A x - B||^2`` and its gradient (flat, float64)."""
    x = x.reshape(shape)
    diff = np.matmul(A, x) - B
    scale = 1 / B.size
    return scale * 0.5 * np.sum(diff**2), (scale * np.matmul(A.T, diff)).reshape(-1)


def _nnls_block(A: np.ndarray, B: np.ndarray, x_init: np.ndarray) -> np.ndarray:
    """L-BFGS-B on one block of columns, bounded below by 0, from ``x_init``, with librosa's settings
    (history of ``A.shape[1]`` updates, scipy's default stopping rules)."""
    shape = x_init.shape
    x, _, _ = scipy.optimize.fmin_l_bfgs_b(
        _nnls_objective,
        x_init,
        args=(shape, A, B),
        bounds=[(0, None)] * x_init.size,
        m=A.shape[1],
    )
    return x.reshape(shape)


@functools.lru_cache(maxsize=8)
def _pinv_of(shape: tuple[int, ...], dtype: str, data: bytes) -> np.ndarray:
    out = np.linalg.pinv(np.frombuffer(data, dtype=dtype).reshape(shape))
    out.flags.writeable = False
    return out


def _pinv(A: np.ndarray) -> np.ndarray:
    """``np.linalg.pinv(A)``, memoised for the last few banks (its SVD was a quarter of the time for 2 s of
    128 bands; the banks are cached too, so the same bank comes back), read-only."""
    return _pinv_of(A.shape, A.dtype.str, A.tobytes())


def _nnls(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``min ||A X - B||, X >= 0`` column block by column block, as
    librosa.util.nnls solves it: the clipped pseudo-inverse solution as the start, then bounded L-BFGS on
    blocks of columns of :data:`_NNLS_BLOCK_BYTES` (the objective's scale, and so where the optimiser
    stops, depends on the block, which is why the blocks are librosa's)."""
    x = np.matmul(_pinv(A), B)
    np.clip(x, 0, None, out=x)
    n_columns = max(1, int(_NNLS_BLOCK_BYTES // (int(np.prod(B.shape[:-1])) * A.itemsize)))
    if B.shape[-1] <= n_columns:
        return _nnls_block(A, B, x).astype(A.dtype)
    for s in range(0, B.shape[-1], n_columns):
        e = min(s + n_columns, B.shape[-1])
        x[..., s:e] = _nnls_block(A, B[..., s:e], np.ascontiguousarray(x[..., s:e]))
    return x


def mel_to_stft(
    M: Any, *, sr: float = 22050, n_fft: int = 2048, power: float = 2.0, **mel_kwargs: Any
) -> Any:
    """Approximate STFT magnitudes from a mel spectrogram (librosa.feature.inverse.mel_to_stft).

    Solves ``min ||mel @ X - M||^2`` over ``X >= 0`` (non-negative least squares on the mel basis
    :func:`specux.filters.mel`) and returns ``X ** (1 / power)``. The solver is librosa's: bounded L-BFGS
    (scipy's L-BFGS-B) from the clipped pseudo-inverse solution, on librosa's blocks of frames, with its
    settings. Since the system is underdetermined where bands are wider than a bin, the optimiser's path
    decides among the equally good solutions; ours differs from librosa's only in rounding (matrix products
    instead of einsum, a float64 basis cast to float32), measured at 2e-6 of the peak for a 2 s float32 clip
    (see docs/specux/inverses.md); the fit ``mel @ X`` agrees far closer.

    Parameters
    ----------
    M : array, shape (..., n_mels, n_frames), float32 or float64
        Mel spectrogram (power ``power``), as :func:`melspectrogram` returns it.
    sr : float
        Sampling rate, Hz.
    n_fft : int
        FFT length of the STFT to estimate.
    power : float
        Exponent ``M`` was computed with (2: power, 1: magnitude), > 0.
    **mel_kwargs
        The mel basis: ``fmin``, ``fmax``, ``htk``, ``norm`` (:func:`specux.filters.mel`; its dtype is
        ``M``'s).

    Returns
    -------
    array, shape (..., 1 + n_fft // 2, n_frames)
        Magnitudes, ``M``'s dtype and library.

    See Also
    --------
    specux.mel_to_audio : this, then :func:`griffinlim`.
    specux.torch.InverseMelScale : torchaudio's least-squares inverse.

    Notes
    -----
    Backends: cpu (a torch CPU tensor is solved on its numpy view). Autograd: no (refused for a tensor that
    requires grad).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    >>> M = specux.melspectrogram(y, sr=8000, n_fft=256, n_mels=32)
    >>> specux.mel_to_stft(M, sr=8000, n_fft=256).shape
    (129, 9)
    """
    public = "mel_to_stft"
    _magnitudes(M, public, "M")
    _refuse_grad(M, public, "the non-negative least squares solver runs on numpy")
    if _arrays.is_cupy(M) or (_arrays.is_torch(M) and M.device.type != "cpu"):
        raise UnsupportedOperationError(f"specux.{public}: runs on the cpu; M is on {_arrays.device_kind(M)}")
    sr = _validate.positive_float(sr, "sr", public)
    n_fft = _validate.positive_int(n_fft, "n_fft", public)
    power = _validate.positive_float(power, "power", public)
    kw = _mel_kwargs(mel_kwargs, public)
    from specux.filters import mel

    x = _arrays.to_numpy(M) if _arrays.is_torch(M) else np.asarray(M)
    basis = np.array(mel(sr=sr, n_fft=n_fft, n_mels=x.shape[-2], dtype=x.dtype, **kw))
    inverse = _nnls(basis, x)
    np.power(inverse, 1.0 / power, out=inverse)
    return _arrays.like(inverse, M)


def mel_to_audio(
    M: Any,
    *,
    sr: float = 22050,
    n_fft: int = 2048,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    power: float = 2.0,
    n_iter: int = 32,
    length: int | None = None,
    dtype: Any = np.float32,
    backend: str = "auto",
    **mel_kwargs: Any,
) -> Any:
    """Signal from a mel spectrogram: :func:`mel_to_stft`, then :func:`griffinlim`
    (librosa.feature.inverse.mel_to_audio).

    Parameters
    ----------
    M : array, shape (..., n_mels, n_frames), float32 or float64
        Mel spectrogram (power ``power``).
    sr, n_fft, power, **mel_kwargs
        As in :func:`mel_to_stft`.
    hop_length, win_length, window, center, pad_mode, n_iter, length
        As in :func:`griffinlim` (its random start is unseeded, as librosa's here).
    dtype : numpy dtype
        Real dtype of the signal (librosa: float32).
    backend : str
        The backend of the Griffin-Lim iterations (see :func:`griffinlim`).

    Returns
    -------
    array, shape (..., length)
        The signal, in ``M``'s library.

    See Also
    --------
    specux.mel_to_stft, specux.griffinlim, specux.mfcc_to_audio

    Notes
    -----
    Backends: the NNLS on cpu; Griffin-Lim as :func:`griffinlim`. Autograd: no.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    >>> M = specux.melspectrogram(y, sr=8000, n_fft=256, hop_length=64, n_mels=32)
    >>> specux.mel_to_audio(M, sr=8000, n_fft=256, hop_length=64, length=4096).shape
    (4096,)
    """
    S = mel_to_stft(M, sr=sr, n_fft=n_fft, power=power, **_mel_kwargs(mel_kwargs, "mel_to_audio"))
    return griffinlim(
        S,
        n_iter=n_iter,
        hop_length=hop_length,
        win_length=win_length,
        n_fft=n_fft,
        window=window,
        center=center,
        dtype=dtype,
        length=length,
        pad_mode=pad_mode,
        backend=backend,
    )


def _lifter_sine(n_mfcc: int, lifter: float, dtype: Any) -> np.ndarray:
    """librosa's inverse lifter weights ``1 + (lifter / 2) sin(pi k / lifter)``, k = 1..n_mfcc, a column."""
    idx = np.arange(1, 1 + n_mfcc, dtype=dtype)
    sine = 1 + lifter * 0.5 * np.sin(np.pi * idx / lifter)
    if np.any(np.abs(sine) < np.finfo(sine.dtype).eps):
        warnings.warn(
            "mfcc_to_mel: the lifter has weights near zero (lifter / 2 sin(pi k / lifter) close to -1); "
            "dividing by them may overflow",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return sine[:, None]


def mfcc_to_mel(
    mfcc: Any,
    *,
    n_mels: int = 128,
    dct_type: int = 2,
    norm: str | None = "ortho",
    ref: float = 1.0,
    lifter: float = 0,
) -> Any:
    """Approximate mel power spectrogram from MFCCs (librosa.feature.inverse.mfcc_to_mel).

    Undoes the lifter (``lifter > 0``: coefficient ``k`` divided by ``1 + (lifter / 2) sin(pi k / lifter)``),
    takes the inverse DCT along the coefficients, zero-padded to ``n_mels``, and maps dB to power
    (:func:`db_to_power`). What :func:`mfcc` dropped (the ``top_db`` floor, coefficients past ``n_mfcc``)
    is not recovered.

    Parameters
    ----------
    mfcc : array, shape (..., n_mfcc, n_frames), float32 or float64
        As :func:`mfcc` returns them. numpy array or torch tensor.
    n_mels : int
        Mel bands to recover.
    dct_type : {1, 2, 3}
        The DCT type :func:`mfcc` used.
    norm : {None, "ortho"}
        The DCT normalisation.
    ref : float
        Power of 0 dB.
    lifter : float
        The lifter :func:`mfcc` used (>= 0; 0: none).

    Returns
    -------
    array, shape (..., n_mels, n_frames)
        Mel power, ``mfcc``'s dtype and library.

    See Also
    --------
    specux.mfcc_to_audio, specux.mel_to_stft

    Notes
    -----
    Backends: cpu (numpy and torch CPU tensors; torch CUDA tensors in torch ops). Autograd / torch.compile:
    yes for torch tensors (a matrix product and an exponential, in torch ops).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(8000).astype(np.float32)
    >>> C = specux.mfcc(y, sr=8000, n_mfcc=20, n_fft=256, n_mels=40)
    >>> specux.mfcc_to_mel(C, n_mels=40).shape
    (40, 16)
    """
    public = "mfcc_to_mel"
    _magnitudes(mfcc, public, "mfcc")
    n_mels = _validate.positive_int(n_mels, "n_mels", public)
    dct_type = _validate.choice(dct_type, "dct_type", public, (1, 2, 3))
    _validate.choice(norm, "norm", public, (None, "ortho"))
    ref = _validate.real(ref, "ref", public)
    lifter = _validate.real(lifter, "lifter", public)
    if lifter < 0:
        raise ValueError(f"{public}: lifter must be >= 0; got {lifter!r}")
    n_mfcc = mfcc.shape[-2]
    if _arrays.is_torch(mfcc):
        torch = sys.modules["torch"]
        np_dtype = np.dtype(_arrays.real_dtype_name(mfcc))
        x = mfcc
        if lifter > 0:
            sine = torch.from_numpy(_lifter_sine(n_mfcc, lifter, np_dtype)).to(mfcc.device)
            x = x / (sine + float(np.finfo(np_dtype).tiny))
        # the inverse DCT as its matrix (n_mels, n_mfcc): scipy's idct of the zero-padded unit vectors
        K = scipy.fft.idct(np.eye(n_mfcc, dtype=np.float64), type=dct_type, norm=norm, n=n_mels, axis=0)
        logmel = torch.matmul(torch.from_numpy(K.astype(np_dtype)).to(mfcc.device), x)
        return ref * torch.pow(10.0, 0.1 * logmel)
    if _arrays.is_cupy(mfcc):
        raise UnsupportedOperationError(f"specux.{public}: cupy arrays are not served; pass numpy or torch")
    x = np.asarray(mfcc)
    if lifter > 0:
        x = x / (_lifter_sine(n_mfcc, lifter, x.dtype) + np.finfo(x.dtype).tiny)
    logmel = scipy.fft.idct(x, axis=-2, type=dct_type, norm=norm, n=n_mels)
    return ref * np.power(10.0, 0.1 * logmel)


def mfcc_to_audio(
    mfcc: Any,
    *,
    n_mels: int = 128,
    dct_type: int = 2,
    norm: str | None = "ortho",
    ref: float = 1.0,
    lifter: float = 0,
    **kwargs: Any,
) -> Any:
    """Signal from MFCCs: :func:`mfcc_to_mel`, then :func:`mel_to_audio`
    (librosa.feature.inverse.mfcc_to_audio).

    Parameters
    ----------
    mfcc : array, shape (..., n_mfcc, n_frames), float32 or float64
        As :func:`mfcc` returns them.
    n_mels, dct_type, norm, ref, lifter
        As in :func:`mfcc_to_mel`.
    **kwargs
        Those of :func:`mel_to_audio` (``sr``, ``n_fft``, ``hop_length``, ``n_iter``, ``length``, ``backend``,
        the mel basis ...).

    Returns
    -------
    array, shape (..., length)
        The signal, in ``mfcc``'s library.

    See Also
    --------
    specux.mfcc_to_mel, specux.mel_to_audio

    Notes
    -----
    Backends and autograd: as :func:`mel_to_audio`.

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    >>> C = specux.mfcc(y, sr=8000, n_mfcc=20, n_fft=256, hop_length=64, n_mels=32)
    >>> specux.mfcc_to_audio(C, n_mels=32, sr=8000, n_fft=256, hop_length=64, length=4096).shape
    (4096,)
    """
    mel_spec = mfcc_to_mel(mfcc, n_mels=n_mels, dct_type=dct_type, norm=norm, ref=ref, lifter=lifter)
    return mel_to_audio(mel_spec, **kwargs)
