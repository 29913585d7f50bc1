"""The ``opencl`` backend: specux's generated kernels as OpenCL C, run through pyopencl.

Runs on any OpenCL 1.2+ device; in CI on PoCL (a CPU OpenCL device from ``pocl-binary-distribution``), which
is how every test run executes the generated FFT kernels. Inputs are host (numpy) arrays: they are copied to
the device, transformed and copied back. float64 needs ``cl_khr_fp64``; float16 is a storage format
(``vload_half`` /
``vstore_half``, computed in float32), so it works on devices without ``cl_khr_fp16``.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from typing import Any

import numpy as np

from specux._backends.base import FFT_OP

NAME = "opencl"


@lru_cache(maxsize=1)
def probe() -> str | None:
    """None when an OpenCL device is usable, else why not."""
    if importlib.util.find_spec("pyopencl") is None:
        return (
            "pyopencl is not installed (pip install specux[opencl]; "
            "pocl-binary-distribution gives a CPU device)"
        )
    try:
        from specux._runtime import opencl as rt

        devices = rt.platform_devices()
    except Exception as exc:  # LogicError PLATFORM_NOT_FOUND_KHR when no ICD is registered
        found = f"{type(exc).__name__}: {exc}"
        return f"no OpenCL platform found ({found}); install a driver or pocl-binary-distribution"
    if not devices:
        return "OpenCL platforms are present but expose no device"
    return None


class OpenCLBackend:
    """FFT family on one OpenCL device (see :mod:`specux._backends.base` for the contract)."""

    name = NAME
    ops = frozenset({FFT_OP})

    def __init__(self) -> None:
        from specux._runtime import opencl as rt

        self._rt = rt
        self.dtypes = frozenset({"float16", "float32"} | ({"float64"} if self.runtime.fp64 else set()))

    @property
    def runtime(self):
        """The device runtime for the current ``SPECUX_OPENCL_OPTIONS`` (one per option set, kept)."""
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
