"""melspectrogram, mfcc and lfcc arguments -> :class:`specux._validate.MelParams` /
:class:`~specux._validate.CepstralParams`, with the defaults that ``compat`` changes and the DCT matrix."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.fft

from specux import _memory, _validate
from specux._filters.linear import linear as linear_bank
from specux._filters.mel import mel as mel_bank
from specux._filters.mel import mel_torchaudio
from specux._spec.stft import stft_validate
from specux._validate import (
    CepstralParams,
    MelParams,
)

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


DCT_TYPES = (1, 2, 3)


DCT_NORMS = (None, "ortho")


@functools.lru_cache(maxsize=32)
def dct_matrix(n_out: int, n_in: int, dct_type: int, norm: str | None, lifter: float) -> np.ndarray:
    """(n_out, n_in) matrix applying scipy's DCT along an axis of length ``n_in``, keeping ``n_out``
    coefficients, each row ``k`` (1-based) times the lifter ``1 + (lifter / 2) sin(pi k / lifter)``."""
    D = scipy.fft.dct(np.eye(n_in), type=dct_type, norm=norm, axis=0)[:n_out]
    if lifter > 0:
        D = D * (1.0 + (lifter / 2.0) * np.sin(np.pi * np.arange(1, n_out + 1) / lifter))[:, None]
    D.flags.writeable = False
    return D


def _dct_args(dct_type: int, norm: str | None, public: str) -> None:
    _validate.choice(dct_type, "dct_type", public, DCT_TYPES)
    _validate.choice(norm, "norm", public, DCT_NORMS)


def mfcc_validate(
    xb: Any,
    *,
    from_spectrogram: bool,
    sr: float | None,
    n_mfcc: int | None,
    dct_type: int,
    norm: str | None,
    lifter: float,
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
    mel_norm: Any,
    top_db: float | None,
    compat: str | None,
    accepted: tuple[str, ...] = _validate.CPU_DTYPES,
) -> CepstralParams:
    """Validate mfcc arguments (``xb`` is y, or S when ``from_spectrogram``) and resolve the defaults."""
    n_mfcc = _validate.positive_int(resolve(compat, "n_mfcc", n_mfcc), "n_mfcc", "mfcc")
    _dct_args(dct_type, norm, "mfcc")
    lifter = _validate.real(lifter, "lifter", "mfcc", finite=False)
    if not lifter >= 0:
        raise ValueError(f"mfcc: lifter must be a non-negative number; got {lifter}")
    top_db = _validate.optional_real(top_db, "top_db", "mfcc", finite=False)
    if top_db is not None and not top_db >= 0:
        raise ValueError(f"mfcc: top_db must be non-negative or None; got {top_db}")
    if from_spectrogram:
        dtype = _validate.real_dtype(xb, "mfcc", "S", accepted)
        _validate.nonempty(tuple(xb.shape), "mfcc", "S", min_ndim=2)
        n_bands = xb.shape[-2]
        mel_p = MelParams(None, 2.0, np.eye(n_bands), dtype)
        log = "none"
    else:
        mel_p = mel_validate(
            xb,
            from_spectrogram=False,
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
            norm=mel_norm,
            norm_name="mel_norm",
            compat=compat,
            accepted=accepted,
            public="mfcc",
            # the logarithm of the bands (and its floor), then the coefficients
            frame_items=2 * _validate.positive_int(n_mels, "n_mels", "mfcc") + n_mfcc,
        )
        n_bands = mel_p.basis.shape[0]
        log = "torchaudio_db" if compat == "torchaudio" else "power_to_db"
    if n_mfcc > n_bands:
        raise ValueError(f"mfcc: n_mfcc={n_mfcc} must be <= the number of mel bands ({n_bands})")
    p = CepstralParams(
        mel_p,
        n_mfcc,
        dct_type,
        norm,
        lifter,
        log,
        top_db,
        dct_matrix(n_mfcc, n_bands, dct_type, norm, lifter),
    )
    return p


def lfcc_validate(
    xb: Any,
    *,
    sample_rate: int,
    n_filter: int,
    f_min: float,
    f_max: float | None,
    n_lfcc: int,
    dct_type: int,
    norm: str | None,
    log_lf: bool,
    n_fft: int,
    win_length: int | None,
    hop_length: int | None,
    window: Any,
    power: float,
    center: bool,
    pad_mode: str,
    accepted: tuple[str, ...] = _validate.CPU_DTYPES,
) -> CepstralParams:
    """Validate lfcc arguments for ``xb`` and resolve the defaults (torchaudio's rules)."""
    _validate.choice(dct_type, "dct_type", "lfcc", (2,))
    _validate.choice(norm, "norm", "lfcc", DCT_NORMS)
    # sample_rate, f_min and f_max are checked here, so that messages name lfcc's parameters (the bank's
    # are sr, f_min and f_max)
    sample_rate = _validate.positive_float(sample_rate, "sample_rate", "lfcc")
    f_min = _validate.real(f_min, "f_min", "lfcc")
    f_max = _validate.optional_real(f_max, "f_max", "lfcc")
    log_lf = _validate.flag(log_lf, "log_lf", "lfcc")
    n_filter = _validate.positive_int(n_filter, "n_filter", "lfcc")
    n_lfcc = _validate.positive_int(n_lfcc, "n_lfcc", "lfcc")
    if n_lfcc > n_filter:
        raise ValueError(f"lfcc: n_lfcc={n_lfcc} must be <= n_filter={n_filter}")
    power = _validate.positive_float(power, "power", "lfcc")
    n_fft = _validate.positive_int(n_fft, "n_fft", "lfcc")
    if hop_length is None:
        hop_length = max(
            _validate.positive_int(n_fft if win_length is None else win_length, "win_length", "lfcc") // 2, 1
        )
    item = np.dtype(_validate.real_dtype(xb, "lfcc", "waveform", accepted)).itemsize
    _check_bank(n_filter, "n_filter", n_fft, item, "lfcc")
    stft_p = stft_validate(
        xb,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        output="complex",
        accepted=accepted,
        public="lfcc",
        # the bands, their logarithm (and its floor), the coefficients; the bank
        frame_items=3 * n_filter + n_lfcc,
        extra_bytes=_bank_bytes(n_filter, n_fft, item),
    )
    basis = linear_bank(sr=sample_rate, n_fft=n_fft, n_filter=n_filter, f_min=f_min, f_max=f_max)
    mel_p = MelParams(stft_p, power, basis, stft_p.dtype)
    dct = dct_matrix(n_lfcc, n_filter, 2, norm, 0.0)
    p = CepstralParams(mel_p, n_lfcc, 2, norm, 0.0, "log" if log_lf else "torchaudio_db", 80.0, dct)
    return p
