"""Mel spectrogram (librosa.feature.melspectrogram), with a torchaudio-compatible preset."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux import _dispatch, _memory, _validate
from specux._backend_doc import backends_doc
from specux._filters.mel import mel as mel_bank
from specux._filters.mel import mel_torchaudio
from specux._torch_hook import torch_route
from specux._validate import MelParams
from specux.ops.stft import stft_validate

__all__ = ["melspectrogram"]

COMPATS = (None, "torchaudio")
#: defaults that ``compat`` changes (``None`` in the public signatures resolves to these)
DEFAULTS = {
    None: {"sr": 22050, "n_fft": 2048, "pad_mode": "constant", "htk": False, "norm": "slaney", "n_mfcc": 20},
    "torchaudio": {"sr": 16000, "n_fft": 400, "pad_mode": "reflect", "htk": True, "norm": None, "n_mfcc": 40},
}


def resolve(compat: str | None, name: str, value: Any) -> Any:
    """``value``, or the default of ``name`` under ``compat`` when ``value`` is None ("auto" for norm)."""
    _validate.choice(compat, "compat", "melspectrogram", COMPATS)
    if name == "norm":  # None is a real choice for norm (no normalisation); "auto" is the derived default
        return DEFAULTS[compat][name] if isinstance(value, str) and value == "auto" else value
    return DEFAULTS[compat][name] if value is None else value


def mel_validate(
    x: Any,
    *,
    from_spectrogram: bool,
    sr: float | None,
    n_fft: int | None,
    hop_length: int | None,
    win_length: int | None,
    window: Any,
    center: bool,
    pad_mode: str | None,
    power: float,
    n_mels: int,
    fmin: float,
    fmax: float | None,
    htk: bool | None,
    norm: Any,
    compat: str | None,
    accepted: tuple[str, ...] = _validate.CPU_DTYPES,
    public: str = "melspectrogram",
    norm_name: str = "norm",
    frame_items: int = 0,
) -> MelParams:
    """Validate melspectrogram arguments (``x`` is y, or S when ``from_spectrogram``) and resolve defaults.

    ``frame_items``: real values per frame and signal that the caller keeps besides the bands (mfcc's
    logarithm and coefficients), for the memory guard.
    """
    sr = _validate.positive_float(resolve(compat, "sr", sr), "sr", public)
    power = _validate.positive_float(power, "power", public)
    htk = resolve(compat, "htk", _validate.optional_flag(htk, "htk", public))
    norm = resolve(compat, "norm", _validate.mel_norm(norm, norm_name, public))
    fmin = _validate.real(fmin, "fmin", public)
    fmax = _validate.optional_real(fmax, "fmax", public)
    n_mels = _validate.positive_int(n_mels, "n_mels", public)
    if from_spectrogram:
        dtype = _validate.real_dtype(x, public, "S", accepted)
        _validate.nonempty(tuple(x.shape), public, "S", min_ndim=2)
        n_fft_s = 2 * (x.shape[-2] - 1)
        if n_fft is not None and n_fft != n_fft_s:
            raise ValueError(
                f"{public}: S has {x.shape[-2]} frequency bins, which means n_fft={n_fft_s}; "
                f"got n_fft={n_fft}"
            )
        n_fft, stft_p = n_fft_s, None
        if n_fft < 1:
            raise ValueError(f"{public}: S must have at least 2 frequency bins; got shape {tuple(x.shape)}")
        item = np.dtype(dtype).itemsize
        _memory.check(
            _memory.product(x.shape[:-2]) * x.shape[-1] * (n_mels + frame_items) * item
            + _bank_bytes(n_mels, n_fft, item),
            public=public,
            parameter="n_mels",
            value=n_mels,
            detail=f"{n_mels} bands of {x.shape[-1]} frames for S of shape {tuple(x.shape)}",
        )
    else:
        n_fft = resolve(compat, "n_fft", n_fft)
        if hop_length is None:
            if compat == "torchaudio":
                win = n_fft if win_length is None else win_length
                hop_length = max(_validate.positive_int(win, "win_length", public) // 2, 1)
            else:
                hop_length = 512
        n_fft_checked = _validate.positive_int(n_fft, "n_fft", public)
        item = np.dtype(_validate.real_dtype(x, public, "y", accepted)).itemsize
        _check_bank(n_mels, "n_mels", n_fft_checked, item, public)
        stft_p = stft_validate(
            x,
            n_fft=n_fft,
            hop_length=hop_length,
            win_length=win_length,
            window=window,
            center=center,
            pad_mode=resolve(compat, "pad_mode", pad_mode),
            output="complex",
            accepted=accepted,
            public=public,
            # the bands of every frame, and the bank (kept in float64, cast and transposed)
            frame_items=n_mels + frame_items,
            extra_bytes=_bank_bytes(n_mels, n_fft_checked, item),
        )
        dtype = stft_p.dtype
    if compat == "torchaudio":
        if sr != int(sr):
            raise ValueError(f"{public}: compat='torchaudio' needs an integer sr; got {sr}")
        basis = mel_torchaudio(
            sr=int(sr), n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=htk, norm=norm
        )
    else:
        basis = mel_bank(
            sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=htk, norm=norm, dtype=np.float64
        )
    return MelParams(stft_p, power, basis, dtype)


def _bank_bytes(n_bands: int, n_fft: int, itemsize: int) -> int:
    """Bytes of a filter bank of ``n_bands`` rows over ``1 + n_fft // 2`` bins as the transforms keep it:
    float64, plus a cast and a transposed copy in the computing precision."""
    return n_bands * (n_fft // 2 + 1) * (8 + 2 * itemsize)


def _check_bank(n_bands: int, name: str, n_fft: int, itemsize: int, public: str) -> None:
    """The memory guard of the bank alone, so that a bank too large for memory is blamed on its size (the
    stft's guard counts it again with the frames)."""
    _memory.check(
        _bank_bytes(n_bands, n_fft, itemsize),
        public=public,
        parameter=name,
        subject=f"a bank of {name}={n_bands} filters over the {n_fft // 2 + 1} bins of n_fft={n_fft}",
        advice=f"use fewer {name} or a smaller n_fft",
    )


@backends_doc("melspectrogram")
@torch_route("melspectrogram", inputs=("y", "S"))
def melspectrogram(
    y: Any = None,
    *,
    sr: float | None = None,
    S: Any = None,
    n_fft: int | None = None,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str | None = None,
    power: float = 2.0,
    n_mels: int = 128,
    fmin: float = 0.0,
    fmax: float | None = None,
    htk: bool | None = None,
    norm: str | float | None = "auto",
    compat: str | None = None,
    backend: str = "auto",
) -> Any:
    """Mel spectrogram: ``mel_basis @ |stft(y)| ** power`` (librosa.feature.melspectrogram).

    Parameters
    ----------
    y : array, shape (..., L), float32 or float64, optional
        Signal(s); leading dimensions are batch dimensions. Give ``y`` or ``S``.
    sr : float or None
        Sampling rate, Hz. ``None``: 22050 (16000 with ``compat="torchaudio"``).
    S : array, shape (..., 1 + n_fft // 2, T), optional
        A magnitude / power spectrogram to use instead of ``y`` (``n_fft`` is then ``2 * (S.shape[-2] - 1)``).
    n_fft : int or None
        ``None``: 2048 (400 with ``compat="torchaudio"``).
    hop_length : int or None
        ``None``: 512 (``win_length // 2`` with ``compat="torchaudio"``).
    win_length, window, center
        As in :func:`specux.stft`.
    pad_mode : str or None
        ``None``: ``"constant"`` (``"reflect"`` with ``compat="torchaudio"``).
    power : float
        Exponent of the magnitude (1: energy, 2: power).
    n_mels : int
        Number of mel bands.
    fmin, fmax : float, Hz
        Band edges. ``fmax=None``: ``sr / 2`` (``sr // 2`` with ``compat="torchaudio"``); above ``sr / 2`` is
        an error.
    htk : bool or None
        HTK mel scale. ``None``: False (True with ``compat="torchaudio"``).
    norm : "auto", "slaney", float or None
        Filter normalisation (see :func:`specux.filters.mel`). ``"auto"``: ``"slaney"`` (``None`` with
        ``compat="torchaudio"``).
    compat : None or "torchaudio"
        ``"torchaudio"``: torchaudio.transforms.MelSpectrogram's defaults and its filter bank (bins at
        ``linspace(0, sr // 2)``, float32 arithmetic; see :func:`specux.filters.mel_torchaudio`).
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape (..., n_mels, T)
        Real, of the input's precision, same library as the input. Mel filters that cover no FFT bin give an
        :class:`specux.EmptyFilterWarning` (and rows of zeros), as in librosa and torchaudio.

    {backends} Autograd / torch.compile: yes for torch CPU tensors
    (the specux custom ops; see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(22050).astype(np.float32)
    >>> specux.melspectrogram(y=y, sr=22050, n_mels=64).shape
    (64, 44)
    >>> specux.melspectrogram(y=y, sr=16000, n_mels=64, compat="torchaudio").shape   # n_fft 400, hop 200
    (64, 111)
    """
    if (y is None) == (S is None):
        raise ValueError("melspectrogram: give exactly one of y (signal) or S (spectrogram)")
    x = y if S is None else S
    chosen, xb = _dispatch.prepare(x, backend, "melspectrogram", "melspectrogram")
    p = mel_validate(
        xb,
        from_spectrogram=S is not None,
        sr=sr,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        power=power,
        n_mels=n_mels,
        fmin=fmin,
        fmax=fmax,
        htk=htk,
        norm=norm,
        compat=compat,
        accepted=tuple(sorted(chosen.dtypes)),
    )
    return _dispatch.finish(chosen.melspectrogram(_dispatch.cast_host(xb, p.dtype), p), x)
