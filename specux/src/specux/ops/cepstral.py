"""Cepstral features: MFCC (librosa.feature.mfcc, or torchaudio's MFCC preset) and LFCC (torchaudio's
LFCC)."""

from __future__ import annotations

from typing import Any

from specux import _dispatch
from specux._backend_doc import backends_doc
from specux._spec.features import lfcc_validate, mfcc_validate
from specux._torch_hook import torch_route

__all__ = ["lfcc", "mfcc"]


@backends_doc("mfcc")
@torch_route("mfcc", inputs=("y", "S"))
def mfcc(
    y: Any = None,
    *,
    sr: float | None = None,
    S: Any = None,
    n_mfcc: int | None = None,
    dct_type: int = 2,
    norm: str | None = "ortho",
    lifter: float = 0.0,
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
    mel_norm: str | float | None = "auto",
    top_db: float | None = 80.0,
    compat: str | None = None,
    backend: str = "auto",
) -> Any:
    """Mel-frequency cepstral coefficients (librosa.feature.mfcc; torchaudio.transforms.MFCC with compat).

    ``DCT(power_to_db(melspectrogram(y)))`` along the mel axis, first ``n_mfcc`` coefficients, then liftered.

    Parameters
    ----------
    y : array, shape (..., L), float32 or float64, optional
        Signal(s). Give ``y`` or ``S``.
    sr : float or None
        Sampling rate, Hz. ``None``: 22050 (16000 with ``compat="torchaudio"``).
    S : array, shape (..., n_bands, T), optional
        A log-power mel spectrogram (dB) to use instead of ``y``.
    n_mfcc : int or None
        Number of coefficients (<= n_mels). ``None``: 20 (40 with ``compat="torchaudio"``).
    dct_type : {1, 2, 3}
        DCT type (scipy's definitions).
    norm : {None, "ortho"}
        DCT normalisation.
    lifter : float
        ``L > 0`` multiplies coefficient ``k = 1 .. n_mfcc`` by ``1 + (L / 2) sin(pi k / L)``; 0: none.
    n_fft, hop_length, win_length, window, center, pad_mode, power, n_mels, fmin, fmax, htk
        The mel spectrogram's (see :func:`specux.melspectrogram`; ``None`` defaults follow ``compat``).
    mel_norm : "auto", "slaney", float or None
        The mel bank's normalisation. ``"auto"``: ``"slaney"`` (``None`` with ``compat="torchaudio"``).
    top_db : float or None
        Floor of the dB conversion below its maximum. Without compat, librosa's ``power_to_db`` (maximum over
        the whole array, ignoring NaN); with ``compat="torchaudio"``, torchaudio's AmplitudeToDB (maximum per
        item, where an item is the last three dimensions of a 3-D or larger input).
    compat : None or "torchaudio"
        ``"torchaudio"``: torchaudio.transforms.MFCC's defaults (n_mfcc 40, log_mels False, its MelSpectrogram
        defaults and bank).
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape (..., n_mfcc, T)
        Real, of the input's precision, same library as the input.

    {backends} Autograd / torch.compile: yes for torch CPU tensors
    (the specux custom ops; see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(22050).astype(np.float32)
    >>> specux.mfcc(y=y, sr=22050, n_mfcc=13).shape
    (13, 44)
    """
    if (y is None) == (S is None):
        raise ValueError("mfcc: give exactly one of y (signal) or S (log-power mel spectrogram)")
    x = y if S is None else S
    chosen, xb = _dispatch.prepare(x, backend, "mfcc", "mfcc")
    p = mfcc_validate(
        xb,
        from_spectrogram=S is not None,
        sr=sr,
        n_mfcc=n_mfcc,
        dct_type=dct_type,
        norm=norm,
        lifter=lifter,
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
        mel_norm=mel_norm,
        top_db=top_db,
        compat=compat,
        accepted=tuple(sorted(chosen.dtypes)),
    )
    mel_p = p.mel
    return _dispatch.finish(chosen.mfcc(_dispatch.cast_host(xb, mel_p.dtype), p), x)


@backends_doc("lfcc")
@torch_route("lfcc")
def lfcc(
    waveform: Any,
    *,
    sample_rate: int = 16000,
    n_filter: int = 128,
    f_min: float = 0.0,
    f_max: float | None = None,
    n_lfcc: int = 40,
    dct_type: int = 2,
    norm: str | None = "ortho",
    log_lf: bool = False,
    n_fft: int = 400,
    win_length: int | None = None,
    hop_length: int | None = None,
    window: Any = "hann",
    power: float = 2.0,
    center: bool = True,
    pad_mode: str = "reflect",
    backend: str = "auto",
) -> Any:
    """Linear-frequency cepstral coefficients (torchaudio.transforms.LFCC, same names and defaults).

    Power spectrogram -> linear triangular filter bank (:func:`specux.filters.linear`) -> dB (torchaudio's
    AmplitudeToDB, top_db 80) or ``log(x + 1e-6)`` -> DCT-II.

    Parameters
    ----------
    waveform : array, shape (..., L), float32 or float64
        Signal(s); leading dimensions are batch dimensions.
    sample_rate : int
        Sampling rate, Hz.
    n_filter : int
        Number of linear filters.
    f_min, f_max : float, Hz
        Band edges. ``f_max=None``: ``sample_rate // 2``.
    n_lfcc : int
        Number of coefficients (<= n_filter).
    dct_type : {2}
        Only type 2 (as torchaudio).
    norm : {"ortho", None}
        DCT normalisation (``None``: torchaudio's unnormalised DCT-II, twice scipy's).
    log_lf : bool
        ``log(x + 1e-6)`` instead of decibels.
    n_fft, win_length, hop_length, window, power, center, pad_mode
        torchaudio.transforms.Spectrogram's: ``win_length=None``: ``n_fft``; ``hop_length=None``:
        ``win_length // 2``.
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"metal"`` or ``"opencl"``.

    Returns
    -------
    array, shape (..., n_lfcc, T)
        Real, of the input's precision, same library as the input.

    {backends} Autograd / torch.compile: yes for torch CPU tensors
    (the specux custom ops; see docs/specux/torch.md).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> y = np.random.default_rng(0).standard_normal(16000).astype(np.float32)
    >>> specux.lfcc(y, sample_rate=16000, n_lfcc=20).shape
    (20, 81)
    """
    chosen, xb = _dispatch.prepare(waveform, backend, "lfcc", "lfcc")
    p = lfcc_validate(
        xb,
        sample_rate=sample_rate,
        n_filter=n_filter,
        f_min=f_min,
        f_max=f_max,
        n_lfcc=n_lfcc,
        dct_type=dct_type,
        norm=norm,
        log_lf=log_lf,
        n_fft=n_fft,
        win_length=win_length,
        hop_length=hop_length,
        window=window,
        power=power,
        center=center,
        pad_mode=pad_mode,
        accepted=tuple(sorted(chosen.dtypes)),
    )
    stft_p = p.mel.stft
    return _dispatch.finish(chosen.lfcc(_dispatch.cast_host(xb, stft_p.dtype), p), waveform)
