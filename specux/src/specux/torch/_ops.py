"""Every specux custom op, registered on import (namespace ``specux``; also reachable as
``torch.ops.specux.*``)."""

from __future__ import annotations

from specux.torch import _autocast, _ops_device
from specux.torch._ops_convolve import fftconvolve, fftconvolve_backward
from specux.torch._ops_cq import (
    chroma_cqt,
    chroma_cqt_backward,
    chroma_stft,
    chroma_stft_backward,
    cqt,
    vqt,
    vqt_backward,
)
from specux.torch._ops_features import (
    lfcc,
    lfcc_backward,
    melspectrogram,
    melspectrogram_backward,
    mfcc,
    mfcc_backward,
)
from specux.torch._ops_fft import c2c, c2r, c2r_backward, r2c, r2c_backward
from specux.torch._ops_stft import istft, istft_backward, stft, stft_backward, stft_frames

_autocast.register()

#: the device ops (``specux::<name>_device``), by public operation
device_ops = _ops_device.OPS

__all__ = [
    "c2c",
    "c2r",
    "c2r_backward",
    "chroma_cqt",
    "chroma_cqt_backward",
    "chroma_stft",
    "chroma_stft_backward",
    "cqt",
    "fftconvolve",
    "fftconvolve_backward",
    "istft",
    "istft_backward",
    "lfcc",
    "lfcc_backward",
    "melspectrogram",
    "melspectrogram_backward",
    "mfcc",
    "mfcc_backward",
    "r2c",
    "r2c_backward",
    "stft",
    "stft_backward",
    "stft_frames",
    "vqt",
    "vqt_backward",
]
