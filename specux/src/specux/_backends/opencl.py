"""The ``opencl`` backend: specux's generated kernels as OpenCL C, run through kernelkit's OpenCL runtime.

Runs on any OpenCL 1.2+ device that passes kernelkit's probe (a tiny kernel built and run on it); in CI on
PoCL (Debian's ``pocl-opencl-icd`` or the wheel's PoCL, a CPU OpenCL device), which is how every test run
executes the generated FFT kernels. A device that lists itself but cannot build (the wheel's PoCL on an AMD
Zen 5) makes this backend unavailable with kernelkit's reason. Inputs are host (numpy) arrays: they are copied
to the device, transformed and copied back. float64 needs ``cl_khr_fp64``; float16 is a storage format
(``vload_half`` / ``vstore_half``, computed in float32), so it works on devices without ``cl_khr_fp16``.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from typing import Any

import numpy as np

from specux._backends.base import FFT_OP
from specux._backends.generated import GeneratedOps, available_ops

NAME = "opencl"


def probe() -> str | None:
    """None when an OpenCL device passed kernelkit's probe, else why not (kernelkit caches the verdict)."""
    if importlib.util.find_spec("pyopencl") is None:
        return "pyopencl is not installed (pip install pyopencl)"
    from kernelkit import opencl

    return opencl.probe()


class OpenCLBackend(GeneratedOps):
    """FFT family on one OpenCL device (see :mod:`specux._backends.base` for the contract)."""

    name = NAME
    ops = frozenset({FFT_OP}) | available_ops()

    def __init__(self) -> None:
        from kernelkit import opencl

        self._rt = opencl
        self.dtypes = frozenset({"float16", "float32"} | ({"float64"} if self.runtime.fp64 else set()))

    @property
    def runtime(self) -> Any:
        """kernelkit's runtime of the chosen device for the current ``KERNELKIT_OPENCL_OPTIONS`` (one per
        option set, kept)."""
        return self._rt.default_runtime()

    def owns(self, x: Any) -> bool:
        # only host arrays reach this backend; pyopencl arrays are not an input type of specux
        return False

    def _run(self, kind: str, x: Any, axis: int, n: int, inverse: bool, scale: float) -> np.ndarray:
        from specux._runtime.fft_exec import run_host

        return run_host(self.runtime, kind, np.asarray(x), axis, n, inverse, scale)

    def c2c(self, x: Any, axis: int, inverse: bool, scale: float) -> np.ndarray:
        return self._run("c2c", x, axis, x.shape[axis], bool(inverse), scale)

    def r2c(self, x: Any, axis: int, scale: float) -> np.ndarray:
        return self._run("r2c", x, axis, x.shape[axis], False, scale)

    def c2r(self, x: Any, axis: int, n: int, scale: float) -> np.ndarray:
        return self._run("c2r", x, axis, n, True, scale)


@lru_cache(maxsize=1)
def get() -> OpenCLBackend:
    return OpenCLBackend()
