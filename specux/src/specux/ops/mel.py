"""Mel spectrogram (librosa.feature.melspectrogram), with a torchaudio-compatible preset."""

from __future__ import annotations

from typing import Any

from specux import _dispatch
from specux._backend_doc import backends_doc
from specux._spec.features import mel_validate
from specux._torch_hook import torch_route

__all__ = ["melspectrogram"]


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
