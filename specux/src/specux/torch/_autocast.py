"""The autocast policy of the specux ops: compute in float32 whatever the surrounding autocast dtype.

Spectral transforms lose too much in half precision (long sums of products, logarithms of small powers), so
inside ``torch.autocast`` every specux forward op casts its half / bfloat16 floating-point inputs to float32
and returns float32 (real) or complex64 (complex) results, the policy torch itself applies to its FFTs.
float64 inputs are left in float64, and complex inputs keep their precision, as torch's own float32-policy ops
do.
"""

from __future__ import annotations

import torch

#: the forward ops (backward ops run outside autocast, on the dtypes of the forward)
FORWARD_OPS = (
    "specux::c2c",
    "specux::r2c",
    "specux::c2r",
    "specux::stft",
    "specux::stft_frames",
    "specux::istft",
    "specux::melspectrogram",
    "specux::mfcc",
    "specux::lfcc",
    "specux::vqt",
    "specux::cqt",
    "specux::chroma_stft",
    "specux::chroma_cqt",
    "specux::fftconvolve",
    # the device ops (specux.torch._device_op) of the same transforms
    *(
        f"specux::{name}_device"
        for name in (
            "stft", "istft", "melspectrogram", "mfcc", "lfcc", "vqt", "cqt", "chroma_stft", "chroma_cqt",
            "fftconvolve", "icqt",
        )
    ),
)


#: the autocast device types the policy is registered for: the CPU ops' and the CUDA kernels' (the FFT
#: family's and the device ops')
DEVICE_TYPES = ("cpu", "cuda")


def register() -> None:
    for name in FORWARD_OPS:
        for device_type in DEVICE_TYPES:
            torch.library.register_autocast(name, device_type, torch.float32)
