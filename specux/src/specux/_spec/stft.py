"""stft / istft arguments -> :class:`specux._validate.StftParams` / :class:`~specux._validate.IstftParams`."""

from __future__ import annotations

import warnings
from typing import Any

from specux import _arrays, _validate
from specux._validate import (
    IstftParams,
    StftParams,
)
from specux.errors import user_stacklevel


def stft_validate(
    y: Any,
    *,
    n_fft: int = 2048,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    pad_mode: str = "constant",
    output: str = "complex",
    accepted: tuple[str, ...] = _validate.CPU_DTYPES,
    public: str = "stft",
    frame_items: int | None = None,
    extra_bytes: int = 0,
) -> StftParams:
    """Validate stft arguments for input ``y`` (any array library) and resolve the defaults.

    ``public``, ``frame_items`` and ``extra_bytes`` are those of :func:`specux._validate.stft_params`: the
    name in messages and what a feature built on the frames keeps (for the memory guard).
    """
    precision = _validate.real_dtype(y, public, "y", accepted, override=dtype)
    return _validate.stft_params(
        tuple(y.shape),
        precision,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        output=output,
        public=public,
        frame_items=frame_items,
        extra_bytes=extra_bytes,
    )


def istft_validate(
    stft_matrix: Any,
    *,
    hop_length: int | None = None,
    win_length: int | None = None,
    n_fft: int | None = None,
    window: Any = "hann",
    center: bool = True,
    dtype: Any = None,
    length: int | None = None,
    nola: str = "ignore",
    accepted: tuple[str, ...] = _validate.CPU_DTYPES,
) -> IstftParams:
    """Validate istft arguments for ``stft_matrix`` (any array library) and resolve the defaults."""
    precision = _validate.real_dtype(
        stft_matrix, "istft", "stft_matrix", accepted, allow_complex=True, override=dtype
    )
    got = _arrays.real_dtype_name(stft_matrix)
    if not got.startswith("complex"):
        # librosa 0.11 takes it silently; a magnitude spectrogram passed by mistake would go unnoticed
        warnings.warn(
            f"istft: stft_matrix is real ({got}), not complex, so it is taken as a spectrum with zero phase "
            "(a magnitude spectrogram does not invert that way: pass the complex stft, or estimate the phase "
            "first); to mean zero phase, pass it as complex (stft_matrix.astype(np.complex64))",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return _validate.istft_params(
        tuple(stft_matrix.shape),
        precision,
        hop_length=hop_length,
        win_length=win_length,
        n_fft=n_fft,
        window=window,
        center=center,
        length=length,
        nola=nola,
    )
