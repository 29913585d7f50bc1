"""The ``metal`` backend: specux's generated kernels as Metal Shading Language on Apple GPUs (macOS only), run
by kernelkit's Metal runtime (:mod:`kernelkit.metal`).

numpy inputs are staged through shared-storage buffers and come back as numpy. float32 and float16 storage
only (Apple GPUs have no float64). torch ``mps`` tensors are not served yet (``owns`` is False for them), so
``backend="auto"`` does not route them here. Never run on Apple hardware by its authors: see
docs/specux/gpu.md.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from typing import Any

import numpy as np

from specux._backends.base import FFT_OP
from specux._backends.generated import GeneratedOps, available_ops

NAME = "metal"


def probe() -> str | None:
    """None when the default Metal device built and ran kernelkit's probe kernel, else why not."""
    from kernelkit import metal

    if sys.platform == "darwin" and importlib.util.find_spec("Metal") is None:
        return "pyobjc-framework-Metal is not installed (pip install pyobjc-framework-Metal; macOS only)"
    return metal.probe()


class MetalBackend(GeneratedOps):
    """FFT family on the default Metal device (see :mod:`specux._backends.base` for the contract)."""

    name = NAME
    ops = frozenset({FFT_OP}) | available_ops()
    dtypes = frozenset({"float16", "float32"})

    def __init__(self) -> None:
        from kernelkit import metal

        self.runtime = metal.runtime()

    def owns(self, x: Any) -> bool:
        return False

    def _run(self, kind: str, x: Any, axis: int, n: int, inverse: bool, scale: float) -> np.ndarray:
        from specux._runtime.fft_exec import run_host

        return run_host(self.runtime, kind, np.asarray(x), axis, n, inverse, scale)

    def c2c(self, x: Any, axis: int, inverse: bool, scale: float) -> np.ndarray:
        return self._run("c2c", x, axis, int(x.shape[axis]), bool(inverse), scale)

    def r2c(self, x: Any, axis: int, scale: float) -> np.ndarray:
        return self._run("r2c", x, axis, int(x.shape[axis]), False, scale)

    def c2r(self, x: Any, axis: int, n: int, scale: float) -> np.ndarray:
        return self._run("c2r", x, axis, int(n), True, scale)


@lru_cache(maxsize=1)
def get() -> MetalBackend:
    return MetalBackend()
