"""The CPU backend: NumPy / SciPy implementations of every operation (scipy.fft with all cores for the FFTs).

Each operation other than the FFT family is a plain function on numpy arrays in one of this package's
modules, one per family (``specux._backends.cpu.stft._stft_numpy(x, params)``, ...; table below), next to
its adjoints (``adjoint_*``, NumPy too: the torch ops call them for autograd). The public fronts
(``specux.ops.*``) validate and dispatch; this object only routes to the kernels. Operations whose module is
not importable are simply not listed in ``ops``. Nothing here imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import scipy.fft

from specux import _arrays
from specux._backends import registry

# public operation -> (module, function on numpy arrays taking the validated parameters)
IMPLEMENTATIONS = {
    "stft": ("specux._backends.cpu.stft", "_stft_numpy"),
    "istft": ("specux._backends.cpu.stft", "_istft_numpy"),
    "melspectrogram": ("specux._backends.cpu.features", "_melspectrogram_numpy"),
    "mfcc": ("specux._backends.cpu.features", "_mfcc_numpy"),
    "lfcc": ("specux._backends.cpu.features", "_lfcc_numpy"),
    "fftconvolve": ("specux._backends.cpu.convolve", "_fftconvolve_numpy"),
    # the constant-Q family validates into one VqtParams (cqt is vqt with gamma = 0)
    "cqt": ("specux._backends.cpu.cqt", "vqt_cpu"),
    "vqt": ("specux._backends.cpu.cqt", "vqt_cpu"),
}


def probe() -> str | None:
    return None


class CpuBackend:
    """Host computation; accepts numpy arrays (torch CPU tensors reach it as numpy views)."""

    name = "cpu"
    dtypes = frozenset({"float32", "float64"})

    def __init__(self) -> None:
        self._impls: dict[str, Any] = {}
        for op, (module_name, attr) in IMPLEMENTATIONS.items():
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            fn = getattr(module, attr, None)
            if fn is not None:
                self._impls[op] = fn
        # the host-only functions (chroma, tuning) run here whatever the backend: listed so that
        # specux.backends() says where they run
        self.ops = frozenset({"fft", *self._impls, *registry.HOST_ONLY})

    def owns(self, x: Any) -> bool:
        return _arrays.is_host(x)

    def c2c(self, x: np.ndarray, axis: int, inverse: bool, scale: float) -> np.ndarray:
        fn = scipy.fft.ifft if inverse else scipy.fft.fft
        # scipy's ifft already divides by n ("backward"); undo it through norm="forward" so the scale is ours
        out = fn(x, axis=axis, norm="forward" if inverse else "backward", workers=-1)
        if scale != 1.0:
            out *= out.real.dtype.type(scale)
        return out

    def r2c(self, x: np.ndarray, axis: int, scale: float) -> np.ndarray:
        out = scipy.fft.rfft(x, axis=axis, workers=-1)
        if scale != 1.0:
            out *= out.real.dtype.type(scale)
        return out

    def c2r(self, x: np.ndarray, axis: int, n: int, scale: float) -> np.ndarray:
        out = scipy.fft.irfft(x, n=n, axis=axis, norm="forward", workers=-1)
        if scale != 1.0:
            out *= out.dtype.type(scale)
        return out

    def __getattr__(self, op: str) -> Any:
        impls = self.__dict__.get("_impls", {})
        if op in impls:
            return impls[op]
        raise AttributeError(f"cpu backend has no operation {op!r}")


_BACKEND: CpuBackend | None = None


def get() -> CpuBackend:
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = CpuBackend()
    return _BACKEND
