"""specux for PyTorch: differentiable, compilable transforms and ``nn.Module`` wrappers.

Importing this package registers the ``specux`` custom ops with ``torch.library`` (``torch.ops.specux.stft``,
``...melspectrogram``, ``...c2c``, ...), each with a fake (meta) kernel, an analytic backward that is an op of
its own, and the autocast policy "compute in float32". The functional API (``specux.stft(tensor, ...)``) runs
torch tensors through these ops, so autograd and ``torch.compile(fullgraph=True)`` work on it directly; the
modules here own the windows and filter banks as buffers.

Modules: :class:`STFT`, :class:`ISTFT`, :class:`MelSpectrogram`, :class:`MFCC`, :class:`LFCC`, :class:`CQT`,
:class:`VQT`, :class:`Chroma`, and torchaudio's inverses :class:`GriffinLim` and
:class:`InverseMelScale`. See ``docs/specux/torch.md``.
"""

from __future__ import annotations

from specux.torch import _ops as ops
from specux.torch import _ops_device_convolve  # noqa: F401  (registers specux::fftconvolve_device*)
from specux.torch._modules import (
    CQT,
    ISTFT,
    LFCC,
    MFCC,
    STFT,
    VQT,
    Chroma,
    GriffinLim,
    InverseMelScale,
    MelSpectrogram,
)

__all__ = [
    "CQT",
    "ISTFT",
    "LFCC",
    "MFCC",
    "STFT",
    "VQT",
    "Chroma",
    "GriffinLim",
    "InverseMelScale",
    "MelSpectrogram",
    "ops",
]
